// The target of every ISA variant: each kernel op becomes a call of the kernel
// library (kernels/) with every dimension, format, layout and tile a
// constant, in a kernel function named after those constants. The variant's
// entry header replaces the library's hot helpers; the calls are the same.
#include "codegen_targets/Target.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "kernels/kiln_uk_abi.h"

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

/// How a kernel reads a weight or cache format: the helper family, the group
/// its input is quantized in (the format's group or block; 1 for floats),
/// the format's name for kernel names, and whether it is a GGUF block format
/// beyond q8_0/q4_0.
struct ElementCode {
  int family = KILN_UK_F32;
  int64_t group = 1;
  std::string name;
  bool blocks = false;
};

ElementCode elementCode(Type element) {
  int family = getKernelFamily(element);
  if (family < 0)
    family = KILN_UK_F32;
  std::string name = getWeightFormatName(element);
  bool floats = family == KILN_UK_F32 || family == KILN_UK_F16 || family == KILN_UK_BF16;
  return {family, floats ? 1 : activationGroup(element), name.empty() ? "f32" : name,
          kiln_uk_is_block_family(family) != 0};
}

ElementCode elementCode(Value v) {
  return elementCode(cast<RankedTensorType>(v.getType()).getElementType());
}

/// The code of a KV cache: as a weight's, but q4_1 blocks are the int4 cache
/// (KILN_UK_Q4: kv_store_q4).
ElementCode cacheCode(Value cache) {
  ElementCode c = elementCode(cache);
  if (c.family == KILN_UK_Q4_1)
    return {KILN_UK_Q4, 32, "q4", false};
  return c;
}

/// KILN_UK_<FAMILY>, a family's constant in C.
std::string family(int f) { return "KILN_UK_" + llvm::StringRef(kiln_uk_family_name(f)).upper(); }

int64_t dim(Value v, unsigned i) { return cast<RankedTensorType>(v.getType()).getDimSize(i); }

/// The innermost dimension, the width of a row op's rows (1 for a scalar):
/// a graph's tensors of any rank are rows of it.
int64_t width(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getRank() == 0 ? 1 : type.getShape().back();
}

/// A float constant that reads back as the same float.
std::string floatLiteral(double v) { return formatv("{0:e9}f", v).str(); }

std::string hexFloat(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return formatv("{0:x-8}", bits).str();
}

std::optional<float> toFloat(std::optional<llvm::APFloat> v) {
  return v ? std::optional<float>(v->convertToFloat()) : std::nullopt;
}

/// `  fn(args...);` with each argument a C expression.
std::string statement(llvm::StringRef fn, llvm::ArrayRef<std::string> args) {
  return formatv("  {0}({1});\n", fn, llvm::join(args, ", ")).str();
}

/// A call of the kernel library's `kiln_uk_<fn>`.
std::string call(llvm::StringRef fn, llvm::ArrayRef<std::string> args) {
  return statement(("kiln_uk_" + fn).str(), args);
}

std::string str(int64_t v) { return std::to_string(v); }

/// Statements one level deeper.
std::string indent(llvm::StringRef text) {
  std::string out;
  for (llvm::StringRef line : llvm::split(text.rtrim('\n'), '\n'))
    out += "  " + line.str() + "\n";
  return out;
}

/// A weight parameter read as floats (norm gains, biases).
std::string floats(llvm::StringRef param) {
  return formatv("(const float *)(const void *){0}", param).str();
}

/// How a KV cache keeps (position, head), from its type's #kiln.kv layout,
/// and the heads and head dimension a kernel addresses it in.
struct CacheLayout {
  std::string layout; // KILN_UK_KV_*
  int64_t rows = 0;   // the cache's capacity: position p in row p mod rows
  std::string tag;    // in kernel names: "", "_hm" head-major, "_hmt" tiled

  explicit CacheLayout(Value cache) : rows(dim(cache, 0)) {
    KvCacheLayoutAttr attr = getKvCacheLayout(cache.getType());
    bool headMajor = attr && attr.getOrder() == KvOrder::head_major;
    bool tiled = isTiledKvCache(cache.getType());
    layout = tiled       ? "KILN_UK_KV_TILED"
             : headMajor ? "KILN_UK_KV_HEAD_MAJOR"
                         : "KILN_UK_KV_POS_MAJOR";
    tag = tiled ? "_hmt" : headMajor ? "_hm" : "";
  }
};

