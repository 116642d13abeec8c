#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln;

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Checks that `v` has rank `rank`; names the operand in the diagnostic.
static LogicalResult expectRank(Operation *op, Value v, int64_t rank,
                                StringRef what) {
  if (tensorOf(v).getRank() != rank)
    return op->emitOpError() << "expects " << what << " of rank " << rank
                             << ", got " << v.getType();
  return success();
}

static LogicalResult expectShape(Operation *op, Value v, ArrayRef<int64_t> shape,
                                 StringRef what) {
  if (tensorOf(v).getShape() != shape) {
    InFlightDiagnostic diag = op->emitOpError() << "expects " << what << " of shape ";
    llvm::interleave(shape, diag, "x");
    return diag << ", got " << v.getType();
  }
  return success();
}

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("expects a non-empty tensor name");
  RankedTensorType type = getType();
  if (!type.hasStaticShape())
    return emitOpError("expects a static shape");
  int64_t block = getBlockElements(type.getElementType());
  if (type.getRank() == 0 || type.getShape().back() % block != 0)
    return emitOpError() << "innermost dimension must be a multiple of the block size "
                         << block << " of " << type.getElementType();
  return success();
}

LogicalResult KvWriteOp::verify() {
  RankedTensorType cache = getCache().getType(), rows = getRows().getType();
  if (failed(expectRank(*this, getRows(), 2, "rows")))
    return failure();
  if (rows.getDimSize(1) != cache.getDimSize(1))
    return emitOpError() << "row width " << rows.getDimSize(1)
                         << " does not match cache width " << cache.getDimSize(1);
  if (rows.getDimSize(0) > cache.getDimSize(0))
    return emitOpError() << "writes " << rows.getDimSize(0)
                         << " rows into a cache of capacity " << cache.getDimSize(0);
  return success();
}

LogicalResult EmbedOp::verify() {
  if (failed(expectRank(*this, getTable(), 2, "table")))
    return failure();
  int64_t tokens = getTokens().getType().getDimSize(0);
  int64_t width = getTable().getType().getDimSize(1);
  return expectShape(*this, getResult(), {tokens, width}, "result");
}

/// Shared by the normalisations: a [rows, D] input and [D] parameters.
static LogicalResult verifyNorm(Operation *op, Value input, ValueRange params,
                                float epsilon) {
  if (failed(expectRank(op, input, 2, "input")))
    return failure();
  int64_t width = tensorOf(input).getDimSize(1);
  for (Value p : params)
    if (failed(expectShape(op, p, {width}, "a parameter")))
      return failure();
  if (!(epsilon > 0.0f))
    return op->emitOpError() << "expects a positive epsilon, got " << epsilon;
  return success();
}

LogicalResult RmsNormOp::verify() {
  return verifyNorm(*this, getInput(), getWeight(), getEpsilon().convertToFloat());
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getInput(), ValueRange{getWeight(), getBias()},
                    getEpsilon().convertToFloat());
}

LogicalResult MatmulOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input")) ||
      failed(expectRank(*this, getWeight(), 2, "weight")))
    return failure();
  ArrayRef<int64_t> x = getInput().getType().getShape();
  ArrayRef<int64_t> w = getWeight().getType().getShape();
  if (x[1] != w[1])
    return emitOpError() << "input width " << x[1]
                         << " does not match weight input dimension " << w[1];
  return expectShape(*this, getResult(), {x[0], w[0]}, "result");
}

LogicalResult RopeOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input")))
    return failure();
  int64_t headDim = getHeadDim(), ropeDim = getRopeDim();
  int64_t width = getInput().getType().getDimSize(1);
  if (headDim <= 0 || width % headDim != 0)
    return emitOpError() << "width " << width << " is not a whole number of heads of "
                         << headDim;
  if (ropeDim <= 0 || ropeDim > headDim || ropeDim % 2 != 0)
    return emitOpError() << "rope_dim must be even and in (0, " << headDim << "], got "
                         << ropeDim;
  if (!(getFreqBase().convertToFloat() > 0.0f))
    return emitOpError("expects a positive freq_base");
  return success();
}

LogicalResult AttentionOp::verify() {
  int64_t nHead = getNHead(), nKvHead = getNKvHead(), headDim = getHeadDim();
  if (nHead <= 0 || nKvHead <= 0 || headDim <= 0)
    return emitOpError("expects positive n_head, n_kv_head and head_dim");
  if (nHead % nKvHead != 0)
    return emitOpError() << "n_head " << nHead << " is not a multiple of n_kv_head "
                         << nKvHead;
  if (failed(expectRank(*this, getQuery(), 2, "query")))
    return failure();
  int64_t rows = getQuery().getType().getDimSize(0);
  if (failed(expectShape(*this, getQuery(), {rows, nHead * headDim}, "query")))
    return failure();
  if (getKeys().getType() != getValues().getType())
    return emitOpError() << "keys " << getKeys().getType() << " and values "
                         << getValues().getType() << " differ";
  int64_t capacity = getKeys().getType().getDimSize(0);
  if (failed(expectShape(*this, getKeys(), {capacity, nKvHead * headDim}, "keys")))
    return failure();
  if (rows > capacity)
    return emitOpError() << rows << " query rows exceed the cache capacity " << capacity;
  if (getWindow() && *getWindow() <= 0)
    return emitOpError("expects a positive window");
  return expectShape(*this, getResult(), {rows, nHead * headDim}, "result");
}

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.cpp.inc"
