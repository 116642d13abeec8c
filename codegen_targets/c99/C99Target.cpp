// The portable c99 target: plain C loops with every dimension a constant.
#include "codegen_targets/Target.h"

#include "codegen_targets/c99/kiln_uk_pack.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TargetParser/Host.h"

#include <cmath>

using namespace mlir;
using namespace kiln;
using llvm::formatv;

namespace {

/// How a kernel reads a weight or cache format: the helper family and, for the
/// integer families, the group size. Q8_0 and Q4_0 share the group-wise layouts
/// (an f16 scale, then the values), with groups of 32.
struct ElementCode {
  std::string family; // f32, f16, i8, i4
  int64_t group = 1;
  std::string name;   // for kernel names
};

ElementCode elementCode(Type element) {
  if (isa<Q8_0Type>(element)) return {"i8", 32, "q8_0"};
  if (isa<Q4_0Type>(element)) return {"i4", 32, "q4_0"};
  if (auto g = dyn_cast<I8GroupType>(element))
    return {"i8", g.getGroupSize(), formatv("i8g{0}", g.getGroupSize())};
  if (auto g = dyn_cast<I4GroupType>(element))
    return {"i4", g.getGroupSize(), formatv("i4g{0}", g.getGroupSize())};
  if (element.isF16()) return {"f16", 1, "f16"};
  return {"f32", 1, "f32"};
}

ElementCode elementCode(Value v) {
  return elementCode(cast<RankedTensorType>(v.getType()).getElementType());
}

int64_t dim(Value v, unsigned i) { return cast<RankedTensorType>(v.getType()).getDimSize(i); }

/// A float constant that reads back as the same float.
std::string floatLiteral(double v) { return formatv("{0:e9}f", v).str(); }

class C99Target : public TargetDescription {
public:
  explicit C99Target(const IsaVariant &variant) : variant(variant) {}

  llvm::StringRef name() const override { return variant.name; }
  const IsaVariant &isaVariant() const override { return variant; }

