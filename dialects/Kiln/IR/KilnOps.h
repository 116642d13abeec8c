#ifndef KILN_DIALECTS_KILN_IR_KILNOPS_H
#define KILN_DIALECTS_KILN_IR_KILNOPS_H

#include "dialects/Kiln/IR/KilnDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

namespace kiln {

/// The work of an op's kernel, as partition-work measures it: `perRow` per
/// input row (multiply-adds, or elements for row-wise ops weighted by their
/// cost in multiply-adds), times the context attended over (the position plus
/// the rows, at most `window` when set) if `overContext`.
struct KernelWork {
  int64_t perRow = 0;
  bool overContext = false;
  int64_t window = 0;
};

} // namespace kiln

#include "dialects/Kiln/IR/KilnInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.h.inc"

namespace kiln {

/// Matmul kernels: kiln.matmul and the fused matmuls, whose KernelOpInterface
/// names weights; operand 0 is the input, the weights follow it.
bool isMatmulKernel(mlir::Operation *op);
/// Whether `use` reads a weight as a weight of a matmul kernel.
bool isMatmulWeight(mlir::OpOperand &use);

/// The group its matmul kernels quantize the input in for a quantized weight
/// format: the format's group or block (256 for the k-quants, whose dots then
/// sum a whole super-block in integers before one float scale).
int64_t activationGroup(mlir::Type element);
/// How the matmul kernels over a weight format, in panels or rows, hold their
/// quantized input (KILN_UK_ACT_*, kernels/kiln_uk_abi.h).
int activationLayout(mlir::Type element, bool panels);
/// Bytes of one input row of `k` values quantized for such a matmul (0 for
/// float weights).
int64_t activationStride(mlir::Type element, bool panels, int64_t k);

/// Floats per input row a fused matmul keeps in scratch after the quantized
/// input (0 for the others).
int64_t fusedRowFloats(mlir::Operation *op);
/// The rms_norm weight a fused matmul applies to its input, or null.
mlir::Value fusedNorm(mlir::Operation *op);

/// Whether a KV cache's type keeps each head's positions in tiles
/// (KILN_UK_Q4T): kiln-quantize gives an int4 cache over the whole context,
/// head-major, its tile.
bool isTiledKvCache(mlir::Type cache);

/// Rows of a row kernel's tensor: its elements over the innermost dimension
/// (a decoder's matrices' first; a graph's tensors may have more), 1 for a
/// scalar.
int64_t rowCount(mlir::Value v);

} // namespace kiln

#endif // KILN_DIALECTS_KILN_IR_KILNOPS_H
