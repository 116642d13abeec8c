#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/KernelTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Graph-level passes run between import and kernel-level lowering: the format
/// policy, then kiln-fuse's `fuse` patterns (none when empty).
void buildGraphPipeline(mlir::OpPassManager &pm, const QuantizeOptions &quantize = {},
                        llvm::StringRef fuse = "residual,swiglu,qkv,norm");

/// Graph-level passes of an imported ONNX graph: the importer's reshape,
/// transpose and broadcast chains folded, equal values merged, attention
/// fused, then the matmul and embedding weights in `quantize`'s formats.
void buildOnnxGraphPipeline(mlir::OpPassManager &pm, const QuantizeOptions &quantize = {});

/// From graph level to kernel level: weights placed in the pack (in panels
/// where the target's matmuls read them), panel matmuls tiled for the target's
/// caches (`tile` pins the tile), large kernels split into `threads` shares,
/// every intermediate placed in the arena.
void buildKernelPipeline(mlir::OpPassManager &pm, const KernelTarget &target = {},
                         llvm::StringRef tile = "", int64_t threads = 1);

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
