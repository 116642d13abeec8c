#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The value of a splat feeding `v`, when `v` is one.
std::optional<float> splatValue(Value v) {
  auto s = v.getDefiningOp<SplatOp>();
  return s ? std::optional<float>(s.getValue().convertToFloat()) : std::nullopt;
}

/// `v` made by an op of type Op whose only use is `v`'s reader.
template <typename Op> Op soleProducer(Value v) {
  auto op = v.getDefiningOp<Op>();
  return op && op->hasOneUse() ? op : Op();
}

/// x * c or c * x, or x / c, with c a splat: x, and `scale` times c (or 1/c).
Value peelScale(Value v, float &scale, SmallVectorImpl<Operation *> &dead) {
  if (auto mul = soleProducer<MulOp>(v)) {
    for (unsigned i = 0; i < 2; ++i)
      if (std::optional<float> c = splatValue(mul->getOperand(i))) {
        scale *= *c;
        dead.push_back(mul);
        return mul->getOperand(1 - i);
      }
  }
  if (auto div = soleProducer<DivOp>(v))
    if (std::optional<float> c = splatValue(div.getRhs())) {
      scale /= *c;
      dead.push_back(div);
      return div.getLhs();
    }
  return v;
}

/// batch_matmul(softmax(...), v) -> attend.
struct FuseEncoderAttention : OpRewritePattern<BatchMatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchMatmulOp out, PatternRewriter &rewriter) const override {
    if (cast<RankedTensorType>(out.getType()).getRank() < 3)
      return failure();
    auto softmax = soleProducer<SoftmaxOp>(out.getLhs());
    if (!softmax)
      return failure();
    SmallVector<Operation *> dead{softmax};
    Value logits = softmax.getInput(), bias;
    float scale = 1.0f;
    if (auto add = soleProducer<AddOp>(logits)) { // the mask: whichever side is not the scores
      for (unsigned i = 0; i < 2 && !bias; ++i) {
        float s = 1.0f;
        SmallVector<Operation *> peeled;
        Value scores = peelScale(add->getOperand(i), s, peeled);
        if (soleProducer<BatchMatmulOp>(scores)) {
          bias = add->getOperand(1 - i);
          logits = add->getOperand(i);
        }
      }
      if (!bias)
        return failure();
      dead.push_back(add);
    }
    Value scores = peelScale(logits, scale, dead);
    auto product = soleProducer<BatchMatmulOp>(scores);
    if (!product)
      return failure();
    dead.push_back(product);
    Value query = peelScale(product.getLhs(), scale, dead);
    // Batch dimensions in front of (S, D) merge into one (heads of a batch).
    auto rank3Type = [](Type t) {
      auto type = cast<RankedTensorType>(t);
      ArrayRef<int64_t> shape = type.getShape();
      int64_t batch = 1;
      for (int64_t d : shape.drop_back(2))
        batch *= d;
      return RankedTensorType::get({batch, shape[shape.size() - 2], shape.back()}, type.getElementType());
    };
    auto rank3 = [&](Value v) -> Value {
      if (!v || cast<RankedTensorType>(v.getType()).getRank() == 3)
        return v;
      return rewriter.create<ReshapeOp>(out.getLoc(), rank3Type(v.getType()), v);
    };
    Value attended = rewriter.create<AttendOp>(out.getLoc(), rank3Type(out.getType()), rank3(query),
                                               rank3(product.getRhs()), rank3(out.getRhs()), rank3(bias),
                                               rewriter.getF32FloatAttr(scale));
    if (attended.getType() != out.getType())
      attended = rewriter.create<ReshapeOp>(out.getLoc(), out.getType(), attended);
    rewriter.replaceOp(out, attended);
    for (Operation *op : dead) // users first: the list runs from the result back
      rewriter.eraseOp(op);
    return success();
  }
};

struct FuseAttentionPass : kiln::impl::FuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseEncoderAttention>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
