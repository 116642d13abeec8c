// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// CHECK-LABEL: func.func @decoder_step
func.func @decoder_step(%tokens: tensor<4xi32>, %pos: i32) -> tensor<4x64xf32> {
  // CHECK: kiln.weight "token_embd.weight" : tensor<64x32x!kiln.q8_0>
  %table = kiln.weight "token_embd.weight" : tensor<64x32x!kiln.q8_0>
  // CHECK: kiln.embed %{{.*}}[%{{.*}}] : (tensor<64x32x!kiln.q8_0>, tensor<4xi32>) -> tensor<4x32xf32>
  %x = kiln.embed %table[%tokens] : (tensor<64x32x!kiln.q8_0>, tensor<4xi32>) -> tensor<4x32xf32>
  %nw = kiln.weight "blk.0.attn_norm.weight" : tensor<32xf32>
  // CHECK: kiln.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : tensor<4x32xf32>, tensor<32xf32>
  %a = kiln.rms_norm %x, %nw {epsilon = 1.0e-5 : f32} : tensor<4x32xf32>, tensor<32xf32>
  // CHECK: tensor<32x32x!kiln.q4_0>
  %wq = kiln.weight "blk.0.attn_q.weight" : tensor<32x32x!kiln.q4_0>
  // CHECK: tensor<16x32x!kiln.i4g<32>>
  %wk = kiln.weight "blk.0.attn_k.weight" : tensor<16x32x!kiln.i4g<32>>
  // CHECK: tensor<16x64x!kiln.i8g<64>>
  %wv = kiln.weight "blk.0.attn_v.weight" : tensor<16x64x!kiln.i8g<64>>
  %wv16 = kiln.weight "blk.0.attn_v16.weight" : tensor<16x32xf16>
  %q = kiln.matmul %a, %wq : (tensor<4x32xf32>, tensor<32x32x!kiln.q4_0>) -> tensor<4x32xf32>
  %k = kiln.matmul %a, %wk : (tensor<4x32xf32>, tensor<16x32x!kiln.i4g<32>>) -> tensor<4x16xf32>
  %v = kiln.matmul %a, %wv16 : (tensor<4x32xf32>, tensor<16x32xf16>) -> tensor<4x16xf32>
  // CHECK: kiln.rope %{{.*}} at %{{.*}} {freq_base = 1.000000e+04 : f32, head_dim = 8 : i32, rope_dim = 8 : i32} : tensor<4x32xf32>
  %qr = kiln.rope %q at %pos {head_dim = 8 : i32, rope_dim = 8 : i32, freq_base = 10000.0 : f32} : tensor<4x32xf32>
  %kr = kiln.rope %k at %pos {head_dim = 8 : i32, rope_dim = 4 : i32, freq_base = 10000.0 : f32} : tensor<4x16xf32>
  // CHECK: kiln.kv_cache key layer 0 : tensor<16x16xf32>
  %kc = kiln.kv_cache key layer 0 : tensor<16x16xf32>
  // CHECK: kiln.kv_cache value layer 0 : tensor<16x16xf16>
  %vc = kiln.kv_cache value layer 0 : tensor<16x16xf16>
  %vc32 = kiln.kv_cache value layer 0 : tensor<16x16xf32>
  // CHECK: kiln.kv_write %{{.*}} into %{{.*}} at %{{.*}} : tensor<4x16xf32> -> tensor<16x16xf32>
  %kc1 = kiln.kv_write %kr into %kc at %pos : tensor<4x16xf32> -> tensor<16x16xf32>
  %vc1 = kiln.kv_write %v into %vc32 at %pos : tensor<4x16xf32> -> tensor<16x16xf32>
  // CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}} at %{{.*}} {head_dim = 8 : i32, n_head = 4 : i32, n_kv_head = 2 : i32, window = 8 : i32}
  %o = kiln.attention %qr, %kc1, %vc1 at %pos {n_head = 4 : i32, n_kv_head = 2 : i32, head_dim = 8 : i32, window = 8 : i32} : tensor<4x32xf32>, tensor<16x16xf32>, tensor<16x16xf32> -> tensor<4x32xf32>
  // CHECK: kiln.silu
  %s = kiln.silu %o : tensor<4x32xf32>
  // CHECK: kiln.gelu
  %g = kiln.gelu %s : tensor<4x32xf32>
  // CHECK: kiln.mul
  %m = kiln.mul %s, %g : tensor<4x32xf32>
  // CHECK: kiln.add
  %r = kiln.add %x, %m : tensor<4x32xf32>
  %lb = kiln.weight "norm.bias" : tensor<32xf32>
  // CHECK: kiln.layer_norm
  %ln = kiln.layer_norm %r, %nw, %lb {epsilon = 1.0e-5 : f32} : tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>
  %out = kiln.weight "output.weight" : tensor<64x32xf32>
  %logits = kiln.matmul %ln, %out : (tensor<4x32xf32>, tensor<64x32xf32>) -> tensor<4x64xf32>
  // CHECK: kiln.softmax
  %p = kiln.softmax %logits : tensor<4x64xf32>
  return %p : tensor<4x64xf32>
}
