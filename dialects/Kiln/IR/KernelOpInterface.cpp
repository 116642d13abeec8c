// What every kernel op answers (KernelOpInterface): the weights a matmul
// kernel reads, the scratch its kernel needs and the work by which
// partition-work splits it.
#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

#include "dialects/Kiln/IR/KilnInterfaces.cpp.inc"

static int64_t dim(Value v, unsigned i) {
  return cast<RankedTensorType>(v.getType()).getDimSize(i);
}

bool kiln::isMatmulKernel(Operation *op) {
  auto kernel = dyn_cast<KernelOpInterface>(op);
  return kernel && !kernel.getMatmulWeights().empty();
}

bool kiln::isMatmulWeight(OpOperand &use) {
  auto kernel = dyn_cast<KernelOpInterface>(use.getOwner());
  if (!kernel)
    return false;
  OperandRange weights = kernel.getMatmulWeights();
  return !weights.empty() && use.getOperandNumber() >= weights.getBeginOperandIndex() &&
         use.getOperandNumber() < weights.getBeginOperandIndex() + weights.size();
}

int64_t kiln::activationGroup(Type element) { return getBlockElements(element); }

int kiln::activationLayout(Type element, bool panels) {
  return kiln_uk_act_layout(getKernelFamily(element), panels);
}

int64_t kiln::activationStride(Type element, bool panels, int64_t k) {
  return int64_t(kiln_uk_act_stride(activationLayout(element, panels), int32_t(k),
                                    int32_t(activationGroup(element))));
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

/// The scratch of a matmul kernel: its input (operand 0) quantized for its
/// first weight, then the fused kernels' rows of floats and normalized row.
static int64_t matmulScratchBytes(Operation *op) {
  Value weight = cast<KernelOpInterface>(op).getMatmulWeights().front();
  Type element = cast<RankedTensorType>(weight.getType()).getElementType();
  int64_t rows = dim(op->getOperand(0), 0), k = dim(op->getOperand(0), 1);
  int64_t quantized =
      isQuantizedType(element)
          ? rows * activationStride(element, bool(getLayoutAttr(weight.getDefiningOp())), k)
          : 0;
  int64_t floats = rows * fusedRowFloats(op);
  // A kernel that normalizes its input keeps one normalized row after them.
  Value norm = fusedNorm(op);
  int64_t normRow = norm ? dim(norm, 0) : 0;
  if (floats == 0 && normRow == 0)
    return quantized;
  return int64_t(llvm::alignTo(quantized, KILN_UK_ALIGN)) + 4 * (floats + normRow);
}

/// Row-wise ops: elements of a result row (its innermost dimension: a
/// graph's tensors may have leading dimensions) times what one element costs
/// in multiply-adds of a matmul, roughly: an exponential or a division per
/// element is about as long as 16 of them (an exact GELU runs at a
/// hundredth of an int8 matmul's multiply-adds per second), a normalization
/// reads each element twice.
static std::optional<KernelWork> rowWork(Operation *op, int64_t cost = 1) {
  return KernelWork{cost * cast<RankedTensorType>(op->getResult(0).getType()).getShape().back()};
}

OperandRange MatmulOp::getMatmulWeights() { return getOperation()->getOperands().slice(1, 1); }
int64_t MatmulOp::getScratchBytes() { return matmulScratchBytes(*this); }
std::optional<KernelWork> MatmulOp::getKernelWork() {
  return KernelWork{dim(getResult(), 1) * dim(getInput(), 1)};
}

OperandRange ResidualMatmulOp::getMatmulWeights() {
  return getOperation()->getOperands().slice(1, 1);
}
int64_t ResidualMatmulOp::getScratchBytes() { return matmulScratchBytes(*this); }
std::optional<KernelWork> ResidualMatmulOp::getKernelWork() {
  return KernelWork{dim(getResult(), 1) * dim(getInput(), 1)};
}

OperandRange SwigluMatmulOp::getMatmulWeights() {
  return getOperation()->getOperands().slice(1, 2);
}
int64_t SwigluMatmulOp::getScratchBytes() { return matmulScratchBytes(*this); }
std::optional<KernelWork> SwigluMatmulOp::getKernelWork() {
  return KernelWork{2 * dim(getResult(), 1) * dim(getInput(), 1)};
}

OperandRange QkvMatmulOp::getMatmulWeights() { return getOperation()->getOperands().slice(1, 3); }
int64_t QkvMatmulOp::getScratchBytes() { return matmulScratchBytes(*this); }
std::optional<KernelWork> QkvMatmulOp::getKernelWork() {
  return KernelWork{(dim(getWq(), 0) + 2 * dim(getWk(), 0)) * dim(getInput(), 1)};
}

std::optional<KernelWork> AttentionOp::getKernelWork() {
  // Scores, then the weighted sum of values: two passes over the context.
  return KernelWork{2 * getNHead() * getHeadDim(), true,
                    getWindow() ? int64_t(*getWindow()) : 0};
}

std::optional<KernelWork> KvWriteOp::getKernelWork() { return KernelWork{dim(getRows(), 1)}; }
std::optional<KernelWork> EmbedOp::getKernelWork() { return rowWork(*this); }
std::optional<KernelWork> RmsNormOp::getKernelWork() { return rowWork(*this, 4); }
std::optional<KernelWork> LayerNormOp::getKernelWork() { return rowWork(*this, 4); }
std::optional<KernelWork> RopeOp::getKernelWork() { return rowWork(*this, 4); }
std::optional<KernelWork> AddOp::getKernelWork() { return rowWork(*this); }
std::optional<KernelWork> MulOp::getKernelWork() { return rowWork(*this); }
std::optional<KernelWork> BiasAddOp::getKernelWork() { return rowWork(*this); }
std::optional<KernelWork> SiluOp::getKernelWork() { return rowWork(*this, 16); }
std::optional<KernelWork> GeluOp::getKernelWork() { return rowWork(*this, 16); }
std::optional<KernelWork> SoftmaxOp::getKernelWork() { return rowWork(*this, 16); }
std::optional<KernelWork> GeluErfOp::getKernelWork() { return rowWork(*this, 16); }

int64_t kiln::rowCount(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getRank() == 0 ? 1 : type.getNumElements() / type.getShape().back();
}

bool kiln::isTiledKvCache(Type cache) {
  KvCacheLayoutAttr layout = getKvCacheLayout(cache);
  return layout && layout.getTile() > 0;
}

int64_t AttendOp::getShareScratchBytes() {
  return int64_t(llvm::alignTo(kiln_uk_attend_scratch_bytes(dim(getKeysT(), 2)), KILN_UK_ALIGN));
}
int64_t AttendOp::getScratchBytes() {
  SplitAttr split = getSplitAttr(*this);
  return (split ? split.getShares() : 1) * getShareScratchBytes();
}
std::optional<KernelWork> AttendOp::getKernelWork() {
  // Per query row: its scores over every key, then as many multiply-adds
  // for the weighted values.
  return KernelWork{dim(getKeysT(), 2) * (dim(getQuery(), 2) + dim(getValues(), 2))};
}
