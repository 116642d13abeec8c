#ifndef KILN_CODEGEN_TARGETS_EMITC_H
#define KILN_CODEGEN_TARGETS_EMITC_H

#include "codegen_targets/Target.h"

#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// Writes the generated sources of a planned, laid-out module into `outDir`:
/// `<name>.h` (API and exact sizes), `<name>.c` (the schedule),
/// `<name>_kernels.h/.c` (specialised kernels), `CMakeLists.txt`, and the runtime
/// and sample sources the folder needs to build on its own. With `embedWeights`,
/// `<name>_weights.c` holds the pack `<name>.kpack` as a 64-byte aligned const
/// array, so a firmware can place it in flash and run without a file system.
/// The pack's facts (hash, sizes, vocabulary) come from the module's
/// `kiln.pack`, which the pack writer sets; without it they are zeros.
mlir::LogicalResult emitC(mlir::ModuleOp module, const TargetDescription &target,
                          llvm::StringRef outDir, bool embedWeights);

} // namespace kiln

#endif // KILN_CODEGEN_TARGETS_EMITC_H
