// RUN: kiln-opt %s --kiln-pack-layout="panel-rows=16" | FileCheck %s
// RUN: kiln-opt %s --kiln-pack-layout | FileCheck %s --check-prefix=ROWS

// With panel-rows, a 2-D weight that only matmuls read is recorded as repacked
// into panels of 16 output rows; its rows are padded to a multiple of 16, so a
// 40-row q4_0 weight of 32 columns takes 48 x 18 bytes. Norm vectors and a table
// that embed also reads (the tied output here) keep the row layout.
func.func @f(%tokens: tensor<1xi32>) -> tensor<1x64xf32> {
  // CHECK: kiln.weight "token_embd.weight" {kiln.segment = #kiln.segment<offset = 0, bytes = 2176, layer = -1>} : tensor<64x32x!kiln.q8_0>
  %t = kiln.weight "token_embd.weight" : tensor<64x32x!kiln.q8_0>
  %x = kiln.embed %t[%tokens] : (tensor<64x32x!kiln.q8_0>, tensor<1xi32>) -> tensor<1x32xf32>
  // CHECK: kiln.weight "blk.0.attn_norm.weight" {kiln.segment = #kiln.segment<offset = 4096, bytes = 128, layer = 0>} : tensor<32xf32>
  %n = kiln.weight "blk.0.attn_norm.weight" : tensor<32xf32>
  %xn = kiln.rms_norm %x, %n {epsilon = 1.0e-5 : f32} : tensor<1x32xf32>, tensor<32xf32>
  // CHECK: kiln.weight "blk.0.attn_q.weight" {kiln.layout = #kiln.panel<rows = 16>, kiln.segment = #kiln.segment<offset = 4224, bytes = 864, layer = 0>} : tensor<40x32x!kiln.q4_0>
  // ROWS: kiln.weight "blk.0.attn_q.weight" {kiln.segment = #kiln.segment<offset = 4224, bytes = 720, layer = 0>} : tensor<40x32x!kiln.q4_0>
  %q = kiln.weight "blk.0.attn_q.weight" : tensor<40x32x!kiln.q4_0>
  %h = kiln.matmul %xn, %q : (tensor<1x32xf32>, tensor<40x32x!kiln.q4_0>) -> tensor<1x40xf32>
  // CHECK: kiln.weight "blk.0.ffn_down.weight" {kiln.layout = #kiln.panel<rows = 16>, kiln.segment = #kiln.segment<offset = 5120, bytes = 5120, layer = 0>} : tensor<32x40xf32>
  %d = kiln.weight "blk.0.ffn_down.weight" : tensor<32x40xf32>
  %o = kiln.matmul %h, %d : (tensor<1x40xf32>, tensor<32x40xf32>) -> tensor<1x32xf32>
  // CHECK: kiln.weight "token_embd.weight" {kiln.segment = #kiln.segment<offset = 0, bytes = 2176, layer = -1>}
  %t2 = kiln.weight "token_embd.weight" : tensor<64x32x!kiln.q8_0>
  %y = kiln.matmul %o, %t2 : (tensor<1x32xf32>, tensor<64x32x!kiln.q8_0>) -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}
