#ifndef KILN_COMPILER_IMPORT_LLAMAIMPORTER_H
#define KILN_COMPILER_IMPORT_LLAMAIMPORTER_H

#include "compiler/import/GGUFReader.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace kiln {

/// Hyper-parameters of a llama-family decoder, read from GGUF metadata, and
/// the few places where its architecture departs from the llama graph.
struct LlamaConfig {
  std::string name;
  std::string arch; // general.architecture: llama, qwen2, qwen3, gemma3 or phi3
  int64_t nEmbd = 0, nLayer = 0, nFF = 0, nHead = 0, nKvHead = 0;
  int64_t headDim = 0, ropeDim = 0, nVocab = 0, contextLength = 0;
  float ropeFreqBase = 10000.0f, rmsEpsilon = 1e-5f;
  /// One divisor per rotated pair of the rope frequencies (Llama 3's
  /// rope_freqs tensor, linear scaling's factor, phi3's short factors); empty: none.
  std::vector<float> ropeFreqFactors;
  /// phi3's long-context factors, used when the context exceeds
  /// ropeOriginalContext; empty: none.
  std::vector<float> ropeFreqFactorsLong;
  int64_t ropeOriginalContext = 0;
  float ropeMscale = 1.0f; // phi3's attn_factor: rotated pairs times this
  bool tiedOutput = false;

  bool neoxRope = false;   // rope pairs i and i + rope_dim/2 (all but llama)
  bool qkvBias = false;    // qwen2
  bool qkNorm = false;     // per-head RMSNorm of queries and keys (qwen3, gemma3)
  bool postNorms = false;  // RMSNorm of each block's output before the residual (gemma3)
  bool geluFfn = false;    // GELU-gated feed-forward instead of SiLU (gemma3)
  float embedScale = 0;    // embeddings times this (gemma3: sqrt(n_embd)); 0: none
  float attentionScale = 0; // scores times this; 0: 1/sqrt(head_dim)
  /// Sliding-window attention: the window, and which layers have it.
  int64_t slidingWindow = 0;
  std::vector<bool> localLayers;
  /// The rope base of local layers that turn on their own, unscaled (gemma3);
  /// 0: local layers rope as the others.
  float localRopeFreqBase = 0.0f;

  int64_t queryWidth() const { return nHead * headDim; }
  int64_t kvWidth() const { return nKvHead * headDim; }
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
  /// The ids that end a reply: EOS, EOT, EOM, and the control tokens the
  /// families' templates end turns with.
  std::vector<int32_t> endOfGeneration;
  std::string chatTemplate; // tokenizer.chat_template, empty when absent
};

struct ImportOptions {
  int64_t prefillChunk = 0; // 0: min(64, context)
  int64_t maxContext = 0;   // 0: the model's context length
  int64_t kvWindow = 0;     // a sliding window on every layer; 0: the model's windows only
  std::string kvLayout = "head-major"; // KV cache order: head-major or pos-major
  std::string name;         // C identifier of the model; empty: from general.name
  int64_t layers = 0;       // only the first `layers` decoder layers (a self-speculative draft); 0: all
  int64_t sessions = 0;     // sessions sharing a pool of KV pages; 0: one cache, no pages
  int64_t kvPage = 0;       // positions per page (0: 16)
  int64_t kvPages = 0;      // pages in the pool (0: every session's whole context)
};

/// Renames fused tensors to the separate ones the importer reads, as views of
/// the same bytes: phi3's attn_qkv becomes attn_q, attn_k and attn_v, its
/// ffn_up of gate and up rows ffn_gate and ffn_up. Other files are unchanged.
llvm::Error splitFusedTensors(gguf::File &file);

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
