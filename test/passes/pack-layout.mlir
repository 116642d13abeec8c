// RUN: kiln-opt %s --kiln-pack-layout | FileCheck %s

// Segments are 64-byte aligned, each layer starts on a 4096-byte page, and a
// tensor used twice (tied output, or by two functions) has one segment.
// CHECK: module attributes {kiln.pack_data_bytes = 16384 : i64}
func.func @f(%tokens: tensor<1xi32>) -> tensor<1x64xf32> {
  // CHECK: kiln.weight "token_embd.weight" {kiln.segment = #kiln.segment<offset = 0, bytes = 2176, layer = -1>} : tensor<64x32x!kiln.q8_0>
  %t = kiln.weight "token_embd.weight" : tensor<64x32x!kiln.q8_0>
  %x = kiln.embed %t[%tokens] : (tensor<64x32x!kiln.q8_0>, tensor<1xi32>) -> tensor<1x32xf32>
  // CHECK: kiln.weight "blk.0.attn_norm.weight" {kiln.segment = #kiln.segment<offset = 4096, bytes = 124, layer = 0>} : tensor<31xf32>
  %n = kiln.weight "blk.0.attn_norm.weight" : tensor<31xf32>
  // CHECK: kiln.weight "blk.0.attn_q.weight" {kiln.segment = #kiln.segment<offset = 4224, bytes = 576, layer = 0>} : tensor<32x32x!kiln.q4_0>
  %q = kiln.weight "blk.0.attn_q.weight" : tensor<32x32x!kiln.q4_0>
  // CHECK: kiln.weight "blk.1.attn_q.weight" {kiln.segment = #kiln.segment<offset = 8192, bytes = 2048, layer = 1>} : tensor<32x32xf16>
  %q1 = kiln.weight "blk.1.attn_q.weight" : tensor<32x32xf16>
  // CHECK: kiln.weight "output_norm.weight" {kiln.segment = #kiln.segment<offset = 12288, bytes = 128, layer = -1>} : tensor<32xf32>
  %on = kiln.weight "output_norm.weight" : tensor<32xf32>
  // CHECK: kiln.weight "token_embd.weight" {kiln.segment = #kiln.segment<offset = 0, bytes = 2176, layer = -1>}
  %t2 = kiln.weight "token_embd.weight" : tensor<64x32x!kiln.q8_0>
  %y = kiln.matmul %x, %t2 : (tensor<1x32xf32>, tensor<64x32x!kiln.q8_0>) -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}
