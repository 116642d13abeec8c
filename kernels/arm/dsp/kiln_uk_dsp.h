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

/* The odd bytes of x, sign-extended into two 16-bit lanes: sxtb16 with its
 * own rotation, which GCC does not fold from a separate rotate. */
static inline uint32_t kiln_uk_dsp_odd(uint32_t x) {
  uint32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
  return r;
}

/* Four int8 products of the bytes of x and w added to s. */
static inline int32_t kiln_uk_dsp_dot4(uint32_t x, uint32_t w, int32_t s) {
  s = __smlad(__sxtb16(x), __sxtb16(w), s);
  return __smlad(kiln_uk_dsp_odd(x), kiln_uk_dsp_odd(w), s);
}

/* The int4 codes of a word's low (shift 0) or high (shift 4) nibbles, less 8. */
static inline uint32_t kiln_uk_dsp_nibbles(uint32_t raw, int shift) {
  return (uint32_t)__ssub8((raw >> shift) & 0x0f0f0f0fu, 0x08080808u);
}

/* A word from any address: Armv7-M loads unaligned words in one instruction. */
static inline uint32_t kiln_uk_dsp_word(const void *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

#define KILN_UK_HAS_QDOT_I8 1
static inline int32_t kiln_uk_dsp_group_i8(const int8_t *x, const uint8_t *q, int32_t g) {
  int32_t s = 0, j;
  for (j = 0; j < g; j += 4)
    s = kiln_uk_dsp_dot4(kiln_uk_dsp_word(x + j), kiln_uk_dsp_word(q + j), s);
  return s;
}
KILN_UK_QDOT_ROW(kiln_uk_qdot_i8, 1, kiln_uk_dsp_group_i8)

#define KILN_UK_HAS_QDOT_I4 1
/* int4: byte j of a group holds value j (low nibble) and j + g/2 (high), each
 * + 8; ssub8 takes the 8 off four nibbles at once. */
static inline int32_t kiln_uk_dsp_group_i4(const int8_t *x, const uint8_t *q, int32_t g) {
  int32_t s = 0, j, h = g / 2;
  for (j = 0; j < h; j += 4) {
    const uint32_t raw = kiln_uk_dsp_word(q + j);
    s = kiln_uk_dsp_dot4(kiln_uk_dsp_word(x + j), kiln_uk_dsp_nibbles(raw, 0), s);
    s = kiln_uk_dsp_dot4(kiln_uk_dsp_word(x + h + j), kiln_uk_dsp_nibbles(raw, 4), s);
  }
  return s;
}
KILN_UK_QDOT_ROW(kiln_uk_qdot_i4, 2, kiln_uk_dsp_group_i4)

#define KILN_UK_HAS_QDOT_PAIR 1
/* Two weight rows (w and w + rb) against one activation row: each word of
 * activations is spread into 16-bit lanes once for both, a quarter fewer
 * instructions than two row dots. Each output is the row dot's bits. */
static inline void kiln_uk_qdot_pair(int family, const int8_t *xq, const float *xd,
                                     const uint8_t *w, size_t rb, int32_t k, int32_t g,
                                     float *y) {
  const int32_t four = family == KILN_UK_I4, bb = four ? 2 + g / 2 : 2 + g;
  const uint8_t *w1 = w + rb;
  float acc0 = 0.0f, acc1 = 0.0f;
  int32_t b, j;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *b0 = w + bb * b, *b1 = w1 + bb * b;
    const int8_t *xb = xq + g * b;
    int32_t s0 = 0, s1 = 0;
    if (four) {
      const int32_t h = g / 2;
      for (j = 0; j < h; j += 4) {
        const uint32_t xl = kiln_uk_dsp_word(xb + j), xh = kiln_uk_dsp_word(xb + h + j);
        const uint32_t le = __sxtb16(xl), lo = kiln_uk_dsp_odd(xl);
        const uint32_t he = __sxtb16(xh), ho = kiln_uk_dsp_odd(xh);
        const uint32_t r0 = kiln_uk_dsp_word(b0 + 2 + j), r1 = kiln_uk_dsp_word(b1 + 2 + j);
        uint32_t q = kiln_uk_dsp_nibbles(r0, 0);
        s0 = __smlad(lo, kiln_uk_dsp_odd(q), __smlad(le, __sxtb16(q), s0));
        q = kiln_uk_dsp_nibbles(r0, 4);
        s0 = __smlad(ho, kiln_uk_dsp_odd(q), __smlad(he, __sxtb16(q), s0));
        q = kiln_uk_dsp_nibbles(r1, 0);
        s1 = __smlad(lo, kiln_uk_dsp_odd(q), __smlad(le, __sxtb16(q), s1));
        q = kiln_uk_dsp_nibbles(r1, 4);
        s1 = __smlad(ho, kiln_uk_dsp_odd(q), __smlad(he, __sxtb16(q), s1));
      }
    } else {
      for (j = 0; j < g; j += 4) {
        const uint32_t x = kiln_uk_dsp_word(xb + j), xe = __sxtb16(x), xo = kiln_uk_dsp_odd(x);
        const uint32_t q0 = kiln_uk_dsp_word(b0 + 2 + j), q1 = kiln_uk_dsp_word(b1 + 2 + j);
        s0 = __smlad(xo, kiln_uk_dsp_odd(q0), __smlad(xe, __sxtb16(q0), s0));
        s1 = __smlad(xo, kiln_uk_dsp_odd(q1), __smlad(xe, __sxtb16(q1), s1));
      }
    }
    acc0 += (float)s0 * (xd[b] * kiln_uk_load_f16(b0));
    acc1 += (float)s1 * (xd[b] * kiln_uk_load_f16(b1));
  }
  y[0] = acc0;
  y[1] = acc1;
}

#endif /* KILN_UK_DSP_H */
