// RUN: kiln-opt %s --kiln-fuse-attention --canonicalize -split-input-file | FileCheck %s
// An encoder's attention as imported graphs write it becomes one kiln.attend,
// the scales (a division of the queries, a product of the scores) multiplied
// into its scale, the additive mask its bias; leading batch dimensions merge.

// CHECK-LABEL: func.func @scaled_queries_and_mask
// CHECK-SAME: (%[[Q:.*]]: tensor<4x16x8xf32>, %[[KT:.*]]: tensor<4x8x16xf32>, %[[V:.*]]: tensor<4x16x8xf32>, %[[M:.*]]: tensor<4x16x16xf32>)
// CHECK-NEXT: %[[O:.*]] = kiln.attend %[[Q]], %[[KT]], %[[V]] bias %[[M]] {scale = 1.250000e-01 : f32}
// CHECK-NEXT: return %[[O]]
func.func @scaled_queries_and_mask(%q: tensor<4x16x8xf32>, %kt: tensor<4x8x16xf32>, %v: tensor<4x16x8xf32>,
                                   %m: tensor<4x16x16xf32>) -> tensor<4x16x8xf32> {
  %c = kiln.splat 4.0 : tensor<4x16x8xf32>
  %qs = kiln.div %q, %c : tensor<4x16x8xf32>
  %s = kiln.batch_matmul %qs, %kt : (tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<4x16x16xf32>
  %h = kiln.splat 0.5 : tensor<4x16x16xf32>
  %ss = kiln.mul %h, %s : tensor<4x16x16xf32>
  %b = kiln.add %m, %ss : tensor<4x16x16xf32>
  %p = kiln.softmax %b : tensor<4x16x16xf32>
  %o = kiln.batch_matmul %p, %v : (tensor<4x16x16xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  return %o : tensor<4x16x8xf32>
}

// -----

// CHECK-LABEL: func.func @heads_of_a_batch
// CHECK: %[[Q3:.*]] = kiln.reshape %{{.*}} : tensor<1x2x8x4xf32> -> tensor<2x8x4xf32>
// CHECK: %[[O:.*]] = kiln.attend %[[Q3]], %{{.*}}, %{{.*}} {scale = 1.000000e+00 : f32} : (tensor<2x8x4xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
// CHECK: kiln.reshape %[[O]] : tensor<2x8x4xf32> -> tensor<1x2x8x4xf32>
func.func @heads_of_a_batch(%q: tensor<1x2x8x4xf32>, %kt: tensor<1x2x4x8xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %s = kiln.batch_matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %p = kiln.softmax %s : tensor<1x2x8x8xf32>
  %o = kiln.batch_matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// The scores have another use: nothing fuses.
// CHECK-LABEL: func.func @scores_read_twice
// CHECK: kiln.softmax
// CHECK: kiln.batch_matmul
// CHECK-NOT: kiln.attend
func.func @scores_read_twice(%q: tensor<2x4x4xf32>, %kt: tensor<2x4x4xf32>, %v: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %s = kiln.batch_matmul %q, %kt : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = kiln.softmax %s : tensor<2x4x4xf32>
  %o = kiln.batch_matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %o, %s : tensor<2x4x4xf32>, tensor<2x4x4xf32>
}
