#include "passes/Passes.h"

#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kiln::buildGraphPipeline(OpPassManager &pm, const QuantizeOptions &quantize,
                              llvm::StringRef fuse) {
  pm.addPass(createCSEPass());
  pm.addPass(createQuantize(quantize));
  if (!fuse.empty()) {
    FuseOptions options;
    options.patterns = fuse.str();
    pm.addPass(createFuse(options));
  }
}

void kiln::buildOnnxGraphPipeline(OpPassManager &pm, const QuantizeOptions &quantize) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createFuseAttention());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createQuantize(quantize));
}

void kiln::buildKernelPipeline(OpPassManager &pm, const KernelTarget &target,
                               llvm::StringRef tile, int64_t threads) {
  PackLayoutOptions layout;
  layout.panelRows = target.panelRows;
  layout.blockPanels = target.blockPanels;
  pm.addPass(createPackLayout(layout));
  TileForCacheOptions tiling;
  tiling.l2 = target.l2Bytes;
  tiling.vectorBytes = target.vectorBytes;
  tiling.registers = target.registers;
  tiling.tile = tile.str();
  pm.addPass(createTileForCache(tiling));
  PartitionWorkOptions partition;
  partition.threads = threads;
  partition.minWork = target.minSplitWork;
  pm.addPass(createPartitionWork(partition));
  pm.addPass(createPlanMemory());
}
