// The portable c99 target: plain C loops with every dimension a constant.
#include "codegen_targets/Target.h"

#include "kernels/kiln_uk_abi.h"
#include "passes/Passes.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace kiln;
using llvm::formatv;

namespace {

/// How a kernel reads a weight or cache format: the helper family and, for the
/// integer families, the group its input is quantized in. Q8_0 and Q4_0 share
/// the group-wise layouts (an f16 scale, then the values), with groups of 32.
/// The other GGUF block formats have helpers of their own name (qdot_q4_k,
/// row_q4_k, ...) that read the input quantized per block (32 or 256) with the
/// scaled sum of each 16.
struct ElementCode {
  std::string family; // f32, f16, bf16, i8, i4, or a GGUF block format
  int64_t group = 1;
  std::string name;   // for kernel names
  bool blocks = false;
  int id = KILN_UK_F32; // KILN_UK_<family>
};

ElementCode elementCode(Type element) {
  int family = getKernelFamily(element);
  if (family < 0)
    family = KILN_UK_F32;
  std::string name = getWeightFormatName(element);
  bool floats = family == KILN_UK_F32 || family == KILN_UK_F16 || family == KILN_UK_BF16;
  return {kiln_uk_family_name(family), floats ? 1 : activationGroup(element),
          name.empty() ? "f32" : name, kiln_uk_is_block_family(family) != 0, family};
}

ElementCode elementCode(Value v) {
  return elementCode(cast<RankedTensorType>(v.getType()).getElementType());
}

/// KILN_UK_<FAMILY>, the C name of a family ("i8" -> KILN_UK_I8).
std::string familyConstant(llvm::StringRef family) {
  return "KILN_UK_" + family.upper();
}

/// Whether a KV cache is head-major (its type's #kiln.kv layout, as
/// --kv-layout set it; pos-major without one).
bool headMajorCache(Value cache) {
  KvCacheLayoutAttr layout = getKvCacheLayout(cache.getType());
  return layout && layout.getOrder() == KvOrder::head_major;
}

/// Where a KV cache keeps (position slot, kv head): head-major ([head][slot][dim],
/// one head's positions contiguous; kiln-compile's default) or pos-major rows of
/// all heads ([slot][head][dim]), as its type's layout says. A tiled int4
/// cache keeps a head's positions in tiles of 16 (kv_tile_put_q4 has the
/// bytes).
struct CacheLayout {
  int64_t rows, heads, headBytes;
  bool headMajor, tiled;

  CacheLayout(Value cache, int64_t heads, int64_t headBytes)
      : rows(cast<RankedTensorType>(cache.getType()).getDimSize(0)), heads(heads),
        headBytes(headBytes), headMajor(headMajorCache(cache)),
        tiled(isTiledKvCache(cache.getType())) {}
  /// C expression of the byte offset of (slot, head); of its tile when tiled.
  std::string at(llvm::StringRef slot, llvm::StringRef head) const {
    if (tiled)
      return formatv("((size_t)({0}) * {1}u + (size_t)(({2}) & ~15)) * {3}u", head, rows, slot,
                     headBytes)
          .str();
    return headMajor ? formatv("((size_t)({0}) * {1}u + (size_t)({2})) * {3}u", head, rows, slot,
                               headBytes)
                           .str()
                     : formatv("(size_t)({0}) * {1}u + (size_t)({2}) * {3}u", slot,
                               heads * headBytes, head, headBytes)
                           .str();
  }
  /// C statement storing the floats x of (slot, head) at cache c with kv_store_<family>.
  std::string store(llvm::StringRef family, llvm::StringRef x, llvm::StringRef c,
                    llvm::StringRef slot, llvm::StringRef head, int64_t hd) const {
    if (tiled)
      return formatv("kv_store_q4t({0}, {1} + {2}, ({3}) % 16, {4});", x, c, at(slot, head), slot,
                     hd)
          .str();
    return formatv("kv_store_{0}({1}, {2} + {3}, {4});", family, x, c, at(slot, head), hd).str();
  }
  /// C statement loading (slot, head) of cache c as floats into x (kv_load_row).
  std::string load(llvm::StringRef family, llvm::StringRef c, llvm::StringRef slot,
                   llvm::StringRef head, llvm::StringRef x, int64_t hd) const {
    if (tiled)
      return formatv("kv_load_q4t({0} + {1}, ({2}) % 16, {3}, {4});", c, at(slot, head), slot, x,
                     hd)
          .str();
    return formatv("kv_load_row({0}, {1} + {2}, {3}, {4});", family, c, at(slot, head), x, hd)
        .str();
  }
  /// Bytes from (slot, head) on that the next write touches (prefetch_store).
  int64_t writeBytes() const { return tiled ? 16 * headBytes : headBytes; }
  /// Bytes from one position to the next of a head, and from one head to the next.
  int64_t positionStride() const { return headMajor ? headBytes : heads * headBytes; }
  int64_t headStride() const { return headMajor ? rows * headBytes : headBytes; }
  std::string tag() const { return tiled ? "_hmt" : headMajor ? "_hm" : ""; } // in kernel names
};

/// The code of a KV cache: as a weight's, but q4_1 blocks are the int4 cache
/// (family q4: kv_store_q4, KILN_UK_Q4).
ElementCode cacheCode(Value cache) {
  ElementCode c = elementCode(cache);
  if (c.id == KILN_UK_Q4_1)
    return {kiln_uk_family_name(KILN_UK_Q4), 32, "q4", false, KILN_UK_Q4};
  return c;
}

int64_t dim(Value v, unsigned i) { return cast<RankedTensorType>(v.getType()).getDimSize(i); }

/// A float constant that reads back as the same float.
std::string floatLiteral(double v) { return formatv("{0:e9}f", v).str(); }

std::optional<float> toFloat(std::optional<llvm::APFloat> v) {
  return v ? std::optional<float>(v->convertToFloat()) : std::nullopt;
}

class C99Target : public TargetDescription {
public:
  explicit C99Target(const IsaVariant &variant) : variant(variant) {}

