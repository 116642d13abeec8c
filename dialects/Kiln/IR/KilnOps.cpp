#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/PatternMatch.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

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
  if (getTransposed() && type.getRank() != 2)
    return emitOpError("transposes only a 2-D tensor");
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
  if (getScale() && !std::isfinite(getScale()->convertToFloat()))
    return emitOpError("expects a finite scale");
  return expectShape(*this, getResult(), {tokens, width}, "result");
}

/// A [rows, D] input and [D] parameters (layer_norm).
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
  if (failed(expectRank(*this, getInput(), 2, "input")) ||
      failed(expectRank(*this, getWeight(), 1, "weight")))
    return failure();
  // A narrower weight normalizes each group of its width (per-head norms).
  int64_t width = getInput().getType().getDimSize(1);
  int64_t group = getWeight().getType().getDimSize(0);
  if (group <= 0 || width % group != 0)
    return emitOpError() << "weight of " << group << " features does not divide rows of "
                         << width;
  if (!(getEpsilon().convertToFloat() > 0.0f))
    return emitOpError() << "expects a positive epsilon, got "
                         << getEpsilon().convertToFloat();
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getInput(), ValueRange{getWeight(), getBias()},
                    getEpsilon().convertToFloat());
}

/// x (rows x K) against a weight (N x K): both rank 2 with the same K.
static LogicalResult verifyProduct(Operation *op, Value input, Value weight) {
  if (failed(expectRank(op, input, 2, "input")) || failed(expectRank(op, weight, 2, "weight")))
    return failure();
  int64_t k = cast<RankedTensorType>(input.getType()).getDimSize(1);
  int64_t wk = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  if (k != wk)
    return op->emitOpError() << "input width " << k << " does not match weight input dimension "
                             << wk;
  return success();
}

static int64_t rowsOf(Value v) { return cast<RankedTensorType>(v.getType()).getDimSize(0); }

/// The weights of one fused kernel share a block format.
static LogicalResult verifySameFormat(Operation *op, ValueRange weights) {
  Type element = cast<RankedTensorType>(weights[0].getType()).getElementType();
  for (Value w : weights.drop_front())
    if (cast<RankedTensorType>(w.getType()).getElementType() != element)
      return op->emitOpError("expects its weights in one format");
  return success();
}

/// Rotary embedding over heads of head_dim in a row of `width`, with one
/// positive factor per rotated pair when there are factors.
static LogicalResult verifyRope(Operation *op, int64_t width, int64_t headDim, int64_t ropeDim,
                                float freqBase, std::optional<ArrayRef<float>> factors) {
  if (headDim <= 0 || width % headDim != 0)
    return op->emitOpError() << "width " << width << " is not a whole number of heads of "
                             << headDim;
  if (ropeDim <= 0 || ropeDim > headDim || ropeDim % 2 != 0)
    return op->emitOpError() << "rope_dim must be even and in (0, " << headDim << "], got "
                             << ropeDim;
  if (!(freqBase > 0.0f))
    return op->emitOpError("expects a positive freq_base");
  if (factors && int64_t(factors->size()) != ropeDim / 2)
    return op->emitOpError() << "expects " << ropeDim / 2 << " freq_factors (one per rotated "
                                "pair), got " << factors->size();
  if (factors && llvm::any_of(*factors, [](float f) { return !(f > 0.0f) || std::isinf(f); }))
    return op->emitOpError("expects positive, finite freq_factors");
  return success();
}

LogicalResult MatmulOp::verify() {
  if (failed(verifyProduct(*this, getInput(), getWeight())))
    return failure();
  return expectShape(*this, getResult(), {rowsOf(getInput()), rowsOf(getWeight())}, "result");
}

LogicalResult ResidualMatmulOp::verify() {
  if (failed(verifyProduct(*this, getInput(), getWeight())))
    return failure();
  if (failed(expectShape(*this, getResidual(), {rowsOf(getInput()), rowsOf(getWeight())},
                         "residual")))
    return failure();
  return expectShape(*this, getResult(), {rowsOf(getInput()), rowsOf(getWeight())}, "result");
}

