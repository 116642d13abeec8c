#include "compiler/eval/GraphEvaluator.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/kiln_half.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace kiln::eval {
namespace {

int64_t count(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

Buffer make(Value result) {
  Buffer b;
  b.shape.assign(typeOf(result).getShape().begin(), typeOf(result).getShape().end());
  b.values.assign(count(b.shape), 0.0);
  return b;
}

/// `x` as an element of `type` holds it: integers truncate, booleans are 0 or
/// 1, halves round to the nearest.
double asElement(Type type, double x) {
  if (type.isF16())
    return kiln_f16_to_f32(kiln_f32_to_f16(static_cast<float>(x)));
  if (type.isInteger(1))
    return x != 0 ? 1.0 : 0.0;
  if (isa<IntegerType>(type))
    return std::trunc(x);
  return x;
}

double gelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

class Evaluator {
public:
  explicit Evaluator(const TensorSource &source) : source(source) {}

  llvm::Error run(Operation &op);
  llvm::DenseMap<Value, Buffer> values;

private:
  const TensorSource &source;

  const Buffer &in(Operation &op, unsigned i) { return values[op.getOperand(i)]; }

  llvm::Error fail(Operation &op, const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   op.getName().getStringRef() + ": " + why);
  }

  template <typename F> void map(Operation &op, F f) {
    Buffer out = make(op.getResult(0));
    const Buffer &x = in(op, 0);
    for (size_t i = 0; i < out.values.size(); ++i)
      out.values[i] = f(x.values[i]);
    values[op.getResult(0)] = std::move(out);
  }

  template <typename F> void zip(Operation &op, F f) {
    Buffer out = make(op.getResult(0));
    const Buffer &x = in(op, 0), &y = in(op, 1);
    for (size_t i = 0; i < out.values.size(); ++i)
      out.values[i] = f(x.values[i], y.values[i]);
    values[op.getResult(0)] = std::move(out);
  }

  /// Row r of `rows` x `width` elements of `out` from the same row of `x`.
  template <typename F> void rows(Operation &op, F f) {
    Buffer out = make(op.getResult(0));
    const Buffer &x = in(op, 0);
    const int64_t width = out.shape.empty() ? 1 : out.shape.back(), n = count(out.shape) / width;
    for (int64_t r = 0; r < n; ++r)
      f(&x.values[r * width], &out.values[r * width], width);
    values[op.getResult(0)] = std::move(out);
  }

  /// out[i] = x[index(i)] over every element of the result.
  template <typename F> void permute(Operation &op, F index) {
    Buffer out = make(op.getResult(0));
    const Buffer &x = in(op, 0);
    const std::vector<int64_t> os = stridesOf(out.shape);
    std::vector<int64_t> coord(out.shape.size());
    for (int64_t i = 0; i < static_cast<int64_t>(out.values.size()); ++i) {
      for (size_t d = 0; d < coord.size(); ++d)
        coord[d] = (i / os[d]) % out.shape[d];
      out.values[i] = x.values[index(coord)];
    }
    values[op.getResult(0)] = std::move(out);
  }
};

llvm::Error Evaluator::run(Operation &op) {
  auto named = [&](llvm::StringRef name) -> llvm::Error {
    llvm::Expected<Buffer> b = source(name);
    if (!b)
      return b.takeError();
    if (count(b->shape) != typeOf(op.getResult(0)).getNumElements())
      return fail(op, "'" + name + "' holds " + llvm::Twine(count(b->shape)) + " elements, its type " +
                          llvm::Twine(typeOf(op.getResult(0)).getNumElements()));
    b->shape.assign(typeOf(op.getResult(0)).getShape().begin(), typeOf(op.getResult(0)).getShape().end());
    values[op.getResult(0)] = std::move(*b);
    return llvm::Error::success();
  };
  if (auto w = dyn_cast<WeightOp>(op)) {
    if (llvm::Error e = named(w.getName()))
      return e;
    if (w.getTransposed()) {
      Buffer &b = values[op.getResult(0)];
      const int64_t rows = b.shape[0], cols = b.shape[1];
      std::vector<double> t(b.values.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          t[size_t(r * cols + c)] = b.values[size_t(c * rows + r)];
      b.values = std::move(t);
    }
    return llvm::Error::success();
  }
  if (auto c = dyn_cast<ConstantOp>(op))
    return named(c.getName());
  if (auto splat = dyn_cast<SplatOp>(op)) {
    Buffer out = make(op.getResult(0));
    std::fill(out.values.begin(), out.values.end(), splat.getValue().convertToFloat());
    values[op.getResult(0)] = std::move(out);
    return llvm::Error::success();
  }
  if (isa<AddOp>(op)) return zip(op, [](double a, double b) { return a + b; }), llvm::Error::success();
  if (isa<SubOp>(op)) return zip(op, [](double a, double b) { return a - b; }), llvm::Error::success();
  if (isa<MulOp>(op)) return zip(op, [](double a, double b) { return a * b; }), llvm::Error::success();
  if (isa<DivOp>(op)) return zip(op, [](double a, double b) { return a / b; }), llvm::Error::success();
  if (isa<PowOp>(op)) return zip(op, [](double a, double b) { return std::pow(a, b); }), llvm::Error::success();
  if (isa<SqrtOp>(op)) return map(op, [](double x) { return std::sqrt(x); }), llvm::Error::success();
  if (isa<ErfOp>(op)) return map(op, [](double x) { return std::erf(x); }), llvm::Error::success();
  if (isa<TanhOp>(op)) return map(op, [](double x) { return std::tanh(x); }), llvm::Error::success();
  if (isa<GeluOp>(op)) return map(op, gelu), llvm::Error::success();
  if (isa<GeluErfOp>(op))
    return map(op, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }), llvm::Error::success();
  if (isa<SiluOp>(op)) return map(op, [](double x) { return x / (1 + std::exp(-x)); }), llvm::Error::success();
  if (isa<CastOp>(op)) // the conversion is the common rounding to the result's type
    return map(op, [](double x) { return x; }), llvm::Error::success();
  if (isa<SoftmaxOp>(op)) {
    rows(op, [](const double *x, double *y, int64_t n) {
      double peak = x[0], sum = 0;
      for (int64_t i = 1; i < n; ++i)
        peak = std::max(peak, x[i]);
      for (int64_t i = 0; i < n; ++i)
        sum += y[i] = std::exp(x[i] - peak);
      for (int64_t i = 0; i < n; ++i)
        y[i] /= sum;
    });
    return llvm::Error::success();
  }
  if (auto norm = dyn_cast<LayerNormOp>(op)) {
    const Buffer &w = in(op, 1), &b = in(op, 2);
    const double eps = norm.getEpsilon().convertToFloat();
    rows(op, [&](const double *x, double *y, int64_t n) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < n; ++i)
        mean += x[i];
      mean /= n;
      for (int64_t i = 0; i < n; ++i)
        var += (x[i] - mean) * (x[i] - mean);
      var /= n;
      for (int64_t i = 0; i < n; ++i)
        y[i] = (x[i] - mean) / std::sqrt(var + eps) * w.values[i] + b.values[i];
    });
    return llvm::Error::success();
  }
  if (isa<BiasAddOp>(op)) {
    const Buffer &bias = in(op, 1);
    rows(op, [&](const double *x, double *y, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] + bias.values[i];
    });
    return llvm::Error::success();
  }
  if (isa<MatmulOp>(op)) { // x [rows, K] times the transpose of w [N, K]
    Buffer out = make(op.getResult(0));
    const Buffer &x = in(op, 0), &w = in(op, 1);
    const int64_t rowsN = out.shape[0], n = out.shape[1], k = x.shape[1];
    for (int64_t r = 0; r < rowsN; ++r)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t i = 0; i < k; ++i)
          s += x.values[r * k + i] * w.values[j * k + i];
        out.values[r * n + j] = s;
      }
    values[op.getResult(0)] = std::move(out);
    return llvm::Error::success();
  }
  if (isa<BatchMatmulOp>(op)) {
    Buffer out = make(op.getResult(0));
    const Buffer &l = in(op, 0), &r = in(op, 1);
    const size_t rank = out.shape.size();
    const int64_t m = out.shape[rank - 2], n = out.shape[rank - 1], k = l.shape[rank - 1];
    const int64_t batches = count(out.shape) / (m * n);
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t t = 0; t < k; ++t)
            s += l.values[(b * m + i) * k + t] * r.values[(b * k + t) * n + j];
          out.values[(b * m + i) * n + j] = s;
        }
    values[op.getResult(0)] = std::move(out);
    return llvm::Error::success();
  }
  if (auto attend = dyn_cast<AttendOp>(op)) {
    Buffer out = make(op.getResult(0));
    const Buffer &q = in(op, 0), &kt = in(op, 1), &v = in(op, 2);
    const Buffer *bias = attend.getBias() ? &values[attend.getBias()] : nullptr;
    const int64_t batches = q.shape[0], s = q.shape[1], d = q.shape[2], t = kt.shape[2], e = v.shape[2];
    const double scale = attend.getScale().convertToFloat();
    const int64_t biasRows = bias ? bias->shape[1] : 0; // 1: one row for every query
    std::vector<double> p(t);
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t i = 0; i < s; ++i) {
        double peak = -INFINITY, sum = 0;
        for (int64_t j = 0; j < t; ++j) {
          double dot = 0;
          for (int64_t k = 0; k < d; ++k)
            dot += q.values[(b * s + i) * d + k] * kt.values[(b * d + k) * t + j];
          p[j] = scale * dot +
                 (bias ? bias->values[(b * biasRows + (biasRows == 1 ? 0 : i)) * t + j] : 0.0);
          peak = std::max(peak, p[j]);
        }
        for (int64_t j = 0; j < t; ++j)
          sum += p[j] = std::exp(p[j] - peak);
        for (int64_t c = 0; c < e; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < t; ++j)
            acc += p[j] / sum * v.values[(b * t + j) * e + c];
          out.values[(b * s + i) * e + c] = acc;
        }
      }
    values[op.getResult(0)] = std::move(out);
    return llvm::Error::success();
  }
  if (auto embed = dyn_cast<EmbedOp>(op)) {
    Buffer out = make(op.getResult(0));
    const Buffer &table = in(op, 0), &ids = in(op, 1);
    const int64_t width = table.shape[1];
    const double scale = embed.getScale() ? embed.getScale()->convertToFloat() : 1.0;
    for (size_t t = 0; t < ids.values.size(); ++t) {
      const int64_t id = static_cast<int64_t>(ids.values[t]);
      if (id < 0 || id >= table.shape[0])
        return fail(op, "token " + llvm::Twine(id) + " is outside the table of " + llvm::Twine(table.shape[0]));
      for (int64_t i = 0; i < width; ++i)
        out.values[t * width + i] = table.values[id * width + i] * scale;
    }
    values[op.getResult(0)] = std::move(out);
    return llvm::Error::success();
  }
  if (isa<ReshapeOp>(op)) {
    Buffer out = in(op, 0);
    out.shape = make(op.getResult(0)).shape;
    values[op.getResult(0)] = std::move(out);
    return llvm::Error::success();
  }
  if (auto t = dyn_cast<TransposeOp>(op)) {
    const std::vector<int64_t> is = stridesOf(in(op, 0).shape);
    llvm::ArrayRef<int64_t> perm = t.getPerm();
    permute(op, [&](const std::vector<int64_t> &c) {
      int64_t at = 0;
      for (size_t d = 0; d < c.size(); ++d)
        at += c[d] * is[perm[d]];
      return at;
    });
    return llvm::Error::success();
  }
  if (isa<BroadcastOp>(op)) {
    const std::vector<int64_t> shape = in(op, 0).shape, is = stridesOf(shape);
    const size_t rank = typeOf(op.getResult(0)).getRank(), skip = rank - shape.size();
    permute(op, [&](const std::vector<int64_t> &c) {
      int64_t at = 0;
      for (size_t d = skip; d < rank; ++d)
        if (shape[d - skip] != 1)
          at += c[d] * is[d - skip];
      return at;
    });
    return llvm::Error::success();
  }
  if (auto s = dyn_cast<SliceOp>(op)) {
    const std::vector<int64_t> is = stridesOf(in(op, 0).shape);
    llvm::ArrayRef<int64_t> starts = s.getStarts(), steps = s.getSteps();
    permute(op, [&](const std::vector<int64_t> &c) {
      int64_t at = 0;
      for (size_t d = 0; d < c.size(); ++d)
        at += (starts[d] + c[d] * steps[d]) * is[d];
      return at;
    });
    return llvm::Error::success();
  }
  if (auto g = dyn_cast<GatherOp>(op)) {
    const Buffer &x = in(op, 0), &idx = in(op, 1);
    const int64_t axis = g.getAxis(), dim = x.shape[axis];
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= x.shape[d];
    for (size_t d = axis + 1; d < x.shape.size(); ++d)
      inner *= x.shape[d];
    Buffer out = make(op.getResult(0));
    const int64_t n = static_cast<int64_t>(idx.values.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j) {
        int64_t at = static_cast<int64_t>(idx.values[j]);
        if (at < -dim || at >= dim)
          return fail(op, "index " + llvm::Twine(at) + " is outside a dimension of " + llvm::Twine(dim));
        at = at < 0 ? at + dim : at;
        for (int64_t i = 0; i < inner; ++i)
          out.values[(o * n + j) * inner + i] = x.values[(o * dim + at) * inner + i];
      }
    values[op.getResult(0)] = std::move(out);
    return llvm::Error::success();
  }
  if (auto c = dyn_cast<ConcatOp>(op)) {
    Buffer out = make(op.getResult(0));
    const int64_t axis = c.getAxis();
    int64_t outer = 1, at = 0;
    for (int64_t d = 0; d < axis; ++d)
      outer *= out.shape[d];
    for (int64_t o = 0; o < outer; ++o)
      for (unsigned i = 0; i < op.getNumOperands(); ++i) {
        const Buffer &part = in(op, i);
        const int64_t chunk = count(part.shape) / outer;
        for (int64_t e = 0; e < chunk; ++e)
          out.values[at++] = part.values[o * chunk + e];
      }
    values[op.getResult(0)] = std::move(out);
    return llvm::Error::success();
  }
  if (auto r = dyn_cast<ReduceMeanOp>(op)) {
    Buffer out = make(op.getResult(0));
    const Buffer &x = in(op, 0);
    const std::vector<int64_t> is = stridesOf(x.shape), os = stridesOf(out.shape);
    const int64_t per = count(x.shape) / count(out.shape);
    for (int64_t i = 0; i < count(x.shape); ++i) {
      int64_t at = 0;
      for (size_t d = 0; d < x.shape.size(); ++d)
        if (out.shape[d] != 1)
          at += ((i / is[d]) % x.shape[d]) * os[d];
      out.values[at] += x.values[i] / per;
    }
    values[op.getResult(0)] = std::move(out);
    return llvm::Error::success();
  }
  if (isa<EqualOp>(op))
    return zip(op, [](double a, double b) { return a == b ? 1.0 : 0.0; }), llvm::Error::success();
  if (isa<WhereOp>(op)) {
    Buffer out = make(op.getResult(0));
    const Buffer &c = in(op, 0), &l = in(op, 1), &r = in(op, 2);
    for (size_t i = 0; i < out.values.size(); ++i)
      out.values[i] = c.values[i] != 0 ? l.values[i] : r.values[i];
    values[op.getResult(0)] = std::move(out);
    return llvm::Error::success();
  }
  return fail(op, "the reference evaluator has no rule for this op");
}

} // namespace

