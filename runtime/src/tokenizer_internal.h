/* What tokenizer.c and pretokenize.c share; private to the runtime. */
#ifndef KILN_TOKENIZER_INTERNAL_H
#define KILN_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Byte-BPE: the end of the piece of s[0..len) that starts at i, by the
 * pre-tokenizer `pre` (KILN_VOCAB_PRE_*; GPT-2's for any other value). */
size_t kiln_piece_end(uint32_t pre, const uint8_t *s, size_t len, size_t i);

#endif
