#include "passes/Passes.h"

#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kiln::buildGraphPipeline(OpPassManager &pm, const QuantizeOptions &quantize) {
  pm.addPass(createCSEPass());
  pm.addPass(createQuantize(quantize));
}

void kiln::buildKernelPipeline(OpPassManager &pm, int64_t panelRows) {
  PackLayoutOptions layout;
  layout.panelRows = panelRows;
  pm.addPass(createPackLayout(layout));
  pm.addPass(createPlanMemory());
}
