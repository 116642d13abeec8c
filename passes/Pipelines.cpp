#include "passes/Passes.h"

#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kiln::buildGraphPipeline(OpPassManager &pm) {
  pm.addPass(createCSEPass());
}

void kiln::buildKernelPipeline(OpPassManager &pm) {
  pm.addPass(createPackLayout());
  pm.addPass(createPlanMemory());
}
