// RUN: kiln-opt %s --split-input-file --kiln-fuse | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-fuse="patterns=residual" | FileCheck %s --check-prefix=RESIDUAL-ONLY
// RUN: not kiln-opt %s --split-input-file --kiln-fuse="patterns=gelu" 2>&1 | FileCheck %s --check-prefix=BAD

// residual: a matmul whose only use is an add, on either side.
// CHECK-LABEL: func.func @residual
// CHECK-NEXT: %[[W:.*]] = kiln.weight "blk.0.attn_output.weight"
// CHECK-NEXT: %[[Y:.*]] = kiln.residual_matmul %arg0, %[[W]] plus %arg1 : (tensor<4x64xf32>, tensor<32x64x!kiln.q8_0>, tensor<4x32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT: %[[W2:.*]] = kiln.weight "blk.0.ffn_down.weight"
// CHECK-NEXT: %[[Z:.*]] = kiln.residual_matmul %arg0, %[[W2]] plus %[[Y]]
// CHECK-NEXT: return %[[Z]]
// RESIDUAL-ONLY-LABEL: func.func @residual
// RESIDUAL-ONLY: kiln.residual_matmul
// RESIDUAL-ONLY: kiln.residual_matmul
func.func @residual(%x: tensor<4x64xf32>, %r: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %w = kiln.weight "blk.0.attn_output.weight" : tensor<32x64x!kiln.q8_0>
  %m = kiln.matmul %x, %w : (tensor<4x64xf32>, tensor<32x64x!kiln.q8_0>) -> tensor<4x32xf32>
  %y = kiln.add %r, %m : tensor<4x32xf32>
  %w2 = kiln.weight "blk.0.ffn_down.weight" : tensor<32x64x!kiln.q8_0>
  %m2 = kiln.matmul %x, %w2 : (tensor<4x64xf32>, tensor<32x64x!kiln.q8_0>) -> tensor<4x32xf32>
  %z = kiln.add %m2, %y : tensor<4x32xf32>
  return %z : tensor<4x32xf32>
}

// -----