/// The positions per KV page of an op's model when its sessions share a pool
/// of pages (--sessions), else 0: its kernels then take the rows' positions
/// and page tables (kiln_uk_positions) in place of the first row's position.
int64_t kvPage(Operation *op) {
  ModelAttr config = getModelConfig(op);
  return config ? config.getKvPage() : 0;
}

/// The C parameter for the rows' positions, and the kernel name's tag.
std::string positionsParam(int64_t page) {
  return page ? "const kiln_uk_positions *pos" : "int32_t pos";
}
std::string pagedTag(int64_t page) { return page ? formatv("_pg{0}", page).str() : ""; }

/// The rotary embedding of a rope or qkv_matmul op, as the library's
/// rope_rows takes it: theta_i = p * base^(-2i/rope_dim) / factor_i, as ggml
/// computes it, the frequencies constants in double.
struct Rope {
  int64_t hd, rd;
  float base;
  std::optional<ArrayRef<float>> factors;
  bool neox;
  std::optional<float> mscale;

  /// In kernel names: head and rotated dims, base, factors, layout, mscale.
  std::string tag() const {
    std::string t = formatv("h{0}_r{1}_b{2}", hd, rd, hexFloat(base)).str();
    if (factors) {
      uint32_t hash = 0;
      for (float f : *factors) {
        uint32_t bits;
        std::memcpy(&bits, &f, sizeof bits);
        hash = hash * 16777619u ^ bits;
      }
      t += formatv("_f{0:x-8}", hash).str();
    }
    if (neox)
      t += "_nx";
    if (mscale)
      t += "_m" + hexFloat(*mscale);
    return t;
  }

  /// `static const double freq[rd/2] = {...};`
  std::string table() const {
    std::string freqs;
    for (int64_t i = 0; i < rd / 2; ++i) {
      double f = std::pow(double(base), -2.0 * i / rd);
      if (factors)
        f /= double((*factors)[i]);
      freqs += formatv("{0}{1:e17}", i ? ", " : "", f).str();
    }
    return formatv("  static const double freq[{0}] = {{{1}};\n", rd / 2, freqs).str();
  }
};

template <typename RopeLike> Rope ropeOf(RopeLike r, bool withMscale = true) {
  return {r.getHeadDim(), r.getRopeDim(),  r.getFreqBase().convertToFloat(),
          r.getFreqFactors(), r.getNeox(), withMscale ? toFloat(r.getMscale()) : std::nullopt};
}

class LibraryTarget : public TargetDescription {
public:
  explicit LibraryTarget(const IsaVariant &variant) : variant(variant) {}

  llvm::StringRef name() const override { return variant.name; }
  const IsaVariant &isaVariant() const override { return variant; }

