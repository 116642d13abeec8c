#ifndef KILN_COMPILER_PACK_PACKWRITER_H
#define KILN_COMPILER_PACK_PACKWRITER_H

#include "compiler/import/GGUFReader.h"
#include "compiler/import/LlamaImporter.h"
#include "compiler/quant/Imatrix.h"
#include "compiler/quant/Quantize.h"

#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// One weight as stored in the pack, for `--report`.
struct TensorReport {
  std::string name;
  std::string format;
  uint64_t bytes = 0;
  uint64_t offset = 0; // of its segment, from the start of the data section
  int64_t panelRows = 0; // rows of a panel the kernels read; 0: rows as they are
  int64_t cols = 0;      // elements of a row (the last dimension)
  double rmsError = 0; // relative to the model file's values; 0 when stored as read
  bool converted = false;
  bool weighted = false; // encoded against an importance matrix
  bool feedback = false; // and with error feedback from its input's moments
  bool scaled = false;   // with activation-aware scales (a weight's columns, a norm)
};

/// A norm whose output activation-aware scales divide (compiler/quant/Awq.h).
struct ScaledInput {
  std::string norm;
  double alpha = 0;
  double errorRatio = 1; // the weights' output error with the scales / without
};

/// The quantizer's description of a GGUF tensor type (F32, F16, Q8_0, Q4_0).
quant::FormatSpec formatOfGgmlType(uint32_t ggmlType);

/// What the generated code must know about the pack it will read.
struct PackInfo {
  uint64_t modelHash = 0;
  uint64_t dataOffset = 0;
  uint64_t dataSize = 0;
  uint64_t fileSize = 0;
  uint64_t vocabOffset = 0; // vocab segment, from the start of the data section
  uint64_t vocabBytes = 0;
  std::vector<TensorReport> tensors;
  std::vector<ScaledInput> scaledInputs;
};

/// Writes `path`: the 64-byte header, the FlatBuffers table describing every
/// weight segment that pack-layout assigned in `module`, the layers and the
/// vocabulary, then the data section with each weight's bytes from `model`
/// followed by the vocab segment of the runtime tokenizer. A weight whose IR
/// type differs from the file's (the quantize pass chose another format) is
/// decoded and re-encoded here, and one its kernels read in panels repacked,
/// by `jobs` threads (0: one per core) a few rows at a time.
/// Streamed: each weight is encoded, written and released from memory (and
/// from `model`'s mapping) before the next, so the memory it takes is about
/// the largest weight's, whatever the model's size; the bytes are the same
/// for any `jobs`.
/// With `imatrix`, a converted weight it has an entry for is encoded by
/// quant::WeightEncoder with that entry's column importances (and its input's
/// second moments, when the matrix has them); with those moments and
/// `activationScales`, the norms before matmuls may be scaled (quant/Awq.h).
/// The model hash covers the layout and the bytes, so a pack only opens with
/// the code generated alongside it.
llvm::Expected<PackInfo> writePack(mlir::ModuleOp module, const gguf::File &model,
                                   const Vocabulary &vocab, llvm::StringRef path,
                                   unsigned jobs = 0, const Imatrix *imatrix = nullptr,
                                   bool activationScales = true);

} // namespace kiln

#endif // KILN_COMPILER_PACK_PACKWRITER_H
