#include "passes/Passes.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

namespace kiln {
#define GEN_PASS_DEF_PACKLAYOUT
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

constexpr int64_t kSegmentAlign = 64;
constexpr int64_t kPageBytes = 4096;

/// Layer of a GGUF tensor name ("blk.3.ffn_up.weight" -> 3), -1 outside blocks.
int64_t layerOf(StringRef name) {
  int64_t layer;
  if (!name.consume_front("blk.") || name.consumeInteger(10, layer))
    return -1;
  return layer;
}

/// Names of the 2-D weights that only matmul kernels read, as weights, in a
/// format the panel kernels have (f32, f16, the int8/int4 families and the
/// GGUF block formats in `blockPanels`; the other block formats and bf16 keep
/// the file's rows). The weights of one fused kernel share a layout, so one
/// that must keep rows keeps its partners in rows too.
llvm::StringSet<> matmulOnlyWeights(ModuleOp module, StringRef blockPanels) {
  llvm::SmallVector<StringRef> formats;
  blockPanels.split(formats, ',', -1, /*KeepEmpty=*/false);
  auto hasPanels = [&](Type element) {
    if (element.isBF16())
      return false;
    return !isGgmlBlockType(element) || llvm::is_contained(formats, getWeightFormatName(element));
  };
  llvm::StringSet<> candidates, excluded;
  module.walk([&](WeightOp op) {
    Type element = op.getType().getElementType();
    bool onlyMatmul = op.getType().getRank() == 2 && hasPanels(element);
    for (OpOperand &use : op->getUses())
      onlyMatmul &= isMatmulWeight(use);
    (onlyMatmul ? candidates : excluded).insert(op.getName());
  });
  module.walk([&](Operation *op) {
    if (!isa<SwigluMatmulOp, QkvMatmulOp>(op))
      return;
    auto name = [](Value v) { return v.getDefiningOp<WeightOp>().getName(); };
    ValueRange weights = op->getOperands().slice(1, isa<QkvMatmulOp>(op) ? 3 : 2);
    if (llvm::any_of(weights, [&](Value w) { return excluded.contains(name(w)); }))
      for (Value w : weights)
        excluded.insert(name(w));
  });
  for (const auto &name : excluded)
    candidates.erase(name.getKey());
  return candidates;
}

struct PackLayoutPass : kiln::impl::PackLayoutBase<PackLayoutPass> {
  using PackLayoutBase::PackLayoutBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringSet<> panelled;
    if (panelRows > 0)
      panelled = matmulOnlyWeights(module, blockPanels);
    llvm::StringMap<SegmentAttr> segments;
    int64_t end = 0, lastLayer = -1;
    WalkResult result = module.walk([&](WeightOp op) -> WalkResult {
      auto [it, inserted] = segments.try_emplace(op.getName());
      if (inserted) {
        int64_t layer = layerOf(op.getName());
        end = llvm::alignTo(end, layer != lastLayer ? kPageBytes : kSegmentAlign);
        lastLayer = layer;
        int64_t bytes = getStorageBytes(op.getType());
        if (panelled.contains(op.getName())) {
          int64_t rows = op.getType().getDimSize(0);
          bytes = bytes / rows * llvm::alignTo(rows, panelRows);
        }
        it->second = SegmentAttr::get(&getContext(), end, bytes, layer);
        end += bytes;
      } else if (!panelled.contains(op.getName()) &&
                 it->second.getBytes() != getStorageBytes(op.getType())) {
        return op.emitOpError("uses the tensor with a type of a different size than "
                              "another use");
      }
      setSegmentAttr(op, it->second);
      if (panelled.contains(op.getName()))
        setLayoutAttr(op, PanelAttr::get(&getContext(), panelRows));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    setPackDataBytesAttr(module, IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                                  llvm::alignTo(end, kPageBytes)));
  }
};

} // namespace
