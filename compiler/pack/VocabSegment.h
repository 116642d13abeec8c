#ifndef KILN_COMPILER_PACK_VOCABSEGMENT_H
#define KILN_COMPILER_PACK_VOCABSEGMENT_H

// Plain C++17 on purpose (no LLVM/MLIR): test tools link this file alone.

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// Serializes a vocabulary into the vocab segment that the runtime tokenizer
/// reads (layout: runtime/include/kiln/kiln_tokenizer.h). `model` is "llama"
/// (SentencePiece-style) or "gpt2" (byte-level BPE). Missing scores default to
/// 0 and missing types to 1 (normal); add_bos/add_eos are dropped when the id
/// is -1. Returns an empty vector when the model is unknown, there are no
/// tokens, an id is neither -1 nor a token, or the segment would not fit the
/// 32-bit offsets.
std::vector<uint8_t> encodeVocabSegment(const std::string &model,
                                        const std::vector<std::string> &tokens,
                                        const std::vector<float> &scores,
                                        const std::vector<int32_t> &types,
                                        const std::vector<std::string> &merges,
                                        int32_t bos, int32_t eos, int32_t unk,
                                        bool addBos, bool addEos,
                                        bool addSpacePrefix, uint32_t pre = 0);

/// The runtime's code (KILN_VOCAB_PRE_*) of the byte-BPE pre-tokenizer that
/// tokenizer.ggml.pre names, -1 for one it does not implement. Empty and
/// "default" are GPT-2's.
int preTokenizerCode(const std::string &pre);

/// The names preTokenizerCode knows, comma-separated.
std::string preTokenizerNames();

} // namespace kiln

#endif // KILN_COMPILER_PACK_VOCABSEGMENT_H
