// RUN: kiln-opt %s --kiln-plan-memory --split-input-file | FileCheck %s

// A chain of elementwise ops reuses one buffer; the KV cache comes first.
// CHECK-LABEL: module attributes {kiln.arena_bytes = 2304 : i64, kiln.kv_bytes = 2048 : i64}
// CHECK: func.func @chain{{.*}}attributes {kiln.activation_bytes = 256 : i64, kiln.activation_lower_bound = 256 : i64}
func.func @chain(%tokens: tensor<2xi32>, %pos: i32) -> tensor<2x32xf32> {
  %kc = kiln.kv_cache key layer 0 : tensor<16x16xf32>
  // CHECK: kiln.kv_cache value layer 0 {kiln.slot = #kiln.slot<offset = 1024, bytes = 1024>}
  %vc = kiln.kv_cache value layer 0 : tensor<16x16xf32>
  %t = kiln.weight "t" : tensor<8x32xf32>
  // CHECK: kiln.embed {{.*}}slot = #kiln.slot<offset = 2048, bytes = 256>
  %x = kiln.embed %t[%tokens] : (tensor<8x32xf32>, tensor<2xi32>) -> tensor<2x32xf32>
  // CHECK: kiln.silu {{.*}}slot = #kiln.slot<offset = 2048, bytes = 256>
  %s = kiln.silu %x : tensor<2x32xf32>
  // CHECK: kiln.rope {{.*}}slot = #kiln.slot<offset = 2048, bytes = 256>
  %r = kiln.rope %s at %pos {head_dim = 8 : i32, rope_dim = 8 : i32, freq_base = 10000.0 : f32} : tensor<2x32xf32>
  return %r : tensor<2x32xf32>
}

// -----

// %x stays live across the add, so the add cannot write over it: it takes %y's
// buffer, which dies there. %z then reuses nothing live.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: kiln.activation_bytes = 384 : i64, kiln.activation_lower_bound = 384 : i64
func.func @residual(%tokens: tensor<1xi32>, %pos: i32) -> tensor<1x32xf32> {
  %t = kiln.weight "t" : tensor<8x32xf32>
  %w = kiln.weight "w" : tensor<32x32xf32>
  // CHECK: kiln.embed {{.*}}slot = #kiln.slot<offset = [[X:[0-9]+]], bytes = 128>
  %x = kiln.embed %t[%tokens] : (tensor<8x32xf32>, tensor<1xi32>) -> tensor<1x32xf32>
  // CHECK: kiln.matmul {{.*}}slot = #kiln.slot<offset = [[Y:[0-9]+]], bytes = 128>
  %y = kiln.matmul %x, %w : (tensor<1x32xf32>, tensor<32x32xf32>) -> tensor<1x32xf32>
  // CHECK: kiln.add {{.*}}slot = #kiln.slot<offset = [[Y]], bytes = 128>
  %a = kiln.add %y, %x : tensor<1x32xf32>
  // CHECK: kiln.matmul {{.*}}slot = #kiln.slot<offset = [[Z:[0-9]+]], bytes = 128>
  %z = kiln.matmul %a, %w : (tensor<1x32xf32>, tensor<32x32xf32>) -> tensor<1x32xf32>
  // CHECK: kiln.add {{.*}}slot = #kiln.slot<offset = [[Z]], bytes = 128>
  %o = kiln.add %z, %x : tensor<1x32xf32>
  return %o : tensor<1x32xf32>
}

// -----

// Two functions share the cache slots; the arena covers the larger function.
// CHECK-LABEL: module attributes {kiln.arena_bytes = 1280 : i64, kiln.kv_bytes = 1024 : i64}
// CHECK: func.func @big{{.*}}kiln.activation_bytes = 256
// CHECK: kiln.kv_cache key layer 3 {kiln.slot = #kiln.slot<offset = 0, bytes = 1024>}
// CHECK: kiln.kv_write {{.*}}slot = #kiln.slot<offset = 0, bytes = 1024>
// CHECK: func.func @small{{.*}}kiln.activation_bytes = 64
// CHECK: kiln.kv_cache key layer 3 {kiln.slot = #kiln.slot<offset = 0, bytes = 1024>}
func.func @big(%x: tensor<4x16xf32>, %pos: i32) -> tensor<16x16xf32> {
  %kc = kiln.kv_cache key layer 3 : tensor<16x16xf32>
  %s = kiln.silu %x : tensor<4x16xf32>
  %k = kiln.kv_write %s into %kc at %pos : tensor<4x16xf32> -> tensor<16x16xf32>
  %t = kiln.weight "t" : tensor<8x16xf32>
  %tok = kiln.weight "tok" : tensor<8x16xf32>
  return %k : tensor<16x16xf32>
}
func.func @small(%x: tensor<1x16xf32>, %pos: i32) -> tensor<16x16xf32> {
  %kc = kiln.kv_cache key layer 3 : tensor<16x16xf32>
  %s = kiln.silu %x : tensor<1x16xf32>
  %k = kiln.kv_write %s into %kc at %pos : tensor<1x16xf32> -> tensor<16x16xf32>
  return %k : tensor<16x16xf32>
}

// -----

// A graph's reshape is its input's bytes under another shape: it has no slot,
// and its input's buffer lives until the reshape's last reader (here the sub,
// so the tanh may not take it). Inputs and constants are not in the arena.
// CHECK-LABEL: func.func @reshapes
// CHECK-SAME: kiln.activation_bytes = 192 : i64
func.func @reshapes(%x: tensor<2x8xf32>, %c: tensor<16xf32>) -> tensor<16xf32> {
  // CHECK: kiln.constant "k" : tensor<2x8xi64>
  %k = kiln.constant "k" : tensor<2x8xi64>
  // CHECK: kiln.sqrt {{.*}}slot = #kiln.slot<offset = 0, bytes = 64>
  %a = kiln.sqrt %x : tensor<2x8xf32>
  // CHECK: kiln.reshape %{{.*}} : tensor<2x8xf32> -> tensor<16xf32>
  %r = kiln.reshape %a : tensor<2x8xf32> -> tensor<16xf32>
  // CHECK: kiln.tanh {{.*}}slot = #kiln.slot<offset = 64, bytes = 64>
  %b = kiln.tanh %c : tensor<16xf32>
  // CHECK: kiln.sub {{.*}}slot = #kiln.slot<offset = 128, bytes = 64>
  %s = kiln.sub %r, %b : tensor<16xf32>
  return %s : tensor<16xf32>
}
