#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The group its matmul kernels quantize the input in for a quantized weight
/// format: the format's group or block (256 for the k-quants, whose dots then
/// sum a whole super-block in integers before one float scale).
int64_t activationGroup(mlir::Type element);

/// Bytes a matmul over a quantized weight needs to hold `rows` input rows of `k`
/// values quantized per group of `group`: per group an f32 scale, an int32 sum
/// per `sumGroup` values unless that is 0 (panel kernels: per group; the GGUF
/// block formats: per 16), then the int8 values; the block formats' rows end
/// with a 32-bit word per 64 values (the int16 sums of its two 32s) and an
/// int32 sum per 16.
int64_t activationScratchBytes(int64_t rows, int64_t k, int64_t group, int64_t sumGroup);

/// The `sumGroup` of activationScratchBytes for a weight format and layout.
int64_t activationSumGroup(mlir::Type element, bool panels);

/// What the kernel-level passes know of the kernel ops (KernelOps.cpp).
///
/// Matmul kernels: kiln.matmul and the fused matmuls; operand 0 is the input,
/// the weights follow it.
bool isMatmulKernel(mlir::Operation *op);
/// Whether `use` reads a weight as a weight of a matmul kernel.
bool isMatmulWeight(mlir::OpOperand &use);

/// Bytes of the input rows of matmul kernel `op` quantized for its weight
/// (operand 1); zero for float weights.
int64_t quantizedInputBytes(mlir::Operation *op);
/// Scratch of a matmul kernel: the quantized input, then for fused kernels
/// (at a 64-byte aligned offset) the rows of floats they keep: the up
/// projection of swiglu_matmul, the keys and values of qkv_matmul; then, for
/// a kernel that normalizes its input, one normalized row.
int64_t scratchBytes(mlir::Operation *op);
/// Floats per input row a fused matmul keeps in scratch after the quantized
/// input (0 for the others).
int64_t fusedRowFloats(mlir::Operation *op);
/// The rms_norm weight a fused matmul applies to its input, or null.
mlir::Value fusedNorm(mlir::Operation *op);

/// The work of an op's kernel, as partition-work measures it: `perRow` per
/// input row (multiply-adds, or elements for row-wise ops), times the context
/// attended over (the position plus the rows, at most `window` when set) if
/// `overContext`. Null for ops partition-work does not split.
struct KernelWork {
  int64_t perRow = 0;
  bool overContext = false;
  int64_t window = 0;
};
std::optional<KernelWork> kernelWork(mlir::Operation *op);

/// Whether a KV cache of `rows` rows in the module of `op` is head-major and
/// holds the whole context (not a ring), as the module's kiln.model config
/// says: such an int4 cache can take tiles of 16 positions.
bool wholeHeadMajorCache(mlir::Operation *op, int64_t rows);
/// Whether a KV cache (a value of kv_cache or kv_write type) keeps each head's
/// positions in tiles of 16 (KILN_UK_Q4T): an int4 wholeHeadMajorCache with a
/// multiple of 16 rows, as quantize makes it.
bool tiledKvCache(mlir::Operation *op, mlir::Value cache);

/// The element type a policy format names ("q4_0", "i8g64", "f16", ...), or null.
mlir::Type parseWeightFormat(mlir::MLIRContext *context, llvm::StringRef format);

/// Graph-level passes run between import and kernel-level lowering: the format
/// policy, then kiln-fuse's `fuse` patterns (none when empty).
void buildGraphPipeline(mlir::OpPassManager &pm, const QuantizeOptions &quantize = {},
                        llvm::StringRef fuse = "residual,swiglu,qkv,norm");

/// What the kernel-level passes need to know of the target.
struct KernelTarget {
  int64_t panelRows = 0;    // rows per weight panel; 0 keeps the row layout
  // GGUF block formats (comma-separated) that the panel kernels also read.
  const char *blockPanels = "";
  int64_t l2Bytes = 262144; // cache model for tile-for-cache
  int64_t vectorBytes = 16;
  int64_t registers = 16;
  // Least work (multiply-adds, or elements of row-wise ops) that the workers
  // finish sooner than one core, hand-off included: about a million int8
  // multiply-adds, several microseconds of one core, so that a tiny model's
  // decode stays on the caller.
  int64_t minSplitWork = 1 << 20;
};

/// From graph level to kernel level: weights placed in the pack (in panels
/// where the target's matmuls read them), panel matmuls tiled for the target's
/// caches (`tile` pins the tile), large kernels split into `threads` shares,
/// every intermediate placed in the arena.
void buildKernelPipeline(mlir::OpPassManager &pm, const KernelTarget &target = {},
                         llvm::StringRef tile = "", int64_t threads = 1);

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
