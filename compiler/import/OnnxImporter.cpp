#include "compiler/import/OnnxImporter.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <set>

using namespace mlir;

namespace kiln {
namespace {

using onnx::ElementType;
using onnx::Node;

/// The axis `axis` of a rank-`rank` tensor, counted from the front.
int64_t normalAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

class GraphImporter {
public:
  GraphImporter(OpBuilder &b, const onnx::Graph &graph) : b(b), g(graph), loc(b.getUnknownLoc()) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const std::string &in : g.nodes[i].inputs)
        if (!in.empty())
          readers[in].push_back(static_cast<int>(i));
      for (const std::string &out : g.nodes[i].outputs)
        producer[out] = static_cast<int>(i);
    }
    for (const onnx::ValueInfo &out : g.outputs)
      graphOutputs.insert(out.name);
  }

  llvm::Error build(ModuleOp module);

private:
  OpBuilder &b;
  const onnx::Graph &g;
  Location loc;
  std::map<std::string, Value> values;
  std::map<std::string, std::vector<int>> readers;
  std::map<std::string, int> producer;
  std::set<std::string> graphOutputs;
  /// Nodes inside a matched subgraph, and the subgraph's last node with the
  /// op that replaces it.
  std::set<int> consumed;
  std::map<int, std::function<Value()>> anchors;

  llvm::Error fail(const Node &n, const std::string &why) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), g.file + ": node " + n.label() + ": " + why);
  }

  Type elementType(ElementType t) {
    switch (t) {
    case ElementType::F32: return b.getF32Type();
    case ElementType::F16: return b.getF16Type();
    case ElementType::BF16: return b.getBF16Type();
    case ElementType::F64: return b.getF64Type();
    case ElementType::I64: return b.getI64Type();
    case ElementType::I32: return b.getI32Type();
    case ElementType::I16: return b.getIntegerType(16);
    case ElementType::I8: return b.getIntegerType(8);
    case ElementType::U8: return b.getIntegerType(8, false);
    case ElementType::Bool: return b.getI1Type();
    default: return Type();
    }
  }

  RankedTensorType typeOf(const onnx::ValueInfo &v) {
    Type e = elementType(v.type);
    return e ? RankedTensorType::get(v.shape, e) : RankedTensorType();
  }

  RankedTensorType typeOf(const std::string &name) { return typeOf(*g.value(name)); }

  static RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

  /// The value named `name`: made by an earlier node, a graph input, or an
  /// initializer (a kiln.weight when it is a float tensor, else a kiln.constant).
  Value get(const std::string &name) {
    auto it = values.find(name);
    if (it != values.end())
      return it->second;
    const onnx::Tensor *t = g.initializer(name);
    if (!t)
      return Value();
    RankedTensorType type = typeOf(t->info);
    if (!type)
      return Value();
    Value v;
    if (type.getElementType().isF32() && type.getNumElements() == 1) // a scalar parameter
      v = splat(t->floats()[0], type.getShape());
    else if (isa<FloatType>(type.getElementType()) && type.getRank() > 0 && type.getNumElements() > 0)
      v = b.create<WeightOp>(loc, type, name);
    else
      v = b.create<ConstantOp>(loc, type, name);
    values[name] = v;
    return v;
  }

  /// The float value of a one-element initializer.
  std::optional<double> scalar(const std::string &name) const {
    const onnx::Tensor *t = g.initializer(name);
    if (!t || t->info.numElements() != 1)
      return std::nullopt;
    if (t->info.type == ElementType::F32)
      return t->floats()[0];
    if (onnx::elementBytes(t->info.type) && t->info.type != ElementType::F16 &&
        t->info.type != ElementType::BF16 && t->info.type != ElementType::F64)
      return static_cast<double>(t->integers()[0]);
    return std::nullopt;
  }

  Value splat(float value, ArrayRef<int64_t> shape) {
    return b.create<SplatOp>(loc, RankedTensorType::get(shape, b.getF32Type()), b.getF32FloatAttr(value));
  }

  Value reshape(Value v, ArrayRef<int64_t> shape) {
    RankedTensorType t = tensorOf(v);
    if (t.getShape() == shape)
      return v;
    if (auto s = v.getDefiningOp<SplatOp>())
      return splat(s.getValue().convertToFloat(), shape);
    return b.create<ReshapeOp>(loc, RankedTensorType::get(shape, t.getElementType()), v);
  }

  /// `v` broadcast to `shape` (numpy rules): ones prepended up to its rank,
  /// then the dimensions of 1 repeated.
  Value broadcastTo(Value v, ArrayRef<int64_t> shape) {
    RankedTensorType t = tensorOf(v);
    if (t.getShape() == shape)
      return v;
    SmallVector<int64_t> ranked(shape.size() - std::min<size_t>(shape.size(), t.getRank()), 1);
    llvm::append_range(ranked, t.getShape());
    v = reshape(v, ranked);
    if (ArrayRef<int64_t>(ranked) == shape)
      return v;
    if (auto s = v.getDefiningOp<SplatOp>())
      return splat(s.getValue().convertToFloat(), shape);
    return b.create<BroadcastOp>(loc, RankedTensorType::get(shape, t.getElementType()), v);
  }

  /// The node reading `value`, when it is the only reader and `value` is not
  /// a graph output.
  const Node *soleReader(const std::string &value, int *index = nullptr) const {
    auto it = readers.find(value);
    if (it == readers.end() || it->second.size() != 1 || graphOutputs.count(value))
      return nullptr;
    if (index)
      *index = it->second[0];
    return &g.nodes[it->second[0]];
  }

  /// The last input of `n` that is not a one-element initializer ("" when none).
  std::string nonScalarInput(const Node &n) const {
    std::string found;
    for (const std::string &in : n.inputs)
      if (!scalar(in))
        found = in;
    return found;
  }

  /// The input of binary node `n` other than `known`, or "" when neither
  /// input is `known`.
  static std::string otherInput(const Node &n, const std::string &known) {
    if (n.inputs.size() != 2)
      return "";
    return n.inputs[0] == known ? n.inputs[1] : n.inputs[1] == known ? n.inputs[0] : "";
  }

  bool isLastAxisMean(const Node &n, int64_t rank) const {
    const onnx::Attribute *axes = n.attribute("axes");
    const onnx::Attribute *keep = n.attribute("keepdims");
    return n.op == "ReduceMean" && n.inputs.size() == 1 && axes && axes->ints.size() == 1 &&
           normalAxis(axes->ints[0], rank) == rank - 1 && (!keep || keep->i == 1);
  }

  /// A 1-D float initializer of `width` elements.
  bool isVector(const std::string &name, int64_t width) const {
    const onnx::Tensor *t = g.initializer(name);
    return t && t->info.type == ElementType::F32 && t->info.shape == std::vector<int64_t>{width};
  }

  void matchLayerNorm(int at);
  void matchGelu(int at);
  void matchGeluTanh(int at);
  bool isScalarOp(const Node *n, const char *op, const std::string &value, double c) const;
  Value layerNorm(Value x, int64_t width, Value scale, Value shift, float epsilon);
  llvm::Error emit(const Node &n);
  llvm::Expected<Value> matmul(const Node &n, Value a, const std::string &weight, bool transposed);
  llvm::Expected<Value> matmulRows(const Node &n, Value a, Value w);
  llvm::Expected<Value> patchConv(const Node &n, Value x, RankedTensorType outType);
};

/// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * w + b, over the last
/// axis, as exporters write LayerNorm below opset 17: ReduceMean, Sub, Pow 2,
/// ReduceMean, Add eps, Sqrt, Div, Mul w, Add b.
void GraphImporter::matchLayerNorm(int at) {
  const Node &mean = g.nodes[at];
  if (mean.op != "ReduceMean" || mean.inputs.size() != 1)
    return;
  const std::string x = mean.inputs[0];
  const onnx::ValueInfo *xv = g.value(x);
  if (!xv || xv->type != ElementType::F32 || xv->shape.empty() || !isLastAxisMean(mean, xv->shape.size()))
    return;
  const int64_t width = xv->shape.back();
  int iSub, iPow, iVar, iAdd, iSqrt, iMul, iBias;
  const Node *sub = soleReader(mean.outputs[0], &iSub);
  if (!sub || sub->op != "Sub" || sub->inputs != std::vector<std::string>{x, mean.outputs[0]})
    return;
  auto centred = readers.find(sub->outputs[0]);
  if (centred == readers.end() || centred->second.size() != 2 || graphOutputs.count(sub->outputs[0]))
    return;
  const Node *pow = nullptr, *div = nullptr;
  int iDiv = -1;
  for (int r : centred->second) {
    if (g.nodes[r].op == "Pow") {
      pow = &g.nodes[r];
      iPow = r;
    } else if (g.nodes[r].op == "Div") {
      div = &g.nodes[r];
      iDiv = r;
    }
  }
  if (!pow || !div || pow->inputs[0] != sub->outputs[0] || scalar(pow->inputs[1]) != 2.0)
    return;
  const Node *var = soleReader(pow->outputs[0], &iVar);
  if (!var || !isLastAxisMean(*var, xv->shape.size()))
    return;
  const Node *add = soleReader(var->outputs[0], &iAdd);
  if (!add || add->op != "Add")
    return;
  std::optional<double> eps = scalar(otherInput(*add, var->outputs[0]));
  const Node *sqrt = eps ? soleReader(add->outputs[0], &iSqrt) : nullptr;
  if (!sqrt || sqrt->op != "Sqrt" || soleReader(sqrt->outputs[0]) != div ||
      div->inputs != std::vector<std::string>{sub->outputs[0], sqrt->outputs[0]})
    return;
  const Node *mul = soleReader(div->outputs[0], &iMul);
  if (!mul || mul->op != "Mul")
    return;
  const std::string weight = otherInput(*mul, div->outputs[0]);
  const Node *bias = soleReader(mul->outputs[0], &iBias);
  if (!isVector(weight, width) || !bias || bias->op != "Add")
    return;
  const std::string shift = otherInput(*bias, mul->outputs[0]);
  if (!isVector(shift, width))
    return;
  consumed.insert({at, iSub, iPow, iVar, iAdd, iSqrt, iDiv, iMul});
  const float epsilon = static_cast<float>(*eps);
  anchors[iBias] = [this, x, width, weight, shift, epsilon] {
    return layerNorm(get(x), width, get(weight), get(shift), epsilon);
  };
}