  llvm::StringRef name() const override { return variant.name; }
  const IsaVariant &isaVariant() const override { return variant; }

  FailureOr<KernelCall> kernelFor(Operation *op, llvm::StringRef prefix,
                                  const OperandNames &names) const override {
    KernelCall k;
    SplitAttr split = getSplitAttr(op);
    auto arg = [&](Value v) { k.args.push_back(names.operand(v)); };
    auto res = [&]() { k.args.push_back(names.result(op)); };
    LogicalResult ok =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](EmbedOp e) {
              ElementCode c = elementCode(e.getTable());
              int64_t d = dim(e.getResult(), 1);
              std::string group =
                  c.group > 1 && !c.blocks ? formatv(", {0}", c.group).str() : "";
              k.name = formatv("{0}_embed_{1}_d{2}", prefix, c.name, d);
              k.params = "const uint8_t *table, const int32_t *tokens, float *y, int32_t rows";
              k.body = rowRange(split) + formatv(R"c(  int32_t r;
  for (r = r0; r < r1; ++r)
    row_{0}(table + (size_t)tokens[r] * {1}u, y + (size_t)r * {2}, {2}{3});
)c",
                               c.family, rowBytes(e.getTable()), d, group).str();
              if (std::optional<llvm::APFloat> scale = e.getScale()) {
                // gemma3 scales the embeddings by sqrt(n_embd).
                float f = scale->convertToFloat();
                k.name += formatv("_x{0}", hexFloat(f)).str();
                k.body += formatv(R"c(  {
    int32_t i;
    for (i = r0 * {0}; i < r1 * {0}; ++i)
      y[i] *= {1};
  }
)c",
                                  d, floatLiteral(f)).str();
              }
              arg(e.getTable()), arg(e.getTokens()), res();
              return success();
            })
            .Case([&](MatmulOp m) { return matmul(m, prefix, names, k); })
            .Case([&](ResidualMatmulOp m) { return residualMatmul(m, prefix, names, k); })
            .Case([&](SwigluMatmulOp m) { return swigluMatmul(m, prefix, names, k); })
            .Case([&](QkvMatmulOp m) { return qkvMatmul(m, prefix, names, k); })
            .Case([&](RmsNormOp n) {
              // Each group of the weight's width on its own (one per head
              // for per-head norms, the whole row otherwise).
              int64_t d = dim(n.getInput(), 1), g = dim(n.getWeight(), 0);
              float eps = n.getEpsilon().convertToFloat();
              k.name = formatv("{0}_rms_norm_d{1}", prefix, d);
              if (g != d)
                k.name += formatv("_g{0}", g).str();
              k.params = "const float *x, const uint8_t *w, float *y, int32_t rows";
              k.body = rowRange(split) + formatv(R"c(  int32_t r, i;
  for (r = r0; r < r1; ++r)
    for (i = 0; i < {0}; i += {2})
      rms_norm_row(x + (size_t)r * {0} + i, (const float *)(const void *)w, y + (size_t)r * {0} + i, {2}, {1});
)c",
                               d, floatLiteral(eps), g).str();
              k.name += formatv("_e{0}", hexFloat(eps)).str();
              arg(n.getInput()), arg(n.getWeight()), res();
              return success();
            })
            .Case([&](RopeOp r) { return rope(r, prefix, names, k); })
            .Case([&](KvWriteOp w) {
              ElementCode c = cacheCode(w.getCache());
              int64_t width = dim(w.getRows(), 1);
              // Whole rows at once where the heads are adjacent.
              int64_t hd = c.family == "i8" ? c.group : width;
              if (headMajorCache(w.getCache()) && c.family != "i8")
                hd = width / getKvCacheLayout(w.getCache().getType()).getHeads();
              int64_t heads = width / hd, headBytes = cacheHeadBytes(c, hd);
              CacheLayout layout(w.getCache(), heads, headBytes);
              k.name = formatv("{0}_kv_write_{1}_w{2}_r{3}{4}", prefix, c.name, width,
                               dim(w.getCache(), 0), layout.tag());
              k.params = "const float *x, void *cache, int32_t rows, int32_t pos";
              // The share that writes the last row asks for the next step's.
              k.body = rowRange(split) + formatv(R"c(  uint8_t *c = (uint8_t *)cache;
  int32_t r, h;
  for (r = r0; r < r1; ++r)
    for (h = 0; h < {0}; ++h)
      {1}
  if (r1 == rows)
    for (h = 0; h < {0}; ++h)
      prefetch_store(c + {2}, {3}u);
)c",
                               heads,
                               layout.store(c.family, formatv("x + (size_t)r * {0} + h * {1}",
                                                              width, hd).str(),
                                            "c",
                                            formatv("(pos + r) % {0}", dim(w.getCache(), 0)).str(),
                                            "h", hd),
                               layout.at(formatv("(pos + rows) % {0}", dim(w.getCache(), 0)).str(),
                                         "h"),
                               layout.writeBytes()).str();
              arg(w.getRows()), arg(w.getCache()), k.args.push_back("rows"),
                  k.args.push_back("pos");
              return success();
            })
            .Case([&](AttentionOp a) { return attention(a, prefix, names, k); })
            .Case<AddOp, MulOp>([&](Operation *b) {
              bool add = isa<AddOp>(b);
              int64_t width = dim(b->getResult(0), 1);
              k.name = formatv("{0}_{1}_w{2}", prefix, add ? "add" : "mul", width);
              k.params = "const float *a, const float *b, float *y, int32_t rows";
              k.body = rowRange(split) +
                       formatv("  vec_{1}(a + (size_t)r0 * {0}, b + (size_t)r0 * {0}, "
                               "y + (size_t)r0 * {0}, (r1 - r0) * {0});\n",
                               width, add ? "add" : "mul")
                           .str();
              arg(b->getOperand(0)), arg(b->getOperand(1)), res();
              return success();
            })
            .Case([&](BiasAddOp a) {
              int64_t width = dim(a.getResult(), 1);
              k.name = formatv("{0}_bias_add_w{1}", prefix, width);
              k.params = "const float *x, const uint8_t *b, float *y, int32_t rows";
              k.body = rowRange(split) + formatv(R"c(  const float *bias = (const float *)(const void *)b;
  int32_t r, i;
  for (r = r0; r < r1; ++r)
    for (i = 0; i < {0}; ++i)
      y[(size_t)r * {0} + i] = x[(size_t)r * {0} + i] + bias[i];
)c",
                                                 width).str();
              arg(a.getInput()), arg(a.getBias()), res();
              return success();
            })
            .Case<SiluOp, GeluOp>([&](Operation *s) {
              StringRef fn = isa<SiluOp>(s) ? "silu" : "gelu";
              int64_t width = dim(s->getResult(0), 1);
              k.name = formatv("{0}_{1}_w{2}", prefix, fn, width);
              k.params = "const float *x, float *y, int32_t rows";
              k.body = rowRange(split) + formatv(R"c(  {1}(x + (size_t)r0 * {0}, y + (size_t)r0 * {0}, (r1 - r0) * {0});
)c",
                               width, fn).str();
              arg(s->getOperand(0)), res();
              return success();
            })
            .Default([&](Operation *other) {
              return other->emitOpError() << "has no kernel in the " << variant.name
                                          << " target";
            });
    if (failed(ok))
      return failure();
    if (!isa<RopeOp, KvWriteOp, AttentionOp, QkvMatmulOp>(op))
      k.args.push_back("rows");
    if (split) {
      // A split kernel computes shares s0..s1-1 of split.getShares().
      k.name += formatv("_s{0}", split.getShares()).str();
      k.params += ", int32_t s0, int32_t s1";
    }
    return k;
  }

