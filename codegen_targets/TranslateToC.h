#ifndef KILN_CODEGEN_TARGETS_TRANSLATETOC_H
#define KILN_CODEGEN_TARGETS_TRANSLATETOC_H

#include "codegen_targets/Target.h"
#include "codegen_targets/Template.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

/// One file of an output folder, by its path in the folder.
struct GeneratedFile {
  std::string path;
  std::string text;
};

/// The sources of a planned, laid-out model module (kernel IR with @prefill and
/// @decode, `kiln.model`, arena and KV sizes): `<name>.h` (API and exact
/// sizes), `<name>.c` (the schedule and the fixed API of
/// codegen_targets/templates), `<name>_kernels.h/.c` (specialised kernels) and
/// `CMakeLists.txt`, which lists `<name>_weights.c` when `embedWeights`. The
/// pack's facts (hash, sizes, vocabulary) come from the module's `kiln.pack`;
/// without it (hand-written IR) they are zeros.
/// --pack-checksum: one checksum (kiln/kiln_checksum.h) per decoder layer's
/// byte range (layerByteRanges, in order), checked in open or before the first
/// step.
struct PackChecksums {
  std::vector<uint64_t> sums;
  bool onOpen = false;
};

mlir::FailureOr<std::vector<GeneratedFile>>
translateToC(mlir::ModuleOp module, const TargetDescription &target, bool embedWeights,
             const PackChecksums *checksums = nullptr);

/// Each decoder layer's weights as (offset in the data section, bytes), by layer.
std::vector<std::pair<uint64_t, uint64_t>> layerByteRanges(mlir::ModuleOp module);

/// Kernel IR without a model: `<name>_kernels.h/.c` as for a model, and for
/// every function `@f` a C function `<name>_f(w, a, tokens, rows, pos)` in
/// `<name>.h/.c` that runs its kernels in order, each value at its arena slot
/// and each weight at its segment offset in `w`.
mlir::FailureOr<std::vector<GeneratedFile>>
translateKernelsToC(mlir::ModuleOp module, const TargetDescription &target);

/// The sources of a planned, laid-out graph module (an encoder imported from
/// ONNX: one @run function whose arguments and results carry `kiln.name`):
/// `<name>.h` (the API, `<name>_run(m, inputs, outputs)`, and every input's
/// and output's shape as constants), `<name>.c` (the schedule),
/// `<name>_kernels.h/.c` and a CMakeLists.txt that builds kiln-run.
mlir::FailureOr<std::vector<GeneratedFile>>
translateGraphToC(mlir::ModuleOp module, const TargetDescription &target, bool embedWeights);

/// What the model and graph translations share: `<name>_kernels.h/.c` with
/// every kernel of `kernels` over the target's kernel library, the C check
/// that the CPU runs the target's instructions (empty when none is needed),
/// and the CMake lines that compile `library` for the target's ISA.
void addKernelFiles(llvm::StringRef name, const TargetDescription &target,
                    const std::map<std::string, KernelCall> &kernels,
                    std::vector<GeneratedFile> &files);
std::string cpuCheckText(const IsaVariant &isa);
std::string kernelFlags(const TargetDescription &target, llvm::StringRef library);
/// The template values of a model's or graph's workers (`workers`: compiled
/// for more than one thread): the state's field, open's reset, set_workers'
/// body, and the CMake lines of the thread pool.
TemplateValues workerValues(bool workers);

/// The lines a folder's CMakeLists.txt gains for a draft model compiled into it
/// beside model `name` (kiln-compile --draft): the draft's library, and
/// kiln-generate linked with it.
std::string draftCMakeLists(const TargetDescription &target, llvm::StringRef name,
                            llvm::StringRef draft);

/// What every output folder carries besides its generated files: the kernel
/// library, the runtime and the kiln-generate sample, as the repository has them.
std::vector<GeneratedFile> librarySources();

/// Writes `files` under `dir`, creating folders; errors are reported on `where`.
mlir::LogicalResult writeGeneratedFiles(mlir::Operation *where, llvm::StringRef dir,
                                        llvm::ArrayRef<GeneratedFile> files);

/// `<dir>/<name>_weights.c`: the pack `<dir>/<name>.kpack` as a 64-byte aligned
/// const array, so a firmware can place it in flash and run without a file system.
mlir::LogicalResult writeEmbeddedWeights(mlir::Operation *where, llvm::StringRef dir,
                                         llvm::StringRef name);

/// Registers the translations `--kiln-to-c` (translateToC) and
/// `--kiln-kernels-to-c` (translateKernelsToC), which print every generated
/// file after a `//--- <path>` line (split-file's format), and the
/// `--kiln-target` option that picks the target of both.
void registerKilnToCTranslations();

} // namespace kiln

#endif // KILN_CODEGEN_TARGETS_TRANSLATETOC_H
