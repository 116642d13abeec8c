/* arm-neon: panel kernels over 4-row weight panels (kernels/c99/
 * kiln_uk_pack.h describes the layout). One int32x4 or float32x4 register holds
 * one value for each of a panel's 4 output rows: a quad of 16 weight bytes (4
 * rows x 4 columns) meets 4 activations in one sdot by lane (vdotq_laneq_s32),
 * so no dot product ends in a sum across lanes. */
#ifndef KILN_UK_NEON_PANELS_H
#define KILN_UK_NEON_PANELS_H

#include "kernels/arm/neon/kiln_uk_neon.h"

#define KILN_UK_NR 4

/* Loads / stores the first `valid` of 4 lanes. */
static inline float32x4_t load_lanes(const float *p, int32_t valid) {
  float t[4] = {0, 0, 0, 0};
  if (valid == 4)
    return vld1q_f32(p);
  memcpy(t, p, sizeof(float) * (size_t)valid);
  return vld1q_f32(t);
}
static inline void store_lanes(float *p, float32x4_t v, int32_t valid) {
  float t[4];
  if (valid == 4) {
    vst1q_f32(p, v);
    return;
  }
  vst1q_f32(t, v);
  memcpy(p, t, sizeof(float) * (size_t)valid);
}

static inline float32x4_t load_scales4(const uint8_t *p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)p)));
}

/* mr quantized activation rows against groups b0..b1-1 of one int8/int4 panel,
 * added to y unless b0 is 0 (the order of the additions does not depend on the
 * K block). int8 weights are stored + 128: flipping the top bit gives the signed
 * value back for sdot, so only int4 needs the bias correction. */
