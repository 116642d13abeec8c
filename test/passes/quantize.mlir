// RUN: kiln-opt %s --kiln-quantize="weights=q4_0 overrides=token_embd.weight=q8_0,*.attn_v.weight=i8g64,output.weight=f16" --split-input-file -verify-diagnostics | FileCheck %s
// RUN: kiln-opt %s --kiln-quantize="kv=f16" --split-input-file | FileCheck %s --check-prefix=KVF16
// RUN: kiln-opt %s --kiln-quantize="kv=q8" --split-input-file | FileCheck %s --check-prefix=KVQ8

// CHECK-LABEL: func.func @policy
// KVF16-LABEL: func.func @policy
func.func @policy(%tokens: tensor<2xi32>, %pos: i32) -> tensor<2x64xf32> {
  // CHECK: kiln.weight "token_embd.weight" : tensor<64x64x!kiln.q8_0>
  // KVF16: kiln.weight "token_embd.weight" : tensor<64x64xf32>
  %t = kiln.weight "token_embd.weight" : tensor<64x64xf32>
  %x = kiln.embed %t[%tokens] : (tensor<64x64xf32>, tensor<2xi32>) -> tensor<2x64xf32>
  // 1-D weights keep f32.
  // CHECK: kiln.weight "blk.0.attn_norm.weight" : tensor<64xf32>
  %n = kiln.weight "blk.0.attn_norm.weight" : tensor<64xf32>
  %a = kiln.rms_norm %x, %n {epsilon = 1.0e-5 : f32} : tensor<2x64xf32>, tensor<64xf32>
  // CHECK: kiln.weight "blk.0.attn_q.weight" : tensor<64x64x!kiln.q4_0>
  %wq = kiln.weight "blk.0.attn_q.weight" : tensor<64x64xf32>
  // f16 sources are quantized too.
  // CHECK: kiln.weight "blk.0.attn_k.weight" : tensor<32x64x!kiln.q4_0>
  %wk = kiln.weight "blk.0.attn_k.weight" : tensor<32x64xf16>
  // CHECK: kiln.weight "blk.0.attn_v.weight" : tensor<32x64x!kiln.i8g<64>>
  %wv = kiln.weight "blk.0.attn_v.weight" : tensor<32x64xf32>
  // Already-quantized tensors keep their format.
  // CHECK: kiln.weight "blk.0.ffn_up.weight" : tensor<64x64x!kiln.q8_0>
  %wu = kiln.weight "blk.0.ffn_up.weight" : tensor<64x64x!kiln.q8_0>
  // CHECK: kiln.weight "output.weight" : tensor<64x64xf16>
  %wo = kiln.weight "output.weight" : tensor<64x64xf32>
  %q = kiln.matmul %a, %wq : (tensor<2x64xf32>, tensor<64x64xf32>) -> tensor<2x64xf32>
  %k = kiln.matmul %a, %wk : (tensor<2x64xf32>, tensor<32x64xf16>) -> tensor<2x32xf32>
  %v = kiln.matmul %a, %wv : (tensor<2x64xf32>, tensor<32x64xf32>) -> tensor<2x32xf32>
  // KVF16: kiln.kv_cache key layer 0 : tensor<8x32xf16>
  // KVF16: kiln.kv_cache value layer 0 : tensor<8x32xf16>
  // KVF16: kiln.kv_write {{.*}} : tensor<2x32xf32> -> tensor<8x32xf16>
  // KVF16: kiln.attention {{.*}} : tensor<2x64xf32>, tensor<8x32xf16>, tensor<8x32xf16> -> tensor<2x64xf32>
  // KVQ8: kiln.kv_cache key layer 0 : tensor<8x32x!kiln.i8g<16>>
  // KVQ8: kiln.kv_cache value layer 0 : tensor<8x32x!kiln.i8g<16>>
  // KVQ8: kiln.kv_write {{.*}} : tensor<2x32xf32> -> tensor<8x32x!kiln.i8g<16>>
  %kc = kiln.kv_cache key layer 0 : tensor<8x32xf32>
  %vc = kiln.kv_cache value layer 0 : tensor<8x32xf32>
  %kc1 = kiln.kv_write %k into %kc at %pos : tensor<2x32xf32> -> tensor<8x32xf32>
  %vc1 = kiln.kv_write %v into %vc at %pos : tensor<2x32xf32> -> tensor<8x32xf32>
  %o = kiln.attention %q, %kc1, %vc1 at %pos {n_head = 4 : i32, n_kv_head = 2 : i32, head_dim = 16 : i32} : tensor<2x64xf32>, tensor<8x32xf32>, tensor<8x32xf32> -> tensor<2x64xf32>
  %u = kiln.matmul %o, %wu : (tensor<2x64xf32>, tensor<64x64x!kiln.q8_0>) -> tensor<2x64xf32>
  %l = kiln.matmul %u, %wo : (tensor<2x64xf32>, tensor<64x64xf32>) -> tensor<2x64xf32>
  return %l : tensor<2x64xf32>
}

// -----

// Rows that are not whole blocks keep their format, with a warning.
// CHECK-LABEL: func.func @partial_blocks
func.func @partial_blocks(%x: tensor<1x48xf32>) -> tensor<1x8xf32> {
  // CHECK: kiln.weight "blk.0.ffn_down.weight" : tensor<8x48xf32>
  // expected-warning @+1 {{kept as 'f32': rows of 48 are not whole blocks of '!kiln.q4_0'}}
  %w = kiln.weight "blk.0.ffn_down.weight" : tensor<8x48xf32>
  %y = kiln.matmul %x, %w : (tensor<1x48xf32>, tensor<8x48xf32>) -> tensor<1x8xf32>
  return %y : tensor<1x8xf32>
}

// -----

// A graph's weight that some op other than a matmul or an embedding reads (a
// position table the graph adds) keeps its type: no other kernel reads blocks.
// CHECK-LABEL: func.func @graph_weights
func.func @graph_weights(%x: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  // CHECK: kiln.weight "positions" : tensor<4x32xf32>
  %p = kiln.weight "positions" : tensor<4x32xf32>
  %a = kiln.add %x, %p : tensor<4x32xf32>
  // CHECK: kiln.weight "dense" {transposed} : tensor<32x32x!kiln.q4_0>
  %w = kiln.weight "dense" {transposed} : tensor<32x32xf32>
  %y = kiln.matmul %a, %w : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
  return %a, %y : tensor<4x32xf32>, tensor<4x32xf32>
}
