/* arm-neon: AArch64 NEON dot products, with the Armv8.2 dot-product
 * instructions (sdot) for int8 weights. */
#ifndef KILN_UK_NEON_MATMUL_ROWS_H
#define KILN_UK_NEON_MATMUL_ROWS_H

#include "kernels/arm/neon/kiln_uk_neon_base.h"

#define KILN_UK_HAS_DOT_F32 1
static inline float kiln_uk_dot_f32(const float *x, const uint8_t *w, int32_t k) {
  const float *r = (const float *)(const void *)w;
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = vdupq_n_f32(0.0f);
  int32_t i, whole = k - k % 8;
  float s;
  for (i = 0; i < whole; i += 8) {
    a0 = vfmaq_f32(a0, vld1q_f32(x + i), vld1q_f32(r + i));
    a1 = vfmaq_f32(a1, vld1q_f32(x + i + 4), vld1q_f32(r + i + 4));
  }
  s = vaddvq_f32(vaddq_f32(a0, a1));
  for (i = whole; i < k; ++i)
    s += x[i] * r[i];
  return s;
}

#define KILN_UK_HAS_DOT_F16 1
static inline float kiln_uk_dot_f16(const float *x, const uint8_t *w, int32_t k) {
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = vdupq_n_f32(0.0f);
  int32_t i, whole = k - k % 8;
  float s;
  for (i = 0; i < whole; i += 8) {
    float16x8_t h = vreinterpretq_f16_u16(vld1q_u16((const uint16_t *)(const void *)(w + 2 * i)));
    a0 = vfmaq_f32(a0, vld1q_f32(x + i), vcvt_f32_f16(vget_low_f16(h)));
    a1 = vfmaq_f32(a1, vld1q_f32(x + i + 4), vcvt_high_f32_f16(h));
  }
  s = vaddvq_f32(vaddq_f32(a0, a1));
  for (i = whole; i < k; ++i)
    s += x[i] * kiln_uk_load_f16(w + 2 * i);
  return s;
}

#define KILN_UK_HAS_QDOT_I8 1
/* int8 weights (f16 scale + g int8 per group, g a multiple of 16) against int8
 * activations: sdot int32 sums per group, scaled into float lanes. */
static inline float kiln_uk_qdot_i8(const int8_t *xq, const float *xd, const uint8_t *w, int32_t k,
                     int32_t g) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  int32_t b, j;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + g) * b;
    const int8_t *q = (const int8_t *)(const void *)(blk + 2);
    int32x4_t s = vdupq_n_s32(0);
    for (j = 0; j < g; j += 16)
      s = vdotq_s32(s, vld1q_s8(xq + g * b + j), vld1q_s8(q + j));
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(s), xd[b] * kiln_uk_load_f16(blk));
  }
  return vaddvq_f32(acc);
}

#define KILN_UK_HAS_QDOT_I4 1
/* int4 weights: byte j of a group holds value j (low nibble) and j + g/2 (high
 * nibble), each + 8; 16 bytes give 32 int8 lanes for two sdot. */
static inline float kiln_uk_qdot_i4(const int8_t *xq, const float *xd, const uint8_t *w, int32_t k,
                     int32_t g) {
  const uint8x16_t low = vdupq_n_u8(15);
  const int8x16_t eight = vdupq_n_s8(8);
  float32x4_t acc = vdupq_n_f32(0.0f);
  int32_t b, j, h = g / 2;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + h) * b;
    const int8_t *xb = xq + g * b;
    int32x4_t s = vdupq_n_s32(0);
    for (j = 0; j < h; j += 16) {
      uint8x16_t raw = vld1q_u8(blk + 2 + j);
      int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, low)), eight);
      int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), eight);
      s = vdotq_s32(s, vld1q_s8(xb + j), lo);
      s = vdotq_s32(s, vld1q_s8(xb + h + j), hi);
    }
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(s), xd[b] * kiln_uk_load_f16(blk));
  }
  return vaddvq_f32(acc);
}

#endif /* KILN_UK_NEON_MATMUL_ROWS_H */