KILN_UK_INLINE void panel_tile_int(int family, const uint8_t *panel, const uint8_t *xs,
                                   size_t stride, int32_t mr, int32_t k, int32_t g, int32_t b0,
                                   int32_t b1, float *y, int32_t ldy, int32_t valid) {
  const int32_t groups = k / g;
  const size_t group_bytes = 8u + (size_t)(family == KILN_UK_I8 ? 4 * g : 2 * g);
  const uint8x16_t low = vdupq_n_u8(15), top = vdupq_n_u8(0x80);
  float32x4_t acc[KILN_UK_MR_MAX];
  int32_t r, b, c, first = 0;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? vdupq_n_f32(0.0f) : load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * group_bytes;
    int32x4_t is[KILN_UK_MR_MAX];
    float32x4_t ws = load_scales4(gp);
    for (r = 0; r < mr; ++r)
      is[r] = vdupq_n_s32(0);
#ifdef __ARM_FEATURE_MATMUL_INT8
    /* Pairs of activation rows take smmla (2x8 by 8x2): zipping two quads gives
     * rows 0-1 and rows 2-3 over 8 columns, and the 2x2 results unzip into each
     * activation row's 4 outputs. The int32 sums are the sdot ones. */
    for (first = 0; first + 2 <= mr; first += 2) {
      const int8_t *q0 = (const int8_t *)(const void *)(xs + first * stride + (size_t)groups * 8u);
      const int8_t *q1 = q0 + stride;
      int32x4_t p01 = vdupq_n_s32(0), p23 = vdupq_n_s32(0);
      if (family == KILN_UK_I8) {
        for (c = 0; c < g / 4; c += 2) {
          int32x4_t a = vreinterpretq_s32_u8(veorq_u8(vld1q_u8(gp + 8 + 16 * c), top));
          int32x4_t n = vreinterpretq_s32_u8(veorq_u8(vld1q_u8(gp + 24 + 16 * c), top));
          int8x16_t xb = vcombine_s8(vld1_s8(q0 + g * b + 4 * c), vld1_s8(q1 + g * b + 4 * c));
          p01 = vmmlaq_s32(p01, vreinterpretq_s8_s32(vzip1q_s32(a, n)), xb);
          p23 = vmmlaq_s32(p23, vreinterpretq_s8_s32(vzip2q_s32(a, n)), xb);
        }
      } else {
        for (c = 0; c < g / 8; c += 2) {
          uint8x16_t v0 = vld1q_u8(gp + 8 + 16 * c), v1 = vld1q_u8(gp + 24 + 16 * c);
          int32x4_t l0 = vreinterpretq_s32_u8(vandq_u8(v0, low));
          int32x4_t l1 = vreinterpretq_s32_u8(vandq_u8(v1, low));
          int32x4_t h0 = vreinterpretq_s32_u8(vshrq_n_u8(v0, 4));
          int32x4_t h1 = vreinterpretq_s32_u8(vshrq_n_u8(v1, 4));
          int8x16_t xl = vcombine_s8(vld1_s8(q0 + g * b + 4 * c), vld1_s8(q1 + g * b + 4 * c));
          int8x16_t xh = vcombine_s8(vld1_s8(q0 + g * b + g / 2 + 4 * c),
                                     vld1_s8(q1 + g * b + g / 2 + 4 * c));
          p01 = vmmlaq_s32(p01, vreinterpretq_s8_s32(vzip1q_s32(l0, l1)), xl);
          p23 = vmmlaq_s32(p23, vreinterpretq_s8_s32(vzip2q_s32(l0, l1)), xl);
          p01 = vmmlaq_s32(p01, vreinterpretq_s8_s32(vzip1q_s32(h0, h1)), xh);
          p23 = vmmlaq_s32(p23, vreinterpretq_s8_s32(vzip2q_s32(h0, h1)), xh);
        }
      }
      is[first] = vuzp1q_s32(p01, p23);
      is[first + 1] = vuzp2q_s32(p01, p23);
    }
#endif
    if (family == KILN_UK_I8) {
      /* Four quads (16 columns) per activation load, one sdot lane each. */
      for (c = 0; c < g / 4; c += 4) {
        const uint8_t *qp = gp + 8 + 16 * c;
        int8x16_t w0 = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(qp), top));
        int8x16_t w1 = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(qp + 16), top));
        int8x16_t w2 = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(qp + 32), top));
        int8x16_t w3 = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(qp + 48), top));
        for (r = first; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + (size_t)groups * 8u);
          int8x16_t xv = vld1q_s8(q + g * b + 4 * c);
          is[r] = vdotq_laneq_s32(is[r], w0, xv, 0);
          is[r] = vdotq_laneq_s32(is[r], w1, xv, 1);
          is[r] = vdotq_laneq_s32(is[r], w2, xv, 2);
          is[r] = vdotq_laneq_s32(is[r], w3, xv, 3);
        }
      }
    } else {
      for (c = 0; c < g / 8; c += 4) {
        const uint8_t *qp = gp + 8 + 16 * c;
        uint8x16_t v0 = vld1q_u8(qp), v1 = vld1q_u8(qp + 16);
        uint8x16_t v2 = vld1q_u8(qp + 32), v3 = vld1q_u8(qp + 48);
        int8x16_t l0 = vreinterpretq_s8_u8(vandq_u8(v0, low));
        int8x16_t l1 = vreinterpretq_s8_u8(vandq_u8(v1, low));
        int8x16_t l2 = vreinterpretq_s8_u8(vandq_u8(v2, low));
        int8x16_t l3 = vreinterpretq_s8_u8(vandq_u8(v3, low));
        int8x16_t h0 = vreinterpretq_s8_u8(vshrq_n_u8(v0, 4));
        int8x16_t h1 = vreinterpretq_s8_u8(vshrq_n_u8(v1, 4));
        int8x16_t h2 = vreinterpretq_s8_u8(vshrq_n_u8(v2, 4));
        int8x16_t h3 = vreinterpretq_s8_u8(vshrq_n_u8(v3, 4));
        for (r = first; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + (size_t)groups * 8u);
          int8x16_t xl = vld1q_s8(q + g * b + 4 * c), xh = vld1q_s8(q + g * b + g / 2 + 4 * c);
          is[r] = vdotq_laneq_s32(is[r], l0, xl, 0);
          is[r] = vdotq_laneq_s32(is[r], l1, xl, 1);
          is[r] = vdotq_laneq_s32(is[r], l2, xl, 2);
          is[r] = vdotq_laneq_s32(is[r], l3, xl, 3);
          is[r] = vdotq_laneq_s32(is[r], h0, xh, 0);
          is[r] = vdotq_laneq_s32(is[r], h1, xh, 1);
          is[r] = vdotq_laneq_s32(is[r], h2, xh, 2);
          is[r] = vdotq_laneq_s32(is[r], h3, xh, 3);
        }
      }
    }
    for (r = 0; r < mr; ++r) {
      const float *xd = (const float *)(const void *)(xs + r * stride);
      const int32_t *xsum = (const int32_t *)(const void *)(xd + groups);
      int32x4_t exact = family == KILN_UK_I8 ? is[r] : vsubq_s32(is[r], vdupq_n_s32(8 * xsum[b]));
      acc[r] = vfmaq_f32(acc[r], vcvtq_f32_s32(exact), vmulq_n_f32(ws, xd[b]));
    }
  }
  for (r = 0; r < mr; ++r)
    store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

