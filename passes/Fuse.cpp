#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringExtras.h"

namespace kiln {
#define GEN_PASS_DEF_FUSE
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

Type elementOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// The matmul defining `v` when `v` is its only use.
MatmulOp soleMatmul(Value v) {
  auto m = v.getDefiningOp<MatmulOp>();
  return m && m->hasOneUse() ? m : MatmulOp();
}

/// add(r, x * w) or add(x * w, r) -> residual_matmul(x, w, r).
struct FuseResidual : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      MatmulOp m = soleMatmul(add->getOperand(i));
      if (!m)
        continue;
      Value residual = add->getOperand(1 - i);
      rewriter.replaceOpWithNewOp<ResidualMatmulOp>(add, add.getType(), m.getInput(),
                                                    m.getWeight(), residual);
      rewriter.eraseOp(m);
      return success();
    }
    return failure();
  }
};

/// mul(silu(x * gate), x * up), in either order -> swiglu_matmul(x, gate, up).
struct FuseSwiglu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul, PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      auto silu = mul->getOperand(i).getDefiningOp<SiluOp>();
      MatmulOp up = soleMatmul(mul->getOperand(1 - i));
      if (!silu || !silu->hasOneUse() || !up)
        continue;
      MatmulOp gate = soleMatmul(silu.getInput());
      if (!gate || gate.getInput() != up.getInput() ||
          gate.getWeight().getType() != up.getWeight().getType())
        continue;
      rewriter.replaceOpWithNewOp<SwigluMatmulOp>(mul, mul.getType(), up.getInput(),
                                                  gate.getWeight(), up.getWeight(), Value(),
                                                  FloatAttr());
      rewriter.eraseOp(silu);
      rewriter.eraseOp(gate);
      rewriter.eraseOp(up);
      return success();
    }
    return failure();
  }
};

/// attention(rope(x * wq), kv_write(rope(x * wk)), kv_write(x * wv)) ->
/// attention(qkv_matmul(x, wq, wk, wv)).
struct FuseQkv : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp att, PatternRewriter &rewriter) const override {
    auto qRope = att.getQuery().getDefiningOp<RopeOp>();
    auto kWrite = att.getKeys().getDefiningOp<KvWriteOp>();
    auto vWrite = att.getValues().getDefiningOp<KvWriteOp>();
    if (!qRope || !kWrite || !vWrite || !qRope->hasOneUse() || !kWrite->hasOneUse() ||
        !vWrite->hasOneUse())
      return failure();
    auto kRope = kWrite.getRows().getDefiningOp<RopeOp>();
    if (!kRope || !kRope->hasOneUse())
      return failure();
    MatmulOp q = soleMatmul(qRope.getInput()), k = soleMatmul(kRope.getInput()),
             v = soleMatmul(vWrite.getRows());
    if (!q || !k || !v || k.getInput() != q.getInput() || v.getInput() != q.getInput() ||
        elementOf(q.getWeight()) != elementOf(k.getWeight()) ||
        k.getWeight().getType() != v.getWeight().getType())
      return failure();
    // One rotation for queries and keys, all at the position the caches are
    // written at.
    if (qRope.getHeadDim() != kRope.getHeadDim() || qRope.getRopeDim() != kRope.getRopeDim() ||
        qRope.getFreqBase() != kRope.getFreqBase() ||
        qRope.getFreqFactorsAttr() != kRope.getFreqFactorsAttr() ||
        qRope.getNeox() != kRope.getNeox() || qRope.getMscaleAttr() != kRope.getMscaleAttr() ||
        qRope.getPos() != kRope.getPos() ||
        kWrite.getPos() != qRope.getPos() || vWrite.getPos() != qRope.getPos())
      return failure();
    rewriter.setInsertionPoint(att);
    auto fused = rewriter.create<QkvMatmulOp>(
        att.getLoc(), TypeRange{qRope.getType(), kWrite.getType(), vWrite.getType()},
        q.getInput(), q.getWeight(), k.getWeight(), v.getWeight(), kWrite.getCache(),
        vWrite.getCache(), qRope.getPos(), Value(), qRope.getHeadDimAttr(),
        qRope.getRopeDimAttr(), qRope.getFreqBaseAttr(), FloatAttr(),
        qRope.getFreqFactorsAttr(), qRope.getNeoxAttr(), qRope.getMscaleAttr());
    rewriter.modifyOpInPlace(att, [&] {
      att.getQueryMutable().assign(fused.getQuery());
      att.getKeysMutable().assign(fused.getKeysOut());
      att.getValuesMutable().assign(fused.getValuesOut());
    });
    for (Operation *dead : {qRope.getOperation(), kWrite.getOperation(), vWrite.getOperation(),
                            kRope.getOperation(), q.getOperation(), k.getOperation(),
                            v.getOperation()})
      rewriter.eraseOp(dead);
    return success();
  }
};

/// A fused matmul over int8 weights whose input is an rms_norm used only there
/// normalizes the rows itself, straight into its quantized input.
template <typename FusedOp>
struct FuseNorm : OpRewritePattern<FusedOp> {
  using OpRewritePattern<FusedOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(FusedOp op, PatternRewriter &rewriter) const override {
    auto norm = op.getInput().template getDefiningOp<RmsNormOp>();
    Type element = elementOf(op->getOperand(1));
    if (op.getNorm() || !norm || !norm->hasOneUse() || !isQuantizedType(element) ||
        norm.getWeight().getType().getDimSize(0) != norm.getInput().getType().getDimSize(1))
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getInputMutable().assign(norm.getInput());
      op.getNormMutable().assign(norm.getWeight());
      op.setEpsilonAttr(norm.getEpsilonAttr());
    });
    rewriter.eraseOp(norm);
    return success();
  }
};

struct FusePass : kiln::impl::FuseBase<FusePass> {
  using FuseBase::FuseBase;

  void runOnOperation() override {
    RewritePatternSet set(&getContext());
    llvm::SmallVector<StringRef> names;
    StringRef(patterns).split(names, ',', -1, /*KeepEmpty=*/false);
    for (StringRef name : names) {
      name = name.trim();
      if (name == "residual")
        set.add<FuseResidual>(&getContext());
      else if (name == "swiglu")
        set.add<FuseSwiglu>(&getContext());
      else if (name == "qkv")
        set.add<FuseQkv>(&getContext());
      else if (name == "norm")
        set.add<FuseNorm<SwigluMatmulOp>, FuseNorm<QkvMatmulOp>>(&getContext());
      else {
        getOperation().emitError() << "fuse: unknown pattern '" << name
                                   << "' (residual, swiglu, qkv, norm)";
        return signalPassFailure();
      }
    }
    // Straight-line schedules: no region simplification (kiln ops have no
    // folders, so nothing else changes).
    GreedyRewriteConfig config;
    config.enableRegionSimplification = GreedySimplifyRegionLevel::Disabled;
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(set), config)))
      return signalPassFailure();
  }
};

} // namespace
