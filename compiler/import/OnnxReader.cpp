#include "compiler/import/OnnxReader.h"
#include "compiler/import/OnnxFold.h"
#include "compiler/import/OnnxProto.h"

#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <fstream>
#include <set>
#include <sstream>

namespace kiln::onnx {

// The newest opset of the default domain that ONNX 1.12 (Debian 12's) knows.
constexpr int64_t kNewestOpset = 17;

int64_t elementBytes(ElementType type) {
  switch (type) {
  case ElementType::F32: case ElementType::I32: case ElementType::U32: return 4;
  case ElementType::U8: case ElementType::I8: case ElementType::Bool: return 1;
  case ElementType::U16: case ElementType::I16: case ElementType::F16: case ElementType::BF16: return 2;
  case ElementType::I64: case ElementType::F64: case ElementType::U64: return 8;
  default: return 0;
  }
}

const char *elementName(ElementType type) {
  switch (type) {
  case ElementType::F32: return "float32";
  case ElementType::U8: return "uint8";
  case ElementType::I8: return "int8";
  case ElementType::U16: return "uint16";
  case ElementType::I16: return "int16";
  case ElementType::I32: return "int32";
  case ElementType::I64: return "int64";
  case ElementType::String: return "string";
  case ElementType::Bool: return "bool";
  case ElementType::F16: return "float16";
  case ElementType::F64: return "float64";
  case ElementType::U32: return "uint32";
  case ElementType::U64: return "uint64";
  case ElementType::BF16: return "bfloat16";
  default: return "an unknown type";
  }
}

int64_t ValueInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> Tensor::integers() const {
  const int64_t n = info.numElements(), size = elementBytes(info.type);
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t *p = bytes.data() + i * size;
    switch (info.type) {
    case ElementType::I64: { int64_t v; std::memcpy(&v, p, 8); out[i] = v; break; }
    case ElementType::I32: { int32_t v; std::memcpy(&v, p, 4); out[i] = v; break; }
    case ElementType::I16: { int16_t v; std::memcpy(&v, p, 2); out[i] = v; break; }
    case ElementType::I8: out[i] = static_cast<int8_t>(*p); break;
    case ElementType::U8: case ElementType::Bool: out[i] = *p; break;
    default: out[i] = 0;
    }
  }
  return out;
}

std::vector<float> Tensor::floats() const {
  std::vector<float> out(info.type == ElementType::F32 ? info.numElements() : 0);
  if (!out.empty())
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

const Attribute *Node::attribute(const std::string &key) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? nullptr : &it->second;
}

std::string Node::label() const { return "'" + name + "' (" + op + ")"; }

const ValueInfo *Graph::value(const std::string &name) const {
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

const Tensor *Graph::initializer(const std::string &name) const {
  auto it = initializers.find(name);
  return it == initializers.end() ? nullptr : &it->second;
}

bool parseInputShape(const std::string &text, InputShapes &shapes, std::string &error) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    error = "--input-shape=" + text + ": expected NAME=DIMS, as input_ids=1x128";
    return false;
  }
  std::vector<int64_t> dims;
  std::stringstream in(text.substr(eq + 1));
  std::string dim;
  while (std::getline(in, dim, 'x')) {
    char *end = nullptr;
    const long long v = std::strtoll(dim.c_str(), &end, 10);
    if (dim.empty() || *end || v <= 0) {
      error = "--input-shape=" + text + ": '" + dim + "' is not a positive dimension";
      return false;
    }
    dims.push_back(v);
  }
  shapes[text.substr(0, eq)] = dims;
  return true;
}

namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;
using ::onnx::TypeProto;
using ::onnx::ValueInfoProto;

