// mlir-opt for the kiln dialect and Kiln's passes.
#include "dialects/Kiln/IR/KilnDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  kiln::registerKilnPasses();
  // The generic passes the pipelines run (canonicalize folds the graph ops).
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::DialectRegistry registry;
  registry.insert<kiln::KilnDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
