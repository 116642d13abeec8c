// RUN: kiln-opt %s --canonicalize | FileCheck %s
// Chains of the importer's reshapes and transposes fold into one; identities
// (a reshape, cast or broadcast to the same type, a transpose by the identity
// permutation) fold away.

// CHECK-LABEL: func.func @reshape_chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<24xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %a = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %b = kiln.reshape %a : tensor<6x4xf32> -> tensor<24xf32>
  return %b : tensor<24xf32>
}

// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = kiln.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %b = kiln.reshape %a : tensor<6xf32> -> tensor<2x3xf32>
  return %b : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @transpose_chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = kiln.transpose %[[X]] [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_chain(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %a = kiln.transpose %x [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %b = kiln.transpose %a [2, 1, 0] : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  return %b : tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @transpose_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %a = kiln.transpose %x [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %b = kiln.transpose %a [0, 2, 1] : tensor<2x4x3xf32> -> tensor<2x3x4xf32>
  return %b : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xi1>)
// CHECK-NEXT: return %[[X]]
func.func @identities(%x: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %a = kiln.cast %x : tensor<2x3xi1> -> tensor<2x3xi1>
  %b = kiln.broadcast %a : tensor<2x3xi1> -> tensor<2x3xi1>
  return %b : tensor<2x3xi1>
}

// A 2-D weight transposed is the weight read transposed (the pack stores it
// so); transposed back, it is the weight as stored.
// CHECK-LABEL: func.func @weight_transposed
// CHECK-NEXT: %[[T:.*]] = kiln.weight "w" {transposed} : tensor<3x2xf32>
// CHECK-NEXT: %[[W:.*]] = kiln.weight "w" : tensor<2x3xf32>
// CHECK-NEXT: return %[[T]], %[[W]]
func.func @weight_transposed() -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %w = kiln.weight "w" : tensor<2x3xf32>
  %t = kiln.transpose %w [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %b = kiln.transpose %t [1, 0] : tensor<3x2xf32> -> tensor<2x3xf32>
  return %t, %b : tensor<3x2xf32>, tensor<2x3xf32>
}

// A row of the rows' width broadcast and added is a bias added to the rows,
// through a reshape that keeps the width; another broadcast stays an add.
// CHECK-LABEL: func.func @bias_rows
// CHECK-SAME: (%[[X:.*]]: tensor<6x4xf32>, %[[B:.*]]: tensor<1x1x4xf32>, %[[C:.*]]: tensor<2x1x4xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[B]] : tensor<1x1x4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[S:.*]] = kiln.bias_add %[[X]], %[[R]] : tensor<6x4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[Y:.*]] = kiln.reshape %[[S]] : tensor<6x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[D:.*]] = kiln.broadcast %[[C]]
// CHECK-NEXT: %[[Z:.*]] = kiln.add %[[Y]], %[[D]]
// CHECK-NEXT: return %[[Z]]
func.func @bias_rows(%x: tensor<6x4xf32>, %b: tensor<1x1x4xf32>, %c: tensor<2x1x4xf32>) -> tensor<2x3x4xf32> {
  %r = kiln.reshape %x : tensor<6x4xf32> -> tensor<2x3x4xf32>
  %bb = kiln.broadcast %b : tensor<1x1x4xf32> -> tensor<2x3x4xf32>
  %y = kiln.add %bb, %r : tensor<2x3x4xf32>
  %cb = kiln.broadcast %c : tensor<2x1x4xf32> -> tensor<2x3x4xf32>
  %z = kiln.add %y, %cb : tensor<2x3x4xf32>
  return %z : tensor<2x3x4xf32>
}

// A transpose that moves only dimensions of size 1 is a reshape; one that
// reorders two larger dimensions stays.
// CHECK-LABEL: func.func @transpose_unit_dims
// CHECK-SAME: (%[[X:.*]]: tensor<5x1x4xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[X]] : tensor<5x1x4xf32> -> tensor<1x5x4xf32>
// CHECK-NEXT: %[[T:.*]] = kiln.transpose %[[X]] [2, 1, 0] : tensor<5x1x4xf32> -> tensor<4x1x5xf32>
// CHECK-NEXT: return %[[R]], %[[T]]
func.func @transpose_unit_dims(%x: tensor<5x1x4xf32>) -> (tensor<1x5x4xf32>, tensor<4x1x5xf32>) {
  %a = kiln.transpose %x [1, 0, 2] : tensor<5x1x4xf32> -> tensor<1x5x4xf32>
  %b = kiln.transpose %x [2, 1, 0] : tensor<5x1x4xf32> -> tensor<4x1x5xf32>
  return %a, %b : tensor<1x5x4xf32>, tensor<4x1x5xf32>
}

// attend's bias broadcast over the queries becomes one row per batch
// ([B, 1, T]); a mask shared by the heads is broadcast over them only. A
// bias that differs per query stays.
// CHECK-LABEL: func.func @attend_row_bias
// CHECK-SAME: (%[[Q:.*]]: tensor<4x6x8xf32>, %[[K:.*]]: tensor<4x8x6xf32>, %[[M:.*]]: tensor<4x1x6xf32>, %[[H:.*]]: tensor<1x1x6xf32>, %[[F:.*]]: tensor<4x6x6xf32>)
// CHECK-NEXT: %[[A:.*]] = kiln.attend %[[Q]], %[[K]], %[[Q]] bias %[[M]] {{.*}} tensor<4x1x6xf32>) -> tensor<4x6x8xf32>
// CHECK-NEXT: %[[HB:.*]] = kiln.broadcast %[[H]] : tensor<1x1x6xf32> -> tensor<4x1x6xf32>
// CHECK-NEXT: %[[B:.*]] = kiln.attend %[[Q]], %[[K]], %[[Q]] bias %[[HB]] {{.*}} tensor<4x1x6xf32>) -> tensor<4x6x8xf32>
// CHECK-NEXT: %[[C:.*]] = kiln.attend %[[Q]], %[[K]], %[[Q]] bias %[[F]] {{.*}} tensor<4x6x6xf32>) -> tensor<4x6x8xf32>
func.func @attend_row_bias(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %m: tensor<4x1x6xf32>,
                           %h: tensor<1x1x6xf32>, %f: tensor<4x6x6xf32>)
    -> (tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>) {
  %mb = kiln.broadcast %m : tensor<4x1x6xf32> -> tensor<4x6x6xf32>
  %a = kiln.attend %q, %kt, %q bias %mb {scale = 0.35 : f32}
      : (tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<4x6x8xf32>, tensor<4x6x6xf32>) -> tensor<4x6x8xf32>
  %hb = kiln.broadcast %h : tensor<1x1x6xf32> -> tensor<4x6x6xf32>
  %b = kiln.attend %q, %kt, %q bias %hb {scale = 0.35 : f32}
      : (tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<4x6x8xf32>, tensor<4x6x6xf32>) -> tensor<4x6x8xf32>
  %c = kiln.attend %q, %kt, %q bias %f {scale = 0.35 : f32}
      : (tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<4x6x8xf32>, tensor<4x6x6xf32>) -> tensor<4x6x8xf32>
  return %a, %b, %c : tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>
}

// A weight read by nothing but a reshape is the weight in the new shape (a
// convolution kernel as matmul rows); one read transposed, or read twice,
// keeps its reshape.
// CHECK-LABEL: func.func @reshape_weight
// CHECK-NEXT: %[[W:.*]] = kiln.weight "conv" : tensor<4x12xf32>
// CHECK-NEXT: %[[S:.*]] = kiln.weight "shared" : tensor<2x6xf32>
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[S]] : tensor<2x6xf32> -> tensor<12xf32>
// CHECK-NEXT: return %[[W]], %[[R]], %[[S]]
func.func @reshape_weight() -> (tensor<4x12xf32>, tensor<12xf32>, tensor<2x6xf32>) {
  %w = kiln.weight "conv" : tensor<4x3x2x2xf32>
  %r = kiln.reshape %w : tensor<4x3x2x2xf32> -> tensor<4x12xf32>
  %s = kiln.weight "shared" : tensor<2x6xf32>
  %t = kiln.reshape %s : tensor<2x6xf32> -> tensor<12xf32>
  return %r, %t, %s : tensor<4x12xf32>, tensor<12xf32>, tensor<2x6xf32>
}
