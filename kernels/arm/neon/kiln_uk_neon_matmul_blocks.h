/* AArch64 sdot: the k-quants most files hold (q4_k, q5_k, q6_k) and the
 * blocks of 32 (q4_1, q5_0, q5_1, iq4_nl) dotted with a quantized activation
 * row straight from the file's blocks. The codes fit
 * int8 (q6_k's with its offset of 32 taken off), so each 16 of them meets 16
 * activations in one sdot; sub-block scales enter as integers, a
 * super-block summed in int32 before its one float scale (the activations'
 * is per 256 for the k-quants), the mins through the activations' scaled sums
 * per 16. */
#ifndef KILN_UK_NEON_MATMUL_BLOCKS_H
#define KILN_UK_NEON_MATMUL_BLOCKS_H

#include "kernels/arm/neon/kiln_uk_neon_base.h"

/* kiln_uk_matmul_blocks (in the portable header) calls the qdot_isa_* below. */
#define KILN_UK_HAS_QDOT_BLOCKS 1
#include "kernels/c99/kiln_uk_matmul_blocks.h"

/* 32 codes (two halves) against 32 activations. */
static inline int32x4_t kiln_uk_blocks_sdot32(uint8x16_t a, uint8x16_t b, const int8_t *x) {
  int32x4_t s = vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(a), vld1q_s8(x));
  return vdotq_s32(s, vreinterpretq_s8_u8(b), vld1q_s8(x + 16));
}

/* Bit `bit` of each byte of h moved to bit 4. */
static inline uint8x16_t kiln_uk_blocks_bit4(uint8x16_t h, int32_t bit) {
  return vshlq_n_u8(vandq_u8(vshlq_u8(h, vdupq_n_s8((int8_t)-bit)), vdupq_n_u8(1)), 4);
}

static inline float kiln_uk_qdot_isa_q45k(const int8_t *xq, const float *xd, const float *xa,
                                    const uint8_t *w, int32_t k, int32_t five) {
  const uint8x16_t m4 = vdupq_n_u8(15);
  float32x4_t acc = vdupq_n_f32(0.0f);
  float mins = 0.0f;
  int32_t sb, c;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + (five ? 176 : 144) * sb;
    const uint8_t *qs = blk + (five ? 48 : 16);
    const float d = kiln_uk_load_f16(blk), dmin = kiln_uk_load_f16(blk + 2);
    const uint8x16_t h0 = vld1q_u8(blk + 16), h1 = vld1q_u8(blk + 32); /* q5_k's qh */
    int32_t sc[8], m[8];
    int32x4_t sum = vdupq_n_s32(0);
    float sbmins = 0.0f;
    kiln_uk_unpack_scale_min_k4(blk + 4, sc, m);
    for (c = 0; c < 4; ++c) {
      const int32_t b = 8 * sb + 2 * c;
      const uint8x16_t q0 = vld1q_u8(qs + 32 * c), q1 = vld1q_u8(qs + 32 * c + 16);
      uint8x16_t lo0 = vandq_u8(q0, m4), lo1 = vandq_u8(q1, m4);
      uint8x16_t hi0 = vshrq_n_u8(q0, 4), hi1 = vshrq_n_u8(q1, 4);
      if (five) {
        lo0 = vorrq_u8(lo0, kiln_uk_blocks_bit4(h0, 2 * c));
        lo1 = vorrq_u8(lo1, kiln_uk_blocks_bit4(h1, 2 * c));
        hi0 = vorrq_u8(hi0, kiln_uk_blocks_bit4(h0, 2 * c + 1));
        hi1 = vorrq_u8(hi1, kiln_uk_blocks_bit4(h1, 2 * c + 1));
      }
      sum = vmlaq_n_s32(sum, kiln_uk_blocks_sdot32(lo0, lo1, xq + 32 * b), sc[2 * c]);
      sum = vmlaq_n_s32(sum, kiln_uk_blocks_sdot32(hi0, hi1, xq + 32 * b + 32), sc[2 * c + 1]);
      sbmins += (float)m[2 * c] * (xa[2 * b] + xa[2 * b + 1]) +
                (float)m[2 * c + 1] * (xa[2 * b + 2] + xa[2 * b + 3]);
    }
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(sum), xd[sb] * d);
    mins += dmin * sbmins;
  }
  return vaddvq_f32(acc) - mins;
}

static inline float kiln_uk_qdot_isa_q6k(const int8_t *xq, const float *xd, const float *xa,
                                const uint8_t *w, int32_t k) {
  const uint8x16_t m4 = vdupq_n_u8(15), m2 = vdupq_n_u8(3);
  float32x4_t acc = vdupq_n_f32(0.0f);
  int32_t sb, h, i, half;
  (void)xa; /* the codes carry their offset of 32: no sums needed */
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + 210 * sb;
    const int8_t *sc = (const int8_t *)(const void *)(blk + 192);
    int32x4_t t = vdupq_n_s32(0);
    for (h = 0; h < 2; ++h)
      for (i = 0; i < 4; ++i) {
        const int32_t b = 8 * sb + 4 * h + i;
        for (half = 0; half < 2; ++half) {
          const uint8x16_t src = vld1q_u8(blk + 64 * h + 32 * (i & 1) + 16 * half);
          const uint8x16_t hq = vld1q_u8(blk + 128 + 32 * h + 16 * half);
          const uint8x16_t low = i < 2 ? vandq_u8(src, m4) : vshrq_n_u8(src, 4);
          const uint8x16_t high =
              vshlq_n_u8(vandq_u8(vshlq_u8(hq, vdupq_n_s8((int8_t)(-2 * i))), m2), 4);
          const int8x16_t q = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low, high)), vdupq_n_s8(32));
          t = vmlaq_n_s32(t, vdotq_s32(vdupq_n_s32(0), q, vld1q_s8(xq + 32 * b + 16 * half)),
                          sc[8 * h + 2 * i + half]);
        }
      }
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(t), xd[sb] * kiln_uk_load_f16(blk + 208));
  }
  return vaddvq_f32(acc);
}

