// A kernel split over threads: kernel IR without a model has no workers.
module @split {
  func.func @f(%tokens: tensor<2xi32>, %pos: i32) -> tensor<2x16xf32> {
    %table = kiln.weight "table" {kiln.segment = #kiln.segment<offset = 0, bytes = 2048, layer = -1>} : tensor<16x32xf32>
    %x = kiln.embed %table[%tokens] {kiln.slot = #kiln.slot<offset = 0, bytes = 256>} : (tensor<16x32xf32>, tensor<2xi32>) -> tensor<2x32xf32>
    %w = kiln.weight "w" {kiln.segment = #kiln.segment<offset = 2048, bytes = 2048, layer = -1>} : tensor<16x32xf32>
    %y = kiln.matmul %x, %w {kiln.slot = #kiln.slot<offset = 256, bytes = 128>, kiln.split = #kiln.split<axis = "columns", shares = 2, grain = 1, threshold = 1>} : (tensor<2x32xf32>, tensor<16x32xf32>) -> tensor<2x16xf32>
    return %y : tensor<2x16xf32>
  }
}
