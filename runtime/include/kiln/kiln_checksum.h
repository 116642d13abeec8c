/* The checksum of a pack's layer (kiln-compile --pack-checksum): FNV-1a over
 * little-endian 64-bit words, then the tail bytes. One definition for the
 * compiler that takes it and the generated code that checks it; a word at a
 * time keeps the check near memory speed. */
#ifndef KILN_KILN_CHECKSUM_H
#define KILN_KILN_CHECKSUM_H

#include <stdint.h>
#include <string.h>

static inline uint64_t kiln_checksum(const uint8_t *p, uint64_t n) {
  const uint64_t prime = 0x100000001b3ull;
  uint64_t h = 0xcbf29ce484222325ull, i, w;
  int b;
  for (i = 0; i + 8 <= n; i += 8) {
    for (w = 0, b = 7; b >= 0; --b)
      w = (w << 8) | p[i + (uint64_t)b];
    h = (h ^ w) * prime;
  }
  for (; i < n; ++i)
    h = (h ^ p[i]) * prime;
  return h;
}

#endif /* KILN_KILN_CHECKSUM_H */
