#include "passes/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/GlobPattern.h"

namespace kiln {
#define GEN_PASS_DEF_QUANTIZE
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Whether a KV cache of type `cache` in the module of `op` is head-major and
/// holds the whole context (not a ring, as the module's model says): such an
/// int4 cache takes tiles of positions.
bool wholeHeadMajorCache(Operation *op, RankedTensorType cache) {
  KvCacheLayoutAttr layout = getKvCacheLayout(cache);
  ModelAttr config = getModelConfig(op);
  return layout && layout.getOrder() == KvOrder::head_major && config &&
         cache.getDimSize(0) >= config.getMaxContext();
}

bool isQuantized(Type element) {
  return isQuantizedType(element);
}

struct Rule {
  llvm::GlobPattern pattern;
  Type format;
};

struct QuantizePass : kiln::impl::QuantizeBase<QuantizePass> {
  using QuantizeBase::QuantizeBase;

  LogicalResult initialize(MLIRContext *ctx) override {
    if (!weights.empty() && !(defaultFormat = parseWeightFormat(ctx, weights)))
      return emitError(UnknownLoc::get(ctx))
             << "unknown weight format '" << weights << "' (" << weightFormatNames() << ")";
    llvm::SmallVector<StringRef> items;
    StringRef(overrides).split(items, ',', -1, /*KeepEmpty=*/false);
    for (StringRef item : items) {
      auto [glob, format] = item.split('=');
      auto pattern = llvm::GlobPattern::create(glob.trim());
      Type type = parseWeightFormat(ctx, format.trim());
      if (!pattern || !type) {
        if (!pattern)
          llvm::consumeError(pattern.takeError());
        return emitError(UnknownLoc::get(ctx))
               << "bad override '" << item << "' (expected <glob>=<format>)";
      }
      rules.push_back({std::move(*pattern), type});
    }
    if (kv != "f32" && kv != "f16" && kv != "q8" && kv != "q4")
      return emitError(UnknownLoc::get(ctx))
             << "unknown KV cache type '" << kv << "' (f32, f16, q8, q4)";
    return success();
  }

  void runOnOperation() override {
    getOperation().walk([&](WeightOp op) { quantizeWeight(op); });
    if (kv == "f32")
      return;
    WalkResult result = getOperation().walk([&](AttentionOp op) -> WalkResult {
      if (kv == "q8" && op.getHeadDim() % 2 != 0)
        return op.emitOpError("a q8 KV cache needs an even head dimension, got ")
               << op.getHeadDim();
      if (kv == "q4" && op.getHeadDim() % 32 != 0)
        return op.emitOpError("a q4 KV cache (groups of 32) needs a head dimension that is a "
                              "multiple of 32, got ")
               << op.getHeadDim();
      retypeCache(op);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  void quantizeWeight(WeightOp op) {
    RankedTensorType type = op.getType();
    Type format = defaultFormat;
    for (const Rule &rule : rules)
      if (rule.pattern.match(op.getName()))
        format = rule.format;
    if (!format || type.getRank() != 2 || isQuantized(type.getElementType()) ||
        format == type.getElementType())
      return;
    // Only the matmul and embedding kernels read a quantized weight (a
    // graph's weights may feed any op: an add of position embeddings).
    for (OpOperand &use : op->getUses()) {
      auto embed = dyn_cast<EmbedOp>(use.getOwner());
      if (!isMatmulWeight(use) && !(embed && use.getOperandNumber() == 0))
        return;
    }
    if (type.getDimSize(1) % getBlockElements(format) != 0) {
      op.emitWarning() << "kept as " << type.getElementType() << ": rows of "
                       << type.getDimSize(1) << " are not whole blocks of " << format;
      return;
    }
    op.getResult().setType(RankedTensorType::get(type.getShape(), format));
  }

  /// Gives the cache operands of `op` (and the ops that produce them) the
  /// requested element type; every function sees the same cache type.
  void retypeCache(AttentionOp op) {
    MLIRContext *ctx = &getContext();
    Type element = kv == "f16"  ? Type(Float16Type::get(ctx))
                   : kv == "q4" ? getWeightFormatType(ctx, KILN_UK_FORMAT_Q4_1)
                                : Type(I8GroupType::get(ctx, op.getHeadDim()));
    for (Value cache : {op.getKeys(), op.getValues()}) {
      auto type = cast<RankedTensorType>(cache.getType());
      SmallVector<int64_t> shape(type.getShape());
      Attribute encoding = type.getEncoding();
      // A head-major int4 cache over the whole context takes tiles of
      // KILN_UK_KV_TILE positions: its rows rounded up to whole tiles.
      if (kv == "q4" && wholeHeadMajorCache(getOperation(), type)) {
        shape[0] = llvm::alignTo(shape[0], KILN_UK_KV_TILE);
        KvCacheLayoutAttr layout = getKvCacheLayout(type);
        encoding = KvCacheLayoutAttr::get(ctx, layout.getOrder(), layout.getHeads(),
                                          KILN_UK_KV_TILE);
      }
      auto retyped = RankedTensorType::get(shape, element, encoding);
      for (Value v = cache; v; ) {
        v.setType(retyped);
        auto write = v.getDefiningOp<KvWriteOp>();
        v = write ? write.getCache() : Value();
      }
    }
  }

  Type defaultFormat;
  std::vector<Rule> rules;
};

} // namespace