  FailureOr<KernelCall> kernelFor(Operation *op, llvm::StringRef prefix,
                                  const OperandNames &names) const override {
    KernelCall k;
    auto split = op->getAttrOfType<SplitAttr>("split");
    auto arg = [&](Value v) { k.args.push_back(names.operand(v)); };
    auto res = [&]() { k.args.push_back(names.result(op)); };
    LogicalResult ok =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](EmbedOp e) {
              ElementCode c = elementCode(e.getTable());
              int64_t d = dim(e.getResult(), 1);
              std::string group = c.group > 1 ? formatv(", {0}", c.group).str() : "";
              k.name = formatv("{0}_embed_{1}_d{2}", prefix, c.name, d);
              k.params = "const uint8_t *table, const int32_t *tokens, float *y, int32_t rows";
              k.body = rowRange(split) + formatv(R"c(  int32_t r;
  for (r = r0; r < r1; ++r)
    row_{0}(table + (size_t)tokens[r] * {1}u, y + (size_t)r * {2}, {2}{3});
)c",
                               c.family, rowBytes(e.getTable()), d, group).str();
              arg(e.getTable()), arg(e.getTokens()), res();
              return success();
            })
            .Case([&](MatmulOp m) {
              ElementCode c = elementCode(m.getWeight());
              int64_t n = dim(m.getResult(), 1), kk = dim(m.getInput(), 1);
              if (auto panel = m.getWeight().getDefiningOp()->getAttrOfType<PanelAttr>("layout"))
                return panelMatmul(m, panel, c, prefix, names, k);
              k.name = formatv("{0}_matmul_{1}_n{2}_k{3}", prefix, c.name, n, kk);
              std::string cols = shareRange(split, n, 1, "n0", "n1");
              if (c.group == 1) {
                k.params = "const float *x, const uint8_t *w, float *y, int32_t rows";
                k.body = cols + formatv(R"c(  int32_t n, r;
  for (n = n0; n < n1; ++n) {{
    const uint8_t *row = w + (size_t)n * {1}u;
    for (r = 0; r < rows; ++r)
      y[(size_t)r * {0} + n] = dot_{2}(x + (size_t)r * {3}, row, {3});
  }
)c",
                                 n, rowBytes(m.getWeight()), c.family, kk).str();
                arg(m.getInput()), arg(m.getWeight()), res();
                return success();
              }
              // A setup kernel quantizes the rows once into scratch (scales, then
              // int8 values); every output is then an integer dot product per
              // group, whichever share computes it.
              int64_t groups = kk / c.group, stride = groups * 4 + kk;
              KernelCall quantize;
              quantize.name = formatv("{0}_quantize_act_k{1}_g{2}", prefix, kk, c.group);
              quantize.params = "const float *x, void *scratch, int32_t rows";
              quantize.body = formatv(R"c(  uint8_t *s = (uint8_t *)scratch;
  int32_t r;
  for (r = 0; r < rows; ++r) {{
    uint8_t *sr = s + (size_t)r * {2}u;
    quantize_act(x + (size_t)r * {0}, (float *)(void *)sr, (int8_t *)(void *)(sr + {3}), {0}, {1});
  }
)c",
                                      kk, c.group, stride, groups * 4);
              quantize.args = {names.operand(m.getInput()), names.scratch(m), "rows"};
              k.params = "const float *x, const uint8_t *w, float *y, void *scratch, int32_t rows";
              k.body = cols + formatv(R"c(  const uint8_t *q = (const uint8_t *)scratch;
  int32_t n, r;
  (void)x; /* read as quantized by the setup kernel */
  for (n = n0; n < n1; ++n) {{
    const uint8_t *row = w + (size_t)n * {1}u;
    for (r = 0; r < rows; ++r) {{
      const uint8_t *sr = q + (size_t)r * {5}u;
      y[(size_t)r * {0} + n] = qdot_{2}((const int8_t *)(const void *)(sr + {6}),
                                      (const float *)(const void *)sr, row, {3}, {4});
    }
  }
)c",
                               n, rowBytes(m.getWeight()), c.family, kk, c.group, stride,
                               groups * 4).str();
              k.setup.push_back(quantize);
              arg(m.getInput()), arg(m.getWeight()), res(),
                  k.args.push_back(names.scratch(m));
              return success();
            })
            .Case([&](RmsNormOp n) {
              int64_t d = dim(n.getInput(), 1);
              float eps = n.getEpsilon().convertToFloat();
              k.name = formatv("{0}_rms_norm_d{1}", prefix, d);
              k.params = "const float *x, const uint8_t *w, float *y, int32_t rows";
              k.body = rowRange(split) + formatv(R"c(  int32_t r;
  for (r = r0; r < r1; ++r)
    rms_norm_row(x + (size_t)r * {0}, (const float *)(const void *)w, y + (size_t)r * {0}, {0}, {1});
)c",
                               d, floatLiteral(eps)).str();
              k.name += formatv("_e{0}", hexFloat(eps)).str();
              arg(n.getInput()), arg(n.getWeight()), res();
              return success();
            })
            .Case([&](RopeOp r) { return rope(r, prefix, names, k); })
            .Case([&](KvWriteOp w) {
              ElementCode c = elementCode(w.getCache());
              int64_t width = dim(w.getRows(), 1);
              int64_t hd = c.family == "i8" ? c.group : width;
              int64_t heads = width / hd, headBytes = cacheHeadBytes(c, hd);
              k.name = formatv("{0}_kv_write_{1}_w{2}", prefix, c.name, width);
              k.params = "const float *x, void *cache, int32_t rows, int32_t pos";
              k.body = rowRange(split) + formatv(R"c(  uint8_t *c = (uint8_t *)cache;
  int32_t r, h;
  for (r = r0; r < r1; ++r)
    for (h = 0; h < {0}; ++h)
      kv_store_{1}(x + (size_t)r * {2} + h * {3}, c + (size_t)(pos + r) * {4}u + h * {5}, {3});
)c",
                               heads, c.family, width, hd, heads * headBytes, headBytes).str();
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
              k.body = rowRange(split) + formatv(R"c(  int32_t i;
  for (i = r0 * {0}; i < r1 * {0}; ++i)
    y[i] = a[i] {1} b[i];
)c",
                               width, add ? "+" : "*").str();
              arg(b->getOperand(0)), arg(b->getOperand(1)), res();
              return success();
            })
            .Case([&](SiluOp s) {
              int64_t width = dim(s.getResult(), 1);
              k.name = formatv("{0}_silu_w{1}", prefix, width);
              k.params = "const float *x, float *y, int32_t rows";
              k.body = rowRange(split) + formatv(R"c(  silu(x + (size_t)r0 * {0}, y + (size_t)r0 * {0}, (r1 - r0) * {0});
)c",
                               width).str();
              arg(s.getInput()), res();
              return success();
            })
            .Default([&](Operation *other) {
              return other->emitOpError() << "has no kernel in the " << variant.name
                                          << " target";
            });
    if (failed(ok))
      return failure();
    if (!isa<RopeOp, KvWriteOp, AttentionOp>(op))
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

  /// `lo`, `hi`: the range of the call's shares over `count` items (output
  /// columns, or panels of `perItem` columns), from a table of the split's
  /// share boundaries; all of them when not split.
  static std::string shareRange(SplitAttr split, int64_t count, int64_t perItem, StringRef lo,
                                StringRef hi) {
    if (!split)
      return formatv("  const int32_t {0} = 0, {1} = {2};\n", lo, hi, count);
    int64_t shares = split.getShares(), grain = split.getGrain() / perItem;
    int64_t units = (count + grain - 1) / grain;
    std::string bounds;
    for (int64_t s = 0; s <= shares; ++s)
      bounds += formatv("{0}{1}", s ? ", " : "", std::min(count, s * units / shares * grain)).str();
    return formatv("  static const int32_t share_bounds[{0}] = {{{1}};\n"
                   "  const int32_t {2} = share_bounds[s0], {3} = share_bounds[s1];\n",
                   shares + 1, bounds, lo, hi);
  }

  /// Bytes of one head of one position in a cache of code `c`.
  static int64_t cacheHeadBytes(const ElementCode &c, int64_t hd) {
    return c.family == "i8" ? 2 + hd : c.family == "f16" ? 2 * hd : 4 * hd;
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

  /// A matmul over weights that pack-layout repacked into panels: one call of
  /// the ISA's panel kernel with every dimension and the row tile constant.
  LogicalResult panelMatmul(MatmulOp m, PanelAttr panel, const ElementCode &c,
                            llvm::StringRef prefix, const OperandNames &names,
                            KernelCall &k) const {
    int64_t panelRows = variant.kernel.panelRows;
    if (panel.getRows() != panelRows)
      return m.emitOpError() << "reads weights in panels of " << panel.getRows()
                             << " rows, but the " << variant.name << " target's kernels read "
                             << (panelRows ? std::to_string(panelRows) + "-row panels"
                                           : std::string("the row layout"));
    auto tile = m->getAttrOfType<TileAttr>("tile");
    if (!tile)
      return m.emitOpError("has panel weights but no tile (run kiln-tile-for-cache)");
    int64_t n = dim(m.getResult(), 1), kk = dim(m.getInput(), 1);
    std::string family = "KILN_UK_" + llvm::StringRef(c.family).upper();
    k.name = formatv("{0}_matmul_{1}_p{2}_n{3}_k{4}_t{5}x{6}", prefix, c.name, panel.getRows(), n,
                     kk, tile.getMr(), tile.getKc());
    auto split = m->getAttrOfType<SplitAttr>("split");
    // Panels p0..p1-1 of the call's shares.
    std::string panels = shareRange(split, (n + panelRows - 1) / panelRows, panelRows, "p0", "p1");
    if (c.group == 1) {
      k.params = "const float *x, const uint8_t *w, float *y, int32_t rows";
      k.body = panels + formatv("  matmul_panel_float({0}, x, w, y, rows, {1}, {2}, {3}, {4}, p0, "
                                "p1);\n",
                                family, n, kk, tile.getMr(), tile.getKc())
                            .str();
      k.args = {names.operand(m.getInput()), names.operand(m.getWeight()), names.result(m)};
      return success();
    }
    // A setup kernel quantizes the activations once: every panel reads them.
    KernelCall quantize;
    quantize.name = formatv("{0}_panel_quantize_k{1}_g{2}", prefix, kk, c.group);
    quantize.params = "const float *x, void *scratch, int32_t rows";
    quantize.body = formatv("  panel_quantize_rows(x, scratch, rows, {0}, {1});\n", kk, c.group);
    quantize.args = {names.operand(m.getInput()), names.scratch(m), "rows"};
    k.params = "const float *x, const uint8_t *w, float *y, void *scratch, int32_t rows";
    k.body = panels + "  (void)x; /* read as quantized by the setup kernel */\n" +
             formatv("  matmul_panel_int({0}, w, y, scratch, rows, {1}, {2}, {3}, {4}, {5}, p0, "
                     "p1);\n",
                     family, n, kk, c.group, tile.getMr(), tile.getKc())
                 .str();
    k.setup.push_back(quantize);
    k.args = {names.operand(m.getInput()), names.operand(m.getWeight()), names.result(m),
              names.scratch(m)};
    return success();
  }

  LogicalResult rope(RopeOp r, llvm::StringRef prefix, const OperandNames &names,
                     KernelCall &k) const {
    int64_t width = dim(r.getInput(), 1), hd = r.getHeadDim(), rd = r.getRopeDim();
    double base = r.getFreqBase().convertToFloat();
    // theta_i = p * base^(-2i/rope_dim), as ggml computes it; the frequencies are
    // constants and the angle is formed in double so large positions keep precision.
    std::string freqs;
    for (int64_t i = 0; i < rd / 2; ++i)
      freqs += formatv("{0}{1:e17}", i ? ", " : "", std::pow(base, -2.0 * i / rd)).str();
    k.name = formatv("{0}_rope_w{1}_h{2}_r{3}_b{4}", prefix, width, hd, rd,
                     hexFloat(float(base)));
    k.params = "const float *x, float *y, int32_t rows, int32_t pos";
    std::string tail = rd < hd ? formatv(R"c(      for (i = {0}; i < {1}; ++i)
        yh[i] = xh[i];
)c", rd, hd).str() : "";
    // The angles depend on the position only: one cos and sin per pair and row,
    // shared by every head.
    k.body = rowRange(r->getAttrOfType<SplitAttr>("split")) + formatv(R"c(  static const double freq[{0}] = {{{1}};
  float c[{0}], s[{0}];
  int32_t r, h, i;
  for (r = r0; r < r1; ++r) {{
    double p = (double)(pos + r);
    for (i = 0; i < {0}; ++i) {{
      c[i] = (float)cos(p * freq[i]);
      s[i] = (float)sin(p * freq[i]);
    }
    for (h = 0; h < {2}; ++h) {{
      const float *xh = x + (size_t)r * {3} + h * {4};
      float *yh = y + (size_t)r * {3} + h * {4};
      for (i = 0; i < {0}; ++i) {{
        float x0 = xh[2 * i], x1 = xh[2 * i + 1];
        yh[2 * i] = x0 * c[i] - x1 * s[i];
        yh[2 * i + 1] = x0 * s[i] + x1 * c[i];
      }
{5}    }
  }
)c",
                     rd / 2, freqs, width / hd, width, hd, tail).str();
    k.args = {names.operand(r.getInput()), names.result(r), "rows", "pos"};
    return success();
  }

  LogicalResult attention(AttentionOp a, llvm::StringRef prefix,
                          const OperandNames &names, KernelCall &k) const {
    ElementCode c = elementCode(a.getKeys());
    int64_t nh = a.getNHead(), nkv = a.getNKvHead(), hd = a.getHeadDim();
    if (c.family == "i8" && c.group != hd)
      return a.emitOpError("expects one cache scale per head (group ") << hd << ")";
    int64_t window = a.getWindow() ? *a.getWindow() : 0;
    int64_t headBytes = cacheHeadBytes(c, hd);
    k.name = formatv("{0}_attention_{1}_h{2}_kv{3}_d{4}_win{5}", prefix, c.name, nh, nkv, hd,
                     window);
    if (hd > KILN_UK_MAX_HEAD_DIM)
      return a.emitOpError() << "head dimension " << hd << " exceeds the attention kernels' "
                             << KILN_UK_MAX_HEAD_DIM;
    k.params = "const float *q, const void *keys, const void *values, float *y, int32_t rows, "
               "int32_t pos";
    std::string start = window ? formatv("p - {0} + 1 > 0 ? p - {0} + 1 : 0", window).str()
                               : std::string("0");
    // The work is (row, query head) pairs u0..u1-1, all of them unless split.
    // The query heads of a row that share a KV head attend over its cache rows
    // with one call of the library's attend.
    auto split = a->getAttrOfType<SplitAttr>("split");
    std::string units =
        split ? formatv("  const int32_t u0 = (int32_t)((int64_t)rows * {0} * s0 / {1}),\n"
                        "                u1 = (int32_t)((int64_t)rows * {0} * s1 / {1});\n",
                        nh, split.getShares())
                    .str()
              : formatv("  const int32_t u0 = 0, u1 = rows * {0};\n", nh).str();
    k.body = units + formatv(R"c(  const uint8_t *kc = (const uint8_t *)keys, *vc = (const uint8_t *)values;
  int32_t u, nq;
  for (u = u0; u < u1; u += nq) {{
    int32_t r = u / {0}, h = u % {0}, g = h / {5};
    int32_t p = pos + r, t0 = {6}, end = (g + 1) * {5} < u1 - r * {0} ? (g + 1) * {5} : u1 - r * {0};
    nq = end - h;
    attend({9}, q + (size_t)r * {3} + h * {2}, nq, kc + g * {8}u, vc + g * {8}u, {4}u, t0, p,
           {2}, {7}, y + (size_t)r * {3} + h * {2});
  }
)c",
                     nh, nkv, hd, nh * hd, nkv * headBytes, nh / nkv, start,
                     floatLiteral(1.0 / std::sqrt(double(hd))), headBytes,
                     "KILN_UK_" + llvm::StringRef(c.family).upper()).str();
    k.args = {names.operand(a.getQuery()), names.operand(a.getKeys()),
              names.operand(a.getValues()), names.result(a), "rows", "pos"};
    return success();
  }
};

} // namespace

/// Every target: the portable kernels, alone or with an ISA's helpers.
static const std::vector<C99Target> &targets() {
  static const IsaVariant portable{"c99"};
  static const std::vector<C99Target> all = {
      C99Target(portable), C99Target(x86Avx2Variant()), C99Target(x86AvxVnniVariant()),
      C99Target(x86Avx512Variant()),
      C99Target(armNeonVariant()), C99Target(armNeonI8mmVariant()),
      C99Target(riscvRvvVariant())};
  return all;
}

/// Whether the machine running kiln-compile has every feature in `features`.
static bool hostSupports(const llvm::StringMap<bool, llvm::MallocAllocator> &host,
                         const std::vector<const char *> &features) {
  if (features.empty())
    return false;
  for (const char *f : features)
    if (!host.lookup(f))
      return false;
  return true;
}

const TargetDescription *kiln::lookupTarget(llvm::StringRef name) {
  if (name == "host") {
    // The widest x86 variant the machine runs; otherwise the ISA kiln-compile was
    // built for, or the portable one.
    const auto host = llvm::sys::getHostCPUFeatures();
    for (auto it = targets().rbegin(); it != targets().rend(); ++it)
      if (hostSupports(host, it->isaVariant().hostFeatures))
        return &*it;
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
    return lookupTarget("arm-neon");
#else
    return &targets().front();
#endif
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