static inline float32x4_t panel_load_f(int family, const uint8_t *p) {
  return family == KILN_UK_F32 ? vld1q_f32((const float *)(const void *)p) : load_scales4(p);
}

/* mr float activation rows against columns j0..j1-1 of one f32/f16 panel, added
 * to y unless j0 is 0; every lane sums in column order. */
KILN_UK_INLINE void panel_tile_float(int family, const uint8_t *panel, const float *x,
                                     int32_t mr, int32_t k, int32_t j0, int32_t j1, float *y,
                                     int32_t ldy, int32_t valid) {
  const size_t es = family == KILN_UK_F32 ? 16u : 8u; /* bytes of one panel column */
  float32x4_t acc[KILN_UK_MR_MAX];
  int32_t r, j;
  for (r = 0; r < mr; ++r)
    acc[r] = j0 == 0 ? vdupq_n_f32(0.0f) : load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (j = j0; j < j1; ++j) {
    float32x4_t wv = panel_load_f(family, panel + es * j);
    for (r = 0; r < mr; ++r)
      acc[r] = vfmaq_n_f32(acc[r], wv, x[(size_t)r * (size_t)k + j]);
  }
  for (r = 0; r < mr; ++r)
    store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

/* One activation row against four whole panels: four FMA chains. */
KILN_UK_INLINE void panel_row4_float(int family, const uint8_t *panel, size_t panel_bytes,
                                     const float *x, int32_t k, float *y) {
  const size_t es = family == KILN_UK_F32 ? 16u : 8u;
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int32_t j;
  for (j = 0; j < k; ++j) {
    const uint8_t *c = panel + es * j;
    a0 = vfmaq_n_f32(a0, panel_load_f(family, c), x[j]);
    a1 = vfmaq_n_f32(a1, panel_load_f(family, c + panel_bytes), x[j]);
    a2 = vfmaq_n_f32(a2, panel_load_f(family, c + 2 * panel_bytes), x[j]);
    a3 = vfmaq_n_f32(a3, panel_load_f(family, c + 3 * panel_bytes), x[j]);
  }
  vst1q_f32(y, a0);
  vst1q_f32(y + 4, a1);
  vst1q_f32(y + 8, a2);
  vst1q_f32(y + 12, a3);
}

#include "kernels/c99/kiln_uk_panels.h"

/* e^x, 4 lanes: 2^n e^r with n = round(x log2 e), |r| <= ln2 / 2, a degree-6
 * Taylor polynomial for e^r (relative error about 1e-7), and 2^n built in the
 * exponent bits; x is clamped to [-87, 88] so n stays a normal exponent. */
static inline float32x4_t expq_f32(float32x4_t x) {
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
static inline void exp_block(const float *x, float m, float *e, int32_t n) {
  int32_t i;
  for (i = 0; i + 4 <= n; i += 4)
    vst1q_f32(e + i, expq_f32(vsubq_f32(vld1q_f32(x + i), vdupq_n_f32(m))));
  for (; i < n; ++i)
    e[i] = expf(x[i] - m);
}

#define KILN_UK_HAS_RMS_NORM_ROW 1
/* As the portable rms_norm_row: the sum of squares in double lanes, then the
 * scaling 4 floats at a time (each element rounded as the portable one). */
static inline void rms_norm_row(const float *x, const float *g, float *y, int32_t d, float eps) {
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
static inline void rope_head(const float *x, float *y, const float *cc, const float *ss,
                             int32_t rd, int32_t hd, int neox) {
  const int32_t h = rd / 2;
  int32_t j;
  if (neox) {
    for (j = 0; j < h; j += 4) {
      const int32_t n = h - j < 4 ? h - j : 4;
      const float32x4_t a = load_lanes(x + j, n), b = load_lanes(x + j + h, n);
      store_lanes(y + j,
                  vaddq_f32(vmulq_f32(a, load_lanes(cc + j, n)), vmulq_f32(b, load_lanes(ss + j, n))),
                  n);
      store_lanes(y + j + h,
                  vaddq_f32(vmulq_f32(b, load_lanes(cc + j + h, n)),
                            vmulq_f32(a, load_lanes(ss + j + h, n))),
                  n);
    }
  } else {
    for (j = 0; j < rd; j += 4) {
      const int32_t n = rd - j < 4 ? rd - j : 4;
      const float32x4_t a = load_lanes(x + j, n);
      store_lanes(y + j,
                  vaddq_f32(vmulq_f32(a, load_lanes(cc + j, n)),
                            vmulq_f32(vrev64q_f32(a), load_lanes(ss + j, n))),
                  n);
    }
  }
  for (j = rd; j < hd; ++j)
    y[j] = x[j];
}

#define KILN_UK_HAS_SILU 1
static inline float32x4_t silu4(float32x4_t v) {
  return vdivq_f32(v, vaddq_f32(vdupq_n_f32(1.0f), expq_f32(vnegq_f32(v))));
}

/* The tail goes through the vector code too, so every element gets the same
 * bits wherever a call's range starts (threads split the rows). */
static inline void silu(const float *x, float *y, int32_t n) {
  float t[4] = {0};
  int32_t i, j;
  for (i = 0; i + 4 <= n; i += 4)
    vst1q_f32(y + i, silu4(vld1q_f32(x + i)));
  if (i == n)
    return;
  for (j = 0; i + j < n; ++j)
    t[j] = x[i + j];
  vst1q_f32(t, silu4(vld1q_f32(t)));
  for (j = 0; i + j < n; ++j)
    y[i + j] = t[j];
}

/* KV cache rows of one head (attention's inner loops), 4 lanes at a time. */
static inline float32x4_t kv_load4(int family, const uint8_t *row, int32_t i) {
  if (family == KILN_UK_F32)
    return vld1q_f32((const float *)(const void *)row + i);
  if (family == KILN_UK_F16)
    return load_scales4(row + 2 * i);
  {
    int8_t b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    memcpy(b, row + 2 + i, 4);
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vld1_s8(b)))));
  }
}
/* q . row, unscaled for i8 rows. */
KILN_UK_INLINE float kv_dot4(int family, const float *q, const uint8_t *row, int32_t hd) {
  float32x4_t s = vdupq_n_f32(0.0f);
  float t;
  int32_t i;
  for (i = 0; i + 4 <= hd; i += 4)
    s = vfmaq_f32(s, vld1q_f32(q + i), kv_load4(family, row, i));
  t = vaddvq_f32(s);
  for (; i < hd; ++i)
    t += q[i] * kv_value(family, row, i);
  return t;
}
KILN_UK_INLINE void kv_axpy4(int family, float *acc, float e, const uint8_t *row, int32_t hd) {
  int32_t i;
  for (i = 0; i + 4 <= hd; i += 4)
    vst1q_f32(acc + i, vfmaq_n_f32(vld1q_f32(acc + i), kv_load4(family, row, i), e));
  for (; i < hd; ++i)
    acc[i] += e * kv_value(family, row, i);
}

