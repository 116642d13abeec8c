#include "codegen_targets/TranslateToC.h"

#include "dialects/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"

using namespace mlir;
using namespace kiln;

namespace {

llvm::cl::opt<std::string> targetName("kiln-target",
                                      llvm::cl::desc("Target of --kiln-to-c and --kiln-kernels-to-c"),
                                      llvm::cl::init("c99"));

LogicalResult printFiles(Operation *op, FailureOr<std::vector<GeneratedFile>> files,
                         llvm::raw_ostream &os) {
  if (failed(files))
    return failure();
  for (const GeneratedFile &f : *files)
    os << "//--- " << f.path << "\n" << f.text;
  return success();
}

const TargetDescription *target(Operation *op) {
  const TargetDescription *t = lookupTarget(targetName);
  if (!t)
    op->emitError() << "unknown target '" << targetName
                    << "'; known: " << llvm::join(targetNames(), ", ");
  return t;
}

void registerDialects(DialectRegistry &registry) {
  registry.insert<KilnDialect, func::FuncDialect>();
}

} // namespace

void kiln::registerKilnToCTranslations() {
  TranslateFromMLIRRegistration toC(
      "kiln-to-c", "planned kiln model to the generated C sources of its folder",
      [](ModuleOp module, llvm::raw_ostream &os) -> LogicalResult {
        const TargetDescription *t = target(module);
        if (!t)
          return failure();
        return printFiles(module, translateToC(module, *t, /*embedWeights=*/false), os);
      },
      registerDialects);
  TranslateFromMLIRRegistration kernelsToC(
      "kiln-kernels-to-c", "kiln kernel IR to kernels and a C function per function",
      [](ModuleOp module, llvm::raw_ostream &os) -> LogicalResult {
        const TargetDescription *t = target(module);
        if (!t)
          return failure();
        return printFiles(module, translateKernelsToC(module, *t), os);
      },
      registerDialects);
}
