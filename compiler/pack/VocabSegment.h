#ifndef KILN_COMPILER_PACK_VOCABSEGMENT_H
#define KILN_COMPILER_PACK_VOCABSEGMENT_H

// Plain C++17 on purpose (no LLVM/MLIR): test tools link this file alone.

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// What the vocab segment holds.
struct VocabSegmentSpec {
  std::string model = "llama"; // "llama" (SentencePiece-style) or "gpt2" (byte-level BPE)
  std::vector<std::string> tokens, merges;
  std::vector<float> scores;   // missing scores are 0
  std::vector<int32_t> types;  // missing types are 1 (normal)
  int32_t bos = -1, eos = -1, unk = -1;
  bool addBos = true, addEos = false, addSpacePrefix = true;
  uint32_t pre = 0;            // KILN_VOCAB_PRE_* (byte-BPE only)
  std::vector<int32_t> endOfGeneration; // ids that end a reply (EOS, EOT, ...)
  uint32_t chat = 0;           // KILN_CHAT_* of tokenizer.chat_template
};

/// Serializes a vocabulary into the vocab segment that the runtime tokenizer
/// reads (layout: runtime/include/kiln/kiln_tokenizer.h). Control and
/// user-defined tokens become the special tokens the runtime can find in
/// text. add_bos/add_eos are dropped when the id is -1. Returns an empty vector
/// when the model is unknown, there are no tokens, an id is neither -1 nor a
/// token, or the segment would not fit the 32-bit offsets.
std::vector<uint8_t> encodeVocabSegment(const VocabSegmentSpec &spec);

/// The KILN_CHAT_* code of a chat template (tokenizer.chat_template), by the
/// markers each family's template uses; 0 for one Kiln does not know.
uint32_t chatTemplateCode(const std::string &chatTemplate);

/// "none", "llama3", "chatml", "gemma" or "phi3".
const char *chatTemplateName(uint32_t code);

/// The runtime's code (KILN_VOCAB_PRE_*) of the byte-BPE pre-tokenizer that
/// tokenizer.ggml.pre names, -1 for one it does not implement. Empty and
/// "default" are GPT-2's.
int preTokenizerCode(const std::string &pre);

/// The names preTokenizerCode knows, comma-separated.
std::string preTokenizerNames();

} // namespace kiln

#endif // KILN_COMPILER_PACK_VOCABSEGMENT_H