#define KILN_UK_HAS_KV_F32 1
#define KILN_UK_HAS_KV_F16 1
#define KILN_UK_HAS_KV_I8 1
KILN_UK_KV_HELPERS(kv_dot4, kv_axpy4)

/* A q4 cache block (16 code bytes: values 0-15 in the low nibbles, 16-31 in
 * the high ones) in vectors, sdot as qdot_i4; the row loops and each block's
 * float expression stay the portable ones. */
#define KILN_UK_HAS_KV_Q4_DOT 1
static inline int32_t kv_q4_dot(const uint8_t *codes, const int8_t *q) {
  const uint8x16_t c = vld1q_u8(codes);
  int32x4_t s = vdotq_s32(vdupq_n_s32(0), vld1q_s8(q), vreinterpretq_s8_u8(vandq_u8(c, vdupq_n_u8(15))));
  s = vdotq_s32(s, vld1q_s8(q + 16), vreinterpretq_s8_u8(vshrq_n_u8(c, 4)));
  return vaddvq_s32(s);
}

/* An int8 cache row's exact dot with the query, sdot 16 values a step. */
#define KILN_UK_HAS_KV_I8_DOT 1
static inline int32_t kv_i8_dot(const int8_t *k, const int8_t *q, int32_t n) {
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
static inline void kv_q4_axpy(float *a, float ed, float em, const uint8_t *codes) {
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
static inline void kv_store_i8(const float *x, uint8_t *row, int32_t hd) {
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
static inline void kv_store_q4(const float *x, uint8_t *row, int32_t hd) {
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
    kv_q4_scales(blk, vminvq_f32(lo), vmaxvq_f32(hi), &d, &m);
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

#endif /* KILN_UK_NEON_PANELS_H */
