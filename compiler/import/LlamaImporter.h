#ifndef KILN_COMPILER_IMPORT_LLAMAIMPORTER_H
#define KILN_COMPILER_IMPORT_LLAMAIMPORTER_H

#include "compiler/import/GGUFReader.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace kiln {

/// Hyper-parameters of a llama-family decoder, read from GGUF metadata.
struct LlamaConfig {
  std::string name;
  std::string arch; // general.architecture: llama or qwen2 (which adds q/k/v biases)
  int64_t nEmbd = 0, nLayer = 0, nFF = 0, nHead = 0, nKvHead = 0;
  int64_t headDim = 0, ropeDim = 0, nVocab = 0, contextLength = 0;
  float ropeFreqBase = 10000.0f, rmsEpsilon = 1e-5f;
  /// One divisor per rotated pair of the rope frequencies (Llama 3's
  /// rope_freqs tensor, linear scaling's factor); empty: none.
  std::vector<float> ropeFreqFactors;
  bool tiedOutput = false;
};

/// The vocabulary the runtime tokenizer needs, kept from the model file.
struct Vocabulary {
  std::string model; // "llama" (SentencePiece-style) or "gpt2" (byte BPE)
  std::string preTokenizer; // tokenizer.ggml.pre, empty when absent
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  int64_t bos = -1, eos = -1, unk = -1;
  bool addBos = true, addEos = false, addSpacePrefix = true;
};

struct ImportOptions {
  int64_t prefillChunk = 0; // 0: min(64, context)
  int64_t maxContext = 0;   // 0: the model's context length
  std::string name;         // C identifier of the model; empty: from general.name
};

/// Checks that `file` is a llama-family model Kiln supports: metadata, every
/// tensor's presence, shape and type.
llvm::Expected<LlamaConfig> readLlamaConfig(const gguf::File &file);

llvm::Expected<Vocabulary> readVocabulary(const gguf::File &file);

/// Builds the graph-level module: `@prefill` over a chunk of C tokens and `@decode`
/// of one token, both against a KV cache of capacity T.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importLlama(mlir::MLIRContext &context, const gguf::File &file,
            llvm::StringRef sourcePath, const ImportOptions &options);

/// A C identifier made from a model name ("tiny-llama-A" -> "tiny_llama_A").
std::string toIdentifier(llvm::StringRef name);

} // namespace kiln

#endif // KILN_COMPILER_IMPORT_LLAMAIMPORTER_H
