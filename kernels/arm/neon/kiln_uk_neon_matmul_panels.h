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

/* Byte lanes of four quads' activations: lane c of x meets quad c. */
#define KILN_UK_NEON_DOT4(acc, w, x)                                                     \
  (acc = vdotq_laneq_s32(acc, (w)[0], x, 0), acc = vdotq_laneq_s32(acc, (w)[1], x, 1),    \
   acc = vdotq_laneq_s32(acc, (w)[2], x, 2), acc = vdotq_laneq_s32(acc, (w)[3], x, 3))

/* mr rows of block activations (g = 32) against blocks b0..b1-1 of one q4_1,
 * q5_0, q5_1 or iq4_nl panel (the x86 layout, 4 rows): the codes as signed
 * bytes (a nibble with its fifth bit, or iq4_nl's value from a vqtbl1q table)
 * in sdot by lane; q5_0's offset of 16 meets the activations' integer sum,
 * the min (q4_1, q5_1) their scaled sum. */
KILN_UK_INLINE void kiln_uk_panel_tile_b32(int family, const uint8_t *panel, const uint8_t *xs,
                                   size_t stride, int32_t mr, int32_t k, int32_t b0, int32_t b1,
                                   float *y, int32_t ldy, int32_t valid) {
  const int32_t mins = family == KILN_UK_Q4_1 || family == KILN_UK_Q5_1;
  const int32_t five = family == KILN_UK_Q5_0 || family == KILN_UK_Q5_1;
  const int32_t head = kiln_uk_b32_head(family), bytes = 4 * (head + 16);
  const int32_t bias = family == KILN_UK_Q5_0 ? 16 : 0;
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 32), sums_at = kiln_uk_act_blocks_sums_at(k, 32);
  const uint8x16_t low = vdupq_n_u8(15), bit4 = vdupq_n_u8(0x10);
  const int8x16_t table = vld1q_s8(kiln_uk_iq4nl_values);
  float32x4_t acc[KILN_UK_MR_MAX];
  int32_t r, b, c;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? vdupq_n_f32(0.0f) : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * (size_t)bytes;
    const uint32x4_t qh = five ? vld1q_u32((const uint32_t *)(const void *)(gp + 8 * (1 + mins))) : vdupq_n_u32(0);
    int8x16_t lo[4], hi[4];
    float32x4_t d = kiln_uk_load_scales4(gp), m = mins ? kiln_uk_load_scales4(gp + 8) : d;
    for (c = 0; c < 4; ++c) {
      const uint8x16_t v = vld1q_u8(gp + 4 * head + 16 * c);
      uint8x16_t l = vandq_u8(v, low), h = vshrq_n_u8(v, 4);
      if (five) { /* qh << (4 - c) and qh >> c, bit 4 of each byte */
        l = vorrq_u8(l, vandq_u8(vreinterpretq_u8_u32(vshlq_u32(qh, vdupq_n_s32(4 - c))), bit4));
        h = vorrq_u8(h, vandq_u8(vreinterpretq_u8_u32(vshlq_u32(qh, vdupq_n_s32(-c))), bit4));
      }
      lo[c] = family == KILN_UK_IQ4_NL ? vqtbl1q_s8(table, l) : vreinterpretq_s8_u8(l);
      hi[c] = family == KILN_UK_IQ4_NL ? vqtbl1q_s8(table, h) : vreinterpretq_s8_u8(h);
    }
    for (r = 0; r < mr; ++r) {
      const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at) + 32 * b;
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      const int32_t *sums = (const int32_t *)(const void *)(xs + r * stride + sums_at) + 2 * b;
      const int32_t isum = sums[0] + sums[1];
      const int8x16_t xl = vld1q_s8(q), xh = vld1q_s8(q + 16);
      int32x4_t is = vdupq_n_s32(0);
      KILN_UK_NEON_DOT4(is, lo, xl);
      KILN_UK_NEON_DOT4(is, hi, xh);
      acc[r] = vfmaq_f32(acc[r], vcvtq_f32_s32(vsubq_s32(is, vdupq_n_s32(bias * isum))), vmulq_n_f32(d, xd));
      if (mins)
        acc[r] = vfmaq_n_f32(acc[r], m, xd * (float)isum);
    }
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}
#define KILN_UK_HAS_PANEL_B32 1

