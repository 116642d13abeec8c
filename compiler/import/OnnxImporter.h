#ifndef KILN_COMPILER_IMPORT_ONNXIMPORTER_H
#define KILN_COMPILER_IMPORT_ONNXIMPORTER_H

#include "compiler/import/GGUFReader.h"
#include "compiler/import/OnnxReader.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

namespace kiln {

/// Builds the graph-level module of an ONNX graph (OnnxReader's, every shape
/// static): `func.func @run` takes the graph inputs and returns its outputs
/// (each argument and result carries its ONNX name as `kiln.name`).
/// Initializers stay in the file: float tensors become kiln.weight, others
/// kiln.constant. Subgraphs that exporters write for one kernel are matched
/// into it: mean/variance normalisation into layer_norm, the erf form of GELU
/// into gelu_erf, a matmul against an initializer into matmul. Every other
/// node becomes the graph op of its name; a node of any other op is an error
/// naming the op, the node and the file.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnx(mlir::MLIRContext &context, const onnx::Graph &graph, llvm::StringRef name);

/// The initializers that the weights and constants of `module` (importOnnx's,
/// after kiln-pack-layout) read, as the pack writer reads a model file: one
/// tensor per segment name, a weight read transposed ("<name>^T") holding
/// the transposed floats. `storage` holds the bytes the result views.
llvm::Expected<gguf::File> graphTensors(mlir::ModuleOp module, const onnx::Graph &graph,
                                        std::vector<uint8_t> &storage);

} // namespace kiln

#endif // KILN_COMPILER_IMPORT_ONNXIMPORTER_H
