// RUN: kiln-opt %s --kiln-quantize="kv=q4" --split-input-file -verify-diagnostics | FileCheck %s

// --kv-type=q4: the cache in q4_1 blocks, groups of 32 with a scale and a
// minimum, per head and position.
// CHECK-LABEL: func.func @q4
func.func @q4(%q: tensor<2x64xf32>, %k: tensor<2x64xf32>, %v: tensor<2x64xf32>, %pos: i32) -> tensor<2x64xf32> {
  // CHECK: kiln.kv_cache key layer 0 : tensor<8x64x!kiln.q4_1>
  // CHECK: kiln.kv_write {{.*}} : tensor<2x64xf32> -> tensor<8x64x!kiln.q4_1>
  // CHECK: kiln.attention {{.*}} : tensor<2x64xf32>, tensor<8x64x!kiln.q4_1>, tensor<8x64x!kiln.q4_1> -> tensor<2x64xf32>
  %kc = kiln.kv_cache key layer 0 : tensor<8x64xf32>
  %vc = kiln.kv_cache value layer 0 : tensor<8x64xf32>
  %kc1 = kiln.kv_write %k into %kc at %pos : tensor<2x64xf32> -> tensor<8x64xf32>
  %vc1 = kiln.kv_write %v into %vc at %pos : tensor<2x64xf32> -> tensor<8x64xf32>
  %o = kiln.attention %q, %kc1, %vc1 at %pos {n_head = 2 : i32, n_kv_head = 2 : i32, head_dim = 32 : i32} : tensor<2x64xf32>, tensor<8x64xf32>, tensor<8x64xf32> -> tensor<2x64xf32>
  return %o : tensor<2x64xf32>
}

// -----

// A head dimension that is not whole groups of 32 is refused.
func.func @odd(%q: tensor<2x64xf32>, %k: tensor<2x32xf32>, %v: tensor<2x32xf32>, %pos: i32) -> tensor<2x64xf32> {
  %kc = kiln.kv_cache key layer 0 : tensor<8x32xf32>
  %vc = kiln.kv_cache value layer 0 : tensor<8x32xf32>
  %kc1 = kiln.kv_write %k into %kc at %pos : tensor<2x32xf32> -> tensor<8x32xf32>
  %vc1 = kiln.kv_write %v into %vc at %pos : tensor<2x32xf32> -> tensor<8x32xf32>
  // expected-error @+1 {{a q4 KV cache (groups of 32) needs a head dimension that is a multiple of 32, got 16}}
  %o = kiln.attention %q, %kc1, %vc1 at %pos {n_head = 4 : i32, n_kv_head = 2 : i32, head_dim = 16 : i32} : tensor<2x64xf32>, tensor<8x32xf32>, tensor<8x32xf32> -> tensor<2x64xf32>
  return %o : tensor<2x64xf32>
}

// -----

// A head-major cache over the whole context (max_context 20) takes whole tiles
// of 16 positions: its rows rounded up to 32, its layout tiled. A ring (rows
// below the context) keeps its rows.
// CHECK-LABEL: func.func @tiles
module attributes {kiln.model = #kiln.model<max_context = 20, kv_layout = head_major>} {
func.func @tiles(%q: tensor<2x64xf32>, %k: tensor<2x64xf32>, %v: tensor<2x64xf32>, %pos: i32) -> (tensor<2x64xf32>, tensor<2x64xf32>) {
  // CHECK: kiln.kv_cache key layer 0 : tensor<32x64x!kiln.q4_1, #kiln.kv<head_major, heads = 2, tile = 16>>
  // CHECK: kiln.kv_cache value layer 0 : tensor<32x64x!kiln.q4_1, #kiln.kv<head_major, heads = 2, tile = 16>>
  // CHECK: kiln.kv_cache key layer 1 : tensor<9x64x!kiln.q4_1, #kiln.kv<head_major, heads = 2>>
  %kc = kiln.kv_cache key layer 0 : tensor<20x64xf32, #kiln.kv<head_major, heads = 2>>
  %vc = kiln.kv_cache value layer 0 : tensor<20x64xf32, #kiln.kv<head_major, heads = 2>>
  %kc1 = kiln.kv_write %k into %kc at %pos : tensor<2x64xf32> -> tensor<20x64xf32, #kiln.kv<head_major, heads = 2>>
  %vc1 = kiln.kv_write %v into %vc at %pos : tensor<2x64xf32> -> tensor<20x64xf32, #kiln.kv<head_major, heads = 2>>
  %o = kiln.attention %q, %kc1, %vc1 at %pos {n_head = 2 : i32, n_kv_head = 2 : i32, head_dim = 32 : i32} : tensor<2x64xf32>, tensor<20x64xf32, #kiln.kv<head_major, heads = 2>>, tensor<20x64xf32, #kiln.kv<head_major, heads = 2>> -> tensor<2x64xf32>
  %rk = kiln.kv_cache key layer 1 : tensor<9x64xf32, #kiln.kv<head_major, heads = 2>>
  %rv = kiln.kv_cache value layer 1 : tensor<9x64xf32, #kiln.kv<head_major, heads = 2>>
  %rk1 = kiln.kv_write %k into %rk at %pos : tensor<2x64xf32> -> tensor<9x64xf32, #kiln.kv<head_major, heads = 2>>
  %rv1 = kiln.kv_write %v into %rv at %pos : tensor<2x64xf32> -> tensor<9x64xf32, #kiln.kv<head_major, heads = 2>>
  %r = kiln.attention %q, %rk1, %rv1 at %pos {n_head = 2 : i32, n_kv_head = 2 : i32, head_dim = 32 : i32, window = 8 : i32} : tensor<2x64xf32>, tensor<9x64xf32, #kiln.kv<head_major, heads = 2>>, tensor<9x64xf32, #kiln.kv<head_major, heads = 2>> -> tensor<2x64xf32>
  return %o, %r : tensor<2x64xf32>, tensor<2x64xf32>
}
}

// -----

// A pos-major cache keeps its rows.
// CHECK-LABEL: func.func @rows
module attributes {kiln.model = #kiln.model<max_context = 20>} {
func.func @rows(%q: tensor<2x64xf32>, %k: tensor<2x64xf32>, %v: tensor<2x64xf32>, %pos: i32) -> tensor<2x64xf32> {
  // CHECK: kiln.kv_cache key layer 0 : tensor<20x64x!kiln.q4_1, #kiln.kv<pos_major, heads = 2>>
  %kc = kiln.kv_cache key layer 0 : tensor<20x64xf32, #kiln.kv<pos_major, heads = 2>>
  %vc = kiln.kv_cache value layer 0 : tensor<20x64xf32, #kiln.kv<pos_major, heads = 2>>
  %kc1 = kiln.kv_write %k into %kc at %pos : tensor<2x64xf32> -> tensor<20x64xf32, #kiln.kv<pos_major, heads = 2>>
  %vc1 = kiln.kv_write %v into %vc at %pos : tensor<2x64xf32> -> tensor<20x64xf32, #kiln.kv<pos_major, heads = 2>>
  %o = kiln.attention %q, %kc1, %vc1 at %pos {n_head = 2 : i32, n_kv_head = 2 : i32, head_dim = 32 : i32} : tensor<2x64xf32>, tensor<20x64xf32, #kiln.kv<pos_major, heads = 2>>, tensor<20x64xf32, #kiln.kv<pos_major, heads = 2>> -> tensor<2x64xf32>
  return %o : tensor<2x64xf32>
}
}