/* mr rows of k-quant activations against super-blocks b0..b1-1 of one q2_k
 * (three = 0) or q3_k panel (the x86 layouts, 4 rows). q2_k: a sub-block's
 * scale times its 2-bit codes from a vqtbl1q table made once per sub-block
 * (each lane's four bytes sc x (0, 1, 2, 3)), the mins against the
 * activations' sums of 16. q3_k: the 3-bit codes less 4 as signed bytes, the
 * sub-block's sum times its signed 6-bit scale. */
KILN_UK_INLINE void kiln_uk_panel_tile_q23k(const uint8_t *panel, int32_t three, const uint8_t *xs,
                                    size_t stride, int32_t mr, int32_t k, int32_t b0, int32_t b1,
                                    float *y, int32_t ldy, int32_t valid) {
  const size_t bytes = three ? 110u * 4u : 84u * 4u;
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256), sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  const uint8x16_t mask3 = vdupq_n_u8(3), four = vdupq_n_u8(4);
  static const uint8_t row_at[16] = {0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12};
  const uint8x16_t row_idx = vld1q_u8(row_at);
  float32x4_t acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? vdupq_n_f32(0.0f) : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * bytes;
    const uint32x4_t w0 = vld1q_u32((const uint32_t *)(const void *)(gp + (three ? 8 : 16))),
                     w1 = vld1q_u32((const uint32_t *)(const void *)(gp + (three ? 24 : 32))),
                     w2 = vld1q_u32((const uint32_t *)(const void *)(gp + (three ? 40 : 48))),
                     w3 = vld1q_u32((const uint32_t *)(const void *)(gp + 64));
    int32x4_t is[KILN_UK_MR_MAX], mi[KILN_UK_MR_MAX];
    for (r = 0; r < mr; ++r)
      is[r] = mi[r] = vdupq_n_s32(0);
    for (s = 0; s < 16; ++s) {
      const int32_t h = s / 8, j = (s % 8) / 2, half = s % 2, group = s / 4, i = s % 4;
      const uint32x4_t wg = group == 0 ? w0 : group == 1 ? w1 : group == 2 ? w2 : w3;
      int32x4_t sc, mn = vdupq_n_s32(0);
      int8x16_t code[4];
      if (three) {
        const uint32x4_t lo4 = vandq_u32(vshlq_u32(group & 1 ? w1 : w0, vdupq_n_s32(-(8 * i + 4 * (group >= 2)))),
                                         vdupq_n_u32(15));
        const uint32x4_t hi2 = vandq_u32(vshlq_u32(w2, vdupq_n_s32(-(8 * i + 2 * group))), vdupq_n_u32(3));
        sc = vsubq_s32(vreinterpretq_s32_u32(vorrq_u32(lo4, vshlq_n_u32(hi2, 4))), vdupq_n_s32(32));
      } else {
        const uint32x4_t byte = vshlq_u32(wg, vdupq_n_s32(-8 * i));
        sc = vreinterpretq_s32_u32(vandq_u32(byte, vdupq_n_u32(15)));
        mn = vreinterpretq_s32_u32(vandq_u32(vshrq_n_u32(byte, 4), vdupq_n_u32(15)));
      }
      for (t = 0; t < 4; ++t) {
        const uint8_t *cq = gp + (three ? 46 * 4 : 20 * 4) + 16 * (8 * h + 4 * half + t);
        const uint8x16_t c2 = vandq_u8(vshlq_u8(vld1q_u8(cq), vdupq_n_s8((int8_t)(-2 * j))), mask3);
        if (three) {
          const int32_t bit = 4 * h + j;
          const uint8x16_t hb = vandq_u8(vshlq_u8(vld1q_u8(gp + 14 * 4 + 16 * (4 * half + t)),
                                                  vdupq_n_s8((int8_t)(2 - bit))),
                                         four);
          code[t] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(c2, hb)), vreinterpretq_s8_u8(four));
        } else {
          const uint8x16_t table = vreinterpretq_u8_u32(vmulq_u32(vreinterpretq_u32_s32(sc), vdupq_n_u32(0x03020100u)));
          code[t] = vreinterpretq_s8_u8(vqtbl1q_u8(table, vorrq_u8(c2, row_idx)));
        }
      }
      for (r = 0; r < mr; ++r) {
        const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at);
        const int8x16_t xv = vld1q_s8(q + 256 * b + 128 * h + 32 * j + 16 * half);
        const int32_t x16 = ((const int32_t *)(const void *)(xs + r * stride + sums_at))[16 * b + s];
        int32x4_t part = vdupq_n_s32(0);
        KILN_UK_NEON_DOT4(part, code, xv);
        if (three)
          is[r] = vmlaq_s32(is[r], part, sc);
        else {
          is[r] = vaddq_s32(is[r], part);
          mi[r] = vmlaq_n_s32(mi[r], mn, x16);
        }
      }
    }
    {
      const float32x4_t d = kiln_uk_load_scales4(gp), dmin = kiln_uk_load_scales4(gp + 8);
      for (r = 0; r < mr; ++r) {
        const float xd = ((const float *)(const void *)(xs + r * stride))[b];
        acc[r] = vfmaq_f32(acc[r], vcvtq_f32_s32(is[r]), vmulq_n_f32(d, xd));
        if (!three)
          acc[r] = vfmsq_f32(acc[r], vcvtq_f32_s32(mi[r]), vmulq_n_f32(dmin, xd));
      }
    }
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}
#define KILN_UK_HAS_PANEL_Q2K 1
#define KILN_UK_HAS_PANEL_Q3K 1

