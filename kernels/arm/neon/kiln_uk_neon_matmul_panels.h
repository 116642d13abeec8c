/* arm-neon: panel kernels over 4-row weight panels (kernels/c99/
 * kiln_uk_pack.h describes the layout). One int32x4 or float32x4 register holds
 * one value for each of a panel's 4 output rows: a quad of 16 weight bytes (4
 * rows x 4 columns) meets 4 activations in one sdot by lane (vdotq_laneq_s32),
 * so no dot product ends in a sum across lanes. */
#ifndef KILN_UK_NEON_MATMUL_PANELS_H
#define KILN_UK_NEON_MATMUL_PANELS_H

#include "kernels/arm/neon/kiln_uk_neon_base.h"

#define KILN_UK_NR 4

static inline float32x4_t kiln_uk_load_scales4(const uint8_t *p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)p)));
}

/* mr quantized activation rows against groups b0..b1-1 of one int8/int4 panel,
 * added to y unless b0 is 0 (the order of the additions does not depend on the
 * K block). int8 weights are stored + 128: flipping the top bit gives the signed
 * value back for sdot, so only int4 needs the bias correction. */
KILN_UK_INLINE void kiln_uk_panel_tile_int(int family, const uint8_t *panel, const uint8_t *xs,
                                   size_t stride, int32_t mr, int32_t k, int32_t g, int32_t b0,
                                   int32_t b1, float *y, int32_t ldy, int32_t valid) {
  const int32_t groups = k / g;
  const size_t group_bytes = 8u + (size_t)(family == KILN_UK_I8 ? 4 * g : 2 * g);
  const uint8x16_t low = vdupq_n_u8(15), top = vdupq_n_u8(0x80);
  float32x4_t acc[KILN_UK_MR_MAX];
  int32_t r, b, c, first = 0;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? vdupq_n_f32(0.0f) : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * group_bytes;
    int32x4_t is[KILN_UK_MR_MAX];
    float32x4_t ws = kiln_uk_load_scales4(gp);
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
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

static inline float32x4_t kiln_uk_panel_load_f(int family, const uint8_t *p) {
  return family == KILN_UK_F32 ? vld1q_f32((const float *)(const void *)p) : kiln_uk_load_scales4(p);
}

/* mr float activation rows against columns j0..j1-1 of one f32/f16 panel, added
 * to y unless j0 is 0; every lane sums in column order. */
KILN_UK_INLINE void kiln_uk_panel_tile_float(int family, const uint8_t *panel, const float *x,
                                     int32_t mr, int32_t k, int32_t j0, int32_t j1, float *y,
                                     int32_t ldy, int32_t valid) {
  const size_t es = family == KILN_UK_F32 ? 16u : 8u; /* bytes of one panel column */
  float32x4_t acc[KILN_UK_MR_MAX];
  int32_t r, j;
  for (r = 0; r < mr; ++r)
    acc[r] = j0 == 0 ? vdupq_n_f32(0.0f) : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (j = j0; j < j1; ++j) {
    float32x4_t wv = kiln_uk_panel_load_f(family, panel + es * j);
    for (r = 0; r < mr; ++r)
      acc[r] = vfmaq_n_f32(acc[r], wv, x[(size_t)r * (size_t)k + j]);
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

/* One activation row against four whole panels: four FMA chains. */
KILN_UK_INLINE void kiln_uk_panel_row4_float(int family, const uint8_t *panel, size_t panel_bytes,
                                     const float *x, int32_t k, float *y) {
  const size_t es = family == KILN_UK_F32 ? 16u : 8u;
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int32_t j;
  for (j = 0; j < k; ++j) {
    const uint8_t *c = panel + es * j;
    a0 = vfmaq_n_f32(a0, kiln_uk_panel_load_f(family, c), x[j]);
    a1 = vfmaq_n_f32(a1, kiln_uk_panel_load_f(family, c + panel_bytes), x[j]);
    a2 = vfmaq_n_f32(a2, kiln_uk_panel_load_f(family, c + 2 * panel_bytes), x[j]);
    a3 = vfmaq_n_f32(a3, kiln_uk_panel_load_f(family, c + 3 * panel_bytes), x[j]);
  }
  vst1q_f32(y, a0);
  vst1q_f32(y + 4, a1);
  vst1q_f32(y + 8, a2);
  vst1q_f32(y + 12, a3);
}

#include "kernels/c99/kiln_uk_matmul_panels.h"

#endif /* KILN_UK_NEON_MATMUL_PANELS_H */
