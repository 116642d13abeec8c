/* arm-cortex-m55: Armv8.1-M with Helium (MVE). One vmladava multiplies 16
 * int8 weights by 16 int8 activations and adds all the products to a scalar
 * 32-bit sum, so a group of 32 int8 weights (q8_0) costs two loads of each and
 * two instructions, and a group of int4 weights (q4_0) one load, a mask, a
 * shift and two subtractions more. The group dots go into the portable row
 * dot (KILN_UK_QDOT_ROW), so the results are the portable bits. Every other helper is the portable one,
 * which the core's FPU runs. The generated <name>_kernels.c includes this, then
 * kernels/c99/kiln_uk_c99.h. */
#ifndef KILN_UK_MVE_H
#define KILN_UK_MVE_H

#if !defined(__ARM_FEATURE_MVE)
#error "this model was generated for arm-cortex-m55: build with -mcpu=cortex-m55 (Helium)"
#endif
#include <arm_mve.h>

#include "kernels/c99/kiln_uk_base.h"

#define KILN_UK_HAS_QDOT_I8 1
/* g is a multiple of 16. */
static inline int32_t kiln_uk_mve_group_i8(const int8_t *x, const uint8_t *codes, int32_t g) {
  const int8_t *q = (const int8_t *)(const void *)codes;
  int32_t s = 0, j;
  for (j = 0; j < g; j += 16)
    s = vmladavaq_s8(s, vld1q_s8(x + j), vld1q_s8(q + j));
  return s;
}
KILN_UK_QDOT_ROW(kiln_uk_qdot_i8, 1, kiln_uk_mve_group_i8)

#define KILN_UK_HAS_QDOT_I4 1
/* int4: byte j of a group holds value j (low nibble) and j + g/2 (high), each
 * + 8; g/2 is a multiple of 16. */
static inline int32_t kiln_uk_mve_group_i4(const int8_t *x, const uint8_t *q, int32_t g) {
  const uint8x16_t low = vdupq_n_u8(15);
  const int8x16_t eight = vdupq_n_s8(8);
  int32_t s = 0, j, h = g / 2;
  for (j = 0; j < h; j += 16) {
    const uint8x16_t raw = vld1q_u8(q + j);
    s = vmladavaq_s8(s, vld1q_s8(x + j), vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, low)), eight));
    s = vmladavaq_s8(s, vld1q_s8(x + h + j),
                     vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), eight));
  }
  return s;
}
KILN_UK_QDOT_ROW(kiln_uk_qdot_i4, 2, kiln_uk_mve_group_i4)

#endif /* KILN_UK_MVE_H */
