// The portable c99 target: plain C loops with every dimension a constant.
#include "codegen_targets/Target.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace kiln;
using llvm::formatv;

namespace {

/// Short name of a weight format, used in helper and kernel names.
std::string formatName(Type element) {
  if (isa<Q8_0Type>(element)) return "q8_0";
  if (isa<Q4_0Type>(element)) return "q4_0";
  if (element.isF16()) return "f16";
  if (element.isF32()) return "f32";
  return "";
}

int64_t dim(Value v, unsigned i) { return cast<RankedTensorType>(v.getType()).getDimSize(i); }

/// A float constant that reads back as the same float.
std::string floatLiteral(double v) { return formatv("{0:e9}f", v).str(); }

// Helpers shared by kernels. Each is emitted only when used, so generated code
// stays free of unused static functions under -Wall -Werror.
const char *const kHelperF16 = R"c(
static float load_f16(const uint8_t *p) {
  uint16_t h;
  memcpy(&h, p, sizeof h);
  return kiln_f16_to_f32(h);
}
)c";

const char *const kHelperDot[][2] = {
    {"dot_f32", R"c(
/* Eight partial sums in a fixed order: deterministic, and the compiler may
 * keep them in vector lanes. */
static float dot_f32(const float *x, const uint8_t *w, int32_t k) {
  const float *r = (const float *)(const void *)w;
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t i, j, whole = k - k % 8;
  for (i = 0; i < whole; i += 8)
    for (j = 0; j < 8; ++j)
      s[j] += x[i + j] * r[i + j];
  for (i = whole; i < k; ++i)
    s[0] += x[i] * r[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}
)c"},
    {"dot_f16", R"c(
static float dot_f16(const float *x, const uint8_t *w, int32_t k) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t i, j, whole = k - k % 8;
  for (i = 0; i < whole; i += 8)
    for (j = 0; j < 8; ++j)
      s[j] += x[i + j] * load_f16(w + 2 * (i + j));
  for (i = whole; i < k; ++i)
    s[0] += x[i] * load_f16(w + 2 * i);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}
)c"},
    {"dot_q8_0", R"c(
/* Q8_0 block: f16 scale, then 32 int8. */
static float dot_q8_0(const float *x, const uint8_t *w, int32_t k) {
  float acc = 0.0f;
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 34 * b;
    const int8_t *q = (const int8_t *)(const void *)(blk + 2);
    const float *xb = x + 32 * b;
    float s = 0.0f;
    for (j = 0; j < 32; ++j)
      s += xb[j] * (float)q[j];
    acc += load_f16(blk) * s;
  }
  return acc;
}
)c"},
    {"dot_q4_0", R"c(
/* Q4_0 block: f16 scale, then 16 bytes; low nibbles are elements 0..15 and
 * high nibbles 16..31, each stored as value + 8. */
static float dot_q4_0(const float *x, const uint8_t *w, int32_t k) {
  float acc = 0.0f;
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 18 * b;
    const float *xb = x + 32 * b;
    float s = 0.0f;
    for (j = 0; j < 16; ++j) {
      s += xb[j] * (float)((blk[2 + j] & 15) - 8);
      s += xb[j + 16] * (float)((blk[2 + j] >> 4) - 8);
    }
    acc += load_f16(blk) * s;
  }
  return acc;
}
)c"},
    {"row_f32", R"c(
static void row_f32(const uint8_t *w, float *y, int32_t k) {
  memcpy(y, w, (size_t)k * sizeof(float));
}
)c"},
    {"row_f16", R"c(
static void row_f16(const uint8_t *w, float *y, int32_t k) {
  int32_t i;
  for (i = 0; i < k; ++i)
    y[i] = load_f16(w + 2 * i);
}
)c"},
    {"row_q8_0", R"c(
static void row_q8_0(const uint8_t *w, float *y, int32_t k) {
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 34 * b;
    const int8_t *q = (const int8_t *)(const void *)(blk + 2);
    float d = load_f16(blk);
    for (j = 0; j < 32; ++j)
      y[32 * b + j] = d * (float)q[j];
  }
}
)c"},
    {"row_q4_0", R"c(
static void row_q4_0(const uint8_t *w, float *y, int32_t k) {
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 18 * b;
    float d = load_f16(blk);
    for (j = 0; j < 16; ++j) {
      y[32 * b + j] = d * (float)((blk[2 + j] & 15) - 8);
      y[32 * b + j + 16] = d * (float)((blk[2 + j] >> 4) - 8);
    }
  }
}
)c"},
};

