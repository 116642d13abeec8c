#ifndef KILN_UK_RVV_MATMUL_BLOCKS_H
#define KILN_UK_RVV_MATMUL_BLOCKS_H

#include "kernels/riscv/rvv/kiln_uk_rvv_base.h"

/* The GGUF block formats dotted straight from the file's blocks (as the
 * NEON header does): each 16 codes widened to int8 lanes (VLEN >= 128 holds
 * them in one register), times 16 activations into int16, reduced into int32,
 * then the sub-block's integer scale; a k-quant super-block summed in integers
 * before its one float scale; mins and offsets through the activations'
 * scaled sums per 16. */
#define KILN_UK_HAS_QDOT_BLOCKS 1
#include "kernels/c99/kiln_uk_matmul_blocks.h"

/* 16 int8 codes against 16 activations. */
static inline int32_t kiln_uk_blocks_dot16(vint8m1_t c, const int8_t *x) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  vint16m2_t p = __riscv_vwmul_vv_i16m2(c, __riscv_vle8_v_i8m1(x, vl), vl);
  return __riscv_vmv_x_s_i32m1_i32(
      __riscv_vwredsum_vs_i16m2_i32m1(p, __riscv_vmv_s_x_i32m1(0, 1), vl));
}

/* Of each of the 16 bytes at p, the bits `mask` selects after a shift right
 * by `bit`, moved up to bit `to`. */
static inline vuint8m1_t kiln_uk_blocks_bits16(const uint8_t *p, int32_t bit, uint8_t mask, int32_t to) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  vuint8m1_t v = __riscv_vand_vx_u8m1(__riscv_vsrl_vx_u8m1(__riscv_vle8_v_u8m1(p, vl),
                                                          (size_t)bit, vl), mask, vl);
  return __riscv_vsll_vx_u8m1(v, (size_t)to, vl);
}

static inline float kiln_uk_qdot_isa_q45k(const int8_t *xq, const float *xd, const float *xa,
                                  const uint8_t *w, int32_t k, int32_t five) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  float acc = 0.0f, mins = 0.0f;
  int32_t sb, c, half;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + (five ? 176 : 144) * sb;
    const uint8_t *qs = blk + (five ? 48 : 16);
    int32_t sc[8], m[8], sum = 0;
    float sbmins = 0.0f;
    kiln_uk_unpack_scale_min_k4(blk + 4, sc, m);
    for (c = 0; c < 4; ++c) {
      const int32_t b = 8 * sb + 2 * c;
      for (half = 0; half < 2; ++half) {
        const vuint8m1_t q = __riscv_vle8_v_u8m1(qs + 32 * c + 16 * half, vl);
        vuint8m1_t lo = __riscv_vand_vx_u8m1(q, 15, vl), hi = __riscv_vsrl_vx_u8m1(q, 4, vl);
        if (five) {
          lo = __riscv_vor_vv_u8m1(lo, kiln_uk_blocks_bits16(blk + 16 + 16 * half, 2 * c, 1, 4), vl);
          hi = __riscv_vor_vv_u8m1(hi, kiln_uk_blocks_bits16(blk + 16 + 16 * half, 2 * c + 1, 1, 4), vl);
        }
        sum += sc[2 * c] * kiln_uk_blocks_dot16(__riscv_vreinterpret_v_u8m1_i8m1(lo), xq + 32 * b + 16 * half) +
               sc[2 * c + 1] *
                   kiln_uk_blocks_dot16(__riscv_vreinterpret_v_u8m1_i8m1(hi), xq + 32 * b + 32 + 16 * half);
      }
      sbmins += (float)m[2 * c] * (xa[2 * b] + xa[2 * b + 1]) +
                (float)m[2 * c + 1] * (xa[2 * b + 2] + xa[2 * b + 3]);
    }
    acc += (float)sum * (xd[sb] * kiln_uk_load_f16(blk));
    mins += kiln_uk_load_f16(blk + 2) * sbmins;
  }
  return acc - mins;
}

static inline float kiln_uk_qdot_isa_q6k(const int8_t *xq, const float *xd, const float *xa,
                                 const uint8_t *w, int32_t k) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  float acc = 0.0f;
  int32_t sb, h, i, half;
  (void)xa; /* the codes carry their offset of 32: no sums needed */
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + 210 * sb;
    const int8_t *sc = (const int8_t *)(const void *)(blk + 192);
    int32_t sum = 0;
    for (h = 0; h < 2; ++h)
      for (i = 0; i < 4; ++i)
        for (half = 0; half < 2; ++half) {
          const vuint8m1_t src = __riscv_vle8_v_u8m1(blk + 64 * h + 32 * (i & 1) + 16 * half, vl);
          const vuint8m1_t low = i < 2 ? __riscv_vand_vx_u8m1(src, 15, vl) : __riscv_vsrl_vx_u8m1(src, 4, vl);
          const vuint8m1_t code =
              __riscv_vor_vv_u8m1(low, kiln_uk_blocks_bits16(blk + 128 + 32 * h + 16 * half, 2 * i, 3, 4), vl);
          sum += sc[8 * h + 2 * i + half] *
                 kiln_uk_blocks_dot16(__riscv_vsub_vx_i8m1(__riscv_vreinterpret_v_u8m1_i8m1(code), 32, vl),
                              xq + 256 * sb + 128 * h + 32 * i + 16 * half);
        }
    acc += (float)sum * (xd[sb] * kiln_uk_load_f16(blk + 208));
  }
  return acc;
}