private:
  const IsaVariant &variant;

  /// `r0`, `r1`: the rows of the call's shares, all rows when not split.
  static std::string rowRange(SplitAttr split) {
    if (!split)
      return "  const int32_t r0 = 0, r1 = rows;\n";
    return formatv("  const int32_t r0 = (int32_t)((int64_t)rows * s0 / {0}),\n"
                   "                r1 = (int32_t)((int64_t)rows * s1 / {0});\n",
                   split.getShares());
  }

  /// `lo`, `hi`: the output columns of the call's shares, from a table of the
  /// split's share boundaries; all `count` of them when not split.
  static std::string shareRange(SplitAttr split, int64_t count, StringRef lo, StringRef hi) {
    if (!split)
      return formatv("  const int32_t {0} = 0, {1} = {2};\n", lo, hi, count);
    int64_t shares = split.getShares(), grain = split.getGrain();
    int64_t units = (count + grain - 1) / grain;
    std::string bounds;
    for (int64_t s = 0; s <= shares; ++s)
      bounds += formatv("{0}{1}", s ? ", " : "", std::min(count, s * units / shares * grain)).str();
    return formatv("  static const int32_t share_bounds[{0}] = {{{1}};\n"
                   "  const int32_t {2} = share_bounds[s0], {3} = share_bounds[s1];\n",
                   shares + 1, bounds, lo, hi);
  }

  /// Bytes of one head of one position in a cache of code `c`.
  FailureOr<KernelCall> reropeKernelFor(Operation *keyWriter,
                                        llvm::StringRef prefix) const override {
    Value cache;
    std::optional<KernelCall> rope;
    int64_t hd = 0;
    // The writer's rope, without mscale: the keys already carry it once.
    if (auto w = dyn_cast<KvWriteOp>(keyWriter)) {
      cache = w.getCache();
      if (auto r = w.getRows().getDefiningOp<RopeOp>()) {
        hd = r.getHeadDim();
        rope = ropeRows(hd, r.getRopeDim(), r.getFreqBase().convertToFloat(),
                        r.getFreqFactors(), r.getNeox(), std::nullopt, prefix);
      }
    } else if (auto m = dyn_cast<QkvMatmulOp>(keyWriter)) {
      cache = m.getKeys();
      hd = m.getHeadDim();
      rope = ropeRows(hd, m.getRopeDim(), m.getFreqBase().convertToFloat(), m.getFreqFactors(),
                      m.getNeox(), std::nullopt, prefix);
    }
    if (!rope)
      return keyWriter->emitOpError("writes keys that are not roped: a context shift cannot "
                                    "turn them");
    ElementCode c = cacheCode(cache);
    int64_t width = dim(cache, 1), heads = width / hd, headBytes = cacheHeadBytes(c, hd);
    std::string family = familyConstant(c.family);
    KernelCall k;
    CacheLayout layout(cache, heads, headBytes);
    k.name = formatv("{0}_kv_rerope_{1}_w{2}_{3}_r{4}{5}", prefix, c.name, width,
                     rope->name.substr(prefix.size() + 11), layout.rows, layout.tag());
    k.params = "void *keys, int32_t r0, int32_t r1, int32_t delta";
    std::string row = formatv("t + h * {0}", hd).str(); // head h's floats
    k.body = formatv(R"c(  uint8_t *c = (uint8_t *)keys;
  float t[{0}];
  int32_t r, h;
  for (r = r0; r < r1; ++r) {{
    for (h = 0; h < {1}; ++h)
      {2}
    {3}(t, t, {0}, 1, delta, 0, {1});
    for (h = 0; h < {1}; ++h)
      {4}
  }
)c",
                     width, heads, layout.load(family, "c", "r", "h", row, hd), rope->name,
                     layout.store(c.family, row, "c", "r", "h", hd))
                 .str();
    k.helpers.push_back(*rope);
    return k;
  }

  static int64_t cacheHeadBytes(const ElementCode &c, int64_t hd) {
    return int64_t(kiln_uk_kv_head_bytes(c.id, int32_t(hd)));
  }


  static int64_t rowBytes(Value weight) {
    auto t = cast<RankedTensorType>(weight.getType());
    return t.getDimSize(1) / getBlockElements(t.getElementType()) *
           getBlockBytes(t.getElementType());
  }

  static std::string hexFloat(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return formatv("{0:x-8}", bits).str();
  }

  /// How a matmul kernel reads its weights: their format, and panels and tile
  /// when pack-layout repacked them (null for the row layout).
  struct WeightCode {
    ElementCode element;
    PanelAttr panel;
    TileAttr tile;
    int64_t k = 0;
    int64_t stride = 0; // bytes per row of the quantized input (0: float weights)
  };

  /// Checks that the weights of a matmul kernel are in the layout this
  /// target's kernels read.
  FailureOr<WeightCode> weightCode(Operation *op, Value weight) const {
    WeightCode code{elementCode(weight),
                    getLayoutAttr(weight.getDefiningOp()), getTileAttr(op),
                    dim(weight, 1)};
    int64_t panelRows = variant.kernel.panelRows;
    if (code.panel && code.panel.getRows() != panelRows)
      return op->emitOpError() << "reads weights in panels of " << code.panel.getRows()
                               << " rows, but the " << variant.name << " target's kernels read "
                               << (panelRows ? std::to_string(panelRows) + "-row panels"
                                             : std::string("the row layout"));
    if (code.panel && !code.tile)
      return op->emitOpError("has panel weights but no tile (run kiln-tile-for-cache)");
    if (code.panel && code.element.blocks &&
        !llvm::is_contained(llvm::split(variant.kernel.blockPanels, ','), code.element.name))
      return op->emitOpError() << "reads " << code.element.name << " weights in panels, but the "
                               << variant.name << " target's kernels read no "
                               << code.element.name << " panels";
    Type element = cast<RankedTensorType>(weight.getType()).getElementType();
    if (isQuantizedType(element))
      code.stride = activationStride(element, bool(code.panel), code.k);
    return code;
  }

  /// Kernel name suffix of a weight code: format, then panels and tile.
  static std::string weightName(const WeightCode &w) {
    if (!w.panel)
      return w.element.name;
    return formatv("{0}_p{1}", w.element.name, w.panel.getRows()).str();
  }
  static std::string tileName(const WeightCode &w) {
    return w.panel ? formatv("_t{0}x{1}", w.tile.getMr(), w.tile.getKc()).str() : "";
  }

  /// The kernel the schedule runs before an int8 matmul kernel: the input rows
  /// quantized once into scratch, as every output reads them.
  static KernelCall quantizeSetup(const WeightCode &w, llvm::StringRef prefix, std::string input,
                                  std::string scratch) {
    KernelCall q;
    int64_t k = w.k, g = w.element.group, groups = k / g;
    q.params = "const float *x, void *scratch, int32_t rows";
    q.args = {input, scratch, "rows"};
    if (w.panel && !w.element.blocks) {
      q.name = formatv("{0}_panel_quantize_k{1}_g{2}", prefix, k, g);
      q.body = formatv("  panel_quantize_rows(x, scratch, rows, {0}, {1});\n", k, g);
      return q;
    }
    if (w.element.blocks) {
      q.name = formatv("{0}_blocks_quantize_k{1}_g{2}", prefix, k, g);
      q.body = formatv(R"c(  uint8_t *s = (uint8_t *)scratch;
  int32_t r;
  for (r = 0; r < rows; ++r)
    blocks_quantize_row(x + (size_t)r * {0}, s + (size_t)r * {1}u, {0}, {2});
)c",
                       k, w.stride, g);
      return q;
    }
    // Per row: the group scales, then the int8 values.
    q.name = formatv("{0}_quantize_act_k{1}_g{2}", prefix, k, g);
    q.body = formatv(R"c(  uint8_t *s = (uint8_t *)scratch;
  int32_t r;
  for (r = 0; r < rows; ++r) {{
    uint8_t *sr = s + (size_t)r * {2}u;
    quantize_act(x + (size_t)r * {0}, (float *)(void *)sr, (int8_t *)(void *)(sr + {3}), {0}, {1});
  }
)c",
                     k, g, w.stride, groups * 4);
    return q;
  }

  /// C statements for columns [lo, hi) of y (rows x n) = x times the transpose
  /// of the n x K weight `w` (names of C variables; lo and hi expressions,
  /// multiples of the panel height but for hi = n). Int8 weights read the
  /// input quantized in `scratch`. Every output is computed the same way
  /// whatever the range.
  static std::string matmulColumns(const WeightCode &w, Value weight, llvm::StringRef wName,
                                   llvm::StringRef y, int64_t n, llvm::StringRef lo,
                                   llvm::StringRef hi) {
    const ElementCode &c = w.element;
    std::string family = familyConstant(c.family);
    if (c.blocks && !w.panel)
      return formatv("  matmul_blocks({0}, {1}, {2}, scratch, rows, {3}, {4}, {5}, {6});\n", family,
                     wName, y, n, w.k, lo, hi);
    if (w.panel) {
      int64_t nr = w.panel.getRows();
      std::string panels = formatv("({0}) / {1}, (({2}) + {1} - 1) / {1}", lo, nr, hi);
      if (c.group == 1)
        return formatv("  matmul_panel_float({0}, x, {1}, {2}, rows, {3}, {4}, {5}, {6}, {7});\n",
                       family, wName, y, n, w.k, w.tile.getMr(), w.tile.getKc(), panels);
      return formatv("  matmul_panel_int({0}, {1}, {2}, scratch, rows, {3}, {4}, {5}, {6}, {7}, "
                     "{8});\n",
                     family, wName, y, n, w.k, c.group, w.tile.getMr(), w.tile.getKc(), panels);
    }
    std::string dot =
        c.group == 1
            ? formatv("dot_{0}(x + (size_t)r * {1}, row, {1})", c.family, w.k).str()
            : formatv("qdot_{0}((const int8_t *)(const void *)(sr + {1}),\n"
                      "                                  (const float *)(const void *)sr, row, "
                      "{2}, {3})",
                      c.family, w.k / c.group * 4, w.k, c.group)
                  .str();
    std::string quantRow =
        c.group == 1 ? ""
                     : formatv("      const uint8_t *sr = (const uint8_t *)scratch + (size_t)r * "
                               "{0}u;\n",
                               w.stride)
                           .str();
    return formatv(R"c(  {{
    int32_t j, r;
    for (j = {0}; j < {1}; ++j) {{
      const uint8_t *row = {2} + (size_t)j * {3}u;
      for (r = 0; r < rows; ++r) {{
{6}        {4}[(size_t)r * {5} + j] = {7};
      }
    }
  }
)c",
                   lo, hi, wName, rowBytes(weight), y, n, quantRow, dot);
  }

  /// Parameters and arguments common to the matmul kernels: x, the weights,
  /// the result, and scratch (int8 weights: also the setup kernel).
  static void matmulSignature(KernelCall &k, const WeightCode &w, const OperandNames &names,
                              Operation *op, llvm::StringRef prefix, ValueRange weights,
                              llvm::StringRef extraParams, std::vector<std::string> extraArgs,
                              bool scratch) {
    k.params = "const float *x";
    k.args = {names.operand(op->getOperand(0))};
    for (size_t i = 0; i < weights.size(); ++i) {
      k.params += weights.size() == 1 ? std::string(", const uint8_t *w")
                                      : formatv(", const uint8_t *w{0}", i).str();
      k.args.push_back(names.operand(weights[i]));
    }
    k.params += extraParams;
    k.args.insert(k.args.end(), extraArgs.begin(), extraArgs.end());
    k.params += ", float *y";
    k.args.push_back(names.result(op));
    if (w.element.group > 1 || scratch) {
      k.params += ", void *scratch";
      k.args.push_back(names.scratch(op));
    }
    k.params += ", int32_t rows";
    if (w.element.group == 1)
      return;
    std::string input = names.operand(op->getOperand(0)), work = names.scratch(op);
    Value norm = fusedNorm(op);
    k.setup.push_back(norm ? normQuantizeSetup(w, op, prefix, input, names.operand(norm), work)
                           : quantizeSetup(w, prefix, input, work));
  }

  /// The setup kernel of a matmul kernel that normalizes its input: each row
  /// through rms_norm_row into one row of floats at the end of scratch, then
  /// quantized from there as quantizeSetup does.
  static KernelCall normQuantizeSetup(const WeightCode &w, Operation *op, llvm::StringRef prefix,
                                      std::string input, std::string norm, std::string scratch) {
    int64_t k = w.k, g = w.element.group, stride = w.stride;
    float eps = op->getAttrOfType<FloatAttr>("epsilon").getValue().convertToFloat();
    // The rows of floats the fused kernel keeps come before the norm row.
    int64_t floats = fusedRowFloats(op);
    KernelCall q;
    q.name = formatv("{0}_norm_quantize_k{1}_g{2}{3}_f{4}_e{5}", prefix, k, g,
                     w.element.blocks ? "_b" : w.panel ? "_p" : "", floats, hexFloat(eps));
    q.params = "const float *x, const uint8_t *g, void *scratch, int32_t rows";
    q.args = {input, norm, scratch, "rows"};
    std::string quantize =
        w.element.blocks
            ? formatv("    blocks_quantize_row(t, s + (size_t)r * {0}u, {1}, {2});\n", stride, k, g)
                  .str()
        : w.panel ? formatv("    float *d = (float *)(void *)(s + (size_t)r * {0}u);\n"
                          "    int32_t *sum = (int32_t *)(void *)(d + {1});\n"
                          "    quantize_act_sums(t, d, sum, (int8_t *)(void *)(sum + {1}), {2}, {3});\n",
                          stride, k / g, k, g)
                      .str()
                : formatv("    uint8_t *sr = s + (size_t)r * {0}u;\n"
                          "    quantize_act(t, (float *)(void *)sr, (int8_t *)(void *)(sr + {1}), {2}, "
                          "{3});\n",
                          stride, k / g * 4, k, g)
                      .str();
    q.body = formatv(R"c(  uint8_t *s = (uint8_t *)scratch;
  float *t = (float *)(void *)(s + (((size_t)rows * {0}u + 63u) & ~(size_t)63u) + (size_t)rows * {1}u);
  int32_t r;
  for (r = 0; r < rows; ++r) {{
    rms_norm_row(x + (size_t)r * {2}, (const float *)(const void *)g, t, {2}, {3});
{4}  }
)c",
                     stride, floats * 4, k, floatLiteral(eps), quantize);
    return q;
  }

  /// Where a fused kernel's rows of floats start in its scratch: after the
  /// input quantized for `w` (at run time's row count), 64-byte aligned, as
  /// plan-memory sized it at the most rows.
  static std::string floatsOffset(const WeightCode &w) {
    if (w.element.group == 1)
      return "0";
    return formatv("(((size_t)rows * {0}u + 63u) & ~(size_t)63u)", w.stride).str();
  }

  /// Ends a kernel body that reads x only through the quantized scratch.
  static std::string unusedInput(const WeightCode &w) {
    return w.element.group > 1 ? "  (void)x; /* read as quantized by the setup kernel */\n" : "";
  }

  LogicalResult matmul(MatmulOp m, llvm::StringRef prefix, const OperandNames &names,
                       KernelCall &k) const {
    FailureOr<WeightCode> w = weightCode(m, m.getWeight());
    if (failed(w))
      return failure();
    int64_t n = dim(m.getResult(), 1);
    k.name = formatv("{0}_matmul_{1}_n{2}_k{3}{4}", prefix, weightName(*w), n, w->k, tileName(*w));
    matmulSignature(k, *w, names, m, prefix, m.getWeight(), "", {}, false);
    k.body = shareRange(getSplitAttr(m), n, "n0", "n1") + unusedInput(*w) +
             matmulColumns(*w, m.getWeight(), "w", "y", n, "n0", "n1");
    return success();
  }

  /// The matmul, then the residual added to each output of the range.
  LogicalResult residualMatmul(ResidualMatmulOp m, llvm::StringRef prefix,
                               const OperandNames &names, KernelCall &k) const {
    FailureOr<WeightCode> w = weightCode(m, m.getWeight());
    if (failed(w))
      return failure();
    int64_t n = dim(m.getResult(), 1);
    k.name = formatv("{0}_residual_matmul_{1}_n{2}_k{3}{4}", prefix, weightName(*w), n, w->k,
                     tileName(*w));
    matmulSignature(k, *w, names, m, prefix, m.getWeight(), ", const float *res",
                    {names.operand(m.getResidual())}, false);
    k.body = shareRange(getSplitAttr(m), n, "n0", "n1") + unusedInput(*w) +
             matmulColumns(*w, m.getWeight(), "w", "y", n, "n0", "n1") +
             formatv(R"c(  {{
    int32_t r, j;
    for (r = 0; r < rows; ++r)
      for (j = n0; j < n1; ++j)
        y[(size_t)r * {0} + j] += res[(size_t)r * {0} + j];
  }
)c",
                     n)
                 .str();
    return success();
  }

  /// Gate into y and up into scratch over the range, then y = silu(y) * up.
  LogicalResult swigluMatmul(SwigluMatmulOp m, llvm::StringRef prefix, const OperandNames &names,
                             KernelCall &k) const {
    FailureOr<WeightCode> w = weightCode(m, m.getGate());
    if (failed(w))
      return failure();
    int64_t n = dim(m.getResult(), 1);
    k.name = formatv("{0}_swiglu_matmul_{1}_n{2}_k{3}{4}", prefix, weightName(*w), n, w->k,
                     tileName(*w));
    matmulSignature(k, *w, names, m, prefix, ValueRange{m.getGate(), m.getUp()}, "", {}, true);
    k.body = shareRange(getSplitAttr(m), n, "n0", "n1") + unusedInput(*w) +
             "  float *up = (float *)(void *)((uint8_t *)scratch + " +
             floatsOffset(*w) + ");\n" +
             matmulColumns(*w, m.getGate(), "w0", "y", n, "n0", "n1") +
             matmulColumns(*w, m.getUp(), "w1", "up", n, "n0", "n1") +
             formatv(R"c(  {{
    int32_t r, j;
    for (r = 0; r < rows; ++r) {{
      float *yr = y + (size_t)r * {0};
      const float *ur = up + (size_t)r * {0};
      silu(yr + n0, yr + n0, n1 - n0);
      for (j = n0; j < n1; ++j)
        yr[j] *= ur[j];
    }
  }
)c",
                     n)
                 .str();
    return success();
  }

  /// Over the columns of q, k and v side by side: each projection's part of
  /// the range, q and k roped in place, k and v stored into the caches.
  LogicalResult qkvMatmul(QkvMatmulOp m, llvm::StringRef prefix, const OperandNames &names,
                          KernelCall &k) const {
    FailureOr<WeightCode> w = weightCode(m, m.getWq());
    if (failed(w))
      return failure();
    ElementCode cache = cacheCode(m.getKeys());
    int64_t nq = dim(m.getWq(), 0), nkv = dim(m.getWk(), 0), hd = m.getHeadDim();
    if (cache.family == "i8" && cache.group != hd)
      return m.emitOpError("expects one cache scale per head (group ") << hd << ")";
    int64_t headBytes = cacheHeadBytes(cache, hd);
    KernelCall rope = ropeRows(m.getHeadDim(), m.getRopeDim(), m.getFreqBase().convertToFloat(),
                               m.getFreqFactors(), m.getNeox(), toFloat(m.getMscale()), prefix);
    k.name = formatv("{0}_qkv_matmul_{1}_q{2}_kv{3}_k{4}{5}_{6}_c{7}_r{8}{9}", prefix,
                     weightName(*w), nq, nkv, w->k, tileName(*w),
                     rope.name.substr(prefix.size() + 11), cache.name, dim(m.getKeys(), 0),
                     CacheLayout(m.getKeys(), nkv / hd, headBytes).tag());
    matmulSignature(k, *w, names, m, prefix, ValueRange{m.getWq(), m.getWk(), m.getWv()},
                    ", void *keys, void *values",
                    {names.operand(m.getKeys()), names.operand(m.getValues())}, true);
    k.params += ", int32_t pos";
    k.args.push_back("rows");
    k.args.push_back("pos");
    // Columns lo..hi-1 of the projection at `start` that fall in the range.
    auto clamp = [](int64_t start, int64_t width) {
      return formatv("  lo = n0 - {0} < 0 ? 0 : n0 - {0} > {1} ? {1} : n0 - {0};\n"
                     "  hi = n1 - {0} < 0 ? 0 : n1 - {0} > {1} ? {1} : n1 - {0};\n",
                     start, width)
          .str();
    };
    auto ropeCall = [&](llvm::StringRef t, int64_t width) {
      return formatv("    {0}({1}, {1}, {2}, rows, pos, lo / {3}, hi / {3});\n", rope.name, t,
                     width, hd)
          .str();
    };
    CacheLayout layout(m.getKeys(), nkv / hd, headBytes);
    auto store = [&](llvm::StringRef cacheName, llvm::StringRef t) {
      return formatv(R"c(    {{
      int32_t r, h;
      for (r = 0; r < rows; ++r)
        for (h = lo / {0}; h < hi / {0}; ++h)
          {1}
      for (h = lo / {0}; h < hi / {0}; ++h)
        prefetch_store((uint8_t *){2} + {3}, {4}u);
    }
)c",
                     hd,
                     layout.store(cache.family,
                                  formatv("{0} + (size_t)r * {1} + h * {2}", t, nkv, hd).str(),
                                  formatv("(uint8_t *){0}", cacheName).str(),
                                  formatv("(pos + r) % {0}", dim(m.getKeys(), 0)).str(), "h", hd),
                     cacheName,
                     layout.at(formatv("(pos + rows) % {0}", dim(m.getKeys(), 0)).str(), "h"),
                     layout.writeBytes())
          .str();
    };
    k.body = shareRange(getSplitAttr(m), nq + 2 * nkv, "n0", "n1") +
             unusedInput(*w) +
             "  float *kt = (float *)(void *)((uint8_t *)scratch + " + floatsOffset(*w) +
             formatv("), *vt = kt + (size_t)rows * {0};\n  int32_t lo, hi;\n", nkv).str() +
             clamp(0, nq) + "  if (lo < hi) {\n" +
             matmulColumns(*w, m.getWq(), "w0", "y", nq, "lo", "hi") + ropeCall("y", nq) +
             "  }\n" + clamp(nq, nkv) + "  if (lo < hi) {\n" +
             matmulColumns(*w, m.getWk(), "w1", "kt", nkv, "lo", "hi") + ropeCall("kt", nkv) +
             store("keys", "kt") + "  }\n" + clamp(nq + nkv, nkv) + "  if (lo < hi) {\n" +
             matmulColumns(*w, m.getWv(), "w2", "vt", nkv, "lo", "hi") + store("values", "vt") +
             "  }\n";
    k.helpers.push_back(rope);
    return success();
  }

  /// rope_rows(x, y, ld, rows, pos, h0, h1): heads h0..h1-1 of `rows` rows
  /// (ld floats apart, row i at position pos + i), roped from x into y (x may
  /// be y).
  static KernelCall ropeRows(int64_t hd, int64_t rd, float base,
                             std::optional<ArrayRef<float>> factors, bool neox,
                             std::optional<float> mscale, llvm::StringRef prefix) {
    // theta_i = p * base^(-2i/rope_dim) / factor_i, as ggml computes it; the
    // frequencies are constants and the angle is formed in double so large
    // positions keep precision.
    std::string freqs;
    uint32_t factorHash = 0;
    for (int64_t i = 0; i < rd / 2; ++i) {
      double f = std::pow(double(base), -2.0 * i / rd);
      if (factors) {
        f /= double((*factors)[i]);
        uint32_t bits;
        std::memcpy(&bits, &(*factors)[i], sizeof bits);
        factorHash = factorHash * 16777619u ^ bits;
      }
      freqs += formatv("{0}{1:e17}", i ? ", " : "", f).str();
    }
    KernelCall k;
    k.name = formatv("{0}_rope_rows_h{1}_r{2}_b{3}", prefix, hd, rd, hexFloat(base));
    if (factors)
      k.name += formatv("_f{0:x-8}", factorHash).str();
    if (neox)
      k.name += "_nx";
    std::string scaled = "";
    if (mscale) {
      k.name += "_m" + hexFloat(*mscale);
      scaled = " * " + floatLiteral(*mscale);
    }
    k.params = "const float *x, float *y, int32_t ld, int32_t rows, int32_t pos, int32_t h0, "
               "int32_t h1";
    // The angles depend on the position only: one cos and sin per pair and row,
    // shared by every head, laid out as rope_head reads them.
    k.body = formatv(R"c(  static const double freq[{0}] = {{{1}};
  float cc[{2}], ss[{2}];
  int32_t r, h, i;
  for (r = 0; r < rows; ++r) {{
    double p = (double)(pos + r);
    for (i = 0; i < {0}; ++i) {{
      float c = (float)cos(p * freq[i]){5}, s = (float)sin(p * freq[i]){5};
      cc[{3}] = c, ss[{3}] = -s;
      cc[{4}] = c, ss[{4}] = s;
    }
    for (h = h0; h < h1; ++h)
      rope_head(x + (size_t)r * (size_t)ld + h * {6}, y + (size_t)r * (size_t)ld + h * {6}, cc,
                ss, {2}, {6}, {7});
  }
)c",
                     rd / 2, freqs, rd, neox ? "i" : "2 * i",
                     neox ? formatv("i + {0}", rd / 2).str() : std::string("2 * i + 1"), scaled,
                     hd, neox ? 1 : 0);
    return k;
  }

  LogicalResult rope(RopeOp r, llvm::StringRef prefix, const OperandNames &names,
                     KernelCall &k) const {
    int64_t width = dim(r.getInput(), 1), hd = r.getHeadDim();
    KernelCall rows =
        ropeRows(hd, r.getRopeDim(), r.getFreqBase().convertToFloat(), r.getFreqFactors(),
                 r.getNeox(), toFloat(r.getMscale()), prefix);
    k.name = formatv("{0}_rope_w{1}_{2}", prefix, width, rows.name.substr(prefix.size() + 11));
    k.params = "const float *x, float *y, int32_t rows, int32_t pos";
    k.body = rowRange(getSplitAttr(r)) +
             formatv("  {0}(x + (size_t)r0 * {1}, y + (size_t)r0 * {1}, {1}, r1 - r0, pos + r0, 0, "
                     "{2});\n",
                     rows.name, width, width / hd)
                 .str();
    k.helpers.push_back(rows);
    k.args = {names.operand(r.getInput()), names.result(r), "rows", "pos"};
    return success();
  }

  LogicalResult attention(AttentionOp a, llvm::StringRef prefix,
                          const OperandNames &names, KernelCall &k) const {
    ElementCode c = cacheCode(a.getKeys());
    int64_t nh = a.getNHead(), nkv = a.getNKvHead(), hd = a.getHeadDim();
    if (c.family == "i8" && c.group != hd)
      return a.emitOpError("expects one cache scale per head (group ") << hd << ")";
    int64_t window = a.getWindow() ? *a.getWindow() : 0;
    int64_t headBytes = cacheHeadBytes(c, hd);
    CacheLayout layout(a.getKeys(), nkv, headBytes);
    k.name = formatv("{0}_attention_{1}_h{2}_kv{3}_d{4}_win{5}_r{6}{7}", prefix, c.name, nh, nkv,
                     hd, window, dim(a.getKeys(), 0), layout.tag());
    double scale = 1.0 / std::sqrt(double(hd));
    if (a.getScale()) {
      scale = a.getScale()->convertToFloat();
      k.name += formatv("_s{0}", hexFloat(float(scale))).str();
    }
    if (hd > KILN_UK_MAX_HEAD_DIM)
      return a.emitOpError() << "head dimension " << hd << " exceeds the attention kernels' "
                             << KILN_UK_MAX_HEAD_DIM;
    k.params = "const float *q, const void *keys, const void *values, float *y, int32_t rows, "
               "int32_t pos";
    std::string start = window ? formatv("p - {0} + 1 > 0 ? p - {0} + 1 : 0", window).str()
                               : std::string("0");
    // The work is (KV head, row) pairs u0..u1-1, head-major, all of them
    // unless split: a share holds whole KV heads where it can, so shares get
    // equal work however long each row's causal context is, and one KV head's
    // query heads read its cache rows together.
    SplitAttr split = getSplitAttr(a);
    std::string units =
        split ? formatv("  const int32_t u0 = (int32_t)((int64_t)rows * {0} * s0 / {1}),\n"
                        "                u1 = (int32_t)((int64_t)rows * {0} * s1 / {1});\n",
                        nkv, split.getShares())
                    .str()
              : formatv("  const int32_t u0 = 0, u1 = rows * {0};\n", nkv).str();
    k.body = units + formatv(R"c(  const uint8_t *kc = (const uint8_t *)keys, *vc = (const uint8_t *)values;
  int32_t u;
  for (u = u0; u < u1; ++u) {{
    int32_t g = u / rows, r = u % rows, p = pos + r, t0 = {5};
    attend({8}, q + (size_t)r * {2} + g * {4} * {1}, {4}, kc + g * {7}u, vc + g * {7}u, {3}u,
           {9}, t0, p, {1}, {6}, y + (size_t)r * {2} + g * {4} * {1});
  }
)c",
                     nh, hd, nh * hd, layout.positionStride(), nh / nkv, start,
                     floatLiteral(scale), layout.headStride(),
                     familyConstant(c.family) + (layout.tiled ? "T" : ""),
                     dim(a.getKeys(), 0)).str();
    k.args = {names.operand(a.getQuery()), names.operand(a.getKeys()),
              names.operand(a.getValues()), names.result(a), "rows", "pos"};
    return success();
  }
};

} // namespace