llvm::Expected<std::vector<Buffer>> evaluate(ModuleOp module, llvm::StringRef function,
                                             const std::vector<Buffer> &inputs, const TensorSource &source) {
  auto fn = module.lookupSymbol<func::FuncOp>(function);
  if (!fn || fn.getBody().empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "no function @" + function + " to evaluate");
  Block &body = fn.getBody().front();
  if (inputs.size() != body.getNumArguments())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "@" + function + " takes " + llvm::Twine(body.getNumArguments()) +
                                       " inputs, " + llvm::Twine(inputs.size()) + " given");
  Evaluator e(source);
  for (unsigned i = 0; i < body.getNumArguments(); ++i) {
    RankedTensorType t = typeOf(body.getArgument(i));
    if (inputs[i].shape != std::vector<int64_t>(t.getShape().begin(), t.getShape().end()))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "input " + llvm::Twine(i) + " does not have the shape of " + llvm::Twine(i) +
                                         "th argument of @" + function);
    e.values[body.getArgument(i)] = inputs[i];
  }
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Buffer> results;
      for (Value v : ret.getOperands())
        results.push_back(e.values[v]);
      return results;
    }
    if (llvm::Error err = e.run(op))
      return std::move(err);
    Type element = typeOf(op.getResult(0)).getElementType();
    if (isa<IntegerType>(element) || element.isF16())
      for (double &x : e.values[op.getResult(0)].values)
        x = asElement(element, x);
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "@" + function + " does not return");
}

} // namespace kiln::eval
