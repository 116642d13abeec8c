#include "passes/Passes.h"

#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kiln::buildGraphPipeline(OpPassManager &pm, const QuantizeOptions &quantize) {
  pm.addPass(createCSEPass());
  pm.addPass(createQuantize(quantize));
}

void kiln::buildKernelPipeline(OpPassManager &pm) {
  pm.addPass(createPackLayout());
  pm.addPass(createPlanMemory());
}
