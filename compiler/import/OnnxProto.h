#ifndef KILN_COMPILER_IMPORT_ONNXPROTO_H
#define KILN_COMPILER_IMPORT_ONNXPROTO_H

// The ONNX protobuf's tensors as OnnxReader's, for the two files that see
// protobuf (OnnxReader.cpp and OnnxFold.cpp).

#include "compiler/import/OnnxReader.h"

#include "onnx/onnx_pb.h"

namespace kiln::onnx {

/// A failure with its message, for the reader's one-line error.
struct Failure {
  std::string message;
};

/// The elements of `t`, from its raw bytes, its typed fields, or (external
/// data) the file it names beside `modelPath`. Throws Failure when its type is
/// not read or its data does not hold its shape.
Tensor readTensor(const std::string &modelPath, const ::onnx::TensorProto &t);

} // namespace kiln::onnx

#endif // KILN_COMPILER_IMPORT_ONNXPROTO_H