/// A fused kernel's optional rms_norm of its input: a weight of the input's
/// width, a positive epsilon, and int8 weights (it writes the quantized input).
static LogicalResult verifyFusedNorm(Operation *op, Value input, Value norm,
                                     std::optional<float> epsilon, Value weight) {
  if (!norm)
    return epsilon ? op->emitOpError("has an epsilon but no norm") : success();
  int64_t k = cast<RankedTensorType>(input.getType()).getDimSize(1);
  if (failed(expectShape(op, norm, {k}, "norm weight")))
    return failure();
  if (!epsilon || !(*epsilon > 0.0f))
    return op->emitOpError("expects a positive epsilon with its norm");
  if (!isQuantizedType(cast<RankedTensorType>(weight.getType()).getElementType()))
    return op->emitOpError("normalizes its input only for int8 or int4 weights");
  return success();
}

static std::optional<float> toFloat(std::optional<llvm::APFloat> v) {
  return v ? std::optional<float>(v->convertToFloat()) : std::nullopt;
}

LogicalResult SwigluMatmulOp::verify() {
  if (failed(verifyFusedNorm(*this, getInput(), getNorm(), toFloat(getEpsilon()), getGate())))
    return failure();
  if (failed(verifyProduct(*this, getInput(), getGate())) ||
      failed(verifyProduct(*this, getInput(), getUp())) ||
      failed(verifySameFormat(*this, {getGate(), getUp()})))
    return failure();
  if (getGate().getType().getShape() != getUp().getType().getShape())
    return emitOpError("expects gate and up weights of one shape");
  return expectShape(*this, getResult(), {rowsOf(getInput()), rowsOf(getGate())}, "result");
}

LogicalResult QkvMatmulOp::verify() {
  if (failed(verifyFusedNorm(*this, getInput(), getNorm(), toFloat(getEpsilon()), getWq())))
    return failure();
  for (Value w : {getWq(), getWk(), getWv()})
    if (failed(verifyProduct(*this, getInput(), w)))
      return failure();
  if (failed(verifySameFormat(*this, {getWq(), getWk(), getWv()})))
    return failure();
  int64_t rows = rowsOf(getInput());
  if (failed(expectShape(*this, getQuery(), {rows, rowsOf(getWq())}, "query")))
    return failure();
  for (Value cache : {getKeys(), getValues()}) {
    auto t = cast<RankedTensorType>(cache.getType());
    if (t.getRank() != 2 || t.getDimSize(1) != rowsOf(getWk()) || rows > t.getDimSize(0))
      return emitOpError() << "expects caches of " << rowsOf(getWk())
                           << " columns and at least " << rows << " rows, got " << t;
  }
  if (getWk().getType().getShape() != getWv().getType().getShape())
    return emitOpError("expects key and value weights of one shape");
  if (getKeysOut().getType() != getKeys().getType() ||
      getValuesOut().getType() != getValues().getType())
    return emitOpError("expects the updated caches to keep their types");
  float base = getFreqBase().convertToFloat();
  if (failed(verifyRope(*this, rowsOf(getWq()), getHeadDim(), getRopeDim(), base,
                        getFreqFactors())) ||
      failed(verifyRope(*this, rowsOf(getWk()), getHeadDim(), getRopeDim(), base,
                        getFreqFactors())))
    return failure();
  return success();
}

LogicalResult BiasAddOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input")))
    return failure();
  return expectShape(*this, getBias(), {getInput().getType().getDimSize(1)}, "bias");
}

LogicalResult RopeOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input")))
    return failure();
  if (getMscale() && !(getMscale()->convertToFloat() > 0.0f &&
                       std::isfinite(getMscale()->convertToFloat())))
    return emitOpError("expects a positive, finite mscale");
  return verifyRope(*this, getInput().getType().getDimSize(1), getHeadDim(), getRopeDim(),
                    getFreqBase().convertToFloat(), getFreqFactors());
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
  if (getScale() && !(getScale()->convertToFloat() > 0.0f &&
                      std::isfinite(getScale()->convertToFloat())))
    return emitOpError("expects a positive, finite scale");
  return expectShape(*this, getResult(), {rows, nHead * headDim}, "result");
}

