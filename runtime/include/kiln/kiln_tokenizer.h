/* Kiln runtime tokenizer: text <-> token ids from the pack's vocab segment.
 *
 * C99, no heap, no mutable globals, no stdio. kiln_tokenizer_init checks the
 * whole segment once, so the other calls trust it and do no bounds checks of
 * their own. The caller provides the work buffer that encoding needs (from the
 * arena or a static buffer); kiln_tokenize_work_bytes says how large.
 *
 * Vocab segment layout, little-endian, offsets from the segment start (the
 * writer is compiler/pack/VocabSegment.cpp; values are read byte-wise, so the
 * segment needs no particular alignment, though the pack places it at 64):
 *    0  magic "KVOC"         4  u32 version = 2     8  u32 n_tokens
 *   12  u32 n_merges        16  u32 model (0 SentencePiece-style "llama",
 *                                          1 GPT-2 byte-level BPE "gpt2")
 *   20  u32 flags (bit0 add_bos, bit1 add_eos, bit2 add_space_prefix)
 *   24  i32 bos   28  i32 eos   32  i32 unk   (-1 when absent)
 *   36  u32 pre (model 1's pre-tokenizer: 0 GPT-2, 1 Llama 3, 2 Qwen2,
 *               3 SmolLM; 0 for model 0)
 *   40  u32 total_bytes   44  u32 n_specials   48  u32 n_eog
 *   52  u32 chat (template of tokenizer.chat_template: KILN_CHAT_*)
 *   56  u32 token_offset[n_tokens + 1]   into the blob, non-decreasing
 *       f32 score[n_tokens]
 *       i32 type[n_tokens]                 llama.cpp token types (1 normal,
 *                                          2 unknown, 3 control, 4 user
 *                                          defined, 5 unused, 6 byte)
 *       u32 sorted_tokens[n_tokens]        ids in byte order of their text
 *                                          (memcmp, shorter first); equal texts
 *                                          highest id first, so a lookup finds
 *                                          the id llama.cpp's map keeps (last)
 *       u32 merge_offset[n_merges + 1]     into the blob, non-decreasing
 *       u32 sorted_merges[n_merges]        merge ranks in byte order of the
 *                                          merge text; equal texts lowest rank
 *                                          first (llama.cpp keeps the first)
 *       u32 specials[n_specials]           control and user-defined tokens
 *                                          (non-empty), longest text first
 *       u32 eog[n_eog]                     ids that end generation, ascending
 *       blob                               token texts, then merge texts
 *                                          ("left right", one space), running
 *                                          to total_bytes
 * The sorted arrays let the runtime binary-search a piece with no work buffer.
 *
 * Encoding:
 *  - model 0 follows llama.cpp's SPM tokenizer: " " + text when
 *    add_space_prefix (not for empty text), ' ' -> U+2581, split into UTF-8
 *    characters (the length the lead byte announces when that many
 *    continuation bytes follow, else one byte: the same as llama.cpp on valid
 *    UTF-8, and lossless on any bytes), merge the adjacent pair whose
 *    concatenation is a piece with the highest score (ties: leftmost) until
 *    none is left, then emit each symbol's id, or its bytes as <0xXX> tokens,
 *    or one unk when a byte token is missing.
 *  - model 1: pre-split into pieces by the pattern `pre` names, as llama.cpp
 *    splits them (\p{L}, \p{N} Unicode letters and numbers, \s White_Space;
 *    a byte that is not well-formed UTF-8 is a character of its own, neither):
 *      GPT-2   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *      Llama 3 (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *               ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *      Qwen2   Llama 3's with \p{N} for \p{N}{1,3}
 *      SmolLM  every \p{N} alone, GPT-2's pattern between them;
 *    bytes mapped to GPT-2's printable alphabet, merges applied lowest rank
 *    first (ties: leftmost), each symbol emitted as its id (an unknown symbol
 *    falls back to one id per character, else unk). add_space_prefix is ignored.
 *  - with KILN_TOKENIZE_PARSE_SPECIAL, the text of a control token is that
 *    token (the longest that starts at each position); user-defined tokens
 *    always are. The text between is encoded as above, each SPM fragment after
 *    a special token with its own space prefix, as llama.cpp does.
 *  - with KILN_TOKENIZE_ADD_SPECIAL: BOS first when add_bos, EOS last when add_eos. */
#ifndef KILN_KILN_TOKENIZER_H
#define KILN_KILN_TOKENIZER_H

#include "kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_VOCAB_VERSION 2u
#define KILN_VOCAB_HEADER_BYTES 56u

#define KILN_VOCAB_MODEL_SPM 0u
#define KILN_VOCAB_MODEL_BPE 1u

#define KILN_VOCAB_ADD_BOS 1u
#define KILN_VOCAB_ADD_EOS 2u
#define KILN_VOCAB_ADD_SPACE_PREFIX 4u

/* Pre-tokenizers of model 1 (tokenizer.ggml.pre). */
#define KILN_VOCAB_PRE_GPT2 0u
#define KILN_VOCAB_PRE_LLAMA3 1u
#define KILN_VOCAB_PRE_QWEN2 2u
#define KILN_VOCAB_PRE_SMOLLM 3u
#define KILN_VOCAB_PRE_GPT4O 4u

/* Chat templates, as kiln-compile recognized tokenizer.chat_template. */
#define KILN_CHAT_NONE 0u   /* none, or one Kiln does not know */
#define KILN_CHAT_LLAMA3 1u /* <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
#define KILN_CHAT_CHATML 2u /* <|im_start|>role\n...<|im_end|>\n (qwen2, qwen3, smollm) */
#define KILN_CHAT_GEMMA 3u  /* <start_of_turn>user|model\n...<end_of_turn>\n */
#define KILN_CHAT_PHI3 4u   /* <|role|>\n...<|end|>\n */