/// x * (1 + erf(x / sqrt 2)) * 0.5, as exporters write exact GELU: Div (or
/// Mul by 1/sqrt 2), Erf, Add 1, Mul x, Mul 0.5.
void GraphImporter::matchGelu(int at) {
  const Node &erf = g.nodes[at];
  auto made = producer.find(erf.inputs.empty() ? "" : erf.inputs[0]);
  if (erf.op != "Erf" || made == producer.end())
    return;
  const int iScale = made->second;
  const Node &scale = g.nodes[iScale];
  if (soleReader(scale.outputs[0]) != &erf || scale.inputs.size() != 2)
    return;
  const std::string x = scale.inputs[0];
  std::optional<double> c = scalar(scale.inputs[1]);
  const bool divides = scale.op == "Div" && c && std::fabs(*c - std::sqrt(2.0)) < 1e-4;
  const bool multiplies = scale.op == "Mul" && c && std::fabs(*c - 1 / std::sqrt(2.0)) < 1e-4;
  const onnx::ValueInfo *xv = g.value(x);
  if ((!divides && !multiplies) || !xv || xv->type != ElementType::F32)
    return;
  int iOne, iTimes, iHalf;
  const Node *one = soleReader(erf.outputs[0], &iOne);
  if (!one || one->op != "Add" || scalar(otherInput(*one, erf.outputs[0])) != 1.0)
    return;
  const Node *times = soleReader(one->outputs[0], &iTimes);
  if (!times || times->op != "Mul" || otherInput(*times, one->outputs[0]) != x)
    return;
  const Node *half = soleReader(times->outputs[0], &iHalf);
  if (!half || half->op != "Mul" || scalar(otherInput(*half, times->outputs[0])) != 0.5)
    return;
  consumed.insert({iScale, at, iOne, iTimes});
  anchors[iHalf] = [this, x] {
    Value v = get(x);
    return Value(b.create<GeluErfOp>(loc, v.getType(), v));
  };
}

/// Whether `n` is `op` of `value` and a scalar within 1e-4 of `c`, in either order.
bool GraphImporter::isScalarOp(const Node *n, const char *op, const std::string &value, double c) const {
  if (!n || n->op != op)
    return false;
  std::optional<double> k = scalar(otherInput(*n, value));
  return k && std::fabs(*k - c) < 1e-4;
}

/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as exporters write
/// tanh-approximated GELU: Mul x x, Mul x, Mul c, Add x, Mul sqrt(2 / pi),
/// Tanh, Add 1, Mul x, Mul 0.5 (products in either order).
void GraphImporter::matchGeluTanh(int at) {
  const Node &tanh = g.nodes[at];
  auto made = [&](const std::string &v) {
    auto it = producer.find(v);
    return it == producer.end() ? -1 : it->second;
  };
  if (tanh.op != "Tanh" || tanh.inputs.size() != 1)
    return;
  const int iScale = made(tanh.inputs[0]);
  if (iScale < 0)
    return;
  const Node &scale = g.nodes[iScale];
  const std::string inner = nonScalarInput(scale);
  const int iInner = made(inner);
  if (!isScalarOp(&scale, "Mul", inner, std::sqrt(2.0 / M_PI)) || iInner < 0 || soleReader(scale.outputs[0]) != &tanh)
    return;
  const Node &sum = g.nodes[iInner];
  if (sum.op != "Add" || sum.inputs.size() != 2 || soleReader(inner) != &scale)
    return;
  for (int side = 0; side < 2; ++side) { // Add(x, cubic) in either order
    const std::string x = sum.inputs[side], cubicOut = sum.inputs[1 - side];
    const int iCubic = made(cubicOut);
    if (iCubic < 0)
      continue;
    const Node &cubicScale = g.nodes[iCubic];
    const std::string cube = nonScalarInput(cubicScale);
    const int iCube = made(cube);
    if (!isScalarOp(&cubicScale, "Mul", cube, 0.044715) || iCube < 0 || soleReader(cubicOut) != &sum)
      continue;
    const Node &cubeNode = g.nodes[iCube];
    const std::string square = otherInput(cubeNode, x);
    const int iSquare = made(square);
    if (cubeNode.op != "Mul" || iSquare < 0 || soleReader(cube) != &cubicScale)
      continue;
    const Node &squareNode = g.nodes[iSquare];
    if (squareNode.op != "Mul" || squareNode.inputs != std::vector<std::string>{x, x} ||
        soleReader(square) != &cubeNode)
      continue;
    int iOne, iTimes, iHalf;
    const Node *one = soleReader(tanh.outputs[0], &iOne);
    if (!isScalarOp(one, "Add", tanh.outputs[0], 1.0))
      return;
    const Node *times = soleReader(one->outputs[0], &iTimes);
    if (!times || times->op != "Mul" || otherInput(*times, one->outputs[0]) != x)
      return;
    const Node *half = soleReader(times->outputs[0], &iHalf);
    const onnx::ValueInfo *xv = g.value(x);
    if (!isScalarOp(half, "Mul", times->outputs[0], 0.5) || !xv || xv->type != ElementType::F32)
      return;
    consumed.insert({iSquare, iCube, iCubic, iInner, iScale, at, iOne, iTimes});
    anchors[iHalf] = [this, x] {
      Value v = get(x);
      return Value(b.create<GeluOp>(loc, v.getType(), v));
    };
    return;
  }
}

/// layer_norm of `x` over its last dimensions, `width` elements (x seen as
/// [rows, width]), with [width] scale and shift.
Value GraphImporter::layerNorm(Value x, int64_t width, Value scale, Value shift, float epsilon) {
  ArrayRef<int64_t> shape = tensorOf(x).getShape();
  Value rows = reshape(x, {tensorOf(x).getNumElements() / width, width});
  Value normed = b.create<LayerNormOp>(loc, rows.getType(), rows, scale, shift, b.getF32FloatAttr(epsilon));
  return reshape(normed, shape);
}

