#include "passes/Passes.h"

#include <numeric>

namespace kiln {
#define GEN_PASS_DEF_PARTITIONWORK
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

static int64_t dim(Value v, unsigned i) {
  return cast<RankedTensorType>(v.getType()).getDimSize(i);
}

namespace {

struct PartitionWorkPass : kiln::impl::PartitionWorkBase<PartitionWorkPass> {
  using PartitionWorkBase::PartitionWorkBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (threads < 1) {
      module.emitError() << "partition-work: threads must be at least 1, not " << int64_t(threads);
      return signalPassFailure();
    }
    if (threads == 1)
      return;
    setThreadsAttr(module, IntegerAttr::get(IntegerType::get(&getContext(), 64), threads));
    module.walk([&](KernelOpInterface kernel) {
      Operation *op = kernel;
      std::optional<KernelWork> work = kernel.getKernelWork();
      if (!work)
        return;
      // The most work: every row, over the whole context.
      auto kv = dyn_cast<KvWriteOp>(op);
      int64_t rows = rowCount(kv ? Value(kv.getRows()) : op->getResult(0));
      int64_t most = rows * work->perRow;
      if (work->overContext) {
        int64_t context = dim(op->getOperand(1), 0);
        most *= work->window ? std::min(context, work->window) : context;
      }
      auto [axis, grain, units] = division(op, rows);
      if (units < 2 || most < minWork)
        return;
      setSplitAttr(op, SplitAttr::get(&getContext(), axis, threads, grain, minWork));
    });
  }

  /// Columns per share unit of a matmul of n outputs over `weight`: whole
  /// panels, four at a time when every share still gets four (float decode
  /// takes four panels a call), 16 columns in the row layout; a multiple of
  /// `align`.
  int64_t columnGrain(Value weight, int64_t n, int64_t align) const {
    int64_t grain = 16;
    if (PanelAttr panel = getLayoutAttr(weight.getDefiningOp())) {
      int64_t panels = (n + panel.getRows() - 1) / panel.getRows();
      grain = panel.getRows() * (panels >= 4 * threads ? 4 : 1);
    }
    return std::lcm(grain, align);
  }

  /// The axis of the shares, their unit (columns per unit for matmuls) and how
  /// many units there are.
  std::tuple<StringRef, int64_t, int64_t> division(Operation *op, int64_t rows) const {
    if (isa<MatmulOp, ResidualMatmulOp, SwigluMatmulOp>(op)) {
      int64_t n = dim(op->getResult(0), 1);
      int64_t grain = columnGrain(op->getOperand(1), n, 1);
      return {"columns", grain, (n + grain - 1) / grain};
    }
    if (auto qkv = dyn_cast<QkvMatmulOp>(op)) {
      // Over the columns of q, k and v side by side, in whole heads (rope
      // turns pairs within a head) that start each projection.
      int64_t nq = dim(qkv.getWq(), 0), nkv = dim(qkv.getWk(), 0), n = nq + 2 * nkv;
      int64_t grain = columnGrain(qkv.getWq(), n, qkv.getHeadDim());
      if (nq % grain || nkv % grain)
        return {"columns", grain, 1};
      return {"columns", grain, n / grain};
    }
    if (auto a = dyn_cast<AttentionOp>(op))
      return {"heads", 1, rows * a.getNKvHead()};
    // A graph's attention: whole batches (heads merged into them), each
    // share with its own scratch of scores.
    if (auto a = dyn_cast<AttendOp>(op))
      return {"batches", 1, dim(a.getResult(), 0)};
    return {"rows", 1, rows};
  }
};

} // namespace