//===----------------------------------------------------------------------===//
// Graph ops of imported ONNX graphs
//===----------------------------------------------------------------------===//

/// Whether `from` broadcasts to `to` (numpy: aligned at the innermost
/// dimension, each of `from`'s 1 or equal).
static bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != 1 && f != t)
      return false;
  }
  return true;
}

/// The shapes of `lhs` and `rhs` are equal.
static LogicalResult expectSameShape(Operation *op, Value lhs, Value rhs, StringRef what) {
  if (tensorOf(lhs).getShape() != tensorOf(rhs).getShape())
    return op->emitOpError() << "expects " << what << " of one shape, got " << lhs.getType() << " and "
                             << rhs.getType();
  return success();
}

LogicalResult EqualOp::verify() {
  return expectShape(*this, getResult(), tensorOf(getLhs()).getShape(), "result");
}

LogicalResult WhereOp::verify() {
  return expectSameShape(*this, getCondition(), getLhs(), "condition and values");
}

LogicalResult CastOp::verify() {
  return expectShape(*this, getResult(), tensorOf(getInput()).getShape(), "result");
}

LogicalResult BroadcastOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("expects one element type");
  if (!broadcastsTo(in.getShape(), out.getShape()))
    return emitOpError() << "cannot broadcast " << in << " to " << out;
  return success();
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (in.getElementType() != out.getElementType() || in.getNumElements() != out.getNumElements())
    return emitOpError() << "expects as many elements of one type, got " << in << " and " << out;
  return success();
}

LogicalResult TransposeOp::verify() {
  RankedTensorType in = tensorOf(getInput());
  ArrayRef<int64_t> perm = getPerm();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOpError("expects a permutation of every dimension");
  SmallVector<int64_t> shape;
  SmallVector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOpError("expects a permutation of every dimension");
    seen[p] = true;
    shape.push_back(in.getDimSize(p));
  }
  if (in.getElementType() != tensorOf(getResult()).getElementType())
    return emitOpError("expects one element type");
  return expectShape(*this, getResult(), shape, "result");
}

LogicalResult ReduceMeanOp::verify() {
  RankedTensorType in = tensorOf(getInput());
  SmallVector<int64_t> shape(in.getShape());
  for (int64_t a : getAxes()) {
    if (a < 0 || a >= in.getRank())
      return emitOpError() << "axis " << a << " is out of range";
    shape[a] = 1;
  }
  return expectShape(*this, getResult(), shape, "result");
}

LogicalResult GatherOp::verify() {
  RankedTensorType in = tensorOf(getInput()), indices = tensorOf(getIndices());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= in.getRank())
    return emitOpError() << "axis " << axis << " is out of range";
  SmallVector<int64_t> shape(in.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, in.getShape().drop_front(axis + 1));
  if (in.getElementType() != tensorOf(getResult()).getElementType())
    return emitOpError("expects one element type");
  return expectShape(*this, getResult(), shape, "result");
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("expects an input");
  RankedTensorType first = tensorOf(getInputs().front());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= first.getRank())
    return emitOpError() << "axis " << axis << " is out of range";
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value v : getInputs()) {
    RankedTensorType t = tensorOf(v);
    if (t.getElementType() != first.getElementType() || t.getRank() != first.getRank())
      return emitOpError("expects inputs of one element type and rank");
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != first.getDimSize(d))
        return emitOpError() << "inputs differ in dimension " << d;
    shape[axis] += t.getDimSize(axis);
  }
  return expectShape(*this, getResult(), shape, "result");
}

LogicalResult SliceOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  if (static_cast<int64_t>(starts.size()) != in.getRank() || static_cast<int64_t>(steps.size()) != in.getRank() ||
      out.getRank() != in.getRank() || in.getElementType() != out.getElementType())
    return emitOpError("expects a start and a step per dimension and a result of the input's rank and type");
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t n = out.getDimSize(d), last = starts[d] + (n - 1) * steps[d];
    if (steps[d] == 0 || (n > 0 && (starts[d] < 0 || starts[d] >= in.getDimSize(d) || last < 0 ||
                                    last >= in.getDimSize(d))))
      return emitOpError() << "dimension " << d << " reads past the input";
  }
  return success();
}

