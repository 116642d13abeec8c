/* What the panel kernel benchmarks share once the kernels are included: the
 * family a format name reads and a random matrix of it. */
#ifndef KILN_BENCH_FORMATS_H
#define KILN_BENCH_FORMATS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One matrix in the row layout: f16 values, or groups of an f16 scale then
 * int8 values or int4 nibble pairs, or GGUF blocks, all random but their f16
 * scales (0.01, so no value is a NaN). */
static void fill_rows(int family, uint8_t *w, int32_t n, int32_t k, int32_t g) {
  const size_t rb = kiln_uk_row_bytes(family, k, g);
  const uint16_t h = kiln_f32_to_f16(0.01f);
  size_t i, at;
  for (i = 0; i < rb * (size_t)n; ++i)
    w[i] = (uint8_t)rand();
  if (kiln_uk_is_block_family(family)) {
    int32_t scales[2], j;
    kiln_uk_block_scales_at(family, scales);
    for (at = 0; at < rb * (size_t)n; at += (size_t)kiln_uk_block_bytes(family))
      for (j = 0; j < 2; ++j)
        if (scales[j] >= 0)
          memcpy(w + at + scales[j], &h, sizeof h);
    return;
  }
  if (family == KILN_UK_F16) {
    for (i = 0; i < (size_t)n * (size_t)k; ++i) {
      const uint16_t h = kiln_f32_to_f16((float)rand() / (float)RAND_MAX - 0.5f);
      memcpy(w + 2 * i, &h, sizeof h);
    }
    return;
  }
  for (at = 0; at < rb * (size_t)n; at += rb / (size_t)(k / g))
    memcpy(w + at, &h, sizeof h);
}

/* The family a format name on the command line reads, or -1. */
static int family_of(const char *name) {
  int f;
  if (strcmp(name, "q4_0") == 0)
    return KILN_UK_I4;
  if (strcmp(name, "q8_0") == 0)
    return KILN_UK_I8;
  if (strcmp(name, "f16") == 0)
    return KILN_UK_F16;
  for (f = 0; f < KILN_UK_FAMILIES; ++f)
    if (kiln_uk_is_block_family(f) && f != KILN_UK_TQ2_0 && strcmp(name, kiln_uk_family_name(f)) == 0)
      return f;
  return -1;
}

#endif