/* mr rows of k-quant activations against super-blocks b0..b1-1 of one q4_k
 * (five = 0) or q5_k panel (the x86 layout, 4 rows): per sub-block of 32, the
 * codes (nibbles, with q5_k's fifth bits) in sdot by lane, times the 6-bit
 * scale; the 6-bit mins against the activations' sums of 32. */
KILN_UK_INLINE void kiln_uk_panel_tile_q45k(const uint8_t *panel, int32_t five, const uint8_t *xs,
                                    size_t stride, int32_t mr, int32_t k, int32_t b0, int32_t b1,
                                    float *y, int32_t ldy, int32_t valid) {
  const size_t bytes = five ? 176u * 4u : 144u * 4u, codes_at = five ? 48u * 4u : 16u * 4u;
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256), sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  const uint8x16_t low = vdupq_n_u8(15), bit4 = vdupq_n_u8(0x10);
  float32x4_t acc[KILN_UK_MR_MAX];
  int32_t r, b, i, h, c;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? vdupq_n_f32(0.0f) : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * bytes;
    const uint32x4_t s0 = vld1q_u32((const uint32_t *)(const void *)(gp + 16)),
                     s1 = vld1q_u32((const uint32_t *)(const void *)(gp + 32)),
                     s2 = vld1q_u32((const uint32_t *)(const void *)(gp + 48));
    int32x4_t is[KILN_UK_MR_MAX], mi[KILN_UK_MR_MAX];
    for (r = 0; r < mr; ++r)
      is[r] = mi[r] = vdupq_n_s32(0);
    for (i = 0; i < 4; ++i)
      for (h = 0; h < 2; ++h) { /* sub-block 2i + h: the low or the high nibbles */
        const uint32x4_t sh = h ? s1 : s0;
        const int32x4_t sc = vreinterpretq_s32_u32(vandq_u32(vshlq_u32(sh, vdupq_n_s32(-8 * i)), vdupq_n_u32(63)));
        const int32x4_t mn = vreinterpretq_s32_u32(vorrq_u32(
            vandq_u32(vshlq_u32(s2, vdupq_n_s32(-(4 * i + 16 * h))), vdupq_n_u32(15)),
            vshlq_n_u32(vandq_u32(vshlq_u32(sh, vdupq_n_s32(-(8 * i + 6))), vdupq_n_u32(3)), 4)));
        int8x16_t code[8];
        for (c = 0; c < 8; ++c) {
          uint8x16_t v = vld1q_u8(gp + codes_at + 16 * (8 * i + c));
          v = h ? vshrq_n_u8(v, 4) : vandq_u8(v, low);
          if (five) /* bit 2i + h of qh: the fifth bit of sub-block 2i + h */
            v = vorrq_u8(v, vandq_u8(vshlq_u8(vld1q_u8(gp + 64 + 16 * c), vdupq_n_s8((int8_t)(4 - 2 * i - h))), bit4));
          code[c] = vreinterpretq_s8_u8(v);
        }
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at) + 256 * b + 64 * i + 32 * h;
          const int32_t *x16 = (const int32_t *)(const void *)(xs + r * stride + sums_at) + 16 * b + 4 * i + 2 * h;
          const int8x16_t x0 = vld1q_s8(q), x1 = vld1q_s8(q + 16);
          int32x4_t part = vdupq_n_s32(0);
          KILN_UK_NEON_DOT4(part, code, x0);
          KILN_UK_NEON_DOT4(part, code + 4, x1);
          is[r] = vmlaq_s32(is[r], part, sc);
          mi[r] = vmlaq_n_s32(mi[r], mn, x16[0] + x16[1]);
        }
      }
    {
      const float32x4_t d = kiln_uk_load_scales4(gp), dmin = kiln_uk_load_scales4(gp + 8);
      for (r = 0; r < mr; ++r) {
        const float xd = ((const float *)(const void *)(xs + r * stride))[b];
        acc[r] = vfmaq_f32(acc[r], vcvtq_f32_s32(is[r]), vmulq_n_f32(d, xd));
        acc[r] = vfmsq_f32(acc[r], vcvtq_f32_s32(mi[r]), vmulq_n_f32(dmin, xd));
      }
    }
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

