/* libFuzzer target: the chat templates and the byte-BPE pre-tokenizers, over
 * any text. kiln_chat_prompt must give the length it promises and write
 * exactly that many bytes into a buffer of exactly that size; each
 * pre-tokenizer must split any bytes into pieces that make progress and stay
 * inside the text.
 *
 * Input: byte 0 picks the template (including unknown ones), byte 1 the
 * pre-tokenizer, byte 2 the flags (bit 0: first exchange, bit 1: a system
 * turn); the rest is the system text, a NUL, then the user text. */
#include "kiln/kiln_tokenizer.h"
#include "tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

static char *copy(const uint8_t *p, size_t n) {
  char *s = (char *)malloc(n + 1);
  memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *text, *nul;
  size_t n_text, n_sys, n = 0, m = 0, i, end;
  char *sys, *user, *out;
  kiln_status s;

  if (size < 3)
    return 0;
  text = data + 3;
  n_text = size - 3;
  nul = (const uint8_t *)memchr(text, 0, n_text);
  n_sys = nul ? (size_t)(nul - text) : n_text;
  sys = copy(text, n_sys);
  user = copy(nul ? nul + 1 : text + n_text, nul ? n_text - n_sys - 1 : 0);

  s = kiln_chat_prompt(data[0] % 6u, data[2] & 1, (data[2] & 2) ? sys : NULL, user, NULL, 0, &n);
  if (s == KILN_OK && n != 0)
    abort(); /* a non-empty prompt cannot fit 0 bytes */
  if (data[0] % 6u != KILN_CHAT_NONE && data[0] % 6u <= KILN_CHAT_PHI3) {
    out = (char *)malloc(n ? n : 1);
    if (kiln_chat_prompt(data[0] % 6u, data[2] & 1, (data[2] & 2) ? sys : NULL, user, out, n,
                         &m) != KILN_OK ||
        m != n)
      abort();
    free(out);
  }

  for (i = 0; i < n_text; i = end) {
    end = kiln_piece_end(data[1] % 6u, text, n_text, i);
    if (end <= i || end > n_text)
      abort();
  }
  free(sys);
  free(user);
  return 0;
}