/// `a` ([.., K]) times an initializer: [K, N] for MatMul, [N, K] for Gemm
/// with transB (`transposed`). kiln.matmul takes [rows, K] and a [N, K]
/// weight, so the rows are flattened and the weight transposed when needed.
llvm::Expected<Value> GraphImporter::matmul(const Node &n, Value a, const std::string &weight, bool transposed) {
  Value w = get(weight);
  RankedTensorType wt = tensorOf(w);
  if (wt.getRank() != 2 || !wt.getElementType().isF32())
    return fail(n, "expects a float32 matrix as its weight");
  if (!transposed)
    w = b.create<TransposeOp>(loc, RankedTensorType::get({wt.getDimSize(1), wt.getDimSize(0)}, wt.getElementType()),
                              w, b.getDenseI64ArrayAttr({1, 0}));
  return matmulRows(n, a, w);
}

/// `a` ([.., K]) times `w` ([N, K]) as kiln.matmul over a's rows.
llvm::Expected<Value> GraphImporter::matmulRows(const Node &n, Value a, Value w) {
  RankedTensorType at = tensorOf(a);
  const int64_t k = at.getShape().back(), rows = at.getNumElements() / k;
  const int64_t out = tensorOf(w).getDimSize(0);
  if (tensorOf(w).getDimSize(1) != k)
    return fail(n, "its weight's width does not match its input's");
  Value product = b.create<MatmulOp>(loc, RankedTensorType::get({rows, out}, b.getF32Type()), reshape(a, {rows, k}), w);
  SmallVector<int64_t> shape(at.getShape().drop_back());
  shape.push_back(out);
  return reshape(product, shape);
}

/// A 2-D convolution whose kernel equals its stride (a vision transformer's
/// patch embedding): the patches do not overlap, so it is the matmul of the
/// [patches, C * kh * kw] rows against the [M, C * kh * kw] kernel, plus the bias.
llvm::Expected<Value> GraphImporter::patchConv(const Node &n, Value x, RankedTensorType outType) {
  const onnx::Tensor *kernel = g.initializer(n.inputs[1]);
  RankedTensorType xt = tensorOf(x);
  auto ints = [&](const char *key) {
    const onnx::Attribute *a = n.attribute(key);
    return a ? a->ints : std::vector<int64_t>();
  };
  const onnx::Attribute *group = n.attribute("group"), *autoPad = n.attribute("auto_pad");
  std::vector<int64_t> strides = ints("strides"), pads = ints("pads"), dilations = ints("dilations");
  if (!kernel || kernel->info.type != ElementType::F32 || kernel->info.shape.size() != 4 || xt.getRank() != 4 ||
      !xt.getElementType().isF32())
    return fail(n, "Kiln takes Conv as a 2-D float32 convolution against an initializer kernel");
  const int64_t m = kernel->info.shape[0], c = kernel->info.shape[1], kh = kernel->info.shape[2],
                kw = kernel->info.shape[3];
  const int64_t batch = xt.getDimSize(0), h = xt.getDimSize(2), w = xt.getDimSize(3);
  const bool plain = (!group || group->i == 1) &&
                     (!autoPad || autoPad->s == "NOTSET" || autoPad->s == "VALID") &&
                     llvm::all_of(pads, [](int64_t p) { return p == 0; }) &&
                     llvm::all_of(dilations, [](int64_t d) { return d == 1; });
  if (!plain || strides != std::vector<int64_t>{kh, kw} || h % kh || w % kw || xt.getDimSize(1) != c)
    return fail(n, "Kiln takes Conv whose kernel equals its stride (patches), without padding, dilation or groups");
  const int64_t ho = h / kh, wo = w / kw, k = c * kh * kw;
  Value rows = reshape(x, {batch, c, ho, kh, wo, kw});
  rows = b.create<TransposeOp>(loc, RankedTensorType::get({batch, ho, wo, c, kh, kw}, b.getF32Type()), rows,
                               b.getDenseI64ArrayAttr({0, 2, 4, 1, 3, 5}));
  auto product = matmulRows(n, reshape(rows, {batch * ho * wo, k}), reshape(get(n.inputs[1]), {m, k}));
  if (!product)
    return product.takeError();
  Value y = *product;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    if (!isVector(n.inputs[2], m))
      return fail(n, "expects a float32 bias initializer of one value per output channel");
    y = b.create<BiasAddOp>(loc, y, get(n.inputs[2]));
  }
  y = reshape(y, {batch, ho, wo, m});
  return Value(b.create<TransposeOp>(loc, outType, y, b.getDenseI64ArrayAttr({0, 3, 1, 2})));
}

/// How many of an op's first inputs it reads as values (the rest are shapes,
/// axes, starts or optional inputs, read as constants where needed).
static size_t valueInputs(llvm::StringRef op, size_t given) {
  if (op == "Concat")
    return given;
  if (op == "Where")
    return 3;
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "MatMul" ||
      op == "Gather" || op == "Equal")
    return 2;
  return 1;
}

