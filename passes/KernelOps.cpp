// What the kernel-level passes know of the kernel ops: which operands are
// weights, how much scratch a kernel needs and how much work it does.
#include "passes/Passes.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

static int64_t dim(Value v, unsigned i) {
  return cast<RankedTensorType>(v.getType()).getDimSize(i);
}

bool kiln::isMatmulKernel(Operation *op) {
  return isa<MatmulOp, ResidualMatmulOp, SwigluMatmulOp, QkvMatmulOp>(op);
}

bool kiln::isMatmulWeight(OpOperand &use) {
  Operation *op = use.getOwner();
  unsigned i = use.getOperandNumber();
  if (isa<MatmulOp, ResidualMatmulOp>(op))
    return i == 1;
  if (isa<SwigluMatmulOp>(op))
    return i == 1 || i == 2;
  if (isa<QkvMatmulOp>(op))
    return i >= 1 && i <= 3;
  return false;
}

std::optional<KernelWork> kiln::kernelWork(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<KernelWork>>(op)
      .Case<MatmulOp, ResidualMatmulOp>([](Operation *m) {
        return KernelWork{dim(m->getResult(0), 1) * dim(m->getOperand(0), 1)};
      })
      .Case([](SwigluMatmulOp m) {
        return KernelWork{2 * dim(m.getResult(), 1) * dim(m.getInput(), 1)};
      })
      .Case([](QkvMatmulOp m) {
        return KernelWork{(dim(m.getWq(), 0) + 2 * dim(m.getWk(), 0)) * dim(m.getInput(), 1)};
      })
      .Case([](AttentionOp a) {
        // Scores, then the weighted sum of values: two passes over the context.
        return KernelWork{2 * a.getNHead() * a.getHeadDim(), true,
                          a.getWindow() ? int64_t(*a.getWindow()) : 0};
      })
      .Case<EmbedOp, RmsNormOp, RopeOp, AddOp, BiasAddOp, MulOp, SiluOp, GeluOp>(
          [](Operation *o) { return KernelWork{dim(o->getResult(0), 1)}; })
      .Case([](KvWriteOp w) { return KernelWork{dim(w.getRows(), 1)}; })
      .Default([](Operation *) { return std::nullopt; });
}

int64_t kiln::activationGroup(Type element) { return getBlockElements(element); }

int64_t kiln::activationScratchBytes(int64_t rows, int64_t k, int64_t group, int64_t sumGroup) {
  // The block formats' rows (sums per 16) end with a word per 64 values and
  // an int32 sum per 16.
  int64_t pairWords = sumGroup == 16 ? (k + 63) / 64 * 4 + k / 16 * 4 : 0;
  return rows * (k / group * 4 + (sumGroup ? k / sumGroup * 4 : 0) + k + pairWords);
}

int64_t kiln::activationSumGroup(Type element, bool panels) {
  if (isGgmlBlockType(element))
    return 16;
  return panels ? getBlockElements(element) : 0;
}

/// The input of a matmul kernel quantized per weight block, zero for float
/// weights: operand 0 against the weight that is operand 1.
int64_t kiln::quantizedInputBytes(Operation *op) {
  auto weight = cast<RankedTensorType>(op->getOperand(1).getType());
  Type element = weight.getElementType();
  if (!isQuantizedType(element))
    return 0;
  ArrayRef<int64_t> x = cast<RankedTensorType>(op->getOperand(0).getType()).getShape();
  bool panels = op->getOperand(1).getDefiningOp()->hasAttr("layout");
  return activationScratchBytes(x[0], x[1], activationGroup(element),
                                activationSumGroup(element, panels));
}

int64_t kiln::scratchBytes(Operation *op) {
  if (!isMatmulKernel(op))
    return 0;
  int64_t rows = cast<RankedTensorType>(op->getOperand(0).getType()).getDimSize(0);
  int64_t floats = rows * fusedRowFloats(op);
  // A kernel that normalizes its input keeps one normalized row after them.
  Value norm = fusedNorm(op);
  int64_t normRow = norm ? cast<RankedTensorType>(norm.getType()).getDimSize(0) : 0;
  int64_t quantized = quantizedInputBytes(op);
  if (floats == 0 && normRow == 0)
    return quantized;
  return llvm::alignTo(quantized, 64) + 4 * (floats + normRow);
}

int64_t kiln::fusedRowFloats(Operation *op) {
  if (auto s = dyn_cast<SwigluMatmulOp>(op))
    return s.getUp().getType().getDimSize(0); // the up projection
  if (auto q = dyn_cast<QkvMatmulOp>(op))
    return 2 * q.getWk().getType().getDimSize(0); // keys and values
  return 0;
}

Value kiln::fusedNorm(Operation *op) {
  if (auto s = dyn_cast<SwigluMatmulOp>(op))
    return s.getNorm();
  if (auto q = dyn_cast<QkvMatmulOp>(op))
    return q.getNorm();
  return Value();
}

bool kiln::wholeHeadMajorCache(Operation *op, int64_t rows) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  auto config = module ? module->getAttrOfType<DictionaryAttr>("kiln.model") : nullptr;
  auto layout = config ? config.getAs<StringAttr>("kv_layout") : nullptr;
  auto context = config ? config.getAs<IntegerAttr>("max_context") : nullptr;
  return layout && layout.getValue() == "head-major" && context && rows >= context.getInt();
}

bool kiln::tiledKvCache(Operation *op, Value cache) {
  auto type = cast<RankedTensorType>(cache.getType());
  int64_t rows = type.getDimSize(0);
  return isa<Q4_1Type>(type.getElementType()) && rows % 16 == 0 &&
         wholeHeadMajorCache(op, rows);
}
