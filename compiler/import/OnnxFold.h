#ifndef KILN_COMPILER_IMPORT_ONNXFOLD_H
#define KILN_COMPILER_IMPORT_ONNXFOLD_H

// Constant folding of an ONNX graph, for OnnxReader.cpp alone (it sees the
// ONNX protobuf types). Exporters compute shapes at run time (Shape, Gather,
// Concat, Range, ... feeding Reshape and Expand); once the inputs' shapes are
// static those are constants, and folding them is what gives every value a
// static shape.

#include "onnx/onnx_pb.h"

#include <string>

namespace kiln::onnx {

/// Replaces every node whose inputs are all constant (initializers or folded
/// values), every Shape and Size of a value whose shape `model`'s value_info
/// gives statically, and every Identity, by initializers (an Identity by
/// renaming its readers' input). Returns how many nodes it removed; throws
/// Failure-like std::runtime_error on a node it cannot evaluate correctly
/// (an index out of range, a shape that does not fit).
int foldConstants(::onnx::ModelProto &model);

} // namespace kiln::onnx

#endif // KILN_COMPILER_IMPORT_ONNXFOLD_H