llvm::Error GraphImporter::emit(const Node &n) {
  const std::string &op = n.op;
  auto input = [&](size_t i) -> llvm::Expected<Value> {
    Value v = i < n.inputs.size() && !n.inputs[i].empty() ? get(n.inputs[i]) : Value();
    if (!v)
      return fail(n, "input " + std::to_string(i) + " is missing or of a type Kiln does not read");
    return v;
  };
  // The inputs the op reads as values, resolved once; shapes, axes and
  // optional inputs are read where the op needs them.
  SmallVector<Value> in;
  for (size_t i = 0; i < valueInputs(op, n.inputs.size()); ++i) {
    auto v = input(i);
    if (!v)
      return v.takeError();
    in.push_back(*v);
  }
  RankedTensorType outType = n.outputs.empty() || n.outputs[0].empty() ? RankedTensorType() : typeOf(n.outputs[0]);
  if (!outType)
    return fail(n, "its result is of a type Kiln does not read");
  auto requireF32 = [&](Value v) -> llvm::Error {
    if (tensorOf(v).getElementType().isF32())
      return llvm::Error::success();
    std::string type;
    llvm::raw_string_ostream os(type);
    os << tensorOf(v).getElementType();
    return fail(n, "takes float32 only, not " + type);
  };
  ArrayRef<int64_t> outShape = outType.getShape();
  Value result;
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow") {
    Value lhs = in[0];
    Value rhs = in[1];
    if (op == "Pow" && isa<IntegerType>(tensorOf(rhs).getElementType())) // an integer exponent
      rhs = b.create<CastOp>(loc, RankedTensorType::get(tensorOf(rhs).getShape(), b.getF32Type()), rhs);
    if (auto e = requireF32(lhs)) return e;
    if (auto e = requireF32(rhs)) return e;
    Value l = broadcastTo(lhs, outShape), r = broadcastTo(rhs, outShape);
    if (op == "Add") result = b.create<AddOp>(loc, l, r);
    else if (op == "Sub") result = b.create<SubOp>(loc, l, r);
    else if (op == "Mul") result = b.create<MulOp>(loc, l, r);
    else if (op == "Div") result = b.create<DivOp>(loc, l, r);
    else result = b.create<PowOp>(loc, l, r);
  } else if (op == "Sqrt" || op == "Erf" || op == "Tanh" || op == "Softmax") {
    Value x = in[0];
    if (auto e = requireF32(x)) return e;
    if (op == "Softmax") {
      const onnx::Attribute *axis = n.attribute("axis");
      const int64_t rank = outType.getRank(), a = normalAxis(axis ? axis->i : (g.opset >= 13 ? -1 : 1), rank);
      if (g.opset < 13) { // over the dimensions from `axis` on, flattened
        const int64_t inner = std::accumulate(outShape.begin() + a, outShape.end(), int64_t(1),
                                              std::multiplies<int64_t>());
        Value rows = reshape(x, {outType.getNumElements() / inner, inner});
        result = reshape(b.create<SoftmaxOp>(loc, rows), outShape);
      } else if (a != rank - 1) { // the axis moved last and back
        SmallVector<int64_t> perm, shape;
        for (int64_t d = 0; d < rank; ++d)
          if (d != a)
            perm.push_back(d);
        perm.push_back(a);
        for (int64_t d : perm)
          shape.push_back(outShape[d]);
        Value moved = b.create<TransposeOp>(loc, RankedTensorType::get(shape, b.getF32Type()), x,
                                            b.getDenseI64ArrayAttr(perm));
        SmallVector<int64_t> back(rank);
        for (int64_t d = 0; d < rank; ++d)
          back[perm[d]] = d;
        result = b.create<TransposeOp>(loc, outType, b.create<SoftmaxOp>(loc, moved), b.getDenseI64ArrayAttr(back));
      } else {
        result = b.create<SoftmaxOp>(loc, x);
      }
    } else if (op == "Sqrt") {
      result = b.create<SqrtOp>(loc, x);
    } else if (op == "Erf") {
      result = b.create<ErfOp>(loc, x);
    } else {
      result = b.create<TanhOp>(loc, x);
    }
  } else if (op == "ReduceMean") {
    Value x = in[0];
    if (auto e = requireF32(x)) return e;
    const int64_t rank = tensorOf(x).getRank();
    const onnx::Attribute *axesAttr = n.attribute("axes");
    SmallVector<int64_t> axes, kept(tensorOf(x).getShape());
    if (axesAttr)
      for (int64_t a : axesAttr->ints)
        axes.push_back(normalAxis(a, rank));
    else
      for (int64_t a = 0; a < rank; ++a)
        axes.push_back(a);
    llvm::sort(axes);
    for (int64_t a : axes)
      kept[a] = 1;
    Value mean = b.create<ReduceMeanOp>(loc, RankedTensorType::get(kept, b.getF32Type()), x,
                                        b.getDenseI64ArrayAttr(axes));
    result = reshape(mean, outShape);
  } else if (op == "LayerNormalization") { // over the dimensions from `axis` on
    Value x = in[0];
    if (auto e = requireF32(x)) return e;
    const onnx::Attribute *axisAttr = n.attribute("axis"), *epsAttr = n.attribute("epsilon");
    const int64_t rank = tensorOf(x).getRank(), axis = normalAxis(axisAttr ? axisAttr->i : -1, rank);
    const int64_t width = std::accumulate(outShape.begin() + axis, outShape.end(), int64_t(1),
                                          std::multiplies<int64_t>());
    const int64_t rows = outType.getNumElements() / width;
    const float eps = epsAttr ? epsAttr->f : 1e-5f;
    auto param = [&](size_t i) -> Value { // scale or bias as a [width] vector
      const onnx::Tensor *t = i < n.inputs.size() && !n.inputs[i].empty() ? g.initializer(n.inputs[i]) : nullptr;
      if (!t || t->info.type != ElementType::F32 || t->info.numElements() != width)
        return Value();
      return reshape(get(n.inputs[i]), {width});
    };
    Value scale = param(1), shift = n.inputs.size() > 2 && !n.inputs[2].empty() ? param(2) : splat(0.0f, {width});
    if (!scale || !shift)
      return fail(n, "expects float32 scale and bias initializers of the normalised dimensions' size");
    result = layerNorm(x, width, scale, shift, eps);
    // The optional mean and inverse standard deviation, from the same rows.
    if (n.outputs.size() > 1 && (readers.count(n.outputs[1]) || graphOutputs.count(n.outputs[1]) ||
                                 (n.outputs.size() > 2 && (readers.count(n.outputs[2]) || graphOutputs.count(n.outputs[2]))))) {
      RankedTensorType column = RankedTensorType::get({rows, 1}, b.getF32Type());
      auto mean = [&](Value v) -> Value {
        return b.create<ReduceMeanOp>(loc, column, v, b.getDenseI64ArrayAttr({1}));
      };
      Value flat = reshape(x, {rows, width});
      Value mu = mean(flat);
      Value centred = b.create<SubOp>(loc, flat, broadcastTo(mu, {rows, width}));
      Value variance = mean(b.create<MulOp>(loc, centred, centred));
      Value deviation = b.create<SqrtOp>(loc, b.create<AddOp>(loc, variance, splat(eps, {rows, 1})));
      Value inverse = b.create<DivOp>(loc, splat(1.0f, {rows, 1}), deviation);
      for (auto [i, v] : {std::pair<size_t, Value>{1, mu}, {2, inverse}})
        if (i < n.outputs.size() && !n.outputs[i].empty())
          values[n.outputs[i]] = reshape(v, typeOf(n.outputs[i]).getShape());
    }
  } else if (op == "MatMul") {
    Value a = in[0];
    Value w = in[1];
    if (auto e = requireF32(a)) return e;
    if (g.initializer(n.inputs[1]) && tensorOf(w).getRank() == 2) {
      auto product = matmul(n, a, n.inputs[1], false);
      if (!product) return product.takeError();
      result = *product;
    } else {
      RankedTensorType lt = tensorOf(a), rt = tensorOf(w);
      if (lt.getRank() < 2 || rt.getRank() < 2)
        return fail(n, "multiplies a vector: Kiln takes matrices (rank 2 or more)");
      if (auto e = requireF32(w)) return e;
      SmallVector<int64_t> ls(outShape.drop_back(2)), rs(outShape.drop_back(2));
      ls.append({lt.getDimSize(lt.getRank() - 2), lt.getDimSize(lt.getRank() - 1)});
      rs.append({rt.getDimSize(rt.getRank() - 2), rt.getDimSize(rt.getRank() - 1)});
      result = b.create<BatchMatmulOp>(loc, outType, broadcastTo(a, ls), broadcastTo(w, rs));
    }
  } else if (op == "Gemm") {
    Value a = in[0];
    const onnx::Attribute *ta = n.attribute("transA"), *tb = n.attribute("transB");
    const onnx::Attribute *alphaAttr = n.attribute("alpha"), *betaAttr = n.attribute("beta");
    const float alpha = alphaAttr ? alphaAttr->f : 1.0f, beta = betaAttr ? betaAttr->f : 1.0f;
    if (n.inputs.size() < 2 || !g.initializer(n.inputs[1]) || tensorOf(a).getRank() != 2)
      return fail(n, "Kiln takes Gemm as a matmul of a matrix against an initializer");
    Value rows = a;
    if (ta && ta->i)
      rows = b.create<TransposeOp>(loc, RankedTensorType::get({tensorOf(rows).getDimSize(1), tensorOf(rows).getDimSize(0)},
                                                              tensorOf(rows).getElementType()),
                                   rows, b.getDenseI64ArrayAttr({1, 0}));
    auto product = matmul(n, rows, n.inputs[1], tb && tb->i);
    if (!product) return product.takeError();
    result = *product;
    if (alpha != 1.0f)
      result = b.create<MulOp>(loc, result, splat(alpha, outShape));
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      if (beta == 1.0f && isVector(n.inputs[2], outShape.back()) && outType.getRank() == 2) {
        result = b.create<BiasAddOp>(loc, result, get(n.inputs[2]));
      } else {
        auto c = input(2);
        if (!c) return c.takeError();
        if (auto e = requireF32(*c)) return e;
        Value bias = broadcastTo(*c, outShape);
        if (beta != 1.0f)
          bias = b.create<MulOp>(loc, bias, splat(beta, outShape));
        result = b.create<AddOp>(loc, result, bias);
      }
    }
  } else if (op == "Conv") {
    Value x = in[0];
    auto y = patchConv(n, x, outType);
    if (!y) return y.takeError();
    result = *y;
  } else if (op == "Gather") {
    Value data = in[0];
    Value indices = in[1];
    const onnx::Attribute *axisAttr = n.attribute("axis");
    const int64_t axis = normalAxis(axisAttr ? axisAttr->i : 0, tensorOf(data).getRank());
    RankedTensorType it = tensorOf(indices);
    if (!isa<IntegerType>(it.getElementType()) || it.getElementTypeBitWidth() < 32)
      return fail(n, "expects int32 or int64 indices");
    if (g.initializer(n.inputs[0]) && axis == 0 && tensorOf(data).getRank() == 2 &&
        tensorOf(data).getElementType().isF32()) { // a table lookup: the embedding kernel
      const int64_t count = it.getNumElements();
      Value ids = indices;
      if (!it.getElementType().isInteger(32))
        ids = b.create<CastOp>(loc, RankedTensorType::get(it.getShape(), b.getI32Type()), ids);
      ids = reshape(ids, {count});
      Value rows = b.create<EmbedOp>(loc, RankedTensorType::get({count, tensorOf(data).getDimSize(1)}, b.getF32Type()),
                                     data, ids, FloatAttr());
      result = reshape(rows, outShape);
    } else {
      result = b.create<GatherOp>(loc, outType, data, indices, b.getI64IntegerAttr(axis));
    }
  } else if (op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" || op == "Flatten") {
    Value x = in[0];
    result = b.create<ReshapeOp>(loc, outType, x);
  } else if (op == "Transpose") {
    Value x = in[0];
    const onnx::Attribute *permAttr = n.attribute("perm");
    SmallVector<int64_t> perm;
    if (permAttr)
      perm.assign(permAttr->ints.begin(), permAttr->ints.end());
    else
      for (int64_t d = tensorOf(x).getRank() - 1; d >= 0; --d)
        perm.push_back(d);
    result = b.create<TransposeOp>(loc, outType, x, b.getDenseI64ArrayAttr(perm));
  } else if (op == "Concat") {
    SmallVector<Value> parts(in);
    const onnx::Attribute *axis = n.attribute("axis");
    result = b.create<ConcatOp>(loc, outType, parts, b.getI64IntegerAttr(normalAxis(axis ? axis->i : 0, outType.getRank())));
  } else if (op == "Slice") {
    Value x = in[0];
    const int64_t rank = tensorOf(x).getRank();
    auto ints = [&](size_t i) -> std::optional<std::vector<int64_t>> {
      if (i >= n.inputs.size() || n.inputs[i].empty())
        return std::vector<int64_t>();
      const onnx::Tensor *t = g.initializer(n.inputs[i]);
      return t ? std::optional<std::vector<int64_t>>(t->integers()) : std::nullopt;
    };
    auto starts = ints(1), axes = ints(3), steps = ints(4);
    if (g.opset < 10 || !starts || !axes || !steps)
      return fail(n, "its starts, axes and steps must be constants");
    SmallVector<int64_t> first(rank, 0), step(rank, 1);
    for (size_t i = 0; i < starts->size(); ++i) {
      const int64_t axis = normalAxis(axes->empty() ? static_cast<int64_t>(i) : (*axes)[i], rank);
      const int64_t dim = tensorOf(x).getDimSize(axis), s = steps->empty() ? 1 : (*steps)[i];
      int64_t start = (*starts)[i] < 0 ? (*starts)[i] + dim : (*starts)[i];
      first[axis] = s > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, -1, dim - 1);
      step[axis] = s;
    }
    result = b.create<SliceOp>(loc, outType, x, b.getDenseI64ArrayAttr(first), b.getDenseI64ArrayAttr(step));
  } else if (op == "Where") {
    Value c = in[0];
    Value l = in[1];
    Value r = in[2];
    result = b.create<WhereOp>(loc, broadcastTo(c, outShape), broadcastTo(l, outShape), broadcastTo(r, outShape));
  } else if (op == "Equal") {
    Value l = in[0];
    Value r = in[1];
    if (tensorOf(l).getElementType() != tensorOf(r).getElementType())
      return fail(n, "compares values of two types");
    SmallVector<int64_t> shape(outShape);
    result = b.create<EqualOp>(loc, outType, broadcastTo(l, shape), broadcastTo(r, shape));
  } else if (op == "Cast") {
    Value x = in[0];
    result = b.create<CastOp>(loc, outType, x);
  } else if (op == "Expand") {
    Value x = in[0];
    result = broadcastTo(x, outShape);
  } else if (op == "Identity") {
    Value x = in[0];
    result = x;
  } else {
    return fail(n, "unsupported op '" + op + "'");
  }
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty() && !values.count(n.outputs[i]) &&
        (readers.count(n.outputs[i]) || graphOutputs.count(n.outputs[i])))
      return fail(n, "output " + std::to_string(i) + " is read: Kiln gives the first output only");
  values[n.outputs[0]] = result;
  return llvm::Error::success();
}

