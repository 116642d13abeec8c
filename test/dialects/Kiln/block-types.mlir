// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --kiln-pack-layout | FileCheck %s --check-prefix=LAYOUT

// The GGUF block formats parse, print and size as in the model file.
// CHECK-LABEL: func.func @block_weights
func.func @block_weights() {
  // CHECK: tensor<8x256x!kiln.q4_k>
  // LAYOUT: kiln.weight "a" {kiln.segment = #kiln.segment<offset = {{[0-9]+}}, bytes = 1152, layer = -1>} : tensor<8x256x!kiln.q4_k>
  %a = kiln.weight "a" : tensor<8x256x!kiln.q4_k>
  // CHECK: tensor<8x256x!kiln.q6_k>
  // LAYOUT: bytes = 1680
  %b = kiln.weight "b" : tensor<8x256x!kiln.q6_k>
  // CHECK: tensor<8x256x!kiln.q2_k>
  // LAYOUT: bytes = 672
  %c = kiln.weight "c" : tensor<8x256x!kiln.q2_k>
  // CHECK: tensor<8x256x!kiln.q3_k>
  // LAYOUT: bytes = 880
  %d = kiln.weight "d" : tensor<8x256x!kiln.q3_k>
  // CHECK: tensor<8x256x!kiln.q5_k>
  // LAYOUT: bytes = 1408
  %e = kiln.weight "e" : tensor<8x256x!kiln.q5_k>
  // CHECK: tensor<8x64x!kiln.q4_1>
  // LAYOUT: bytes = 320
  %f = kiln.weight "f" : tensor<8x64x!kiln.q4_1>
  // CHECK: tensor<8x64x!kiln.q5_0>
  // LAYOUT: bytes = 352
  %g = kiln.weight "g" : tensor<8x64x!kiln.q5_0>
  // CHECK: tensor<8x64x!kiln.q5_1>
  // LAYOUT: bytes = 384
  %h = kiln.weight "h" : tensor<8x64x!kiln.q5_1>
  // CHECK: tensor<8x64x!kiln.iq4_nl>
  // LAYOUT: bytes = 288
  %i = kiln.weight "i" : tensor<8x64x!kiln.iq4_nl>
  // CHECK: tensor<8x64xbf16>
  // LAYOUT: bytes = 1024
  %j = kiln.weight "j" : tensor<8x64xbf16>
  return
}