  FailureOr<KernelCall> kernelFor(Operation *op, llvm::StringRef prefix,
                                  const OperandNames &names) const override {
    if (std::optional<FailureOr<KernelCall>> graph = graphKernelFor(op, prefix, names))
      return *graph;
    KernelCall k;
    SplitAttr split = getSplitAttr(op);
    auto arg = [&](Value v) { k.args.push_back(names.operand(v)); };
    auto res = [&]() { k.args.push_back(names.result(op)); };
    LogicalResult ok =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](EmbedOp e) {
              ElementCode c = elementCode(e.getTable());
              int64_t d = dim(e.getResult(), 1);
              k.name = formatv("{0}_embed_{1}_d{2}", prefix, c.name, d);
              k.params = "const uint8_t *table, const int32_t *tokens, float *y, int32_t rows";
              k.body = rowRange(split) + call("embed_rows", {family(c.family), "table", "tokens",
                                                             "y", "r0", "r1", str(d),
                                                             str(c.group)});
              if (std::optional<llvm::APFloat> scale = e.getScale()) {
                // gemma3 scales the embeddings by sqrt(n_embd).
                float f = scale->convertToFloat();
                k.name += formatv("_x{0}", hexFloat(f)).str();
                k.body += call("vec_scale", {formatv("y + (size_t)r0 * {0}", d).str(),
                                             formatv("(r1 - r0) * {0}", d).str(),
                                             floatLiteral(f)});
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
              k.name += formatv("_e{0}", hexFloat(eps)).str();
              k.params = "const float *x, const uint8_t *w, float *y, int32_t rows";
              k.body = rowRange(split) + call("rms_norm_rows", {"x", floats("w"), "y", "r0", "r1",
                                                                str(d), str(g),
                                                                floatLiteral(eps)});
              arg(n.getInput()), arg(n.getWeight()), res();
              return success();
            })
            .Case([&](LayerNormOp n) {
              int64_t d = dim(n.getInput(), 1);
              float eps = n.getEpsilon().convertToFloat();
              k.name = formatv("{0}_layer_norm_d{1}_e{2}", prefix, d, hexFloat(eps));
              k.params = "const float *x, const uint8_t *w, const uint8_t *b, float *y, "
                         "int32_t rows";
              k.body = rowRange(split) + call("layer_norm_rows",
                                              {"x", floats("w"), floats("b"), "y", "r0", "r1",
                                               str(d), floatLiteral(eps)});
              arg(n.getInput()), arg(n.getWeight()), arg(n.getBias()), res();
              return success();
            })
            .Case([&](RopeOp r) { return rope(r, prefix, names, k); })
            .Case([&](KvWriteOp w) {
              ElementCode c = cacheCode(w.getCache());
              CacheLayout layout(w.getCache());
              int64_t width = dim(w.getRows(), 1);
              // Whole rows at once where the heads are adjacent and no scale
              // is per head.
              int64_t hd = c.family == KILN_UK_I8 ? c.group : width;
              if (!layout.tag.empty() && c.family != KILN_UK_I8)
                hd = width / getKvCacheLayout(w.getCache().getType()).getHeads();
              int64_t page = kvPage(w);
              k.name = formatv("{0}_kv_write_{1}_w{2}_r{3}{4}{5}", prefix, c.name, width,
                               layout.rows, layout.tag, pagedTag(page));
              k.params = "const float *x, void *cache, int32_t rows, " + positionsParam(page);
              // The share that writes the last row asks for the next step's.
              k.body = rowRange(split) +
                       (page ? call("kv_store_paged",
                                    {family(c.family), layout.layout, "x", str(width),
                                     "(uint8_t *)cache", "r0", "r1", "0", str(width / hd),
                                     "pos->at", "pos->table", str(page), str(hd),
                                     str(width / hd), str(layout.rows)})
                             : call("kv_store_rows",
                                    {family(c.family), layout.layout, "x", str(width),
                                     "(uint8_t *)cache", "r0", "r1", "0", str(width / hd), "pos",
                                     str(hd), str(width / hd), str(layout.rows), "r1 == rows"}));
              arg(w.getRows()), arg(w.getCache()), k.args.push_back("rows"),
                  k.args.push_back("pos");
              return success();
            })
            .Case([&](AttentionOp a) { return attention(a, prefix, names, k); })
            .Case<AddOp, MulOp>([&](Operation *b) {
              bool add = isa<AddOp>(b);
              int64_t width = ::width(b->getResult(0));
              k.name = formatv("{0}_{1}_w{2}", prefix, add ? "add" : "mul", width);
              k.params = "const float *a, const float *b, float *y, int32_t rows";
              k.body = rowRange(split) +
                       call(add ? "vec_add" : "vec_mul",
                            {formatv("a + (size_t)r0 * {0}", width).str(),
                             formatv("b + (size_t)r0 * {0}", width).str(),
                             formatv("y + (size_t)r0 * {0}", width).str(),
                             formatv("(r1 - r0) * {0}", width).str()});
              arg(b->getOperand(0)), arg(b->getOperand(1)), res();
              return success();
            })
            .Case([&](BiasAddOp a) {
              int64_t width = dim(a.getResult(), 1);
              k.name = formatv("{0}_bias_add_w{1}", prefix, width);
              k.params = "const float *x, const uint8_t *b, float *y, int32_t rows";
              k.body = rowRange(split) +
                       call("bias_add_rows", {"x", floats("b"), "y", "r0", "r1", str(width)});
              arg(a.getInput()), arg(a.getBias()), res();
              return success();
            })
            .Case<SiluOp, GeluOp>([&](Operation *s) {
              StringRef fn = isa<SiluOp>(s) ? "silu" : "gelu";
              int64_t width = ::width(s->getResult(0));
              k.name = formatv("{0}_{1}_w{2}", prefix, fn, width);
              k.params = "const float *x, float *y, int32_t rows";
              k.body = rowRange(split) + call(fn, {formatv("x + (size_t)r0 * {0}", width).str(),
                                                  formatv("y + (size_t)r0 * {0}", width).str(),
                                                  formatv("(r1 - r0) * {0}", width).str()});
              arg(s->getOperand(0)), res();
              return success();
            })
            .Case([&](SoftmaxOp s) {
              int64_t width = ::width(s.getResult());
              k.name = formatv("{0}_softmax_w{1}", prefix, width);
              k.params = "const float *x, float *y, int32_t rows";
              k.body = rowRange(split) + call("softmax_rows", {"x", "y", "r0", "r1", str(width)});
              arg(s.getInput()), res();
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

  FailureOr<KernelCall> reropeKernelFor(Operation *keyWriter,
                                        llvm::StringRef prefix) const override {
    Value cache;
    std::optional<Rope> rope;
    // The writer's rope, without mscale: the keys already carry it once.
    if (auto w = dyn_cast<KvWriteOp>(keyWriter)) {
      cache = w.getCache();
      if (auto r = w.getRows().getDefiningOp<RopeOp>())
        rope = ropeOf(r, /*withMscale=*/false);
    } else if (auto m = dyn_cast<QkvMatmulOp>(keyWriter)) {
      cache = m.getKeys();
      rope = ropeOf(m, /*withMscale=*/false);
    }
    if (!rope)
      return keyWriter->emitOpError("writes keys that are not roped: a context shift cannot "
                                    "turn them");
    ElementCode c = cacheCode(cache);
    CacheLayout layout(cache);
    int64_t width = dim(cache, 1), heads = width / rope->hd;
    KernelCall k;
    k.name = formatv("{0}_kv_rerope_{1}_w{2}_{3}_r{4}{5}", prefix, c.name, width, rope->tag(),
                     layout.rows, layout.tag);
    k.params = "void *keys, int32_t r0, int32_t r1, int32_t delta";
    k.body = rope->table() +
             call("kv_rerope_rows", {family(c.family), layout.layout, "(uint8_t *)keys", "r0",
                                     "r1", "delta", str(rope->hd), str(heads), str(layout.rows),
                                     "freq", str(rope->rd), rope->neox ? "1" : "0"});
    return k;
  }

  FailureOr<std::pair<KernelCall, KernelCall>>
  pagedCacheKernelsFor(Operation *keyWriter, llvm::StringRef prefix,
                       int64_t page) const override {
    FailureOr<KernelCall> rerope = reropeKernelFor(keyWriter, prefix);
    if (failed(rerope))
      return failure();
    Value cache = isa<KvWriteOp>(keyWriter) ? cast<KvWriteOp>(keyWriter).getCache()
                                             : cast<QkvMatmulOp>(keyWriter).getKeys();
    ElementCode c = cacheCode(cache);
    CacheLayout layout(cache);
    int64_t width = dim(cache, 1), heads = getKvCacheLayout(cache.getType()).getHeads();
    int64_t hd = width / heads;
    // The rerope kernel's name after the prefix: the cache and its rope.
    std::string tag = rerope->name.substr(prefix.size() + strlen("_kv_rerope_"));
    KernelCall copy, shift;
    copy.name = formatv("{0}_kv_copy_page_{1}_pg{2}", prefix, tag, page);
    copy.params = "uint8_t *k, uint8_t *v, int32_t from, int32_t to";
    for (const char *part : {"k", "v"})
      copy.body += call("kv_copy_page",
                        {layout.layout, part, "from", "to", str(page), str(heads),
                         str(layout.rows), formatv("{0}u", kiln_uk_kv_head_bytes(c.family, hd))});
    shift.name = formatv("{0}_kv_shift_paged_{1}_pg{2}", prefix, tag, page);
    shift.params = "uint8_t *k, uint8_t *v, const int32_t *table, int32_t pos, int32_t keep, "
                   "int32_t drop";
    for (const char *part : {"k", "v"})
      shift.body += call("kv_move_paged",
                         {family(c.family), layout.layout, part, "table", str(page), "keep",
                          "keep + drop", "pos - keep - drop", str(hd), str(heads),
                          str(layout.rows)});
    shift.body += formatv("  for (int32_t t = keep; t < pos - drop; ++t) {{\n"
                          "    const int32_t row = kiln_uk_kv_slot(t, {0}, table, {1});\n"
                          "    {2}(k, row, row + 1, -drop);\n  }\n",
                          layout.rows, page, rerope->name)
                      .str();
    shift.helpers.push_back(*rerope);
    return std::make_pair(copy, shift);
  }

private:
  const IsaVariant &variant;

  /// `r0`, `r1`: the rows of the call's shares, all rows when not split.
  static std::string rowRange(SplitAttr split) {
    if (!split)
      return "  const int32_t r0 = 0, r1 = rows;\n";
    return formatv("  const int32_t r0 = kiln_uk_share(rows, s0, {0}),\n"
                   "                r1 = kiln_uk_share(rows, s1, {0});\n",
                   split.getShares());
  }

  /// `lo`, `hi`: the output columns of the call's shares, from a table of the
  /// split's share boundaries (whole grains); all `count` of them when not
  /// split.
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
    WeightCode code{elementCode(weight), getLayoutAttr(weight.getDefiningOp()), getTileAttr(op),
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
  /// quantized once into scratch, as every output reads them; with `norm`
  /// (the rms_norm weight a fused kernel applies) each row normalized first.
  static KernelCall quantizeSetup(const WeightCode &w, Operation *op, llvm::StringRef prefix,
                                  std::string input, std::string scratch, Value norm,
                                  const OperandNames &names) {
    KernelCall q;
    int64_t k = w.k, g = w.element.group;
    if (!norm) {
      q.name = formatv("{0}_{1}_k{2}_g{3}", prefix,
                       w.element.blocks ? "blocks_quantize" : w.panel ? "panel_quantize"
                                                                       : "quantize_act",
                       k, g);
      q.params = "const float *x, void *scratch, int32_t rows";
      q.args = {input, scratch, "rows"};
      q.body = call(w.element.blocks ? "blocks_quantize_rows"
                    : w.panel        ? "panel_quantize_rows"
                                     : "quantize_act_rows",
                    {"x", "scratch", "rows", str(k), str(g)});
      return q;
    }
    float eps = op->getAttrOfType<FloatAttr>("epsilon").getValue().convertToFloat();
    // The rows of floats the fused kernel keeps come before the norm row.
    int64_t floatsPerRow = fusedRowFloats(op);
    q.name = formatv("{0}_norm_quantize_k{1}_g{2}{3}_f{4}_e{5}", prefix, k, g,
                     w.element.blocks ? "_b" : w.panel ? "_p" : "", floatsPerRow, hexFloat(eps));
    q.params = "const float *x, const uint8_t *g, void *scratch, int32_t rows";
    q.args = {input, names.operand(norm), scratch, "rows"};
    q.body = call(w.element.blocks ? "blocks_norm_quantize_rows"
                  : w.panel        ? "panel_norm_quantize_rows"
                                   : "norm_quantize_act_rows",
                  {"x", floats("g"), "scratch", "rows", str(k), str(g), str(floatsPerRow),
                   floatLiteral(eps)});
    return q;
  }

  /// The call computing columns [lo, hi) of y (rows x n) = x times the
  /// transpose of the n x K weight `wName` (C variables; lo and hi
  /// expressions, multiples of the panel height but for hi = n). Int8 weights
  /// read the input quantized in `scratch`. Every output is computed the same
  /// way whatever the range. Panel weights go through one shared kernel per
  /// format, K and tile (added to k's helpers): a model's matmuls have few
  /// widths, and each panel kernel holds a register tile per row count.
  static std::string matmulColumns(KernelCall &k, llvm::StringRef prefix, const WeightCode &w,
                                   llvm::StringRef wName, llvm::StringRef y, int64_t n,
                                   llvm::StringRef lo, llvm::StringRef hi) {
    const ElementCode &c = w.element;
    if (c.blocks && !w.panel)
      return call("matmul_blocks", {family(c.family), wName.str(), y.str(), "scratch", "rows",
                                    str(n), str(w.k), lo.str(), hi.str()});
    if (!w.panel)
      return call("matmul_rows", {family(c.family), "x", wName.str(), y.str(),
                                  c.group == 1 ? std::string("0") : std::string("scratch"),
                                  "rows", str(n), str(w.k), str(c.group), lo.str(), hi.str()});
    int64_t nr = w.panel.getRows();
    KernelCall panels;
    panels.name = formatv("{0}_matmul_panels_{1}_k{2}{3}", prefix, weightName(w), w.k, tileName(w));
    panels.outOfLine = true;
    std::vector<std::string> args = {wName.str(), y.str(), "rows", str(n),
                                     formatv("({0}) / {1}", lo, nr),
                                     formatv("(({0}) + {1} - 1) / {1}", hi, nr)};
    if (c.group == 1) {
      panels.params = "const float *x, const uint8_t *w, float *y, int32_t rows, int32_t n, "
                      "int32_t p0, int32_t p1";
      panels.body = call("matmul_panel_float", {family(c.family), "x", "w", "y", "rows", "n",
                                                str(w.k), str(w.tile.getMr()),
                                                str(w.tile.getKc()), "p0", "p1"});
      args.insert(args.begin(), "x");
    } else {
      panels.params = "const uint8_t *w, float *y, const void *scratch, int32_t rows, "
                      "int32_t n, int32_t p0, int32_t p1";
      panels.body = call("matmul_panel_int", {family(c.family), "w", "y", "scratch", "rows",
                                              "n", str(w.k), str(c.group), str(w.tile.getMr()),
                                              str(w.tile.getKc()), "p0", "p1"});
      args.insert(args.begin() + 2, "scratch");
    }
    std::string text = statement(panels.name, args);
    k.helpers.push_back(std::move(panels));
    return text;
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
    if (w.element.group > 1)
      k.setup.push_back(quantizeSetup(w, op, prefix, names.operand(op->getOperand(0)),
                                      names.scratch(op), fusedNorm(op), names));
  }

  /// Ends a kernel body that reads x only through the quantized scratch.
  static std::string unusedInput(const WeightCode &w) {
    bool readsX = w.element.group == 1 || (!w.panel && !w.element.blocks);
    return readsX ? "" : "  (void)x; /* read as quantized by the setup kernel */\n";
  }

  /// Where a fused kernel's rows of floats start in its scratch, after the
  /// input quantized for `w` at run time's row count (fused_scratch_floats).
  static std::string floatsAt(const WeightCode &w) {
    return formatv("kiln_uk_fused_scratch_floats(scratch, rows, {0}u)", w.stride).str();
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
             matmulColumns(k, prefix, *w, "w", "y", n, "n0", "n1");
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
             matmulColumns(k, prefix, *w, "w", "y", n, "n0", "n1") +
             call("add_residual_cols", {"y", "res", "rows", str(n), "n0", "n1"});
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
             "  float *up = " + floatsAt(*w) + ";\n" +
             matmulColumns(k, prefix, *w, "w0", "y", n, "n0", "n1") +
             matmulColumns(k, prefix, *w, "w1", "up", n, "n0", "n1") +
             call("swiglu_cols", {"y", "up", "rows", str(n), "n0", "n1"});
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
    if (cache.family == KILN_UK_I8 && cache.group != hd)
      return m.emitOpError("expects one cache scale per head (group ") << hd << ")";
    KernelCall rope = ropeKernel(ropeOf(m), prefix);
    CacheLayout layout(m.getKeys());
    int64_t page = kvPage(m);
    k.name = formatv("{0}_qkv_matmul_{1}_q{2}_kv{3}_k{4}{5}_{6}_c{7}_r{8}{9}{10}", prefix,
                     weightName(*w), nq, nkv, w->k, tileName(*w), ropeOf(m).tag(), cache.name,
                     layout.rows, layout.tag, pagedTag(page));
    matmulSignature(k, *w, names, m, prefix, ValueRange{m.getWq(), m.getWk(), m.getWv()},
                    ", void *keys, void *values",
                    {names.operand(m.getKeys()), names.operand(m.getValues())}, true);
    k.params += ", " + positionsParam(page);
    k.args.push_back("rows");
    k.args.push_back("pos");
    // Columns lo..hi-1 of the projection at `start` that fall in the range.
    auto part = [](int64_t start, int64_t width) {
      return formatv("  lo = kiln_uk_part(n0, {0}, {1}), hi = kiln_uk_part(n1, {0}, {1});\n",
                     start, width)
          .str();
    };
    auto roped = [&](llvm::StringRef t, int64_t width) {
      std::string lo = formatv("lo / {0}", hd).str(), hi = formatv("hi / {0}", hd).str();
      if (!page)
        return statement(rope.name, {t.str(), t.str(), str(width), "rows", "pos", lo, hi});
      // Rows of a batch are at their own sessions' positions.
      std::string row = formatv("{0} + (size_t)r * {1}", t, width).str();
      return "  for (int32_t r = 0; r < rows; ++r)\n  " +
             statement(rope.name, {row, row, str(width), "1", "pos->at[r]", lo, hi});
    };
    auto store = [&](llvm::StringRef cacheName, llvm::StringRef t) {
      std::string cachePtr = formatv("(uint8_t *){0}", cacheName).str();
      std::string lo = formatv("lo / {0}", hd).str(), hi = formatv("hi / {0}", hd).str();
      if (page)
        return call("kv_store_paged", {family(cache.family), layout.layout, t.str(), str(nkv),
                                       cachePtr, "0", "rows", lo, hi, "pos->at", "pos->table",
                                       str(page), str(hd), str(nkv / hd), str(layout.rows)});
      return call("kv_store_rows", {family(cache.family), layout.layout, t.str(), str(nkv),
                                    cachePtr, "0", "rows", lo, hi, "pos", str(hd), str(nkv / hd),
                                    str(layout.rows), "1"});
    };
    auto columns = [&](llvm::StringRef weight, llvm::StringRef t, int64_t width) {
      return matmulColumns(k, prefix, *w, weight, t, width, "lo", "hi");
    };
    k.body = shareRange(getSplitAttr(m), nq + 2 * nkv, "n0", "n1") + unusedInput(*w) +
             "  float *kt = " + floatsAt(*w) +
             formatv(", *vt = kt + (size_t)rows * {0};\n  int32_t lo, hi;\n", nkv).str() +
             part(0, nq) + "  if (lo < hi) {\n" +
             indent(columns("w0", "y", nq) + roped("y", nq)) + "  }\n" +
             part(nq, nkv) + "  if (lo < hi) {\n" +
             indent(columns("w1", "kt", nkv) + roped("kt", nkv) + store("keys", "kt")) +
             "  }\n" + part(nq + nkv, nkv) + "  if (lo < hi) {\n" +
             indent(columns("w2", "vt", nkv) + store("values", "vt")) +
             "  }\n";
    k.helpers.push_back(rope);
    return success();
  }

  /// `<prefix>_rope_rows_<tag>(x, y, ld, rows, pos, h0, h1)`: heads h0..h1-1
  /// of `rows` rows (ld floats apart, row i at position pos + i), roped from x
  /// into y (x may be y), by the library's rope_rows with this rope's
  /// frequencies.
  static KernelCall ropeKernel(const Rope &r, llvm::StringRef prefix) {
    KernelCall k;
    k.name = formatv("{0}_rope_rows_{1}", prefix, r.tag());
    k.params = "const float *x, float *y, int32_t ld, int32_t rows, int32_t pos, int32_t h0, "
               "int32_t h1";
    k.body = r.table() + call("rope_rows", {"x", "y", "ld", "rows", "pos", "h0", "h1", "freq",
                                            str(r.rd), str(r.hd), r.neox ? "1" : "0",
                                            r.mscale ? floatLiteral(*r.mscale) : "1.0f"});
    return k;
  }

  LogicalResult rope(RopeOp r, llvm::StringRef prefix, const OperandNames &names,
                     KernelCall &k) const {
    int64_t width = dim(r.getInput(), 1), hd = r.getHeadDim();
    KernelCall rows = ropeKernel(ropeOf(r), prefix);
    int64_t page = kvPage(r);
    k.name = formatv("{0}_rope_w{1}_{2}{3}", prefix, width, ropeOf(r).tag(), pagedTag(page));
    k.params = "const float *x, float *y, int32_t rows, " + positionsParam(page);
    k.body = rowRange(getSplitAttr(r));
    if (page) // rows of a batch are at their own sessions' positions
      k.body += "  for (int32_t r = r0; r < r1; ++r)\n  " +
                statement(rows.name, {formatv("x + (size_t)r * {0}", width).str(),
                                      formatv("y + (size_t)r * {0}", width).str(), str(width),
                                      "1", "pos->at[r]", "0", str(width / hd)});
    else
      k.body += statement(rows.name, {formatv("x + (size_t)r0 * {0}", width).str(),
                                      formatv("y + (size_t)r0 * {0}", width).str(), str(width),
                                      "r1 - r0", "pos + r0", "0", str(width / hd)});
    k.helpers.push_back(rows);
    k.args = {names.operand(r.getInput()), names.result(r), "rows", "pos"};
    return success();
  }

  LogicalResult attention(AttentionOp a, llvm::StringRef prefix, const OperandNames &names,
                          KernelCall &k) const {
    ElementCode c = cacheCode(a.getKeys());
    int64_t nh = a.getNHead(), nkv = a.getNKvHead(), hd = a.getHeadDim();
    if (c.family == KILN_UK_I8 && c.group != hd)
      return a.emitOpError("expects one cache scale per head (group ") << hd << ")";
    int64_t window = a.getWindow() ? *a.getWindow() : 0;
    CacheLayout layout(a.getKeys());
    int64_t page = kvPage(a);
    if (page && window)
      return a.emitOpError("has a window, which a pool of pages does not keep");
    k.name = formatv("{0}_attention_{1}_h{2}_kv{3}_d{4}_win{5}_r{6}{7}{8}", prefix, c.name, nh,
                     nkv, hd, window, layout.rows, layout.tag, pagedTag(page));
    double scale = 1.0 / std::sqrt(double(hd));
    if (a.getScale()) {
      scale = a.getScale()->convertToFloat();
      k.name += formatv("_s{0}", hexFloat(float(scale))).str();
    }
    if (hd > KILN_UK_MAX_HEAD_DIM)
      return a.emitOpError() << "head dimension " << hd << " exceeds the attention kernels' "
                             << KILN_UK_MAX_HEAD_DIM;
    k.params = "const float *q, const void *keys, const void *values, float *y, int32_t rows, " +
               positionsParam(page);
    // The work is (KV head, row) pairs u0..u1-1, head-major, all of them
    // unless split: a share holds whole KV heads where it can, so shares get
    // equal work however long each row's causal context is, and one KV head's
    // query heads read its cache rows together.
    SplitAttr split = getSplitAttr(a);
    std::string units =
        split ? formatv("  const int32_t u0 = kiln_uk_share((int64_t)rows * {0}, s0, {1}),\n"
                        "                u1 = kiln_uk_share((int64_t)rows * {0}, s1, {1});\n",
                        nkv, split.getShares())
                    .str()
              : formatv("  const int32_t u0 = 0, u1 = rows * {0};\n", nkv).str();
    k.body = units + (page ? call("attention_paged",
                                  {family(c.family), layout.layout, "q", "(const uint8_t *)keys",
                                   "(const uint8_t *)values", "y", "u0", "u1", "rows", "pos->at",
                                   "pos->table", str(page), str(nh), str(nkv), str(hd),
                                   str(layout.rows), floatLiteral(scale)})
                           : call("attention_rows",
                                  {family(c.family), layout.layout, "q", "(const uint8_t *)keys",
                                   "(const uint8_t *)values", "y", "u0", "u1", "rows", "pos",
                                   str(nh), str(nkv), str(hd), str(window), str(layout.rows),
                                   floatLiteral(scale)}));
    k.args = {names.operand(a.getQuery()), names.operand(a.getKeys()),
              names.operand(a.getValues()), names.result(a), "rows", "pos"};
    return success();
  }
};

} // namespace

/// Every target: the portable kernels, alone or with an ISA's helpers, one per
/// row of the ISA table.
static const std::vector<LibraryTarget> &targets() {
  static const std::vector<LibraryTarget> all = [] {
    std::vector<LibraryTarget> targets;
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
  for (const LibraryTarget &t : targets())
    if (t.name() == name)
      return &t;
  return nullptr;
}

std::vector<std::string> kiln::targetNames() {
  std::vector<std::string> names;
  for (const LibraryTarget &t : targets())
    names.push_back(t.name().str());
  names.push_back("host");
  return names;
}