llvm::Error GraphImporter::build(ModuleOp module) {
  SmallVector<Type> inputs, outputs;
  auto types = [&](const std::vector<onnx::ValueInfo> &values, const char *what,
                   SmallVector<Type> &into) -> llvm::Error {
    for (const onnx::ValueInfo &v : values) {
      RankedTensorType t = typeOf(v);
      if (!t)
        return llvm::createStringError(llvm::inconvertibleErrorCode(), g.file + ": " + what + " '" + v.name +
                                                                           "' is of " + onnx::elementName(v.type) +
                                                                           ", which Kiln does not read");
      into.push_back(t);
    }
    return llvm::Error::success();
  };
  if (auto e = types(g.inputs, "input", inputs))
    return e;
  if (auto e = types(g.outputs, "output", outputs))
    return e;
  b.setInsertionPointToEnd(module.getBody());
  auto run = b.create<func::FuncOp>(loc, "run", b.getFunctionType(inputs, outputs));
  for (size_t i = 0; i < g.inputs.size(); ++i)
    run.setArgAttr(i, "kiln.name", b.getStringAttr(g.inputs[i].name));
  for (size_t i = 0; i < g.outputs.size(); ++i)
    run.setResultAttr(i, "kiln.name", b.getStringAttr(g.outputs[i].name));
  Block *body = run.addEntryBlock();
  b.setInsertionPointToStart(body);
  for (size_t i = 0; i < g.inputs.size(); ++i)
    values[g.inputs[i].name] = body->getArgument(i);

  for (size_t i = 0; i < g.nodes.size(); ++i) {
    matchLayerNorm(static_cast<int>(i));
    matchGelu(static_cast<int>(i));
    matchGeluTanh(static_cast<int>(i));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (consumed.count(static_cast<int>(i)))
      continue;
    auto anchor = anchors.find(static_cast<int>(i));
    if (anchor != anchors.end()) {
      values[g.nodes[i].outputs[0]] = anchor->second();
      continue;
    }
    if (auto e = emit(g.nodes[i]))
      return e;
  }
  SmallVector<Value> results;
  for (const onnx::ValueInfo &v : g.outputs) {
    Value r = get(v.name);
    if (!r)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     g.file + ": output '" + v.name + "' is made by no node Kiln imported");
    results.push_back(r);
  }
  b.create<func::ReturnOp>(loc, results);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>> importOnnx(MLIRContext &context, const onnx::Graph &graph,
                                                 llvm::StringRef name) {
  context.loadDialect<KilnDialect, func::FuncDialect>();
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  module->setSymName(name);
  GraphImporter importer(b, graph);
  if (auto e = importer.build(*module))
    return std::move(e);
  if (failed(verify(*module)))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   graph.file + ": internal error: the imported module does not verify");
  return std::move(module);
}