Attribute readAttribute(const std::string &modelPath, const AttributeProto &a) {
  Attribute out;
  switch (a.type()) {
  case AttributeProto::FLOAT: out.kind = Attribute::Kind::Float; out.f = a.f(); break;
  case AttributeProto::INT: out.kind = Attribute::Kind::Int; out.i = a.i(); break;
  case AttributeProto::STRING: out.kind = Attribute::Kind::String; out.s = a.s(); break;
  case AttributeProto::TENSOR: out.kind = Attribute::Kind::Tensor; out.t = readTensor(modelPath, a.t()); break;
  case AttributeProto::FLOATS:
    out.kind = Attribute::Kind::Floats;
    out.floats.assign(a.floats().begin(), a.floats().end());
    break;
  case AttributeProto::INTS:
    out.kind = Attribute::Kind::Ints;
    out.ints.assign(a.ints().begin(), a.ints().end());
    break;
  case AttributeProto::STRINGS:
    out.kind = Attribute::Kind::Strings;
    out.strings.assign(a.strings().begin(), a.strings().end());
    break;
  default: out.kind = Attribute::Kind::Other;
  }
  return out;
}

/// The static shape of a value's type; false when a dimension is symbolic or
/// unknown (`dim` is then its index), or the rank is unknown (`dim` -1).
bool staticShape(const TypeProto &type, std::vector<int64_t> &shape, int &dim) {
  shape.clear();
  dim = -1;
  if (!type.has_tensor_type() || !type.tensor_type().has_shape())
    return false;
  const auto &dims = type.tensor_type().shape().dim();
  for (int i = 0; i < dims.size(); ++i) {
    if (!dims[i].has_dim_value() || dims[i].dim_value() < 0) {
      dim = i;
      return false;
    }
    shape.push_back(dims[i].dim_value());
  }
  return true;
}

std::string describeDim(const TypeProto &type, int dim) {
  if (dim < 0)
    return "an unknown rank";
  const auto &d = type.tensor_type().shape().dim(dim);
  return d.has_dim_param() ? "a symbolic dimension '" + d.dim_param() + "' (dimension " + std::to_string(dim) + ")"
                           : "an unknown dimension " + std::to_string(dim);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "a scalar" : s;
}

/// Gives the inputs without a static shape theirs from `shapes`; every name in
/// `shapes` must be an input, of the same rank and agreeing with its static
/// dimensions.
void fixInputShapes(GraphProto &g, const std::set<std::string> &initializers, const InputShapes &shapes) {
  for (const auto &[name, shape] : shapes) {
    bool input = false;
    for (const ValueInfoProto &v : g.input())
      input = input || (v.name() == name && !initializers.count(name));
    if (!input)
      throw Failure{"--input-shape names '" + name + "', which is not an input of the graph"};
  }
  for (ValueInfoProto &input : *g.mutable_input()) {
    if (initializers.count(input.name()))
      continue;
    std::vector<int64_t> shape;
    int dim = -1;
    const bool known = staticShape(input.type(), shape, dim);
    auto given = shapes.find(input.name());
    if (given == shapes.end()) {
      if (!known)
        throw Failure{"input '" + input.name() + "' has " + describeDim(input.type(), dim) +
                      "; give its shape with --input-shape " + input.name() + "=DIMS (as 1x128)"};
      continue;
    }
    if (!input.type().has_tensor_type())
      throw Failure{"input '" + input.name() + "' is not a tensor"};
    auto *tensorShape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    const auto &dims = tensorShape->dim();
    if (input.type().tensor_type().has_shape() && dims.size() != static_cast<int>(given->second.size()))
      throw Failure{"--input-shape " + input.name() + "=" + shapeText(given->second) + " has rank " +
                    std::to_string(given->second.size()) + ", the input has rank " + std::to_string(dims.size())};
    for (size_t i = 0; i < given->second.size(); ++i)
      if (i < static_cast<size_t>(dims.size()) && dims[i].has_dim_value() &&
          dims[i].dim_value() != given->second[i])
        throw Failure{"--input-shape " + input.name() + "=" + shapeText(given->second) + " disagrees with the model's " +
                      "dimension " + std::to_string(i) + " = " + std::to_string(dims[i].dim_value())};
    tensorShape->clear_dim();
    for (int64_t d : given->second)
      tensorShape->add_dim()->set_dim_value(d);
  }
}

