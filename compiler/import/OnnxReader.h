#ifndef KILN_COMPILER_IMPORT_ONNXREADER_H
#define KILN_COMPILER_IMPORT_ONNXREADER_H

// An ONNX model as the importer needs it: the nodes in an order where every
// value is made before it is read, every value with a static shape, the
// initializers' bytes. Plain C++ without protobuf or LLVM types, so that only
// OnnxReader.cpp (built with exceptions, which ONNX's shape inference throws)
// sees the ONNX library.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::onnx {

/// Element types, numbered as ONNX's TensorProto.DataType.
enum class ElementType : int32_t {
  Undefined = 0, F32 = 1, U8 = 2, I8 = 3, U16 = 4, I16 = 5, I32 = 6, I64 = 7,
  String = 8, Bool = 9, F16 = 10, F64 = 11, U32 = 12, U64 = 13, BF16 = 16,
};

/// Bytes of one element; 0 for String and types Kiln does not read.
int64_t elementBytes(ElementType type);
/// "float32", "int64", ...: the name the diagnostics use.
const char *elementName(ElementType type);

struct ValueInfo {
  std::string name;
  ElementType type = ElementType::Undefined;
  std::vector<int64_t> shape; // static; empty for a scalar

  int64_t numElements() const;
};

/// A constant tensor: an initializer, a Constant node's value or a tensor
/// attribute. `bytes` holds the elements little-endian, row-major.
struct Tensor {
  ValueInfo info;
  std::vector<uint8_t> bytes;

  /// The elements of an integer tensor (int64, int32, ...) as int64.
  std::vector<int64_t> integers() const;
  /// The elements of a float32 tensor.
  std::vector<float> floats() const;
};

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Other };
  Kind kind = Kind::Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string op;     // op_type
  std::string domain; // "" or "ai.onnx" for the standard ops
  std::string name;   // may be empty in the file; the reader names it then
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;

  const Attribute *attribute(const std::string &key) const;
  /// "'name' (Op)", as diagnostics name a node.
  std::string label() const;
};

struct Graph {
  std::string file; // as given, for diagnostics
  std::string name;
  int64_t irVersion = 0;
  int64_t opset = 0; // of the default domain
  std::vector<ValueInfo> inputs;  // the graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  std::vector<Node> nodes; // topological order
  std::map<std::string, Tensor> initializers;
  std::map<std::string, ValueInfo> values; // every value: inputs, initializers, node outputs

  const ValueInfo *value(const std::string &name) const;
  const Tensor *initializer(const std::string &name) const;
};

/// Static shapes for graph inputs with symbolic or unknown dimensions, as
/// `--input-shape name=1x128` gives them.
using InputShapes = std::map<std::string, std::vector<int64_t>>;

/// Parses "name=1x128" into `shapes`; false with `error` set when malformed.
bool parseInputShape(const std::string &text, InputShapes &shapes, std::string &error);

/// Reads and checks the ONNX model at `path`: the protobuf parses (a truncated
/// or corrupt file does not), the default domain's opset is one ONNX 1.12
/// knows, every input has a static shape (from the file or `shapes`), the
/// graph is acyclic, every node input is made by a node, an input or an
/// initializer, and shape inference gives every value a static shape.
/// Initializers kept in external files are read from beside the model.
/// On failure returns false with `error` a one-line message naming the file.
bool readGraph(const std::string &path, const InputShapes &shapes, Graph &graph,
               std::string &error);

} // namespace kiln::onnx

#endif // KILN_COMPILER_IMPORT_ONNXREADER_H