llvm::Expected<gguf::File> graphTensors(ModuleOp module, const onnx::Graph &graph,
                                        std::vector<uint8_t> &storage) {
  struct Entry {
    std::string key;
    const onnx::Tensor *tensor;
    bool transposed;
    RankedTensorType type; // as the IR reads it (a reshape folded into a weight)
  };
  std::vector<Entry> entries;
  std::set<std::string> seen;
  std::string missing;
  auto add = [&](std::string key, const std::string &name, bool transposed, Type type) {
    if (!seen.insert(key).second)
      return;
    const onnx::Tensor *t = graph.initializer(name);
    if (!t)
      missing = name;
    else
      entries.push_back({std::move(key), t, transposed, cast<RankedTensorType>(type)});
  };
  module.walk([&](Operation *op) {
    if (auto w = dyn_cast<WeightOp>(op))
      add(w.getSegmentName(), w.getName().str(), w.getTransposed(), w.getType());
    else if (auto c = dyn_cast<ConstantOp>(op))
      add(c.getName().str(), c.getName().str(), false, c.getType());
  });
  if (!missing.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   graph.file + ": the graph has no initializer '" + missing + "'");
  gguf::File file;
  uint64_t end = 0;
  for (const Entry &e : entries) {
    gguf::TensorInfo info;
    info.name = e.key;
    std::vector<int64_t> shape = e.tensor->info.shape;
    if (e.transposed) {
      if (shape.size() != 2 || e.tensor->info.type != ElementType::F32)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       graph.file + ": initializer '" + e.tensor->info.name +
                                           "' is read transposed, which Kiln does for 2-D "
                                           "float32 tensors only");
      std::swap(shape[0], shape[1]);
    } else if (e.type.getShape() != ArrayRef<int64_t>(shape)) {
      // A reshaped weight: the same elements in the same order.
      int64_t elements = ShapedType::getNumElements(shape), read = e.type.getNumElements();
      if (elements != read)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       graph.file + ": initializer '" + e.tensor->info.name +
                                           "' has " + std::to_string(elements) +
                                           " elements, the graph reads " + std::to_string(read));
      shape.assign(e.type.getShape().begin(), e.type.getShape().end());
    }
    for (auto d = shape.rbegin(); d != shape.rend(); ++d)
      info.ne.push_back(uint64_t(*d));
    if (info.ne.empty())
      info.ne.push_back(1);
    // ggml's numbers for the float types; integer constants are copied as
    // they are, whatever their number.
    info.type = e.tensor->info.type == ElementType::F16 ? 1 : e.tensor->info.type == ElementType::BF16 ? 30 : 0;
    end = (end + 63) / 64 * 64;
    info.offset = end;
    info.bytes = e.tensor->bytes.size();
    end += info.bytes;
    file.tensors.push_back(std::move(info));
  }
  storage.assign(end, 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    const onnx::Tensor &t = *entries[i].tensor;
    uint8_t *dst = storage.data() + file.tensors[i].offset;
    if (!entries[i].transposed) {
      std::copy(t.bytes.begin(), t.bytes.end(), dst);
      continue;
    }
    // [K, N] floats as [N, K] rows.
    const size_t rows = size_t(t.info.shape[0]), cols = size_t(t.info.shape[1]);
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < cols; ++c)
        std::memcpy(dst + (c * rows + r) * 4, t.bytes.data() + (r * cols + c) * 4, 4);
  }
  file.data = llvm::ArrayRef<uint8_t>(storage);
  return file;
}

} // namespace kiln