// A matmul result that something else reads stays a matmul.
// CHECK-LABEL: func.func @residual_shared
// CHECK: kiln.matmul
// CHECK: kiln.add
// CHECK-NOT: residual_matmul
func.func @residual_shared(%x: tensor<4x64xf32>, %r: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %w = kiln.weight "w" : tensor<32x64xf32>
  %m = kiln.matmul %x, %w : (tensor<4x64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  %y = kiln.add %r, %m : tensor<4x32xf32>
  return %y, %m : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// swiglu: mul(silu(x * gate), x * up), in either order; gate and up of one
// format and shape.
// CHECK-LABEL: func.func @swiglu
// CHECK: %[[G:.*]] = kiln.weight "blk.0.ffn_gate.weight"
// CHECK: %[[U:.*]] = kiln.weight "blk.0.ffn_up.weight"
// CHECK-NEXT: %[[H:.*]] = kiln.swiglu_matmul %arg0, %[[G]], %[[U]] : (tensor<4x64xf32>, tensor<96x64x!kiln.q4_0>, tensor<96x64x!kiln.q4_0>) -> tensor<4x96xf32>
// CHECK-NEXT: return %[[H]]
// RESIDUAL-ONLY-LABEL: func.func @swiglu
// RESIDUAL-ONLY: kiln.silu
// RESIDUAL-ONLY: kiln.mul
func.func @swiglu(%x: tensor<4x64xf32>) -> tensor<4x96xf32> {
  %g = kiln.weight "blk.0.ffn_gate.weight" : tensor<96x64x!kiln.q4_0>
  %a = kiln.matmul %x, %g : (tensor<4x64xf32>, tensor<96x64x!kiln.q4_0>) -> tensor<4x96xf32>
  %s = kiln.silu %a : tensor<4x96xf32>
  %u = kiln.weight "blk.0.ffn_up.weight" : tensor<96x64x!kiln.q4_0>
  %b = kiln.matmul %x, %u : (tensor<4x64xf32>, tensor<96x64x!kiln.q4_0>) -> tensor<4x96xf32>
  %h = kiln.mul %b, %s : tensor<4x96xf32>
  return %h : tensor<4x96xf32>
}

// -----

// Gate and up in two formats (a k-quant mix) keep their own kernels.
// CHECK-LABEL: func.func @swiglu_mixed
// CHECK: kiln.silu
// CHECK: kiln.mul
// CHECK-NOT: swiglu_matmul
func.func @swiglu_mixed(%x: tensor<4x64xf32>) -> tensor<4x96xf32> {
  %g = kiln.weight "blk.0.ffn_gate.weight" : tensor<96x64x!kiln.q4_0>
  %a = kiln.matmul %x, %g : (tensor<4x64xf32>, tensor<96x64x!kiln.q4_0>) -> tensor<4x96xf32>
  %s = kiln.silu %a : tensor<4x96xf32>
  %u = kiln.weight "blk.0.ffn_up.weight" : tensor<96x64x!kiln.q8_0>
  %b = kiln.matmul %x, %u : (tensor<4x64xf32>, tensor<96x64x!kiln.q8_0>) -> tensor<4x96xf32>
  %h = kiln.mul %s, %b : tensor<4x96xf32>
  return %h : tensor<4x96xf32>
}

// -----

// qkv: the three projections, the rope of queries and keys and both cache
// writes, as the attention reads them.
// CHECK-LABEL: func.func @qkv
// CHECK: %[[KC:.*]] = kiln.kv_cache key layer 0
// CHECK: %[[VC:.*]] = kiln.kv_cache value layer 0
// CHECK-NEXT: %[[Q:.*]], %[[K:.*]], %[[V:.*]] = kiln.qkv_matmul %arg0, %{{.*}}, %{{.*}}, %{{.*}} into %[[KC]], %[[VC]] at %arg1 {freq_base = 1.000000e+04 : f32, head_dim = 16 : i32, rope_dim = 16 : i32} : (tensor<4x64xf32>, tensor<64x64x!kiln.q8_0>, tensor<32x64x!kiln.q8_0>, tensor<32x64x!kiln.q8_0>, tensor<16x32xf16>, tensor<16x32xf16>, i32) -> (tensor<4x64xf32>, tensor<16x32xf16>, tensor<16x32xf16>)
// CHECK-NEXT: %[[A:.*]] = kiln.attention %[[Q]], %[[K]], %[[V]] at %arg1
// CHECK-NOT: kiln.rope
// CHECK-NOT: kiln.kv_write
// RESIDUAL-ONLY-LABEL: func.func @qkv
// RESIDUAL-ONLY: kiln.rope
// RESIDUAL-ONLY: kiln.kv_write
func.func @qkv(%x: tensor<4x64xf32>, %pos: i32) -> tensor<4x64xf32> {
  %wq = kiln.weight "blk.0.attn_q.weight" : tensor<64x64x!kiln.q8_0>
  %q = kiln.matmul %x, %wq : (tensor<4x64xf32>, tensor<64x64x!kiln.q8_0>) -> tensor<4x64xf32>
  %qr = kiln.rope %q at %pos {freq_base = 1.0e4 : f32, head_dim = 16 : i32, rope_dim = 16 : i32} : tensor<4x64xf32>
  %wk = kiln.weight "blk.0.attn_k.weight" : tensor<32x64x!kiln.q8_0>
  %k = kiln.matmul %x, %wk : (tensor<4x64xf32>, tensor<32x64x!kiln.q8_0>) -> tensor<4x32xf32>
  %kr = kiln.rope %k at %pos {freq_base = 1.0e4 : f32, head_dim = 16 : i32, rope_dim = 16 : i32} : tensor<4x32xf32>
  %wv = kiln.weight "blk.0.attn_v.weight" : tensor<32x64x!kiln.q8_0>
  %v = kiln.matmul %x, %wv : (tensor<4x64xf32>, tensor<32x64x!kiln.q8_0>) -> tensor<4x32xf32>
  %kc = kiln.kv_cache key layer 0 : tensor<16x32xf16>
  %kc1 = kiln.kv_write %kr into %kc at %pos : tensor<4x32xf32> -> tensor<16x32xf16>
  %vc = kiln.kv_cache value layer 0 : tensor<16x32xf16>
  %vc1 = kiln.kv_write %v into %vc at %pos : tensor<4x32xf32> -> tensor<16x32xf16>
  %a = kiln.attention %qr, %kc1, %vc1 at %pos {head_dim = 16 : i32, n_head = 4 : i32, n_kv_head = 2 : i32}
      : tensor<4x64xf32>, tensor<16x32xf16>, tensor<16x32xf16> -> tensor<4x64xf32>
  return %a : tensor<4x64xf32>
}

// -----

// Keys roped differently from the queries are not fused.
// CHECK-LABEL: func.func @qkv_other_rope
// CHECK-NOT: qkv_matmul
func.func @qkv_other_rope(%x: tensor<4x64xf32>, %pos: i32) -> tensor<4x64xf32> {
  %wq = kiln.weight "blk.0.attn_q.weight" : tensor<64x64xf32>
  %q = kiln.matmul %x, %wq : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %qr = kiln.rope %q at %pos {freq_base = 1.0e4 : f32, head_dim = 16 : i32, rope_dim = 16 : i32} : tensor<4x64xf32>
  %wk = kiln.weight "blk.0.attn_k.weight" : tensor<32x64xf32>
  %k = kiln.matmul %x, %wk : (tensor<4x64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  %kr = kiln.rope %k at %pos {freq_base = 5.0e5 : f32, head_dim = 16 : i32, rope_dim = 16 : i32} : tensor<4x32xf32>
  %wv = kiln.weight "blk.0.attn_v.weight" : tensor<32x64xf32>
  %v = kiln.matmul %x, %wv : (tensor<4x64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  %kc = kiln.kv_cache key layer 0 : tensor<16x32xf32>
  %kc1 = kiln.kv_write %kr into %kc at %pos : tensor<4x32xf32> -> tensor<16x32xf32>
  %vc = kiln.kv_cache value layer 0 : tensor<16x32xf32>
  %vc1 = kiln.kv_write %v into %vc at %pos : tensor<4x32xf32> -> tensor<16x32xf32>
  %a = kiln.attention %qr, %kc1, %vc1 at %pos {head_dim = 16 : i32, n_head = 4 : i32, n_kv_head = 2 : i32}
      : tensor<4x64xf32>, tensor<16x32xf32>, tensor<16x32xf32> -> tensor<4x64xf32>
  return %a : tensor<4x64xf32>
}

// -----

// norm: an rms_norm used only by a swiglu (or qkv) matmul over int8 weights
// moves into it; over float weights it stays.
// CHECK-LABEL: func.func @norm
// CHECK-NOT: kiln.rms_norm
// CHECK: kiln.swiglu_matmul %arg0, %{{.*}}, %{{.*}} normed by %[[G:.*]] {epsilon = 9.99999974E-6 : f32} : (tensor<4x64xf32>, tensor<96x64x!kiln.q8_0>, tensor<96x64x!kiln.q8_0>, tensor<64xf32>) -> tensor<4x96xf32>
// CHECK: kiln.rms_norm %arg0
// CHECK: kiln.swiglu_matmul %{{[0-9]+}}, %{{.*}}, %{{.*}} : (tensor<4x64xf32>, tensor<96x64xf16>, tensor<96x64xf16>) -> tensor<4x96xf32>
func.func @norm(%x: tensor<4x64xf32>) -> (tensor<4x96xf32>, tensor<4x96xf32>) {
  %g = kiln.weight "blk.0.ffn_norm.weight" : tensor<64xf32>
  %n = kiln.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : tensor<4x64xf32>, tensor<64xf32>
  %wg = kiln.weight "blk.0.ffn_gate.weight" : tensor<96x64x!kiln.q8_0>
  %a = kiln.matmul %n, %wg : (tensor<4x64xf32>, tensor<96x64x!kiln.q8_0>) -> tensor<4x96xf32>
  %s = kiln.silu %a : tensor<4x96xf32>
  %wu = kiln.weight "blk.0.ffn_up.weight" : tensor<96x64x!kiln.q8_0>
  %b = kiln.matmul %n, %wu : (tensor<4x64xf32>, tensor<96x64x!kiln.q8_0>) -> tensor<4x96xf32>
  %h = kiln.mul %s, %b : tensor<4x96xf32>
  %n2 = kiln.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : tensor<4x64xf32>, tensor<64xf32>
  %fg = kiln.weight "blk.1.ffn_gate.weight" : tensor<96x64xf16>
  %c = kiln.matmul %n2, %fg : (tensor<4x64xf32>, tensor<96x64xf16>) -> tensor<4x96xf32>
  %t = kiln.silu %c : tensor<4x96xf32>
  %fu = kiln.weight "blk.1.ffn_up.weight" : tensor<96x64xf16>
  %d = kiln.matmul %n2, %fu : (tensor<4x64xf32>, tensor<96x64xf16>) -> tensor<4x96xf32>
  %h2 = kiln.mul %t, %d : tensor<4x96xf32>
  return %h, %h2 : tensor<4x96xf32>, tensor<4x96xf32>
}

// BAD: error: fuse: unknown pattern 'gelu' (residual, swiglu, qkv, norm)
