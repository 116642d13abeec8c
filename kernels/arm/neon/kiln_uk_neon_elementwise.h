/* arm-neon: exp, rms_norm, rope and silu, 4 lanes at a time. */
#ifndef KILN_UK_NEON_ELEMENTWISE_H
#define KILN_UK_NEON_ELEMENTWISE_H

#include "kernels/arm/neon/kiln_uk_neon_base.h"

/* e^x, 4 lanes: 2^n e^r with n = round(x log2 e), |r| <= ln2 / 2, a degree-6
 * Taylor polynomial for e^r (relative error about 1e-7), and 2^n built in the
 * exponent bits; x is clamped to [-87, 88] so n stays a normal exponent. */
static inline float32x4_t kiln_uk_expq_f32(float32x4_t x) {
  float32x4_t n, r, p;
  int32x4_t e;
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.0f)), vdupq_n_f32(88.0f));
  n = vrndnq_f32(vmulq_n_f32(x, 1.44269504f));
  r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  p = vdupq_n_f32(1.0f / 720.0f);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

#define KILN_UK_HAS_EXP_BLOCK 1
static inline void kiln_uk_exp_block(const float *x, float m, float *e, int32_t n) {
  int32_t i;
  for (i = 0; i + 4 <= n; i += 4)
    vst1q_f32(e + i, kiln_uk_expq_f32(vsubq_f32(vld1q_f32(x + i), vdupq_n_f32(m))));
  for (; i < n; ++i)
    e[i] = expf(x[i] - m);
}

#define KILN_UK_HAS_RMS_NORM_ROW 1
/* As the portable rms_norm_row: the sum of squares in double lanes, then the
 * scaling 4 floats at a time (each element rounded as the portable one). */
static inline void kiln_uk_rms_norm_row(const float *x, const float *g, float *y, int32_t d, float eps) {
  float64x2_t s0 = vdupq_n_f64(0.0), s1 = s0;
  double ss;
  float scale;
  int32_t i;
  for (i = 0; i + 4 <= d; i += 4) {
    float32x4_t v = vld1q_f32(x + i);
    float64x2_t lo = vcvt_f64_f32(vget_low_f32(v)), hi = vcvt_high_f64_f32(v);
    s0 = vfmaq_f64(s0, lo, lo);
    s1 = vfmaq_f64(s1, hi, hi);
  }
  ss = vaddvq_f64(vaddq_f64(s0, s1));
  for (; i < d; ++i)
    ss += (double)x[i] * (double)x[i];
  scale = (float)(1.0 / sqrt(ss / d + (double)eps));
  for (i = 0; i + 4 <= d; i += 4)
    vst1q_f32(y + i, vmulq_f32(vmulq_f32(vld1q_f32(x + i), vdupq_n_f32(scale)), vld1q_f32(g + i)));
  for (; i < d; ++i)
    y[i] = x[i] * scale * g[i];
}

#define KILN_UK_HAS_ROPE_HEAD 1
/* As the portable rope_head, 4 values at a time: the products and their sum
 * as separate instructions, so the bits are the reference's. */
static inline void kiln_uk_rope_head(const float *x, float *y, const float *cc, const float *ss,
                             int32_t rd, int32_t hd, int neox) {
  const int32_t h = rd / 2;
  int32_t j;
  if (neox) {
    for (j = 0; j < h; j += 4) {
      const int32_t n = h - j < 4 ? h - j : 4;
      const float32x4_t a = kiln_uk_load_lanes(x + j, n), b = kiln_uk_load_lanes(x + j + h, n);
      kiln_uk_store_lanes(y + j,
                  vaddq_f32(vmulq_f32(a, kiln_uk_load_lanes(cc + j, n)), vmulq_f32(b, kiln_uk_load_lanes(ss + j, n))),
                  n);
      kiln_uk_store_lanes(y + j + h,
                  vaddq_f32(vmulq_f32(b, kiln_uk_load_lanes(cc + j + h, n)),
                            vmulq_f32(a, kiln_uk_load_lanes(ss + j + h, n))),
                  n);
    }
  } else {
    for (j = 0; j < rd; j += 4) {
      const int32_t n = rd - j < 4 ? rd - j : 4;
      const float32x4_t a = kiln_uk_load_lanes(x + j, n);
      kiln_uk_store_lanes(y + j,
                  vaddq_f32(vmulq_f32(a, kiln_uk_load_lanes(cc + j, n)),
                            vmulq_f32(vrev64q_f32(a), kiln_uk_load_lanes(ss + j, n))),
                  n);
    }
  }
  for (j = rd; j < hd; ++j)
    y[j] = x[j];
}

#define KILN_UK_HAS_SILU 1
static inline float32x4_t kiln_uk_silu4(float32x4_t v) {
  return vdivq_f32(v, vaddq_f32(vdupq_n_f32(1.0f), kiln_uk_expq_f32(vnegq_f32(v))));
}

/* The tail goes through the vector code too, so every element gets the same
 * bits wherever a call's range starts (threads split the rows). */
static inline void kiln_uk_silu(const float *x, float *y, int32_t n) {
  float t[4] = {0};
  int32_t i, j;
  for (i = 0; i + 4 <= n; i += 4)
    vst1q_f32(y + i, kiln_uk_silu4(vld1q_f32(x + i)));
  if (i == n)
    return;
  for (j = 0; i + j < n; ++j)
    t[j] = x[i + j];
  vst1q_f32(t, kiln_uk_silu4(vld1q_f32(t)));
  for (j = 0; i + j < n; ++j)
    y[i + j] = t[j];
}

#endif /* KILN_UK_NEON_ELEMENTWISE_H */
