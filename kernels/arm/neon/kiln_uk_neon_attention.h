/* arm-neon: the KV cache's int8 and int4 stores and attention's inner loops
 * (scores with sdot, value updates), 4 lanes at a time. */
#ifndef KILN_UK_NEON_ATTENTION_H
#define KILN_UK_NEON_ATTENTION_H

#include "kernels/arm/neon/kiln_uk_neon_base.h"

/* KV cache rows of one head (attention's inner loops), 4 lanes at a time. */
static inline float32x4_t kiln_uk_kv_load4(int family, const uint8_t *row, int32_t i) {
  if (family == KILN_UK_F32)
    return vld1q_f32((const float *)(const void *)row + i);
  if (family == KILN_UK_F16)
    return kiln_uk_load_scales4(row + 2 * i);
  {
    int8_t b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    memcpy(b, row + 2 + i, 4);
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vld1_s8(b)))));
  }
}
/* q . row, unscaled for i8 rows. */
KILN_UK_INLINE float kiln_uk_kv_dot4(int family, const float *q, const uint8_t *row, int32_t hd) {
  float32x4_t s = vdupq_n_f32(0.0f);
  float t;
  int32_t i;
  for (i = 0; i + 4 <= hd; i += 4)
    s = vfmaq_f32(s, vld1q_f32(q + i), kiln_uk_kv_load4(family, row, i));
  t = vaddvq_f32(s);
  for (; i < hd; ++i)
    t += q[i] * kiln_uk_kv_value(family, row, i);
  return t;
}
KILN_UK_INLINE void kiln_uk_kv_axpy4(int family, float *acc, float e, const uint8_t *row, int32_t hd) {
  int32_t i;
  for (i = 0; i + 4 <= hd; i += 4)
    vst1q_f32(acc + i, vfmaq_n_f32(vld1q_f32(acc + i), kiln_uk_kv_load4(family, row, i), e));
  for (; i < hd; ++i)
    acc[i] += e * kiln_uk_kv_value(family, row, i);
}

#define KILN_UK_HAS_KV_F32 1
#define KILN_UK_HAS_KV_F16 1
#define KILN_UK_HAS_KV_I8 1
KILN_UK_KV_HELPERS(kiln_uk_kv_dot4, kiln_uk_kv_axpy4)

/* A q4 cache block (16 code bytes: values 0-15 in the low nibbles, 16-31 in
 * the high ones) in vectors, sdot as qdot_i4; the row loops and each block's
 * float expression stay the portable ones. */
#define KILN_UK_HAS_KV_Q4_DOT 1
static inline int32_t kiln_uk_kv_q4_dot(const uint8_t *codes, const int8_t *q) {
  const uint8x16_t c = vld1q_u8(codes);
  int32x4_t s = vdotq_s32(vdupq_n_s32(0), vld1q_s8(q), vreinterpretq_s8_u8(vandq_u8(c, vdupq_n_u8(15))));
  s = vdotq_s32(s, vld1q_s8(q + 16), vreinterpretq_s8_u8(vshrq_n_u8(c, 4)));
  return vaddvq_s32(s);
}

/* An int8 cache row's exact dot with the query, sdot 16 values a step. */
#define KILN_UK_HAS_KV_I8_DOT 1
static inline int32_t kiln_uk_kv_i8_dot(const int8_t *k, const int8_t *q, int32_t n) {
  int32x4_t s = vdupq_n_s32(0);
  int32_t i, dot;
  for (i = 0; i + 16 <= n; i += 16)
    s = vdotq_s32(s, vld1q_s8(k + i), vld1q_s8(q + i));
  dot = vaddvq_s32(s);
  for (; i < n; ++i)
    dot += (int32_t)q[i] * (int32_t)k[i];
  return dot;
}