/// The nodes in an order where every input is made first (Kahn's algorithm,
/// stable: the file's order among ready nodes). Throws on an input nothing
/// makes, on two nodes making one value, and on a cycle.
std::vector<int> topologicalOrder(const GraphProto &g, const std::set<std::string> &given,
                                  const std::vector<std::string> &names) {
  std::map<std::string, int> producer;
  for (int n = 0; n < g.node_size(); ++n)
    for (const std::string &out : g.node(n).output()) {
      if (out.empty())
        continue;
      if (given.count(out) || !producer.emplace(out, n).second)
        throw Failure{"value '" + out + "' is made twice (node '" + names[n] + "' (" + g.node(n).op_type() + "))"};
    }
  std::vector<std::vector<int>> readers(g.node_size());
  std::vector<int> waiting(g.node_size(), 0);
  for (int n = 0; n < g.node_size(); ++n)
    for (const std::string &in : g.node(n).input()) {
      if (in.empty() || given.count(in))
        continue;
      auto it = producer.find(in);
      if (it == producer.end())
        throw Failure{"node '" + names[n] + "' (" + g.node(n).op_type() + ") reads '" + in +
                      "', which no node, graph input or initializer makes"};
      readers[it->second].push_back(n);
      ++waiting[n];
    }
  std::vector<int> order;
  std::set<int> ready;
  for (int n = 0; n < g.node_size(); ++n)
    if (!waiting[n])
      ready.insert(n);
  while (!ready.empty()) {
    const int n = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(n);
    for (int r : readers[n])
      if (--waiting[r] == 0)
        ready.insert(r);
  }
  if (order.size() != static_cast<size_t>(g.node_size()))
    for (int n = 0; n < g.node_size(); ++n)
      if (waiting[n])
        throw Failure{"the graph has a cycle through node '" + names[n] + "' (" + g.node(n).op_type() + ")"};
  for (const ValueInfoProto &out : g.output())
    if (!given.count(out.name()) && !producer.count(out.name()))
      throw Failure{"graph output '" + out.name() + "' is made by no node"};
  return order;
}

ValueInfo readValueInfo(const ValueInfoProto &v, const std::string &what) {
  ValueInfo out;
  out.name = v.name();
  int dim = -1;
  if (!v.type().has_tensor_type())
    throw Failure{what + " '" + v.name() + "' is not a tensor"};
  out.type = static_cast<ElementType>(v.type().tensor_type().elem_type());
  if (!staticShape(v.type(), out.shape, dim))
    throw Failure{"shape inference leaves " + what + " '" + v.name() + "' with " + describeDim(v.type(), dim) +
                  "; Kiln needs static shapes"};
  return out;
}

