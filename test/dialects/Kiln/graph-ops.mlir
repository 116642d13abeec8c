// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// The graph ops of imported ONNX graphs print and parse back.

// CHECK-LABEL: func.func @encoder_ops
func.func @encoder_ops(%x: tensor<1x8x16xf32>, %ids: tensor<1x8xi64>, %m: tensor<1x8xi64>) -> tensor<1x2x8x8xf32> {
  // CHECK: kiln.constant "scale" : tensor<f32>
  %c = kiln.constant "scale" : tensor<f32>
  // CHECK: kiln.reshape %{{.*}} : tensor<f32> -> tensor<1x1x1xf32>
  %c3 = kiln.reshape %c : tensor<f32> -> tensor<1x1x1xf32>
  // CHECK: kiln.broadcast %{{.*}} : tensor<1x1x1xf32> -> tensor<1x8x16xf32>
  %cb = kiln.broadcast %c3 : tensor<1x1x1xf32> -> tensor<1x8x16xf32>
  // CHECK: kiln.splat 1.000000e+00 : tensor<1x8x16xf32>
  %one = kiln.splat 1.0 : tensor<1x8x16xf32>
  %s = kiln.sub %x, %one : tensor<1x8x16xf32>
  %d = kiln.div %s, %cb : tensor<1x8x16xf32>
  %p = kiln.pow %d, %cb : tensor<1x8x16xf32>
  %r = kiln.sqrt %p : tensor<1x8x16xf32>
  %e = kiln.erf %r : tensor<1x8x16xf32>
  %t = kiln.tanh %e : tensor<1x8x16xf32>
  // CHECK: kiln.gelu_erf %{{.*}} : tensor<1x8x16xf32>
  %g = kiln.gelu_erf %t : tensor<1x8x16xf32>
  // CHECK: kiln.reduce_mean %{{.*}} [2] : tensor<1x8x16xf32> -> tensor<1x8x1xf32>
  %mean = kiln.reduce_mean %g [2] : tensor<1x8x16xf32> -> tensor<1x8x1xf32>
  %z = kiln.constant "zero" : tensor<1x8xi64>
  // CHECK: kiln.equal %{{.*}}, %{{.*}} : tensor<1x8xi64> -> tensor<1x8xi1>
  %eq = kiln.equal %m, %z : tensor<1x8xi64> -> tensor<1x8xi1>
  %mf = kiln.cast %m : tensor<1x8xi64> -> tensor<1x8xf32>
  // CHECK: kiln.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x8xi1>, tensor<1x8xf32>
  %w = kiln.where %eq, %mf, %mf : tensor<1x8xi1>, tensor<1x8xf32>
  %table = kiln.constant "table" : tensor<10x4xf32>
  // CHECK: kiln.gather %{{.*}}[%{{.*}}] {axis = 0 : i64}
  %rows = kiln.gather %table[%ids] {axis = 0 : i64} : (tensor<10x4xf32>, tensor<1x8xi64>) -> tensor<1x8x4xf32>
  // CHECK: kiln.concat %{{.*}}, %{{.*}} {axis = 2 : i64}
  %cat = kiln.concat %rows, %rows {axis = 2 : i64} : (tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<1x8x8xf32>
  // CHECK: kiln.slice %{{.*}} from [0, 0, 8] by [1, 1, 1] : tensor<1x8x16xf32> -> tensor<1x8x8xf32>
  %half = kiln.slice %g from [0, 0, 8] by [1, 1, 1] : tensor<1x8x16xf32> -> tensor<1x8x8xf32>
  %h = kiln.reshape %half : tensor<1x8x8xf32> -> tensor<1x8x2x4xf32>
  // CHECK: kiln.transpose %{{.*}} [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %q = kiln.transpose %h [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %k = kiln.transpose %q [0, 1, 3, 2] : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  // CHECK: kiln.batch_matmul %{{.*}}, %{{.*}} : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %scores = kiln.batch_matmul %q, %k : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  return %scores : tensor<1x2x8x8xf32>
}