#define KILN_UK_HAS_KV_Q4_AXPY 1
static inline void kiln_uk_kv_q4_axpy(float *a, float ed, float em, const uint8_t *codes) {
  const uint8x16_t c = vld1q_u8(codes);
  const uint8x16_t half[2] = {vandq_u8(c, vdupq_n_u8(15)), vshrq_n_u8(c, 4)};
  const float32x4_t emv = vdupq_n_f32(em);
  int32_t k, j;
  for (k = 0; k < 2; ++k) { /* values 16k..16k+15 */
    const uint16x8_t w[2] = {vmovl_u8(vget_low_u8(half[k])), vmovl_u8(vget_high_u8(half[k]))};
    for (j = 0; j < 4; ++j) {
      const uint16x4_t v = j % 2 ? vget_high_u16(w[j / 2]) : vget_low_u16(w[j / 2]);
      float *p = a + 16 * k + 4 * j;
      vst1q_f32(p, vaddq_f32(vld1q_f32(p), vfmaq_n_f32(emv, vcvtq_f32_u32(vmovl_u16(v)), ed)));
    }
  }
}

#define KILN_UK_HAS_KV_STORE_I8 1
/* As the portable kv_store_i8, 8 values at a time: the same f16-rounded scale,
 * and vcvtaq rounds half away from zero as roundf does, so the same bytes. */
static inline void kiln_uk_kv_store_i8(const float *x, uint8_t *row, int32_t hd) {
  int8_t *q = (int8_t *)(void *)(row + 2);
  float32x4_t m4 = vdupq_n_f32(0.0f);
  float amax, d, id;
  uint16_t h;
  int32_t i;
  for (i = 0; i + 4 <= hd; i += 4)
    m4 = vmaxq_f32(m4, vabsq_f32(vld1q_f32(x + i)));
  amax = vmaxvq_f32(m4);
  for (; i < hd; ++i)
    amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
  h = kiln_f32_to_f16(amax / 127.0f);
  memcpy(row, &h, sizeof h);
  d = kiln_f16_to_f32(h);
  id = d != 0.0f ? 1.0f / d : 0.0f;
  for (i = 0; i + 8 <= hd; i += 8) {
    const int32x4_t a = vcvtaq_s32_f32(vmulq_n_f32(vld1q_f32(x + i), id));
    const int32x4_t b = vcvtaq_s32_f32(vmulq_n_f32(vld1q_f32(x + i + 4), id));
    const int16x8_t w = vcombine_s16(vqmovn_s32(a), vqmovn_s32(b));
    vst1_s8(q + i, vmax_s8(vqmovn_s16(w), vdup_n_s8(-127)));
  }
  for (; i < hd; ++i) {
    float v = roundf(x[i] * id);
    q[i] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
  }
}

#define KILN_UK_HAS_KV_STORE_Q4 1
/* As the portable kv_store_q4, a block of 32 as eight vectors: the same
 * f16-rounded d and m and the same codes (vcvtaq rounds as roundf), so the
 * same bytes. */
static inline void kiln_uk_kv_store_q4(const float *x, uint8_t *row, int32_t hd) {
  int32_t b, j;
  for (b = 0; b < hd / 32; ++b) {
    const float *xb = x + 32 * b;
    uint8_t *blk = row + 20 * b;
    float32x4_t lo = vld1q_f32(xb), hi = lo;
    uint32x4_t c[8];
    float d, m, id;
    for (j = 4; j < 32; j += 4) {
      lo = vminq_f32(lo, vld1q_f32(xb + j));
      hi = vmaxq_f32(hi, vld1q_f32(xb + j));
    }
    kiln_uk_kv_q4_scales(blk, vminvq_f32(lo), vmaxvq_f32(hi), &d, &m);
    id = d != 0.0f ? 1.0f / d : 0.0f;
    for (j = 0; j < 8; ++j) {
      const int32x4_t v =
          vcvtaq_s32_f32(vmulq_n_f32(vsubq_f32(vld1q_f32(xb + 4 * j), vdupq_n_f32(m)), id));
      c[j] = vreinterpretq_u32_s32(vminq_s32(vmaxq_s32(v, vdupq_n_s32(0)), vdupq_n_s32(15)));
    }
    for (j = 0; j < 4; j += 2) { /* byte i: value i | value i + 16 << 4 */
      const uint32x4_t b0 = vorrq_u32(c[j], vshlq_n_u32(c[j + 4], 4));
      const uint32x4_t b1 = vorrq_u32(c[j + 1], vshlq_n_u32(c[j + 5], 4));
      vst1_u8(blk + 4 + 4 * j, vmovn_u16(vcombine_u16(vmovn_u32(b0), vmovn_u32(b1))));
    }
  }
}

#endif /* KILN_UK_NEON_ATTENTION_H */
