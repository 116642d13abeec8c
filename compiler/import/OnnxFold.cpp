#include "compiler/import/OnnxFold.h"
#include "compiler/import/OnnxProto.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

namespace kiln::onnx {
namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

// Folded values larger than this stay computed at run time.
constexpr int64_t kMaxFoldedElements = int64_t(1) << 26;

/// A constant while folding: integer and bool types in `ints`, float types in
/// `reals` (float16 and bfloat16 are not folded).
struct Value {
  int32_t type = TensorProto::INT64;
  std::vector<int64_t> shape;
  std::vector<int64_t> ints;
  std::vector<double> reals;

  bool isReal() const { return type == TensorProto::FLOAT || type == TensorProto::DOUBLE; }
  int64_t size() const { return isReal() ? (int64_t)reals.size() : (int64_t)ints.size(); }
  double at(int64_t i) const { return isReal() ? reals[i] : (double)ints[i]; }
};

[[noreturn]] void fail(const NodeProto &node, const std::string &why) {
  throw std::runtime_error("node '" + node.name() + "' (" + node.op_type() + "): " + why);
}

int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool foldableType(int32_t type) {
  switch (type) {
  case TensorProto::FLOAT: case TensorProto::DOUBLE: case TensorProto::INT64: case TensorProto::INT32:
  case TensorProto::INT16: case TensorProto::INT8: case TensorProto::UINT8: case TensorProto::BOOL:
    return true;
  default:
    return false;
  }
}

/// A tensor proto (initializer or attribute) as a Value; false when its type
/// is not folded or its data is external or malformed (the reader reports it).
bool fromProto(const TensorProto &t, Value &v) {
  if (!foldableType(t.data_type()) || t.data_location() == TensorProto::EXTERNAL)
    return false;
  Tensor tensor;
  try {
    tensor = readTensor("", t);
  } catch (const Failure &) {
    return false;
  }
  v.type = t.data_type();
  v.shape = tensor.info.shape;
  if (count(v.shape) > kMaxFoldedElements)
    return false;
  if (v.type == TensorProto::DOUBLE) {
    v.reals.resize(count(v.shape));
    std::memcpy(v.reals.data(), tensor.bytes.data(), tensor.bytes.size());
  } else if (v.type == TensorProto::FLOAT) {
    const std::vector<float> f = tensor.floats();
    v.reals.assign(f.begin(), f.end());
  } else {
    v.ints = tensor.integers();
  }
  return true;
}

template <typename T> void store(std::string &raw, int64_t i, T x) {
  std::memcpy(&raw[i * sizeof(T)], &x, sizeof(T));
}

void toProto(const Value &v, const std::string &name, TensorProto &t) {
  t.Clear();
  t.set_name(name);
  t.set_data_type(v.type);
  for (int64_t d : v.shape)
    t.add_dims(d);
  const int64_t n = v.size();
  std::string raw;
  switch (v.type) {
  case TensorProto::FLOAT: raw.resize(4 * n); for (int64_t i = 0; i < n; ++i) store<float>(raw, i, (float)v.reals[i]); break;
  case TensorProto::DOUBLE: raw.resize(8 * n); for (int64_t i = 0; i < n; ++i) store<double>(raw, i, v.reals[i]); break;
  case TensorProto::INT64: raw.resize(8 * n); for (int64_t i = 0; i < n; ++i) store<int64_t>(raw, i, v.ints[i]); break;
  case TensorProto::INT32: raw.resize(4 * n); for (int64_t i = 0; i < n; ++i) store<int32_t>(raw, i, (int32_t)v.ints[i]); break;
  case TensorProto::INT16: raw.resize(2 * n); for (int64_t i = 0; i < n; ++i) store<int16_t>(raw, i, (int16_t)v.ints[i]); break;
  default: raw.resize(n); for (int64_t i = 0; i < n; ++i) raw[i] = (char)(uint8_t)v.ints[i]; break;
  }
  t.set_raw_data(raw);
}

/// Sets element i of `v` from a double, with the type's conversion (integer
/// types truncate toward zero, bool is x != 0, as ONNX's Cast does).
void put(Value &v, int64_t i, double x) {
  if (v.isReal())
    v.reals[i] = v.type == TensorProto::FLOAT ? (double)(float)x : x;
  else if (v.type == TensorProto::BOOL)
    v.ints[i] = x != 0;
  else
    v.ints[i] = (int64_t)std::trunc(x);
}

Value make(int32_t type, std::vector<int64_t> shape) {
  Value v;
  v.type = type;
  v.shape = std::move(shape);
  if (v.isReal())
    v.reals.assign(count(v.shape), 0.0);
  else
    v.ints.assign(count(v.shape), 0);
  return v;
}

/// Copies element `from` of `src` to element `to` of `dst` of the same type.
void copyElement(const Value &src, int64_t from, Value &dst, int64_t to) {
  if (src.isReal())
    dst.reals[to] = src.reals[from];
  else
    dst.ints[to] = src.ints[from];
}

std::vector<int64_t> strides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// The numpy broadcast of two shapes.
std::vector<int64_t> broadcastShape(const NodeProto &node, const std::vector<int64_t> &a,
                                    const std::vector<int64_t> &b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const int64_t y = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1)
      fail(node, "shapes do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

/// The element of `v` (broadcast to `shape`) at flat index i of `shape`.
int64_t broadcastIndex(const Value &v, const std::vector<int64_t> &shape, int64_t i) {
  const std::vector<int64_t> out = strides(shape), in = strides(v.shape);
  const size_t skip = shape.size() - v.shape.size();
  int64_t at = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t coord = (i / out[d]) % shape[d];
    if (d >= skip && v.shape[d - skip] != 1)
      at += coord * in[d - skip];
  }
  return at;
}

int64_t normalizeAxis(const NodeProto &node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    fail(node, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

const ::onnx::AttributeProto *attribute(const NodeProto &node, const std::string &name) {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t intAttribute(const NodeProto &node, const std::string &name, int64_t otherwise) {
  const auto *a = attribute(node, name);
  return a ? a->i() : otherwise;
}

std::vector<int64_t> intsAttributeOr(const NodeProto &node, const std::string &name,
                                     const std::vector<const Value *> &in, size_t index) {
  if (index < in.size() && in[index])
    return in[index]->ints;
  const auto *a = attribute(node, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>();
}

Value binary(const NodeProto &node, const Value &a, const Value &b) {
  const std::string &op = node.op_type();
  const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                       op == "GreaterOrEqual" || op == "And" || op == "Or";
  Value out = make(compare ? (int32_t)TensorProto::BOOL : a.type, broadcastShape(node, a.shape, b.shape));
  const bool real = a.isReal() || b.isReal();
  for (int64_t i = 0; i < out.size(); ++i) {
    const int64_t ia = broadcastIndex(a, out.shape, i), ib = broadcastIndex(b, out.shape, i);
    if (!real && !compare) { // exact int64 arithmetic
      const int64_t x = a.ints[ia], y = b.ints[ib];
      int64_t r = 0;
      if (op == "Add") r = x + y;
      else if (op == "Sub") r = x - y;
      else if (op == "Mul") r = x * y;
      else if (op == "Div") { if (!y) fail(node, "division by zero"); r = x / y; }
      else if (op == "Max") r = std::max(x, y);
      else if (op == "Min") r = std::min(x, y);
      else if (op == "Mod") { if (!y) fail(node, "division by zero"); r = x % y; if (r && ((r < 0) != (y < 0))) r += y; }
      out.ints[i] = r;
      continue;
    }
    const double x = a.at(ia), y = b.at(ib);
    double r = 0;
    if (op == "Add") r = x + y;
    else if (op == "Sub") r = x - y;
    else if (op == "Mul") r = x * y;
    else if (op == "Div") r = x / y;
    else if (op == "Pow") r = std::pow(x, y);
    else if (op == "Max") r = std::max(x, y);
    else if (op == "Min") r = std::min(x, y);
    else if (op == "Equal") r = x == y;
    else if (op == "Less") r = x < y;
    else if (op == "Greater") r = x > y;
    else if (op == "LessOrEqual") r = x <= y;
    else if (op == "GreaterOrEqual") r = x >= y;
    else if (op == "And") r = x != 0 && y != 0;
    else if (op == "Or") r = x != 0 || y != 0;
    put(out, i, r);
  }
  return out;
}

Value gather(const NodeProto &node, const Value &data, const Value &indices) {
  const int64_t rank = (int64_t)data.shape.size();
  const int64_t axis = normalizeAxis(node, intAttribute(node, "axis", 0), rank);
  std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  Value out = make(data.type, shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= data.shape[d];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= data.shape[d];
  const int64_t n = indices.size(), dim = data.shape[axis];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) {
      int64_t index = indices.ints[j];
      if (index < -dim || index >= dim)
        fail(node, "index " + std::to_string(index) + " is out of range for a dimension of " + std::to_string(dim));
      if (index < 0)
        index += dim;
      for (int64_t k = 0; k < inner; ++k)
        copyElement(data, (o * dim + index) * inner + k, out, (o * n + j) * inner + k);
    }
  return out;
}

Value slice(const NodeProto &node, const Value &data, const std::vector<const Value *> &in) {
  const int64_t rank = (int64_t)data.shape.size();
  const std::vector<int64_t> starts = in[1]->ints, ends = in[2]->ints;
  std::vector<int64_t> axes = in.size() > 3 && in[3] ? in[3]->ints : std::vector<int64_t>();
  const std::vector<int64_t> steps = in.size() > 4 && in[4] ? in[4]->ints : std::vector<int64_t>(starts.size(), 1);
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back((int64_t)i);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(node, "starts, ends, axes and steps differ in length");
  std::vector<int64_t> first(rank, 0), step(rank, 1), shape = data.shape;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = normalizeAxis(node, axes[i], rank), dim = data.shape[axis];
    if (steps[i] == 0)
      fail(node, "a step of 0");
    auto clampIndex = [&](int64_t x, bool forward) {
      if (x < 0)
        x += dim;
      return forward ? std::clamp<int64_t>(x, 0, dim) : std::clamp<int64_t>(x, -1, dim - 1);
    };
    const bool forward = steps[i] > 0;
    const int64_t s = clampIndex(starts[i], forward), e = clampIndex(ends[i], forward);
    first[axis] = s;
    step[axis] = steps[i];
    shape[axis] = forward ? std::max<int64_t>(0, (e - s + steps[i] - 1) / steps[i])
                          : std::max<int64_t>(0, (s - e + -steps[i] - 1) / -steps[i]);
  }
  Value out = make(data.type, shape);
  const std::vector<int64_t> os = strides(shape), is = strides(data.shape);
  for (int64_t i = 0; i < out.size(); ++i) {
    int64_t at = 0;
    for (int64_t d = 0; d < rank; ++d)
      at += (first[d] + ((i / os[d]) % shape[d]) * step[d]) * is[d];
    copyElement(data, at, out, i);
  }
  return out;
}

Value reshape(const NodeProto &node, const Value &data, const std::vector<int64_t> &target) {
  std::vector<int64_t> shape = target;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !intAttribute(node, "allowzero", 0)) {
      if (i >= data.shape.size())
        fail(node, "a 0 dimension past the input's rank");
      shape[i] = data.shape[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0)
        fail(node, "two -1 dimensions");
      infer = (int64_t)i;
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0)
    shape[infer] = known ? data.size() / known : 0;
  if (count(shape) != data.size())
    fail(node, "the shape does not hold the input's elements");
  Value out = data;
  out.shape = shape;
  return out;
}

Value transpose(const NodeProto &node, const Value &data) {
  const int64_t rank = (int64_t)data.shape.size();
  std::vector<int64_t> perm = intsAttributeOr(node, "perm", {}, 0);
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  if ((int64_t)perm.size() != rank)
    fail(node, "perm has the wrong length");
  std::vector<int64_t> shape(rank);
  for (int64_t d = 0; d < rank; ++d)
    shape[d] = data.shape[normalizeAxis(node, perm[d], rank)];
  Value out = make(data.type, shape);
  const std::vector<int64_t> os = strides(shape), is = strides(data.shape);
  for (int64_t i = 0; i < out.size(); ++i) {
    int64_t at = 0;
    for (int64_t d = 0; d < rank; ++d)
      at += ((i / os[d]) % shape[d]) * is[perm[d] < 0 ? perm[d] + rank : perm[d]];
    copyElement(data, at, out, i);
  }
  return out;
}

/// Evaluates `node` over constant inputs (`in[i]` null for an omitted one);
/// false when the op is not folded.
bool evaluate(const NodeProto &node, const std::vector<const Value *> &in, Value &out) {
  const std::string &op = node.op_type();
  auto need = [&](size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (i >= in.size() || !in[i])
        fail(node, "a required input is missing");
  };
  if (op == "Constant") {
    if (const auto *a = attribute(node, "value"))
      return fromProto(a->t(), out);
    if (const auto *a = attribute(node, "value_int")) { out = make(TensorProto::INT64, {}); out.ints[0] = a->i(); return true; }
    if (const auto *a = attribute(node, "value_float")) { out = make(TensorProto::FLOAT, {}); out.reals[0] = a->f(); return true; }
    if (const auto *a = attribute(node, "value_ints")) {
      out = make(TensorProto::INT64, {a->ints_size()});
      out.ints.assign(a->ints().begin(), a->ints().end());
      return true;
    }
    if (const auto *a = attribute(node, "value_floats")) {
      out = make(TensorProto::FLOAT, {a->floats_size()});
      out.reals.assign(a->floats().begin(), a->floats().end());
      return true;
    }
    return false;
  }
  static const std::set<std::string> binaryOps = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod",
                                                  "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                                                  "And", "Or"};
  if (binaryOps.count(op)) {
    need(2);
    out = binary(node, *in[0], *in[1]);
    return true;
  }
  if (op == "Neg" || op == "Not" || op == "Sqrt" || op == "Reciprocal" || op == "Abs") {
    need(1);
    out = *in[0];
    if (op == "Not")
      out.type = TensorProto::BOOL;
    for (int64_t i = 0; i < out.size(); ++i) {
      const double x = in[0]->at(i);
      put(out, i, op == "Neg" ? -x : op == "Not" ? x == 0 : op == "Sqrt" ? std::sqrt(x) : op == "Abs" ? std::fabs(x) : 1 / x);
    }
    return true;
  }
  if (op == "Cast") {
    need(1);
    const int64_t to = intAttribute(node, "to", 0);
    if (!foldableType((int32_t)to))
      return false;
    out = make((int32_t)to, in[0]->shape);
    for (int64_t i = 0; i < out.size(); ++i) {
      if (!in[0]->isReal() && !out.isReal())
        out.ints[i] = to == TensorProto::BOOL ? in[0]->ints[i] != 0 : in[0]->ints[i];
      else
        put(out, i, in[0]->at(i));
    }
    return true;
  }
  if (op == "Gather") {
    need(2);
    out = gather(node, *in[0], *in[1]);
    return true;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    need(1);
    const std::vector<int64_t> axesIn = intsAttributeOr(node, "axes", in, 1);
    out = *in[0];
    if (op == "Squeeze") { /* the axes named, or every dimension of 1 */
      std::set<int64_t> axes;
      for (int64_t a : axesIn)
        axes.insert(normalizeAxis(node, a, (int64_t)in[0]->shape.size()));
      out.shape.clear();
      for (size_t d = 0; d < in[0]->shape.size(); ++d) {
        const bool drop = axesIn.empty() ? in[0]->shape[d] == 1 : axes.count((int64_t)d) > 0;
        if (drop && in[0]->shape[d] != 1)
          fail(node, "squeezes a dimension that is not 1");
        if (!drop)
          out.shape.push_back(in[0]->shape[d]);
      }
      return true;
    }
    const int64_t rank = (int64_t)(in[0]->shape.size() + axesIn.size());
    std::set<int64_t> axes;
    for (int64_t a : axesIn)
      axes.insert(normalizeAxis(node, a, rank));
    out.shape.clear();
    for (int64_t d = 0, k = 0; d < rank; ++d)
      out.shape.push_back(axes.count(d) ? 1 : in[0]->shape[k++]);
    return true;
  }
  if (op == "Concat") {
    if (in.empty())
      fail(node, "no inputs");
    need(in.size());
    const int64_t rank = (int64_t)in[0]->shape.size();
    const int64_t axis = normalizeAxis(node, intAttribute(node, "axis", 0), rank);
    std::vector<int64_t> shape = in[0]->shape;
    shape[axis] = 0;
    for (const Value *v : in) {
      if ((int64_t)v->shape.size() != rank || v->isReal() != in[0]->isReal())
        fail(node, "inputs of different ranks or types");
      shape[axis] += v->shape[axis];
    }
    out = make(in[0]->type, shape);
    int64_t outer = 1, at = 0;
    for (int64_t d = 0; d < axis; ++d)
      outer *= shape[d];
    for (int64_t o = 0; o < outer; ++o)
      for (const Value *v : in) {
        const int64_t chunk = v->size() / std::max<int64_t>(outer, 1);
        for (int64_t k = 0; k < chunk; ++k)
          copyElement(*v, o * chunk + k, out, at++);
      }
    return true;
  }
  if (op == "Slice") {
    need(3);
    out = slice(node, *in[0], in);
    return true;
  }
  if (op == "Range") {
    need(3);
    const double start = in[0]->at(0), limit = in[1]->at(0), delta = in[2]->at(0);
    if (delta == 0)
      fail(node, "a delta of 0");
    const int64_t n = std::max<int64_t>(0, (int64_t)std::ceil((limit - start) / delta));
    out = make(in[0]->type, {n});
    for (int64_t i = 0; i < n; ++i)
      put(out, i, start + (double)i * delta);
    return true;
  }
  if (op == "ConstantOfShape") {
    need(1);
    Value fill = make(TensorProto::FLOAT, {1});
    if (const auto *a = attribute(node, "value"))
      if (!fromProto(a->t(), fill))
        return false;
    for (int64_t d : in[0]->ints)
      if (d < 0)
        fail(node, "a negative dimension");
    if (count(in[0]->ints) > kMaxFoldedElements)
      return false;
    out = make(fill.type, in[0]->ints);
    for (int64_t i = 0; i < out.size(); ++i)
      copyElement(fill, 0, out, i);
    return true;
  }
  if (op == "Reshape") {
    need(2);
    out = reshape(node, *in[0], in[1]->ints);
    return true;
  }
  if (op == "Expand") {
    need(2);
    const std::vector<int64_t> shape = broadcastShape(node, in[0]->shape, in[1]->ints);
    if (count(shape) > kMaxFoldedElements)
      return false;
    out = make(in[0]->type, shape);
    for (int64_t i = 0; i < out.size(); ++i)
      copyElement(*in[0], broadcastIndex(*in[0], shape, i), out, i);
    return true;
  }
  if (op == "Where") {
    need(3);
    const std::vector<int64_t> shape =
        broadcastShape(node, broadcastShape(node, in[0]->shape, in[1]->shape), in[2]->shape);
    out = make(in[1]->type, shape);
    for (int64_t i = 0; i < out.size(); ++i) {
      const bool c = in[0]->ints[broadcastIndex(*in[0], shape, i)] != 0;
      const Value &from = c ? *in[1] : *in[2];
      copyElement(from, broadcastIndex(from, shape, i), out, i);
    }
    return true;
  }
  if (op == "Transpose") {
    need(1);
    out = transpose(node, *in[0]);
    return true;
  }
  return false;
}

/// Static shapes the model's value_info, inputs and outputs give.
std::map<std::string, std::vector<int64_t>> knownShapes(const GraphProto &g) {
  std::map<std::string, std::vector<int64_t>> shapes;
  auto add = [&](const ::onnx::ValueInfoProto &v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
      return;
    std::vector<int64_t> shape;
    for (const auto &d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value())
        return;
      shape.push_back(d.dim_value());
    }
    shapes[v.name()] = shape;
  };
  for (const auto &v : g.input()) add(v);
  for (const auto &v : g.value_info()) add(v);
  for (const auto &v : g.output()) add(v);
  return shapes;
}

} // namespace

int foldConstants(::onnx::ModelProto &model) {
  GraphProto &g = *model.mutable_graph();
  std::set<std::string> graphOutputs;
  for (const auto &o : g.output())
    graphOutputs.insert(o.name());
  std::map<std::string, Value> constants;
  for (const TensorProto &t : g.initializer()) {
    Value v;
    if (fromProto(t, v))
      constants[t.name()] = std::move(v);
  }
  const std::map<std::string, std::vector<int64_t>> shapes = knownShapes(g);
  std::map<std::string, std::string> renamed; // an Identity's output -> its input
  auto resolve = [&](std::string name) {
    for (auto it = renamed.find(name); it != renamed.end(); it = renamed.find(name))
      name = it->second;
    return name;
  };
  GraphProto kept;
  int removed = 0;
  for (NodeProto node : g.node()) {
    for (std::string &in : *node.mutable_input())
      in = resolve(in);
    const std::string &op = node.op_type();
    if (op == "Identity" && node.input_size() == 1 && node.output_size() == 1 &&
        !graphOutputs.count(node.output(0))) {
      renamed[node.output(0)] = node.input(0);
      ++removed;
      continue;
    }
    Value out;
    bool folded = false;
    if ((op == "Shape" || op == "Size") && node.input_size() == 1 && shapes.count(node.input(0)) &&
        !graphOutputs.count(node.output(0))) {
      const std::vector<int64_t> &shape = shapes.at(node.input(0));
      if (op == "Size") {
        out = make(TensorProto::INT64, {});
        out.ints[0] = count(shape);
      } else {
        const int64_t rank = (int64_t)shape.size();
        int64_t start = intAttribute(node, "start", 0), end = intAttribute(node, "end", rank);
        start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
        end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
        out = make(TensorProto::INT64, {std::max<int64_t>(0, end - start)});
        for (int64_t i = start; i < end; ++i)
          out.ints[i - start] = shape[i];
      }
      folded = true;
    } else if (node.output_size() == 1 && !graphOutputs.count(node.output(0))) {
      std::vector<const Value *> in;
      bool ready = true;
      for (const std::string &name : node.input()) {
        if (name.empty()) {
          in.push_back(nullptr);
          continue;
        }
        auto it = constants.find(name);
        ready = ready && it != constants.end();
        in.push_back(ready ? &it->second : nullptr);
      }
      folded = ready && evaluate(node, in, out) && out.size() <= kMaxFoldedElements;
    }
    if (!folded) {
      *kept.add_node() = node;
      continue;
    }
    toProto(out, node.output(0), *g.add_initializer());
    constants[node.output(0)] = std::move(out);
    ++removed;
  }
  g.mutable_node()->Swap(kept.mutable_node());
  return removed;
}

} // namespace kiln::onnx
