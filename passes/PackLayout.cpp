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
    (onlyMatmul ? candidates : excluded).insert(op.getSegmentName());
  });
  module.walk([&](Operation *op) {
    if (!isa<SwigluMatmulOp, QkvMatmulOp>(op))
      return;
    auto name = [](Value v) { return v.getDefiningOp<WeightOp>().getSegmentName(); };
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
    // A segment per tensor name (the matmul weights in panels), in the order
    // of first use; a graph's constants (indices, masks) keep their rows.
    auto place = [&](Operation *op, StringRef name, RankedTensorType type,
                     bool panels) -> LogicalResult {
      auto [it, inserted] = segments.try_emplace(name);
      if (inserted) {
        int64_t layer = layerOf(name);
        end = llvm::alignTo(end, layer != lastLayer ? kPageBytes : kSegmentAlign);
        lastLayer = layer;
        int64_t bytes = getStorageBytes(type);
        if (panels) {
          int64_t rows = type.getDimSize(0);
          bytes = bytes / rows * llvm::alignTo(rows, panelRows);
        }
        it->second = SegmentAttr::get(&getContext(), end, bytes, layer);
        end += bytes;
      } else if (!panels && it->second.getBytes() != getStorageBytes(type)) {
        return op->emitOpError("uses the tensor with a type of a different size than "
                               "another use");
      }
      setSegmentAttr(op, it->second);
      return success();
    };
    WalkResult result = module.walk([&](Operation *op) -> WalkResult {
      if (auto constant = dyn_cast<ConstantOp>(op))
        return place(op, constant.getName(), constant.getType(), false);
      auto weight = dyn_cast<WeightOp>(op);
      if (!weight)
        return WalkResult::advance();
      std::string name = weight.getSegmentName();
      bool panels = panelled.contains(name);
      if (failed(place(op, name, weight.getType(), panels)))
        return WalkResult::interrupt();
      if (panels)
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
