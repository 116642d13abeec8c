#include "passes/MemoryPlanner.h"
#include "passes/Passes.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/Support/MathExtras.h"

#include <functional>
#include <map>

namespace kiln {
#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

int64_t tensorBytes(Type type) { return getStorageBytes(cast<RankedTensorType>(type)); }

/// Ops whose result may overwrite an operand that dies there: each output
/// element depends only on the same elements of the inputs.
bool canWriteInPlace(Operation *op) {
  return isa<AddOp, BiasAddOp, MulOp, SiluOp, GeluOp, RopeOp>(op);
}

/// Whether the result of `op` lives in the activation region of the arena.
/// qkv_matmul's other results are the caches it writes; a graph's constants
/// are in the pack, and a reshape is its input's bytes under another shape.
bool needsBuffer(Operation *op) {
  return (op->getNumResults() == 1 || isa<QkvMatmulOp>(op)) &&
         isa<RankedTensorType>(op->getResult(0).getType()) &&
         !isa<WeightOp, KvCacheOp, KvWriteOp, ConstantOp, ReshapeOp>(op);
}

struct PlanMemoryPass : kiln::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto i64 = IntegerType::get(ctx, 64);

    // The KV cache: one persistent slot per (layer, kind), the same in every function.
    std::map<std::pair<int64_t, int64_t>, SlotAttr> caches;
    int64_t kvBytes = 0;
    WalkResult walk = module.walk([&](KvCacheOp op) -> WalkResult {
      auto key = std::make_pair(int64_t(op.getLayer()), int64_t(op.getKind()));
      int64_t bytes = tensorBytes(op.getType());
      auto [it, inserted] = caches.try_emplace(key);
      if (inserted) {
        it->second = SlotAttr::get(ctx, kvBytes, bytes);
        kvBytes = llvm::alignTo(kvBytes + bytes, alignment);
      } else if (it->second.getBytes() != bytes) {
        return op.emitOpError("has a different size than another use of the same cache");
      }
      setSlotAttr(op, it->second);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    int64_t activationBytes = 0;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!fn.getBody().hasOneBlock()) {
        fn.emitOpError("expects a single block");
        return signalPassFailure();
      }
      MemoryPlan plan = planFunction(fn, kvBytes);
      activationBytes = std::max(activationBytes, plan.peakBytes);
      setActivationBytesAttr(fn, IntegerAttr::get(i64, plan.peakBytes));
      setActivationLowerBoundAttr(fn, IntegerAttr::get(i64, plan.lowerBound));
    }
    setKvBytesAttr(module, IntegerAttr::get(i64, kvBytes));
    setArenaBytesAttr(module, IntegerAttr::get(i64, kvBytes + activationBytes));
  }

  MemoryPlan planFunction(func::FuncOp fn, int64_t base) {
    Block &block = fn.getBody().front();
    llvm::DenseMap<Operation *, int64_t> step;
    for (Operation &op : block)
      step[&op] = step.size();
    int64_t end = step.size();

    // The last step that reads v, through the reshapes that rename it.
    std::function<int64_t(Value)> lastUse = [&](Value v) {
      int64_t last = step[v.getDefiningOp()];
      for (Operation *user : v.getUsers()) {
        last = std::max(last, isa<func::ReturnOp>(user) ? end : step[user]);
        if (isa<ReshapeOp>(user))
          last = std::max(last, lastUse(user->getResult(0)));
      }
      return last;
    };

    // Values that share a buffer: an in-place result joins its dying operand.
    llvm::EquivalenceClasses<Operation *> groups;
    for (Operation &op : block) {
      if (!needsBuffer(&op))
        continue;
      groups.insert(&op);
      if (!canWriteInPlace(&op))
        continue;
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && needsBuffer(def) && operand == def->getResult(0) &&
            operand.getType() == op.getResult(0).getType() &&
            lastUse(operand) == step[&op]) {
          groups.unionSets(def, &op);
          break;
        }
      }
    }

    std::vector<BufferRequest> requests;
    std::vector<Operation *> leaders;
    for (auto it = groups.begin(); it != groups.end(); ++it) {
      if (!it->isLeader())
        continue;
      BufferRequest r{0, end, 0};
      for (auto m = groups.member_begin(it); m != groups.member_end(); ++m) {
        r.bytes = std::max(r.bytes, tensorBytes((*m)->getResult(0).getType()));
        r.firstStep = std::min(r.firstStep, step[*m]);
        r.lastStep = std::max(r.lastStep, lastUse((*m)->getResult(0)));
      }
      requests.push_back(r);
      leaders.push_back(it->getData());
    }

    // Matmul kernels quantize their input rows (and fused ones keep rows of
    // floats) in scratch that lives only during the call.
    std::vector<Operation *> scratchUsers;
    for (Operation &op : block) {
      auto kernel = dyn_cast<KernelOpInterface>(op);
      int64_t bytes = kernel ? kernel.getScratchBytes() : 0;
      if (bytes == 0)
        continue;
      requests.push_back({bytes, step[&op], step[&op]});
      scratchUsers.push_back(&op);
    }

    MemoryPlan plan = planMemory(requests, alignment);
    for (size_t i = 0; i < scratchUsers.size(); ++i) {
      size_t r = leaders.size() + i;
      setScratchAttr(scratchUsers[i], SlotAttr::get(&getContext(), base + plan.offsets[r],
                                                        requests[r].bytes));
    }
    for (size_t i = 0; i < leaders.size(); ++i)
      for (auto m = groups.member_begin(groups.findValue(leaders[i]));
           m != groups.member_end(); ++m)
        setSlotAttr(*m, SlotAttr::get(&getContext(), base + plan.offsets[i],
                                            requests[i].bytes));
    for (auto op : block.getOps<KvWriteOp>())
      setSlotAttr(op, getSlotAttr(op.getCache().getDefiningOp()));
    return plan;
  }
};

} // namespace