void readModel(const std::string &path, const InputShapes &shapes, Graph &graph) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Failure{"cannot open the file"};
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty())
    throw Failure{"the file is empty"};
  ModelProto model;
  if (!model.ParseFromString(bytes))
    throw Failure{"not an ONNX model: its protobuf does not parse (truncated or corrupt)"};
  if (!model.has_graph() || model.graph().node_size() == 0)
    throw Failure{"not an ONNX model, or truncated: it holds no graph nodes"};
  graph.irVersion = model.ir_version();
  for (const auto &op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx")
      graph.opset = op.version();
  if (graph.opset == 0)
    throw Failure{"no opset for the default ONNX domain (a truncated file, or not an ONNX model)"};
  if (graph.opset > kNewestOpset)
    throw Failure{"opset " + std::to_string(graph.opset) + " is newer than the " + std::to_string(kNewestOpset) +
                  " that Kiln's ONNX library knows; export with opset_version <= " + std::to_string(kNewestOpset)};

  GraphProto &g = *model.mutable_graph();
  graph.name = g.name();
  std::set<std::string> initializerNames, given;
  for (const TensorProto &t : g.initializer())
    initializerNames.insert(t.name());
  fixInputShapes(g, initializerNames, shapes);
  given = initializerNames;
  for (const ValueInfoProto &input : g.input())
    given.insert(input.name());

  std::vector<std::string> names(g.node_size());
  std::set<std::string> taken;
  for (int n = 0; n < g.node_size(); ++n)
    taken.insert(g.node(n).name());
  for (int n = 0; n < g.node_size(); ++n) {
    names[n] = g.node(n).name();
    if (!names[n].empty())
      continue;
    // An unnamed node gets "Op_k", a name no other node has, for diagnostics.
    int k = n;
    do
      names[n] = g.node(n).op_type() + "_" + std::to_string(k++);
    while (taken.count(names[n]));
    taken.insert(names[n]);
  }
  const std::vector<int> order = topologicalOrder(g, given, names);
  for (const NodeProto &node : g.node())
    if (node.domain().size() && node.domain() != "ai.onnx")
      throw Failure{"node '" + node.name() + "' (" + node.op_type() + ") is of domain '" + node.domain() +
                    "', which Kiln does not read"};

  // Shape inference reads the nodes in the file's order: give it ours.
  GraphProto sorted;
  for (int n : order) {
    NodeProto *node = sorted.add_node();
    *node = g.node(n);
    node->set_name(names[n]);
  }
  g.mutable_node()->Swap(sorted.mutable_node());
  try {
    // Shapes computed at run time become constants once the inputs' shapes
    // are static: infer, fold, and again until nothing folds.
    // Each round infers afresh: a symbolic dimension an earlier round gave
    // would otherwise stay where a folded shape now gives a number.
    do {
      model.mutable_graph()->clear_value_info();
      ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(),
                                           ::onnx::ShapeInferenceOptions(true, 0, true));
    } while (foldConstants(model) > 0);
    model.mutable_graph()->clear_value_info();
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(),
                                         ::onnx::ShapeInferenceOptions(true, 1, true));
  } catch (const std::exception &e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    throw Failure{"shape inference fails: " + what};
  }
  for (const TensorProto &t : model.graph().initializer()) {
    Tensor tensor = readTensor(path, t);
    initializerNames.insert(t.name());
    graph.values[t.name()] = tensor.info;
    graph.initializers[t.name()] = std::move(tensor);
  }

  const GraphProto &inferred = model.graph();
  for (const ValueInfoProto &v : inferred.input()) {
    if (initializerNames.count(v.name()))
      continue;
    graph.inputs.push_back(readValueInfo(v, "input"));
    graph.values[v.name()] = graph.inputs.back();
  }
  for (const ValueInfoProto &v : inferred.value_info())
    if (!graph.values.count(v.name()))
      graph.values[v.name()] = readValueInfo(v, "value");
  for (const ValueInfoProto &v : inferred.output()) {
    graph.outputs.push_back(readValueInfo(v, "output"));
    graph.values[v.name()] = graph.outputs.back();
  }
  for (const NodeProto &n : inferred.node()) {
    Node node;
    node.op = n.op_type();
    node.domain = n.domain();
    node.name = n.name();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    for (const AttributeProto &a : n.attribute())
      node.attributes[a.name()] = readAttribute(path, a);
    for (const std::string &out : node.outputs)
      if (!out.empty() && !graph.values.count(out))
        throw Failure{"shape inference gives no shape to '" + out + "', an output of node " + node.label()};
    graph.nodes.push_back(std::move(node));
  }
}

} // namespace

bool readGraph(const std::string &path, const InputShapes &shapes, Graph &graph, std::string &error) {
  graph = Graph();
  graph.file = path;
  try {
    readModel(path, shapes, graph);
  } catch (const Failure &f) {
    error = path + ": " + f.message;
    return false;
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
    return false;
  }
  return true;
}

} // namespace kiln::onnx
