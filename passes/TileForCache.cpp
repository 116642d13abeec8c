#include "passes/Passes.h"

#include "kernels/kiln_uk_abi.h"

#include "llvm/ADT/StringExtras.h"

namespace kiln {
#define GEN_PASS_DEF_TILEFORCACHE
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The largest activation-row tile the panel kernels are instantiated for.
constexpr int64_t kMaxTileRows = KILN_UK_MR_MAX;

struct Tile {
  int64_t mr = 0, kc = 0; // 0: choose
};

/// Parses "mr=4,kc=512" (either key may be left out).
FailureOr<Tile> parseTile(StringRef text) {
  Tile tile;
  llvm::SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [key, value] = item.trim().split('=');
    int64_t v;
    if (value.getAsInteger(10, v) || v <= 0)
      return failure();
    if (key == "mr")
      tile.mr = v;
    else if (key == "kc")
      tile.kc = v;
    else
      return failure();
  }
  return tile;
}

struct TileForCachePass : kiln::impl::TileForCacheBase<TileForCachePass> {
  using TileForCacheBase::TileForCacheBase;

  void runOnOperation() override {
    FailureOr<Tile> pinned = parseTile(tile);
    if (failed(pinned)) {
      getOperation().emitError() << "tile-for-cache: cannot parse tile '" << tile
                                 << "' (expected mr=M,kc=K)";
      return signalPassFailure();
    }
    if (pinned->mr > kMaxTileRows) {
      getOperation().emitError() << "tile-for-cache: mr=" << pinned->mr
                                 << " exceeds the kernels' largest tile, " << kMaxTileRows;
      return signalPassFailure();
    }
    getOperation().walk([&](Operation *op) {
      if (!isMatmulKernel(op))
        return;
      // Operand 0 is the input, operand 1 the (first) weight.
      Value input = op->getOperand(0), weight = op->getOperand(1);
      PanelAttr panel = getLayoutAttr(weight.getDefiningOp());
      if (!panel)
        return;
      Type element = cast<RankedTensorType>(weight.getType()).getElementType();
      bool integer = isQuantizedType(element);
      auto inputType = cast<RankedTensorType>(input.getType());
      int64_t k = inputType.getDimSize(1);
      int64_t group = getBlockElements(element);
      int64_t mr = pinned->mr;
      // Accumulators per row: a float one, and an int32 one (int8 weights and
      // the blocks of 32) or two (a k-quant's super-block and sub-block sums).
      int64_t perRow = isGgmlBlockType(element) && group > 32 ? 3 : integer ? 2 : 1;
      if (!mr)
        mr = std::clamp((registers - 4) / perRow, int64_t(1), kMaxTileRows);
      // The kernel passes over a panel once per row tile and over the
      // activations once per panel, so a K block of both should stay in L2.
      // Bytes per column of K: the panel's weights (group scales included) and
      // every input row's activations (int8 once quantized, else f32).
      int64_t rows = inputType.getDimSize(0);
      int64_t bytesPerColumn = panel.getRows() * getBlockBytes(element) / group +
                               rows * (integer ? 1 : 4) + 1;
      int64_t kc = pinned->kc ? pinned->kc : l2 / 2 / bytesPerColumn;
      kc = std::clamp(kc / group * group, group, k);
      setTileAttr(op, TileAttr::get(&getContext(), mr, panel.getRows(), kc));
    });
  }
};

} // namespace
