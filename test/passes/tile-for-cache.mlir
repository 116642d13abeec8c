// RUN: kiln-opt %s --kiln-tile-for-cache="l2=1048576 vector-bytes=64 registers=32" | FileCheck %s --check-prefix=BIG
// RUN: kiln-opt %s --kiln-tile-for-cache="l2=262144 vector-bytes=32 registers=16" | FileCheck %s --check-prefix=SMALL
// RUN: kiln-opt %s --kiln-tile-for-cache="tile=mr=3,kc=100" | FileCheck %s --check-prefix=PINNED
// RUN: not kiln-opt %s --kiln-tile-for-cache="tile=mr=9" 2>&1 | FileCheck %s --check-prefix=TOO-BIG
// RUN: not kiln-opt %s --kiln-tile-for-cache="tile=nc=4" 2>&1 | FileCheck %s --check-prefix=BAD

// Int8 tiles hold two accumulators per row, float tiles one, four registers stay
// for the weights: 32 registers give mr = 8 for both (the largest tile), 16 give
// 6 and 8. kc is the largest whole number of groups whose panel block (16 rows)
// and the block of all 64 input rows fit in half of L2, at most K: q4_0 takes
// 16 x 18/32 + 64 + 1 = 74 bytes per column (1 MiB: K = 2048; 256 KiB: 1771 ->
// 1760), f16 takes 16 x 2 + 64 x 4 + 1 = 289 (1 MiB: 1814; 256 KiB: 453). A
// pinned kc is rounded down to whole groups. A k-quant in panels holds three
// accumulators per row (32 registers: 8; 16: 4) and its groups are super-blocks
// of 256: q4_k's 16 x 144/256 + 64 + 1 = 74 bytes per column give 1771 -> 1536
// at 256 KiB, and a pinned kc of 100 rises to one super-block. The GGUF blocks
// of 32 hold two accumulators per row, as q4_0: q5_1's 16 x 24/32 + 64 + 1 = 77
// bytes per column give 1702 -> 1696 at 256 KiB. A weight in the row layout
// gets no tile.
func.func @f(%x: tensor<64x2048xf32>, %h: tensor<64x64xf32>) -> (tensor<64x5632xf32>, tensor<64x5632xf32>, tensor<64x64xf32>) {
  %q = kiln.weight "blk.0.ffn_up.weight" {kiln.layout = #kiln.panel<rows = 16>} : tensor<5632x2048x!kiln.q4_0>
  // BIG: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 8, nr = 16, kc = 2048>}
  // SMALL: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 6, nr = 16, kc = 1760>}
  // PINNED: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 3, nr = 16, kc = 96>}
  %y = kiln.matmul %x, %q : (tensor<64x2048xf32>, tensor<5632x2048x!kiln.q4_0>) -> tensor<64x5632xf32>
  %f = kiln.weight "blk.0.ffn_gate.weight" {kiln.layout = #kiln.panel<rows = 16>} : tensor<5632x2048xf16>
  // BIG: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 8, nr = 16, kc = 1814>}
  // SMALL: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 8, nr = 16, kc = 453>}
  // PINNED: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 3, nr = 16, kc = 100>}
  %z = kiln.matmul %x, %f : (tensor<64x2048xf32>, tensor<5632x2048xf16>) -> tensor<64x5632xf32>
  %k = kiln.weight "blk.0.ffn_down.weight" {kiln.layout = #kiln.panel<rows = 16>} : tensor<2048x2048x!kiln.q4_k>
  // BIG: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 8, nr = 16, kc = 2048>}
  // SMALL: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 4, nr = 16, kc = 1536>}
  // PINNED: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 3, nr = 16, kc = 256>}
  %kq = kiln.matmul %x, %k : (tensor<64x2048xf32>, tensor<2048x2048x!kiln.q4_k>) -> tensor<64x2048xf32>
  %b = kiln.weight "blk.0.attn_k.weight" {kiln.layout = #kiln.panel<rows = 16>} : tensor<2048x2048x!kiln.q5_1>
  // BIG: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 8, nr = 16, kc = 2048>}
  // SMALL: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 6, nr = 16, kc = 1696>}
  // PINNED: kiln.matmul {{.*}} {kiln.tile = #kiln.tile<mr = 3, nr = 16, kc = 96>}
  %bq = kiln.matmul %x, %b : (tensor<64x2048xf32>, tensor<2048x2048x!kiln.q5_1>) -> tensor<64x2048xf32>
  %r = kiln.weight "blk.0.attn_q.weight" : tensor<64x64xf32>
  // BIG: kiln.matmul
  // BIG-NOT: tile
  // BIG-SAME: tensor<64x64xf32>
  %o = kiln.matmul %h, %r : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %y, %z, %o : tensor<64x5632xf32>, tensor<64x5632xf32>, tensor<64x64xf32>
}

// TOO-BIG: error: tile-for-cache: mr=9 exceeds the kernels' largest tile, 8
// BAD: error: tile-for-cache: cannot parse tile 'nc=4' (expected mr=M,kc=K)
