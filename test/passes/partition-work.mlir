// RUN: kiln-opt %s --kiln-partition-work="threads=3 min-work=4096" | FileCheck %s
// RUN: kiln-opt %s --kiln-partition-work="threads=1" | FileCheck %s --check-prefix=ONE
// RUN: kiln-opt %s --kiln-partition-work="threads=2 min-work=100000000" | FileCheck %s --check-prefix=SMALL
// RUN: not kiln-opt %s --kiln-partition-work="threads=0" 2>&1 | FileCheck %s --check-prefix=BAD

// Three workers: matmuls split their output columns in whole panels, four at a
// time when every share still gets four (352 panels of 16), one at a time
// otherwise (4 panels of 16 for 3 shares); a row-layout weight in 16 columns.
// Attention splits (KV head, row) pairs, row-wise ops their rows. One-row ops
// (decode) cannot be split by rows. min-work is compared with the most work:
// multiply-adds at all rows, attention over the whole cache, elements for
// row-wise ops.
// CHECK: module attributes {kiln.threads = 3 : i64}
func.func @f(%x: tensor<8x2048xf32>, %t: tensor<8xi32>, %one: tensor<1x2048xf32>, %pos: i32)
    -> (tensor<8x5632xf32>, tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x2048xf32>,
        tensor<1x2048xf32>, tensor<8x512xf32>, tensor<8x2048xf32>) {
  %w = kiln.weight "blk.0.ffn_up.weight" {kiln.layout = #kiln.panel<rows = 16>} : tensor<5632x2048x!kiln.q4_0>
  // CHECK: kiln.matmul {{.*}}split = #kiln.split<axis = "columns", shares = 3, grain = 64, threshold = 4096>
  %y = kiln.matmul %x, %w : (tensor<8x2048xf32>, tensor<5632x2048x!kiln.q4_0>) -> tensor<8x5632xf32>
  %v = kiln.weight "blk.0.attn_k.weight" {kiln.layout = #kiln.panel<rows = 16>} : tensor<64x2048x!kiln.q8_0>
  // CHECK: kiln.matmul {{.*}}split = #kiln.split<axis = "columns", shares = 3, grain = 16, threshold = 4096>
  %k = kiln.matmul %x, %v : (tensor<8x2048xf32>, tensor<64x2048x!kiln.q8_0>) -> tensor<8x64xf32>
  %r = kiln.weight "blk.0.attn_v.weight" : tensor<64x2048xf32>
  // CHECK: kiln.matmul {{.*}}split = #kiln.split<axis = "columns", shares = 3, grain = 16, threshold = 4096>
  %u = kiln.matmul %x, %r : (tensor<8x2048xf32>, tensor<64x2048xf32>) -> tensor<8x64xf32>
  %g = kiln.weight "blk.0.attn_norm.weight" : tensor<2048xf32>
  // CHECK: kiln.rms_norm {{.*}}split = #kiln.split<axis = "rows", shares = 3, grain = 1, threshold = 4096>
  %n = kiln.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : tensor<8x2048xf32>, tensor<2048xf32>
  // CHECK: kiln.rms_norm
  // CHECK-NOT: split
  // CHECK-SAME: tensor<1x2048xf32>
  %d = kiln.rms_norm %one, %g {epsilon = 1.0e-5 : f32} : tensor<1x2048xf32>, tensor<2048xf32>
  %kc = kiln.kv_cache key layer 0 : tensor<128x64xf32>
  %vc = kiln.kv_cache value layer 0 : tensor<128x64xf32>
  %qw = kiln.weight "blk.0.attn_q.weight" : tensor<512x2048xf32>
  // CHECK: kiln.matmul
  %q = kiln.matmul %x, %qw : (tensor<8x2048xf32>, tensor<512x2048xf32>) -> tensor<8x512xf32>
  // CHECK: kiln.attention {{.*}}split = #kiln.split<axis = "heads", shares = 3, grain = 1, threshold = 4096>
  %a = kiln.attention %q, %kc, %vc at %pos {head_dim = 64 : i32, n_head = 8 : i32, n_kv_head = 1 : i32}
      : tensor<8x512xf32>, tensor<128x64xf32>, tensor<128x64xf32> -> tensor<8x512xf32>
  %e = kiln.weight "token_embd.weight" : tensor<100x2048xf32>
  // CHECK: kiln.embed {{.*}}split = #kiln.split<axis = "rows", shares = 3, grain = 1, threshold = 4096>
  %m = kiln.embed %e[%t] : (tensor<100x2048xf32>, tensor<8xi32>) -> tensor<8x2048xf32>
  return %y, %k, %u, %n, %d, %a, %m : tensor<8x5632xf32>, tensor<8x64xf32>, tensor<8x64xf32>,
      tensor<8x2048xf32>, tensor<1x2048xf32>, tensor<8x512xf32>, tensor<8x2048xf32>
}

// One thread: nothing is split and the module says nothing.
// ONE-NOT: split
// ONE-NOT: kiln.threads

// Below min-work every kernel stays on one worker: the largest here has
// 8 x 5632 x 2048 = 92 million multiply-adds.
// SMALL-NOT: split

// BAD: error: partition-work: threads must be at least 1, not 0

// A graph's ops: a row is a tensor's innermost dimension (2 x 64 rows of 64
// for the rank-3 add and exact GELU), attend splits whole batches (its
// merged heads: 4 of them over 3 shares).
// CHECK-LABEL: func.func @graph
func.func @graph(%x: tensor<2x64x64xf32>, %q: tensor<4x16x8xf32>, %kt: tensor<4x8x16xf32>,
                 %v: tensor<4x16x8xf32>, %one: tensor<1x16x8xf32>, %onekt: tensor<1x8x16xf32>)
    -> (tensor<2x64x64xf32>, tensor<2x64x64xf32>, tensor<4x16x8xf32>, tensor<1x16x8xf32>) {
  // CHECK: kiln.add {{.*}}split = #kiln.split<axis = "rows", shares = 3, grain = 1, threshold = 4096>
  %n = kiln.add %x, %x : tensor<2x64x64xf32>
  // CHECK: kiln.gelu_erf {{.*}}split = #kiln.split<axis = "rows", shares = 3, grain = 1, threshold = 4096>
  %e = kiln.gelu_erf %x : tensor<2x64x64xf32>
  // CHECK: kiln.attend {{.*}}split = #kiln.split<axis = "batches", shares = 3, grain = 1, threshold = 4096>
  %a = kiln.attend %q, %kt, %v {scale = 0.35 : f32}
      : (tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  // One batch cannot be split.
  // CHECK: kiln.attend
  // CHECK-NOT: split
  // CHECK-SAME: tensor<1x16x8xf32>
  %o = kiln.attend %one, %onekt, %one {scale = 0.35 : f32}
      : (tensor<1x16x8xf32>, tensor<1x8x16xf32>, tensor<1x16x8xf32>) -> tensor<1x16x8xf32>
  return %n, %e, %a, %o : tensor<2x64x64xf32>, tensor<2x64x64xf32>, tensor<4x16x8xf32>, tensor<1x16x8xf32>
}