bool needsF16(const std::string &helper) {
  return helper != "dot_f32" && helper != "row_f32";
}

class C99Target : public TargetDescription {
public:
  llvm::StringRef name() const override { return "c99"; }

  FailureOr<KernelCall> kernelFor(Operation *op, llvm::StringRef prefix,
                                  const OperandNames &names) const override {
    KernelCall k;
    auto arg = [&](Value v) { k.args.push_back(names.operand(v)); };
    auto res = [&]() { k.args.push_back(names.result(op)); };
    auto fmt = [&](Value w) -> std::string {
      return formatName(cast<RankedTensorType>(w.getType()).getElementType());
    };
    LogicalResult ok =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](EmbedOp e) {
              std::string f = fmt(e.getTable());
              int64_t d = dim(e.getResult(), 1);
              k.name = formatv("{0}_embed_{1}_d{2}", prefix, f, d);
              k.params = "const uint8_t *table, const int32_t *tokens, float *y, int32_t rows";
              k.body = formatv(R"c(  int32_t r;
  for (r = 0; r < rows; ++r)
    row_{0}(table + (size_t)tokens[r] * {1}u, y + (size_t)r * {2}, {2});
)c",
                               f, rowBytes(e.getTable()), d);
              k.helpers = {"row_" + f};
              arg(e.getTable()), arg(e.getTokens()), res();
              return success();
            })
            .Case([&](MatmulOp m) {
              std::string f = fmt(m.getWeight());
              int64_t n = dim(m.getResult(), 1), kk = dim(m.getInput(), 1);
              k.name = formatv("{0}_matmul_{1}_n{2}_k{3}", prefix, f, n, kk);
              k.params = "const float *x, const uint8_t *w, float *y, int32_t rows";
              k.body = formatv(R"c(  int32_t n, r;
  for (n = 0; n < {0}; ++n) {{
    const uint8_t *row = w + (size_t)n * {1}u;
    for (r = 0; r < rows; ++r)
      y[(size_t)r * {0} + n] = dot_{2}(x + (size_t)r * {3}, row, {3});
  }
)c",
                               n, rowBytes(m.getWeight()), f, kk);
              k.helpers = {"dot_" + f};
              arg(m.getInput()), arg(m.getWeight()), res();
              return success();
            })
            .Case([&](RmsNormOp n) {
              int64_t d = dim(n.getInput(), 1);
              float eps = n.getEpsilon().convertToFloat();
              k.name = formatv("{0}_rms_norm_d{1}", prefix, d);
              k.params = "const float *x, const uint8_t *w, float *y, int32_t rows";
              k.body = formatv(R"c(  const float *g = (const float *)(const void *)w;
  int32_t r, i;
  for (r = 0; r < rows; ++r) {{
    const float *xr = x + (size_t)r * {0};
    float *yr = y + (size_t)r * {0};
    double ss = 0.0;
    float scale;
    for (i = 0; i < {0}; ++i)
      ss += (double)xr[i] * (double)xr[i];
    scale = (float)(1.0 / sqrt(ss / {0} + (double){1}));
    for (i = 0; i < {0}; ++i)
      yr[i] = xr[i] * scale * g[i];
  }
)c",
                               d, floatLiteral(eps));
              k.name += formatv("_e{0}", hexFloat(eps)).str();
              arg(n.getInput()), arg(n.getWeight()), res();
              return success();
            })
            .Case([&](RopeOp r) { return rope(r, prefix, names, k); })
            .Case([&](KvWriteOp w) {
              int64_t width = dim(w.getRows(), 1);
              k.name = formatv("{0}_kv_write_w{1}", prefix, width);
              k.params = "const float *x, float *cache, int32_t rows, int32_t pos";
              k.body = formatv(R"c(  memcpy(cache + (size_t)pos * {0}, x, (size_t)rows * {0} * sizeof(float));
)c",
                               width);
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
              k.body = formatv(R"c(  int32_t i;
  for (i = 0; i < rows * {0}; ++i)
    y[i] = a[i] {1} b[i];
)c",
                               width, add ? "+" : "*");
              arg(b->getOperand(0)), arg(b->getOperand(1)), res();
              return success();
            })
            .Case([&](SiluOp s) {
              int64_t width = dim(s.getResult(), 1);
              k.name = formatv("{0}_silu_w{1}", prefix, width);
              k.params = "const float *x, float *y, int32_t rows";
              k.body = formatv(R"c(  int32_t i;
  for (i = 0; i < rows * {0}; ++i)
    y[i] = x[i] / (1.0f + expf(-x[i]));
)c",
                               width);
              arg(s.getInput()), res();
              return success();
            })
            .Default([&](Operation *other) {
              return other->emitOpError("has no kernel in the c99 target");
            });
    if (failed(ok))
      return failure();
    if (isa<RopeOp, KvWriteOp, AttentionOp>(op))
      return k;
    k.args.push_back("rows");
    return k;
  }

  std::string helperDefinitions(const std::set<std::string> &used) const override {
    std::string out;
    bool f16 = false;
    for (const std::string &h : used)
      f16 |= needsF16(h);
    if (f16)
      out += kHelperF16;
    for (auto &[name, text] : kHelperDot)
      if (used.count(name))
        out += text;
    return out;
  }

