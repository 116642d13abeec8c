// mlir-translate for the kiln dialect: kernel IR to C.
#include "codegen_targets/TranslateToC.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Support/LogicalResult.h"

int main(int argc, char **argv) {
  kiln::registerKilnToCTranslations();
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "Kiln translation driver\n"));
}