LogicalResult BatchMatmulOp::verify() {
  RankedTensorType lhs = tensorOf(getLhs()), rhs = tensorOf(getRhs());
  int64_t rank = lhs.getRank();
  if (rank < 2 || rhs.getRank() != rank)
    return emitOpError("expects operands of one rank, at least 2");
  if (lhs.getShape().drop_back(2) != rhs.getShape().drop_back(2))
    return emitOpError("expects operands with the same batch dimensions");
  if (lhs.getDimSize(rank - 1) != rhs.getDimSize(rank - 2))
    return emitOpError() << "lhs width " << lhs.getDimSize(rank - 1) << " does not match rhs height "
                         << rhs.getDimSize(rank - 2);
  SmallVector<int64_t> shape(lhs.getShape().drop_back());
  shape.push_back(rhs.getDimSize(rank - 1));
  return expectShape(*this, getResult(), shape, "result");
}

// Folds: the importer writes one reshape, transpose or broadcast per ONNX
// node, and exporters chain them; a chain folds into one, an identity away.

OpFoldResult CastOp::fold(FoldAdaptor) {
  return getInput().getType() == getType() ? getInput() : OpFoldResult();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  return getInput().getType() == getType() ? getInput() : OpFoldResult();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(inner.getPerm()[p]);
    getInputMutable().assign(inner.getInput());
    setPerm(composed);
    return getResult();
  }
  return {};
}

namespace {
/// A 2-D weight transposed becomes the weight read transposed: the pack
/// stores its rows as the kernels read them, and no kernel copies it.
struct TransposeWeight : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    auto weight = op.getInput().getDefiningOp<WeightOp>();
    if (!weight || op.getPerm().size() != 2 || op.getPerm()[0] != 1)
      return failure();
    auto swapped = rewriter.create<WeightOp>(weight.getLoc(), op.getType(), weight.getNameAttr(),
                                             !weight.getTransposed());
    rewriter.replaceOp(op, swapped.getResult());
    return success();
  }
};

/// A transpose that moves only dimensions of size 1 keeps every element in
/// place: a reshape, which costs no copy (exporters write one around
/// attention, [S, 1, D] <-> [1, S, D]).
struct TransposeUnitDims : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> in = cast<RankedTensorType>(op.getInput().getType()).getShape();
    int64_t last = -1;
    for (int64_t p : op.getPerm()) {
      if (in[p] == 1)
        continue;
      if (p < last)
        return failure();
      last = p;
    }
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getInput());
    return success();
  }
};

/// A weight (as stored, read by nothing else) reshaped is the weight with the
/// new shape: the same bytes, which a matmul then finds as its weight (a
/// convolution's [N, C, H, W] kernel read as [N, C * H * W] rows) and
/// pack-layout can lay out for it.
struct ReshapeWeight : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto weight = op.getInput().getDefiningOp<WeightOp>();
    if (!weight || weight.getTransposed() || !weight->hasOneUse())
      return failure();
    rewriter.replaceOpWithNewOp<WeightOp>(op, op.getType(), weight.getNameAttr(), false);
    rewriter.eraseOp(weight);
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<ReshapeWeight>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<TransposeWeight, TransposeUnitDims>(context);
}

namespace {
/// x + broadcast(b), b one row of x's width, is a bias added to the rows of x
/// (an imported graph's linear layer): one row kernel, no broadcast copy. x
/// may be a reshape of the 2-D rows (a matmul's) that keeps the width.
struct AddBias : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op, PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      auto broadcast = op->getOperand(i).getDefiningOp<BroadcastOp>();
      Value x = op->getOperand(1 - i);
      if (!broadcast)
        continue;
      auto row = cast<RankedTensorType>(broadcast.getInput().getType());
      auto type = cast<RankedTensorType>(x.getType());
      int64_t width = type.getShape().back();
      if (row.getNumElements() != width || row.getShape().back() != width)
        continue;
      Value rows = x;
      if (type.getRank() != 2) {
        auto reshape = x.getDefiningOp<ReshapeOp>();
        auto source = reshape ? cast<RankedTensorType>(reshape.getInput().getType()) : nullptr;
        if (!source || source.getRank() != 2 || source.getShape().back() != width)
          continue;
        rows = reshape.getInput();
      }
      Location loc = op.getLoc();
      Value bias = rewriter.create<ReshapeOp>(
          loc, RankedTensorType::get({width}, row.getElementType()), broadcast.getInput());
      Value sum = rewriter.create<BiasAddOp>(loc, rows.getType(), rows, bias);
      if (sum.getType() != type)
        sum = rewriter.create<ReshapeOp>(loc, type, sum);
      rewriter.replaceOp(op, sum);
      return success();
    }
    return failure();
  }
};
} // namespace

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<AddBias>(context);
}

