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
