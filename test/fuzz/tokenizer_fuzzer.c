/* libFuzzer target: the runtime tokenizer over untrusted vocab segments (the
 * segment comes from a pack file). kiln_tokenizer_init must reject any byte
 * string it cannot fully trust, since encoding and decoding do no bounds checks
 * of their own; a segment it accepts must then tokenize any text and decode
 * every id without reading or writing out of bounds.
 *
 * Input: a vocab segment; the bytes after its total_bytes (header offset 40),
 * up to 1 KiB, are tokenized as text too, so mutations reach the encoder with
 * both halves.
 * Every buffer is allocated at exactly the size the API asks for, so ASan sees
 * a one-byte overrun. */
#include "kiln/kiln_tokenizer.h"

#include <stdlib.h>
#include <string.h>

static const char *const kTexts[] = {
    "",
    "Hello world",
    " the  quick\n\tbrown fox's 12 jumps!! they'll we've  ",
    "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x99\x82 \xE2\x96\x81x",
    "\xFF\xFE\x80 \xE2\x96 \xC3 <0x41><s></s>\r\n",
    "<|endoftext|>x<|im_start|>user\n<|im_end|><|endoftext|",
};

static uint32_t load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Decodes id, checking the documented size promises of kiln_token_piece: a
 * measuring call (cap 0) gives the length, which fits max_token_bytes, and a
 * buffer of exactly that length then takes the piece. `piece` holds
 * max_token_bytes: the piece goes at its end, so ASan sees any byte written past
 * the length (no malloc per id, which would dominate the run time). */
static void decode(const kiln_tokenizer *t, int32_t id, int is_first, char *piece) {
  size_t n = 0, m = 0, len = 0;
  kiln_status s = kiln_token_piece(t, id, is_first, NULL, 0, &n);

  if ((s != KILN_OK && s != KILN_ERR_ARGUMENT) || (s == KILN_OK) != (n == 0) ||
      n > t->max_token_bytes)
    abort();
  if (kiln_token_piece(t, id, is_first, piece + t->max_token_bytes - n, n, &m) != KILN_OK ||
      m != n)
    abort();
  if (kiln_token_text(t, id, &len) == NULL || len > t->max_token_bytes)
    abort();
}

static void tokenize(const kiln_tokenizer *t, const char *text, size_t len, int add_special,
                     char *piece) {
  size_t need = kiln_tokenize_work_bytes(t, len);
  /* The documented bound on the id count. */
  int32_t cap = (int32_t)(3 * len + 5), n = -1, m = -1, i;
  uint8_t *work;
  int32_t *ids;
  kiln_status s;

  if (need == 0)
    abort(); /* only texts over 256 MiB are too long */
  /* Work one byte past a malloc boundary: misaligned, ending exactly at the block's end. */
  work = malloc(need + 1);
  ids = malloc(sizeof(int32_t) * (size_t)cap);
  if (work == NULL || ids == NULL)
    abort();
  s = kiln_tokenize(t, text, len, add_special, ids, cap, &n, work + 1, need);
  if (s != KILN_OK || n < 0 || n > cap)
    abort();
  for (i = 0; i < n; ++i) {
    if (ids[i] < 0 || (uint32_t)ids[i] >= t->n_tokens)
      abort();
    decode(t, ids[i], i == 0 || (i == 1 && ids[0] == t->bos), piece);
  }
  /* Too few ids: same count reported, the prefix written, an error returned. */
  if (n > 0) {
    int32_t *few = malloc(sizeof(int32_t) * (size_t)(n / 2 + 1));
    if (few == NULL)
      abort();
    s = kiln_tokenize(t, text, len, add_special, few, n / 2, &m, work + 1, need);
    if (s != KILN_ERR_ARGUMENT || m != n || memcmp(few, ids, sizeof(int32_t) * (size_t)(n / 2)))
      abort();
    free(few);
  }
  /* One byte less work than asked for is refused. */
  if (kiln_tokenize(t, text, len, add_special, ids, cap, &m, work + 1, need - 1) !=
      KILN_ERR_ARGUMENT)
    abort();
  free(ids);
  free(work);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const kiln_tokenizer zero;
  kiln_tokenizer t;
  size_t k, total;
  char *piece;
  int32_t id;

  if (kiln_tokenizer_init(&t, data, size) != KILN_OK) {
    if (memcmp(&t, &zero, sizeof t) != 0)
      abort(); /* documented: zeroed on failure */
    return 0;
  }
  total = load_le32(data + 40);
  if (t.n_tokens == 0 || total > size || t.max_token_bytes > total)
    abort();
  piece = malloc(t.max_token_bytes ? t.max_token_bytes : 1u);
  if (piece == NULL)
    abort();
  /* Every token of a small vocab, which reaches all token types. */
  for (id = 0; id < (int32_t)t.n_tokens && id < 4096; ++id)
    decode(&t, id, id == 0, piece);
  for (k = 0; k < sizeof kTexts / sizeof kTexts[0]; ++k) {
    tokenize(&t, kTexts[k], strlen(kTexts[k]), KILN_TOKENIZE_ADD_SPECIAL, piece);
    tokenize(&t, kTexts[k], strlen(kTexts[k]), KILN_TOKENIZE_PARSE_SPECIAL, piece);
  }
  /* At most 1 KiB of it: longer texts take no other paths, only time that the
   * mutations of the segment itself need more. Special tokens' texts are read
   * as those tokens, and the pieces of the split cover the text. */
  {
    const char *text = (const char *)data + total;
    size_t len = size - total < 1024u ? size - total : 1024u, at = 0;
    tokenize(&t, text, len, KILN_TOKENIZE_ADD_SPECIAL | KILN_TOKENIZE_PARSE_SPECIAL, piece);
    while (at < len) {
      size_t end = kiln_pretokenize_next(&t, text, len, at);
      if (end <= at || end > len)
        abort();
      at = end;
    }
  }
  (void)kiln_tokenizer_is_eog(&t, (int32_t)(size % (t.n_tokens + 1u)));
  free(piece);
  return 0;
}