namespace {
/// attend with a bias broadcast over the queries (a padding mask: one row of
/// T per batch) reads that row for every query: the bias becomes [B, 1, T]
/// (still broadcast over any other dimension it lacks) and no [B, S, T] copy
/// is made.
struct AttendRowBias : OpRewritePattern<AttendOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttendOp op, PatternRewriter &rewriter) const override {
    Value bias = op.getBias();
    if (!bias)
      return failure();
    if (auto reshape = bias.getDefiningOp<ReshapeOp>())
      bias = reshape.getInput();
    auto broadcast = bias.getDefiningOp<BroadcastOp>();
    if (!broadcast)
      return failure();
    auto out = cast<RankedTensorType>(broadcast.getType());
    auto in = cast<RankedTensorType>(broadcast.getInput().getType());
    int64_t n = out.getRank(), s = tensorOf(op.getQuery()).getDimSize(1),
            t = tensorOf(op.getKeysT()).getDimSize(2);
    // The input's shape, padded with leading 1s as broadcasting reads it.
    SmallVector<int64_t> padded(n - in.getRank(), 1);
    llvm::append_range(padded, in.getShape());
    if (n < 2 || out.getDimSize(n - 2) != s || out.getDimSize(n - 1) != t || s == 1 ||
        padded[n - 2] != 1)
      return failure();
    SmallVector<int64_t> rows(out.getShape());
    rows[n - 2] = 1;
    Location loc = op.getLoc();
    Value row = broadcast.getInput();
    if (padded != rows)
      row = rewriter.create<BroadcastOp>(loc, RankedTensorType::get(rows, out.getElementType()), row);
    int64_t batch = tensorOf(op.getQuery()).getDimSize(0);
    auto rowType = RankedTensorType::get({batch, 1, t}, out.getElementType());
    if (row.getType() != rowType)
      row = rewriter.create<ReshapeOp>(loc, rowType, row);
    rewriter.modifyOpInPlace(op, [&] { op.getBiasMutable().assign(row); });
    return success();
  }
};
} // namespace

void AttendOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<AttendRowBias>(context);
}

LogicalResult AttendOp::verify() {
  RankedTensorType q = tensorOf(getQuery()), kt = tensorOf(getKeysT()), v = tensorOf(getValues());
  if (q.getRank() != 3 || kt.getRank() != 3 || v.getRank() != 3)
    return emitOpError("expects [B, S, D] queries, [B, D, T] keys and [B, T, E] values");
  const int64_t batch = q.getDimSize(0), s = q.getDimSize(1), d = q.getDimSize(2), t = kt.getDimSize(2);
  if (kt.getDimSize(0) != batch || kt.getDimSize(1) != d || v.getDimSize(0) != batch || v.getDimSize(1) != t)
    return emitOpError("expects [B, S, D] queries, [B, D, T] keys and [B, T, E] values");
  if (getBias() && tensorOf(getBias()).getShape() != ArrayRef<int64_t>{batch, s, t} &&
      tensorOf(getBias()).getShape() != ArrayRef<int64_t>{batch, 1, t})
    return emitOpError() << "expects a bias of shape " << batch << "x" << s << "x" << t << " or "
                         << batch << "x1x" << t;
  return expectShape(*this, getResult(), {batch, s, v.getDimSize(2)}, "result");
}

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.cpp.inc"
