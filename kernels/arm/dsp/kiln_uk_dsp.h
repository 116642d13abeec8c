/* arm-cortex-m4 and arm-cortex-m7: Armv7E-M with the DSP extension. Its SIMD32
 * instructions multiply two pairs of 16-bit lanes and add both products to a
 * 32-bit sum in one instruction (smlad), so four int8 weights meet four int8
 * activations in two, after sxtb16 spreads the even and the odd bytes of a
 * word into 16-bit lanes. The int8 (q8_0) and int4 (q4_0) row dots use them;
 * every other helper is the portable one, which the core's FPU runs. The
 * generated <name>_kernels.c includes this, then kernels/c99/kiln_uk_c99.h. */
#ifndef KILN_UK_DSP_H
#define KILN_UK_DSP_H

#if !defined(__ARM_FEATURE_DSP) || !defined(__thumb2__)
#error "this model was generated for arm-cortex-m4/m7: build with -mcpu=cortex-m4 or -mcpu=cortex-m7"
#endif
#include <arm_acle.h>

#include "kernels/c99/kiln_uk_base.h"

/* The odd bytes in the even places: sxtb16's own rotation. */
static inline uint32_t kiln_uk_dsp_ror8(uint32_t x) { return (x >> 8) | (x << 24); }

/* Four int8 products of the bytes of x and w added to s. */
static inline int32_t kiln_uk_dsp_dot4(uint32_t x, uint32_t w, int32_t s) {
  s = __smlad(__sxtb16(x), __sxtb16(w), s);
  return __smlad(__sxtb16(kiln_uk_dsp_ror8(x)), __sxtb16(kiln_uk_dsp_ror8(w)), s);
}

/* A word from any address: Armv7-M loads unaligned words in one instruction. */
static inline uint32_t kiln_uk_dsp_word(const void *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

#define KILN_UK_HAS_QDOT_I8 1
/* As the portable dot: an exact int32 sum per group, then the same float
 * multiply-add, so the result is the same bits. */
static inline float kiln_uk_qdot_i8(const int8_t *xq, const float *xd, const uint8_t *w, int32_t k,
                                    int32_t g) {
  float acc = 0.0f;
  int32_t b, j;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + g) * b;
    const int8_t *xb = xq + g * b;
    int32_t s = 0;
    for (j = 0; j < g; j += 8) {
      s = kiln_uk_dsp_dot4(kiln_uk_dsp_word(xb + j), kiln_uk_dsp_word(blk + 2 + j), s);
      s = kiln_uk_dsp_dot4(kiln_uk_dsp_word(xb + j + 4), kiln_uk_dsp_word(blk + 6 + j), s);
    }
    acc += (float)s * (xd[b] * kiln_uk_load_f16(blk));
  }
  return acc;
}

#define KILN_UK_HAS_QDOT_I4 1
/* int4: byte j of a group holds value j (low nibble) and j + g/2 (high), each
 * + 8; ssub8 takes the 8 off four nibbles at once. */
static inline float kiln_uk_qdot_i4(const int8_t *xq, const float *xd, const uint8_t *w, int32_t k,
                                    int32_t g) {
  const uint32_t nibbles = 0x0f0f0f0fu, eights = 0x08080808u;
  float acc = 0.0f;
  int32_t b, j, h = g / 2;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + h) * b;
    const int8_t *xb = xq + g * b;
    int32_t s = 0;
    for (j = 0; j < h; j += 4) {
      const uint32_t raw = kiln_uk_dsp_word(blk + 2 + j);
      s = kiln_uk_dsp_dot4(kiln_uk_dsp_word(xb + j), (uint32_t)__ssub8(raw & nibbles, eights), s);
      s = kiln_uk_dsp_dot4(kiln_uk_dsp_word(xb + h + j),
                           (uint32_t)__ssub8((raw >> 4) & nibbles, eights), s);
    }
    acc += (float)s * (xd[b] * kiln_uk_load_f16(blk));
  }
  return acc;
}

#endif /* KILN_UK_DSP_H */
