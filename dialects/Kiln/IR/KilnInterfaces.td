#ifndef KILN_INTERFACES_TD
#define KILN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Kiln_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    What a kernel op answers for the passes that place, tile, split and plan
    it and for codegen: the operands its kernel reads as matmul weights (which
    pack-layout may repack into panels), the scratch its kernel needs, and its
    work, by which partition-work splits it over workers.
  }];
  let methods = [
    InterfaceMethod<[{
        The operands its kernel reads as matmul weights: one format, and one
        layout (rows or panels); none for a kernel that is no matmul.
      }],
      "::mlir::OperandRange", "getMatmulWeights", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{ return $_op->getOperands().take_front(0); }]>,
    InterfaceMethod<[{
        Bytes of scratch its kernel needs at the most rows: a matmul's input
        quantized for its weights (KILN_UK_ACT_* in kernels/kiln_uk_abi.h),
        then, 64-byte aligned, the rows of floats a fused matmul keeps and the
        row it normalizes its input into.
      }],
      "int64_t", "getScratchBytes", (ins), "", [{ return 0; }]>,
    InterfaceMethod<[{
        Its work as partition-work measures it: per input row (multiply-adds,
        or elements for row-wise ops), times the context attended over when
        `overContext`; none for a kernel that does not split.
      }],
      "std::optional<::kiln::KernelWork>", "getKernelWork", (ins), "",
      [{ return std::nullopt; }]>,
  ];
}

#endif // KILN_INTERFACES_TD