/* As panel_tile_q45k for a q6_k panel: per sub-block of 16, the 6-bit codes (a
 * nibble of ql, two bits of qh) in sdot by lane, less 32 times the
 * activations' sum, times the int8 scale. */
KILN_UK_INLINE void kiln_uk_panel_tile_q6k(const uint8_t *panel, const uint8_t *xs, size_t stride,
                                   int32_t mr, int32_t k, int32_t b0, int32_t b1, float *y,
                                   int32_t ldy, int32_t valid) {
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256), sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  const uint8x16_t low = vdupq_n_u8(15), top2 = vdupq_n_u8(0x30);
  float32x4_t acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? vdupq_n_f32(0.0f) : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 210u * 4u;
    int32x4_t is[KILN_UK_MR_MAX];
    for (r = 0; r < mr; ++r)
      is[r] = vdupq_n_s32(0);
    for (s = 0; s < 16; ++s) {
      const int32_t h = s / 8, set = (s % 8) / 2, col = 128 * h + 32 * set + 16 * (s % 2);
      const int32x4_t words = vld1q_s32((const int32_t *)(const void *)(gp + 16 * (48 + s / 4)));
      const int32x4_t sc = vshrq_n_s32(vshlq_s32(words, vdupq_n_s32(24 - 8 * (s % 4))), 24);
      int8x16_t code[4];
      for (t = 0; t < 4; ++t) {
        const int32_t l = 16 * (s % 2) + 4 * t;
        const uint8x16_t ql = vld1q_u8(gp + 16 * ((64 * h + 32 * (set & 1) + l) / 4));
        const uint8x16_t qh = vld1q_u8(gp + 16 * (32 + (32 * h + l) / 4));
        const uint8x16_t lo = set >= 2 ? vshrq_n_u8(ql, 4) : vandq_u8(ql, low);
        const uint8x16_t hi = vandq_u8(vshlq_u8(qh, vdupq_n_s8((int8_t)(4 - 2 * set))), top2);
        code[t] = vreinterpretq_s8_u8(vorrq_u8(lo, hi));
      }
      for (r = 0; r < mr; ++r) {
        const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at) + 256 * b + col;
        const int32_t *x16 = (const int32_t *)(const void *)(xs + r * stride + sums_at);
        int32x4_t part = vdupq_n_s32(0);
        KILN_UK_NEON_DOT4(part, code, vld1q_s8(q));
        is[r] = vmlaq_s32(is[r], vsubq_s32(part, vdupq_n_s32(32 * x16[16 * b + s])), sc);
      }
    }
    {
      const float32x4_t d = kiln_uk_load_scales4(gp + 208 * 4);
      for (r = 0; r < mr; ++r) {
        const float xd = ((const float *)(const void *)(xs + r * stride))[b];
        acc[r] = vfmaq_f32(acc[r], vcvtq_f32_s32(is[r]), vmulq_n_f32(d, xd));
      }
    }
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}
#define KILN_UK_HAS_PANEL_KQUANTS 1

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
  if (kiln_uk_is_b32_family(family)) {
    kiln_uk_panel_tile_b32(family, panel, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
  if (family == KILN_UK_Q2_K || family == KILN_UK_Q3_K) {
    kiln_uk_panel_tile_q23k(panel, family == KILN_UK_Q3_K, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
  if (family == KILN_UK_Q4_K || family == KILN_UK_Q5_K) {
    kiln_uk_panel_tile_q45k(panel, family == KILN_UK_Q5_K, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
  if (family == KILN_UK_Q6_K) {
    kiln_uk_panel_tile_q6k(panel, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
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

/* Up to four rows of panel_tile3_float: twelve sums, every index a constant
 * so that they stay in registers (eight rows would need 24 sums, three
 * weights and eight scalars: more than the 32 registers). */
KILN_UK_INLINE void kiln_uk_panel_quad3_float(int family, const uint8_t *panel, size_t panel_bytes,
                                              const float *x, int32_t rows, int32_t k, int32_t j0,
                                              int32_t j1, float *y, int32_t ldy) {
  const size_t es = family == KILN_UK_F32 ? 16u : 8u;
  float32x4_t a0[4], a1[4], a2[4];
  int32_t r, j;
#pragma GCC unroll 4
  for (r = 0; r < 4; ++r) {
    const float *yr = y + (size_t)(r < rows ? r : 0) * (size_t)ldy;
    a0[r] = j0 == 0 || r >= rows ? vdupq_n_f32(0.0f) : vld1q_f32(yr);
    a1[r] = j0 == 0 || r >= rows ? vdupq_n_f32(0.0f) : vld1q_f32(yr + 4);
    a2[r] = j0 == 0 || r >= rows ? vdupq_n_f32(0.0f) : vld1q_f32(yr + 8);
  }
  for (j = j0; j < j1; ++j) {
    const uint8_t *c = panel + es * j;
    const float32x4_t w0 = kiln_uk_panel_load_f(family, c),
                      w1 = kiln_uk_panel_load_f(family, c + panel_bytes),
                      w2 = kiln_uk_panel_load_f(family, c + 2 * panel_bytes);
#pragma GCC unroll 4
    for (r = 0; r < 4; ++r) {
      float xv;
      if (r >= rows)
        break;
      xv = x[(size_t)r * (size_t)k + j];
      a0[r] = vfmaq_n_f32(a0[r], w0, xv);
      a1[r] = vfmaq_n_f32(a1[r], w1, xv);
      a2[r] = vfmaq_n_f32(a2[r], w2, xv);
    }
  }
#pragma GCC unroll 4
  for (r = 0; r < 4; ++r) {
    float *yr = y + (size_t)r * (size_t)ldy;
    if (r >= rows)
      break;
    vst1q_f32(yr, a0[r]);
    vst1q_f32(yr + 4, a1[r]);
    vst1q_f32(yr + 8, a2[r]);
  }
}

#define KILN_UK_HAS_PANEL_QUAD3_FLOAT 1

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