/// Every target: the portable kernels, alone or with an ISA's helpers, one per
/// row of the ISA table.
static const std::vector<C99Target> &targets() {
  static const std::vector<C99Target> all = [] {
    std::vector<C99Target> targets;
    for (const IsaVariant &v : isaVariants())
      targets.emplace_back(v);
    return targets;
  }();
  return all;
}

/// Whether the machine running kiln-compile is of `variant`'s architecture
/// and has every feature it needs.
static bool hostRuns(const IsaVariant &variant) {
  static const auto features = llvm::sys::getHostCPUFeatures();
  static const std::string arch =
      llvm::Triple(llvm::sys::getProcessTriple()).getArchName().str();
  if (arch != variant.arch || variant.cpuFeatures.empty())
    return false;
  return llvm::all_of(variant.cpuFeatures, [](const char *f) { return features.lookup(f); });
}

const TargetDescription *kiln::lookupTarget(llvm::StringRef name) {
  if (name == "host") {
    // The last variant of the table the machine runs (the widest), else the
    // portable one.
    for (auto it = targets().rbegin(); it != targets().rend(); ++it)
      if (hostRuns(it->isaVariant()))
        return &*it;
    return &targets().front();
  }
  for (const C99Target &t : targets())
    if (t.name() == name)
      return &t;
  return nullptr;
}

std::vector<std::string> kiln::targetNames() {
  std::vector<std::string> names;
  for (const C99Target &t : targets())
    names.push_back(t.name().str());
  names.push_back("host");
  return names;
}