/* q2_k (three = 0) or q3_k: codes 0..3 from two bits of qs (q3_k: 0..7 with
 * hmask's bit as 4, its offset of 4 taken off through the activations' sums). */
static inline float kiln_uk_qdot_isa_q23k(const int8_t *xq, const float *xd, const float *xa,
                                  const uint8_t *w, int32_t k, int32_t three) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  float acc = 0.0f, offsets = 0.0f;
  int32_t sb, h, j, half;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + (three ? 110 : 84) * sb;
    const uint8_t *qs = blk + (three ? 32 : 16);
    int32_t sc[16], sum = 0;
    float off[16];
    kiln_uk_blocks_q23k_scales(blk, three, sc, off);
    for (h = 0; h < 2; ++h)
      for (j = 0; j < 4; ++j) {
        const int32_t b = 8 * sb + 4 * h + j, s = 8 * h + 2 * j;
        for (half = 0; half < 2; ++half) {
          vuint8m1_t u = kiln_uk_blocks_bits16(qs + 32 * h + 16 * half, 2 * j, 3, 0);
          if (three)
            u = __riscv_vor_vv_u8m1(u, kiln_uk_blocks_bits16(blk + 16 * half, 4 * h + j, 1, 2), vl);
          sum += sc[s + half] *
                 kiln_uk_blocks_dot16(__riscv_vreinterpret_v_u8m1_i8m1(u), xq + 32 * b + 16 * half);
        }
        offsets += off[s] * xa[2 * b] + off[s + 1] * xa[2 * b + 1];
      }
    acc += (float)sum * (xd[sb] * kiln_uk_load_f16(blk + (three ? 108 : 80)));
  }
  return acc - offsets;
}

/* For the 16 codes from bit `shift` of q5_0 / q5_1's qh: 16 where the code's
 * fifth bit is set. */
static inline vuint8m1_t kiln_uk_blocks_q5_bits(uint32_t qh, int32_t shift) {
  const size_t vl = __riscv_vsetvl_e16m2(16);
  vuint16m2_t bits = __riscv_vand_vx_u16m2(
      __riscv_vsrl_vv_u16m2(__riscv_vmv_v_x_u16m2((uint16_t)(qh >> shift), vl),
                            __riscv_vid_v_u16m2(vl), vl),
      1, vl);
  return __riscv_vsll_vx_u8m1(__riscv_vncvt_x_x_w_u8m1(bits, vl), 4, vl);
}

static inline float kiln_uk_qdot_isa_b32(int fmt, const int8_t *xq, const float *xd, const float *xa,
                                 const uint8_t *w, int32_t k) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  const int32_t bb = kiln_uk_block_bytes(fmt);
  const int32_t at = fmt == KILN_UK_Q4_1 ? 4 : fmt == KILN_UK_Q5_0 ? 6 : fmt == KILN_UK_Q5_1 ? 8 : 2;
  const vint8m1_t table = __riscv_vle8_v_i8m1(kiln_uk_iq4nl_values, vl);
  float acc = 0.0f, extra = 0.0f; /* mins (q4_1, q5_1) or offsets (q5_0) */
  int32_t b;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + bb * b;
    const float d = kiln_uk_load_f16(blk);
    const vuint8m1_t q = __riscv_vle8_v_u8m1(blk + at, vl);
    vuint8m1_t lo = __riscv_vand_vx_u8m1(q, 15, vl), hi = __riscv_vsrl_vx_u8m1(q, 4, vl);
    vint8m1_t c0, c1;
    if (fmt == KILN_UK_Q5_0 || fmt == KILN_UK_Q5_1) {
      const uint32_t qh = kiln_uk_load_u32le(blk + at - 4);
      lo = __riscv_vor_vv_u8m1(lo, kiln_uk_blocks_q5_bits(qh, 0), vl);
      hi = __riscv_vor_vv_u8m1(hi, kiln_uk_blocks_q5_bits(qh, 16), vl);
    }
    c0 = fmt == KILN_UK_IQ4_NL ? __riscv_vrgather_vv_i8m1(table, lo, vl)
                               : __riscv_vreinterpret_v_u8m1_i8m1(lo);
    c1 = fmt == KILN_UK_IQ4_NL ? __riscv_vrgather_vv_i8m1(table, hi, vl)
                               : __riscv_vreinterpret_v_u8m1_i8m1(hi);
    acc += (float)(kiln_uk_blocks_dot16(c0, xq + 32 * b) + kiln_uk_blocks_dot16(c1, xq + 32 * b + 16)) * (xd[b] * d);
    if (fmt == KILN_UK_Q4_1 || fmt == KILN_UK_Q5_1)
      extra += kiln_uk_load_f16(blk + 2) * (xa[2 * b] + xa[2 * b + 1]);
    else if (fmt == KILN_UK_Q5_0)
      extra -= 16.0f * d * (xa[2 * b] + xa[2 * b + 1]);
  }
  return acc + extra;
}

#endif /* KILN_UK_RVV_MATMUL_BLOCKS_H */
