// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @q8_row_not_whole_blocks() {
  // expected-error @+1 {{innermost dimension must be a multiple of the block size 32 of '!kiln.q8_0'}}
  %w = kiln.weight "w" : tensor<4x48x!kiln.q8_0>
  return
}

// -----

func.func @group_size_not_supported() {
  // expected-error @+1 {{group size must be an even number from 2 to 4096, got 7}}
  %w = kiln.weight "w" : tensor<4x70x!kiln.i4g<7>>
  return
}

// -----

func.func @empty_weight_name() {
  // expected-error @+1 {{expects a non-empty tensor name}}
  %w = kiln.weight "" : tensor<4xf32>
  return
}

// -----

func.func @weight_integer_dtype() {
  // expected-error @+1 {{result #0 must be ranked tensor of}}
  %w = kiln.weight "w" : tensor<4x4xi8>
  return
}

// -----

func.func @matmul_width_mismatch(%x: tensor<2x32xf32>) {
  %w = kiln.weight "w" : tensor<16x64xf32>
  // expected-error @+1 {{input width 32 does not match weight input dimension 64}}
  %y = kiln.matmul %x, %w : (tensor<2x32xf32>, tensor<16x64xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @matmul_wrong_result(%x: tensor<2x32xf32>) {
  %w = kiln.weight "w" : tensor<16x32xf32>
  // expected-error @+1 {{expects result of shape 2x16, got 'tensor<2x32xf32>'}}
  %y = kiln.matmul %x, %w : (tensor<2x32xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
  return
}

// -----

func.func @matmul_f16_activation(%x: tensor<2x32xf16>) {
  %w = kiln.weight "w" : tensor<16x32xf32>
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values}}
  %y = kiln.matmul %x, %w : (tensor<2x32xf16>, tensor<16x32xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @rms_norm_weight_width(%x: tensor<2x32xf32>) {
  %w = kiln.weight "w" : tensor<12xf32>
  // expected-error @+1 {{weight of 12 features does not divide rows of 32}}
  %y = kiln.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : tensor<2x32xf32>, tensor<12xf32>
  return
}

// -----

func.func @rms_norm_zero_epsilon(%x: tensor<2x32xf32>) {
  %w = kiln.weight "w" : tensor<32xf32>
  // expected-error @+1 {{expects a positive epsilon}}
  %y = kiln.rms_norm %x, %w {epsilon = 0.0 : f32} : tensor<2x32xf32>, tensor<32xf32>
  return
}

// -----

func.func @embed_wrong_rows(%t: tensor<3xi32>) {
  %w = kiln.weight "w" : tensor<10x8xf32>
  // expected-error @+1 {{expects result of shape 3x8, got 'tensor<4x8xf32>'}}
  %x = kiln.embed %w[%t] : (tensor<10x8xf32>, tensor<3xi32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rope_partial_head(%x: tensor<2x30xf32>, %pos: i32) {
  // expected-error @+1 {{width 30 is not a whole number of heads of 8}}
  %y = kiln.rope %x at %pos {head_dim = 8 : i32, rope_dim = 8 : i32, freq_base = 10000.0 : f32} : tensor<2x30xf32>
  return
}

// -----

func.func @rope_odd_dim(%x: tensor<2x32xf32>, %pos: i32) {
  // expected-error @+1 {{rope_dim must be even and in (0, 8], got 5}}
  %y = kiln.rope %x at %pos {head_dim = 8 : i32, rope_dim = 5 : i32, freq_base = 10000.0 : f32} : tensor<2x32xf32>
  return
}

// -----

func.func @gqa_heads_not_divisible(%q: tensor<1x48xf32>, %pos: i32) {
  %k = kiln.kv_cache key layer 0 : tensor<16x32xf32>
  %v = kiln.kv_cache value layer 0 : tensor<16x32xf32>
  // expected-error @+1 {{n_head 6 is not a multiple of n_kv_head 4}}
  %o = kiln.attention %q, %k, %v at %pos {n_head = 6 : i32, n_kv_head = 4 : i32, head_dim = 8 : i32} : tensor<1x48xf32>, tensor<16x32xf32>, tensor<16x32xf32> -> tensor<1x48xf32>
  return
}

// -----

func.func @gqa_cache_width(%q: tensor<1x32xf32>, %pos: i32) {
  %k = kiln.kv_cache key layer 0 : tensor<16x32xf32>
  %v = kiln.kv_cache value layer 0 : tensor<16x32xf32>
  // expected-error @+1 {{expects keys of shape 16x16, got 'tensor<16x32xf32>'}}
  %o = kiln.attention %q, %k, %v at %pos {n_head = 4 : i32, n_kv_head = 2 : i32, head_dim = 8 : i32} : tensor<1x32xf32>, tensor<16x32xf32>, tensor<16x32xf32> -> tensor<1x32xf32>
  return
}

// -----

func.func @attention_query_width(%q: tensor<1x24xf32>, %pos: i32) {
  %k = kiln.kv_cache key layer 0 : tensor<16x16xf32>
  %v = kiln.kv_cache value layer 0 : tensor<16x16xf32>
  // expected-error @+1 {{expects query of shape 1x32, got 'tensor<1x24xf32>'}}
  %o = kiln.attention %q, %k, %v at %pos {n_head = 4 : i32, n_kv_head = 2 : i32, head_dim = 8 : i32} : tensor<1x24xf32>, tensor<16x16xf32>, tensor<16x16xf32> -> tensor<1x32xf32>
  return
}

// -----

func.func @attention_mixed_cache(%q: tensor<1x32xf32>, %pos: i32) {
  %k = kiln.kv_cache key layer 0 : tensor<16x16xf32>
  %v = kiln.kv_cache value layer 0 : tensor<16x16xf16>
  // expected-error @+1 {{keys 'tensor<16x16xf32>' and values 'tensor<16x16xf16>' differ}}
  %o = kiln.attention %q, %k, %v at %pos {n_head = 4 : i32, n_kv_head = 2 : i32, head_dim = 8 : i32} : tensor<1x32xf32>, tensor<16x16xf32>, tensor<16x16xf16> -> tensor<1x32xf32>
  return
}

// -----

func.func @kv_write_over_capacity(%k: tensor<32x16xf32>, %pos: i32) {
  %c = kiln.kv_cache key layer 0 : tensor<16x16xf32>
  // expected-error @+1 {{writes 32 rows into a cache of capacity 16}}
  %c1 = kiln.kv_write %k into %c at %pos : tensor<32x16xf32> -> tensor<16x16xf32>
  return
}

// -----

func.func @kv_write_width(%k: tensor<2x8xf32>, %pos: i32) {
  %c = kiln.kv_cache key layer 0 : tensor<16x16xf32>
  // expected-error @+1 {{row width 8 does not match cache width 16}}
  %c1 = kiln.kv_write %k into %c at %pos : tensor<2x8xf32> -> tensor<16x16xf32>
  return
}

// -----

func.func @add_shape_mismatch(%a: tensor<2x8xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %c = "kiln.add"(%a, %b) : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @k_quant_row_not_whole_super_blocks() {
  // expected-error @+1 {{innermost dimension must be a multiple of the block size 256 of '!kiln.q4_k'}}
  %w = kiln.weight "w" : tensor<4x128x!kiln.q4_k>
  return
}

// -----

func.func @rope_factors_not_one_per_pair(%x: tensor<2x32xf32>, %pos: i32) {
  // expected-error @+1 {{expects 4 freq_factors (one per rotated pair), got 3}}
  %y = kiln.rope %x at %pos {head_dim = 8 : i32, rope_dim = 8 : i32, freq_base = 10000.0 : f32, freq_factors = array<f32: 1.0, 2.0, 4.0>} : tensor<2x32xf32>
  return
}

// -----

func.func @rope_factor_not_positive(%x: tensor<2x32xf32>, %pos: i32) {
  // expected-error @+1 {{expects positive, finite freq_factors}}
  %y = kiln.rope %x at %pos {head_dim = 8 : i32, rope_dim = 8 : i32, freq_base = 10000.0 : f32, freq_factors = array<f32: 1.0, 2.0, 0.0, 8.0>} : tensor<2x32xf32>
  return
}

// -----

func.func @bias_not_row_width(%x: tensor<2x32xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{bias}}
  %y = kiln.bias_add %x, %b : tensor<2x32xf32>, tensor<16xf32>
  return
}

// -----

func.func @broadcast_not_numpy(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot broadcast 'tensor<2x3xf32>' to 'tensor<2x4xf32>'}}
  %y = kiln.broadcast %x : tensor<2x3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @reshape_changes_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{expects as many elements of one type}}
  %y = kiln.reshape %x : tensor<2x3xf32> -> tensor<7xf32>
  return
}

// -----

func.func @transpose_not_permutation(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{expects a permutation of every dimension}}
  %y = kiln.transpose %x [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @transpose_wrong_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{expects result of shape 3x2}}
  %y = kiln.transpose %x [1, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @reduce_mean_drops_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{expects result of shape 2x1}}
  %y = kiln.reduce_mean %x [1] : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

func.func @gather_wrong_shape(%x: tensor<5x3xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{expects result of shape 4x3}}
  %y = kiln.gather %x[%i] {axis = 0 : i64} : (tensor<5x3xf32>, tensor<4xi64>) -> tensor<5x3xf32>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{inputs differ in dimension 0}}
  %y = kiln.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @slice_past_end(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{dimension 1 reads past the input}}
  %y = kiln.slice %x from [0, 6] by [1, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @batch_matmul_inner(%a: tensor<2x4x3xf32>, %b: tensor<2x4x5xf32>) {
  // expected-error @+1 {{lhs width 3 does not match rhs height 4}}
  %y = kiln.batch_matmul %a, %b : (tensor<2x4x3xf32>, tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
  return
}

// -----

func.func @where_shapes(%c: tensor<4xi1>, %x: tensor<3xf32>) {
  // expected-error @+1 {{expects condition and values of one shape}}
  %y = kiln.where %c, %x, %x : tensor<4xi1>, tensor<3xf32>
  return
}

// -----

func.func @attend_bias_shape(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>, %m: tensor<2x4x4xf32>) {
  // expected-error @+1 {{expects a bias of shape 2x4x6}}
  %o = kiln.attend %q, %kt, %v bias %m {scale = 1.0 : f32} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x8xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32>
  return
}