private:
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
    k.body = formatv(R"c(  static const double freq[{0}] = {{{1}};
  int32_t r, h, i;
  for (r = 0; r < rows; ++r) {{
    double p = (double)(pos + r);
    for (h = 0; h < {2}; ++h) {{
      const float *xh = x + (size_t)r * {3} + h * {4};
      float *yh = y + (size_t)r * {3} + h * {4};
      for (i = 0; i < {0}; ++i) {{
        float c = (float)cos(p * freq[i]), s = (float)sin(p * freq[i]);
        float x0 = xh[2 * i], x1 = xh[2 * i + 1];
        yh[2 * i] = x0 * c - x1 * s;
        yh[2 * i + 1] = x0 * s + x1 * c;
      }
{5}    }
  }
)c",
                     rd / 2, freqs, width / hd, width, hd, tail);
    k.args = {names.operand(r.getInput()), names.result(r), "rows", "pos"};
    return success();
  }

  LogicalResult attention(AttentionOp a, llvm::StringRef prefix,
                          const OperandNames &names, KernelCall &k) const {
    if (!cast<RankedTensorType>(a.getKeys().getType()).getElementType().isF32())
      return a.emitOpError("c99 target supports only an f32 KV cache here");
    int64_t nh = a.getNHead(), nkv = a.getNKvHead(), hd = a.getHeadDim();
    int64_t window = a.getWindow() ? *a.getWindow() : 0;
    k.name = formatv("{0}_attention_h{1}_kv{2}_d{3}_win{4}", prefix, nh, nkv, hd, window);
    k.params = "const float *q, const float *kc, const float *vc, float *y, int32_t rows, "
               "int32_t pos";
    std::string start = window ? formatv("p - {0} + 1 > 0 ? p - {0} + 1 : 0", window).str()
                               : std::string("0");
    // One pass over the cache with an online softmax: no scores buffer.
    k.body = formatv(R"c(  int32_t r, h, t, i;
  for (r = 0; r < rows; ++r) {{
    int32_t p = pos + r;
    for (h = 0; h < {0}; ++h) {{
      const float *qh = q + (size_t)r * {3} + h * {2};
      int32_t g = h / {5};
      float acc[{2}];
      float mx = -INFINITY, sum = 0.0f;
      for (i = 0; i < {2}; ++i)
        acc[i] = 0.0f;
      for (t = {6}; t <= p; ++t) {{
        const float *kt = kc + (size_t)t * {4} + g * {2};
        const float *vt = vc + (size_t)t * {4} + g * {2};
        float s = 0.0f, e;
        for (i = 0; i < {2}; ++i)
          s += qh[i] * kt[i];
        s *= {7};
        if (s > mx) {{
          float c = expf(mx - s);
          for (i = 0; i < {2}; ++i)
            acc[i] *= c;
          sum *= c;
          mx = s;
        }
        e = expf(s - mx);
        sum += e;
        for (i = 0; i < {2}; ++i)
          acc[i] += e * vt[i];
      }
      for (i = 0; i < {2}; ++i)
        y[(size_t)r * {3} + h * {2} + i] = acc[i] / sum;
    }
  }
)c",
                     nh, nkv, hd, nh * hd, nkv * hd, nh / nkv, start,
                     floatLiteral(1.0 / std::sqrt(double(hd))));
    k.args = {names.operand(a.getQuery()), names.operand(a.getKeys()),
              names.operand(a.getValues()), names.result(a), "rows", "pos"};
    return success();
  }
};

} // namespace

const TargetDescription *kiln::lookupTarget(llvm::StringRef name) {
  static const C99Target c99;
  if (name == c99.name())
    return &c99;
  return nullptr;
}

std::vector<std::string> kiln::targetNames() { return {"c99"}; }