/* kiln_tokenize flags. */
#define KILN_TOKENIZE_ADD_SPECIAL 1
#define KILN_TOKENIZE_PARSE_SPECIAL 2

/* Token types (tokenizer.ggml.token_type). */
#define KILN_TOKEN_NORMAL 1
#define KILN_TOKEN_UNKNOWN 2
#define KILN_TOKEN_CONTROL 3
#define KILN_TOKEN_USER_DEFINED 4
#define KILN_TOKEN_UNUSED 5
#define KILN_TOKEN_BYTE 6

/* Filled by kiln_tokenizer_init; points into the caller's segment, which must
 * outlive it. Read-only afterwards and safe to share between threads. */
typedef struct kiln_tokenizer {
  const uint8_t *segment;
  uint32_t n_tokens, n_merges, model, flags, pre, n_specials, n_eog, chat;
  int32_t bos, eos, unk;     /* -1 when absent */
  uint32_t max_token_bytes;  /* longest token text: enough cap for any piece */
  const uint8_t *token_offset, *score, *type, *sorted_tokens;
  const uint8_t *merge_offset, *sorted_merges, *specials, *eog, *blob;
  uint8_t special_first[32]; /* bit b: some special token's text starts with byte b */
  /* SPM: id of "<0xXX>"; BPE: id of the byte's one-character piece; -1 if none. */
  int32_t byte_token[256];
} kiln_tokenizer;

/* Checks the `size` bytes at `segment` (magic, version, every size, offset and
 * id, the order of the sorted arrays) and fills *t; *t is zeroed on failure.
 * KILN_ERR_TRUNCATED when the segment is shorter than its header says,
 * KILN_ERR_MAGIC/KILN_ERR_VERSION, KILN_ERR_BOUNDS for anything inconsistent. */
kiln_status kiln_tokenizer_init(kiln_tokenizer *t, const uint8_t *segment, size_t size);

/* Bytes of `work` kiln_tokenize needs for `len` bytes of text (any alignment);
 * 0 when len is too long to tokenize at all (over 256 MiB). */
size_t kiln_tokenize_work_bytes(const kiln_tokenizer *t, size_t len);

/* Encodes len bytes of text (any bytes; NULL is fine when len is 0). `flags`
 * is KILN_TOKENIZE_* bits: ADD_SPECIAL adds BOS/EOS as the vocab's flags say,
 * PARSE_SPECIAL reads control tokens' texts as those tokens. *n_ids is always set to
 * the number of ids the text needs; when that is more than max_ids, only the
 * first max_ids are written and the result is KILN_ERR_ARGUMENT. Also
 * KILN_ERR_ARGUMENT for a NULL pointer or work_bytes below
 * kiln_tokenize_work_bytes. An upper bound for max_ids: 3 * len + 5. */
kiln_status kiln_tokenize(const kiln_tokenizer *t, const char *text, size_t len, int flags,
                          int32_t *ids, int32_t max_ids, int32_t *n_ids, void *work,
                          size_t work_bytes);

/* Byte-BPE vocabs: the end of the piece of text[0..len) that starts at
 * `start`, as kiln_tokenize splits it before merging (see `pre` above). len
 * for any other vocab, a NULL pointer or start >= len. */
size_t kiln_pretokenize_next(const kiln_tokenizer *t, const char *text, size_t len, size_t start);

/* The bytes token `id` adds to the text. is_first drops the space the SPM
 * space prefix put in front of the text: pass 1 for the first token after BOS
 * (no effect for BPE or without add_space_prefix). Control and unused tokens
 * give nothing; unknown and user-defined tokens their text. *n is always set to
 * the length; KILN_ERR_ARGUMENT (nothing written) when it exceeds cap, for an
 * id outside the vocabulary, or a NULL pointer. cap >= max_token_bytes is
 * always enough. */
kiln_status kiln_token_piece(const kiln_tokenizer *t, int32_t id, int is_first, char *out,
                             size_t cap, size_t *n);

/* The raw text of token `id` as stored (SentencePiece or GPT-2 alphabet), or
 * NULL for an id outside the vocabulary; *len gets its length. */
const char *kiln_token_text(const kiln_tokenizer *t, int32_t id, size_t *len);

/* Special ids, -1 when the vocab has none. */
int32_t kiln_tokenizer_bos(const kiln_tokenizer *t);
int32_t kiln_tokenizer_eos(const kiln_tokenizer *t);
/* Whether `id` ends generation (EOS, EOT, a template's end of turn). */
int kiln_tokenizer_is_eog(const kiln_tokenizer *t, int32_t id);
/* KILN_CHAT_* of the model's chat template. */
uint32_t kiln_tokenizer_chat(const kiln_tokenizer *t);

/* The text of one exchange of a chat in template `chat` (KILN_CHAT_*): the
 * end of the previous assistant turn unless `first` (whose end-of-turn token
 * generation stopped at, so it was never decoded), a system turn when system
 * is not NULL (gemma has none: the text goes before the user's), the user's
 * turn, and the header the assistant's reply follows. Tokenize it with
 * KILN_TOKENIZE_PARSE_SPECIAL (and ADD_SPECIAL on the first exchange). *n is
 * always set to the length (no terminator is written); KILN_ERR_ARGUMENT,
 * nothing written, when it exceeds cap, for KILN_CHAT_NONE or an unknown
 * template, or a NULL pointer. */
kiln_status kiln_chat_prompt(uint32_t chat, int first, const char *system, const char *user,
                             char *out, size_t cap, size_t *n);
int32_t kiln_tokenizer_n_tokens(const kiln_tokenizer *t);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_TOKENIZER_H */
