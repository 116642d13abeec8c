/* What every micro-kernel header of the library shares: fixed-size types, the
 * format families and weight layouts (kiln_uk_pack.h), the f16 conversions and
 * an unaligned f16 load. Plain C99. */
#ifndef KILN_UK_BASE_H
#define KILN_UK_BASE_H

#include "codegen_targets/c99/kiln_uk_pack.h"
#include "kiln/kiln_half.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The large kernels are written once with a row count or tile as a parameter
 * and instantiated with constants; forcing the inline keeps them specialised. */
#if defined(__GNUC__)
#define KILN_UK_INLINE static inline __attribute__((always_inline))
#else
#define KILN_UK_INLINE static inline
#endif

/* Largest head dimension the attention helpers take. */
#define KILN_UK_MAX_HEAD_DIM 256

static inline float load_f16(const uint8_t *p) {
  uint16_t h;
  memcpy(&h, p, sizeof h);
  return kiln_f16_to_f32(h);
}

#endif /* KILN_UK_BASE_H */