/* q2_k (three = 0) or q3_k: codes 0..3 from two bits of qs (q3_k: 0..7 with
 * hmask's bit as 4, its offset of 4 taken off through the activations' sums),
 * each 16 of them in one sdot times its sub-block's integer scale. */
static inline float kiln_uk_qdot_isa_q23k(const int8_t *xq, const float *xd, const float *xa,
                                  const uint8_t *w, int32_t k, int32_t three) {
  const uint8x16_t m2 = vdupq_n_u8(3), one = vdupq_n_u8(1);
  float32x4_t acc = vdupq_n_f32(0.0f);
  float offsets = 0.0f;
  int32_t sb, h, j, half;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + (three ? 110 : 84) * sb;
    const uint8_t *qs = blk + (three ? 32 : 16);
    const float d = kiln_uk_load_f16(blk + (three ? 108 : 80));
    int32_t sc[16];
    float off[16];
    int32x4_t t = vdupq_n_s32(0);
    kiln_uk_blocks_q23k_scales(blk, three, sc, off);
    for (h = 0; h < 2; ++h)
      for (j = 0; j < 4; ++j) {
        const int32_t b = 8 * sb + 4 * h + j, s = 8 * h + 2 * j;
        for (half = 0; half < 2; ++half) {
          const uint8x16_t q = vld1q_u8(qs + 32 * h + 16 * half);
          uint8x16_t u = vandq_u8(vshlq_u8(q, vdupq_n_s8((int8_t)(-2 * j))), m2);
          if (three) {
            const uint8x16_t hb = vld1q_u8(blk + 16 * half);
            u = vorrq_u8(u, vshlq_n_u8(vandq_u8(vshlq_u8(hb, vdupq_n_s8((int8_t)-(4 * h + j))),
                                                one),
                                       2));
          }
          t = vmlaq_n_s32(t, vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(u),
                                       vld1q_s8(xq + 32 * b + 16 * half)),
                          sc[s + half]);
        }
        offsets += off[s] * xa[2 * b] + off[s + 1] * xa[2 * b + 1];
      }
    acc = vfmaq_n_f32(acc, vcvtq_f32_s32(t), xd[sb] * d);
  }
  return vaddvq_f32(acc) - offsets;
}

/* For the 16 codes from bit `shift` of q5_0 / q5_1's qh: 16 where the code's
 * fifth bit is set. */
static inline uint8x16_t kiln_uk_blocks_q5_bits(uint32_t qh, int32_t shift) {
  const uint8x16_t bit = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ull));
  const uint8x16_t spread = vcombine_u8(vdup_n_u8((uint8_t)(qh >> shift)),
                                        vdup_n_u8((uint8_t)(qh >> (shift + 8))));
  return vandq_u8(vtstq_u8(spread, bit), vdupq_n_u8(16));
}

static inline float kiln_uk_qdot_isa_b32(int fmt, const int8_t *xq, const float *xd, const float *xa,
                                   const uint8_t *w, int32_t k) {
  const int32_t bb = kiln_uk_block_bytes(fmt);
  const int32_t at = fmt == KILN_UK_Q4_1 ? 4 : fmt == KILN_UK_Q5_0 ? 6 : fmt == KILN_UK_Q5_1 ? 8 : 2;
  const int8x16_t table = vld1q_s8(kiln_uk_iq4nl_values);
  float32x4_t acc = vdupq_n_f32(0.0f);
  float extra = 0.0f; /* mins (q4_1, q5_1) or offsets (q5_0) */
  int32_t b;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + bb * b;
    const float d = kiln_uk_load_f16(blk);
    const uint8x16_t q = vld1q_u8(blk + at);
    uint8x16_t lo = vandq_u8(q, vdupq_n_u8(15)), hi = vshrq_n_u8(q, 4);
    int8x16_t c0, c1;
    if (fmt == KILN_UK_Q5_0 || fmt == KILN_UK_Q5_1) {
      const uint32_t qh = kiln_uk_load_u32le(blk + at - 4);
      lo = vorrq_u8(lo, kiln_uk_blocks_q5_bits(qh, 0));
      hi = vorrq_u8(hi, kiln_uk_blocks_q5_bits(qh, 16));
    }
    c0 = fmt == KILN_UK_IQ4_NL ? vqtbl1q_s8(table, lo) : vreinterpretq_s8_u8(lo);
    c1 = fmt == KILN_UK_IQ4_NL ? vqtbl1q_s8(table, hi) : vreinterpretq_s8_u8(hi);
    acc = vfmaq_n_f32(
        acc,
        vcvtq_f32_s32(vdotq_s32(vdotq_s32(vdupq_n_s32(0), c0, vld1q_s8(xq + 32 * b)), c1,
                                vld1q_s8(xq + 32 * b + 16))),
        xd[b] * d);
    if (fmt == KILN_UK_Q4_1 || fmt == KILN_UK_Q5_1)
      extra += kiln_uk_load_f16(blk + 2) * (xa[2 * b] + xa[2 * b + 1]);
    else if (fmt == KILN_UK_Q5_0)
      extra -= 16.0f * d * (xa[2 * b] + xa[2 * b + 1]);
  }
  return vaddvq_f32(acc) + extra;
}

#endif /* KILN_UK_NEON_MATMUL_BLOCKS_H */
