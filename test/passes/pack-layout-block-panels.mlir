// RUN: kiln-opt %s --kiln-pack-layout="panel-rows=16 block-panels=q4_k,q6_k,q5_0" | FileCheck %s
// RUN: kiln-opt %s --kiln-pack-layout="panel-rows=16" | FileCheck %s --check-prefix=ROWS

// With block-panels, the GGUF block formats it names are repacked into panels
// like q4_0: a 40-row q4_k weight of 256 columns takes 48 x 144 bytes, a 24-row
// q6_k one 32 x 210, a 24-row q5_0 one 32 x 176 (blocks of 32). A format it leaves out (q3_k here) keeps the file's rows;
// without it every block format does.
func.func @f(%x: tensor<1x256xf32>) -> tensor<1x256xf32> {
  // CHECK: kiln.weight "blk.0.attn_q.weight" {kiln.layout = #kiln.panel<rows = 16>, kiln.segment = #kiln.segment<offset = 0, bytes = 6912, layer = 0>} : tensor<40x256x!kiln.q4_k>
  // ROWS: kiln.weight "blk.0.attn_q.weight" {kiln.segment = #kiln.segment<offset = 0, bytes = 5760, layer = 0>} : tensor<40x256x!kiln.q4_k>
  %q = kiln.weight "blk.0.attn_q.weight" : tensor<40x256x!kiln.q4_k>
  %a = kiln.matmul %x, %q : (tensor<1x256xf32>, tensor<40x256x!kiln.q4_k>) -> tensor<1x40xf32>
  // CHECK: kiln.weight "blk.0.attn_v.weight" {kiln.layout = #kiln.panel<rows = 16>, kiln.segment = #kiln.segment<offset = 6912, bytes = 6720, layer = 0>} : tensor<24x256x!kiln.q6_k>
  // ROWS: kiln.weight "blk.0.attn_v.weight" {kiln.segment = #kiln.segment<offset = 5760, bytes = 5040, layer = 0>} : tensor<24x256x!kiln.q6_k>
  %v = kiln.weight "blk.0.attn_v.weight" : tensor<24x256x!kiln.q6_k>
  %b = kiln.matmul %x, %v : (tensor<1x256xf32>, tensor<24x256x!kiln.q6_k>) -> tensor<1x24xf32>
  // CHECK: kiln.weight "blk.0.ffn_down.weight" {kiln.segment = #kiln.segment<offset = 13632, bytes = 3520, layer = 0>} : tensor<32x256x!kiln.q3_k>
  // ROWS: kiln.weight "blk.0.ffn_down.weight" {kiln.segment = #kiln.segment<offset = 10816, bytes = 3520, layer = 0>} : tensor<32x256x!kiln.q3_k>
  %d = kiln.weight "blk.0.ffn_down.weight" : tensor<32x256x!kiln.q3_k>
  %c = kiln.matmul %x, %d : (tensor<1x256xf32>, tensor<32x256x!kiln.q3_k>) -> tensor<1x32xf32>
  // CHECK: kiln.weight "blk.0.ffn_up.weight" {kiln.layout = #kiln.panel<rows = 16>, kiln.segment = #kiln.segment<offset = 17152, bytes = 5632, layer = 0>} : tensor<24x256x!kiln.q5_0>
  // ROWS: kiln.weight "blk.0.ffn_up.weight" {kiln.segment = #kiln.segment<offset = 14336, bytes = 4224, layer = 0>} : tensor<24x256x!kiln.q5_0>
  %u = kiln.weight "blk.0.ffn_up.weight" : tensor<24x256x!kiln.q5_0>
  %e = kiln.matmul %x, %u : (tensor<1x256xf32>, tensor<24x256x!kiln.q5_0>) -> tensor<1x24xf32>
  return %x : tensor<1x256xf32>
}
