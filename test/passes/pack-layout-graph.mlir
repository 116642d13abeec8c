// RUN: kiln-opt %s --kiln-pack-layout | FileCheck %s

// An imported graph's tensors: a weight read transposed is a segment of its
// own beside the weight as stored (the pack holds both layouts), and a
// constant (indices, masks) has a segment too.
// CHECK: module attributes {kiln.pack_data_bytes = 4096 : i64}
func.func @run(%x: tensor<2x4xf32>, %i: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  // CHECK: kiln.weight "w" {kiln.segment = #kiln.segment<offset = 0, bytes = 48, layer = -1>, transposed} : tensor<3x4xf32>
  %wt = kiln.weight "w" {transposed} : tensor<3x4xf32>
  %y = kiln.matmul %x, %wt : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.weight "w" {kiln.segment = #kiln.segment<offset = 64, bytes = 48, layer = -1>} : tensor<4x3xf32>
  %w = kiln.weight "w" : tensor<4x3xf32>
  // CHECK: kiln.constant "idx" {kiln.segment = #kiln.segment<offset = 128, bytes = 16, layer = -1>} : tensor<2xi64>
  %c = kiln.constant "idx" : tensor<2xi64>
  %m = kiln.equal %i, %c : tensor<2xi64> -> tensor<2xi1>
  %t = kiln.weight "table" : tensor<5x4xf32>
  %g = kiln.gather %t[%i] {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %r = kiln.reshape %w : tensor<4x3xf32> -> tensor<3x4xf32>
  return %y, %g, %g : tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
