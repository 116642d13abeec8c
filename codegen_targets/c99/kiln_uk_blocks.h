/* The other GGUF block formats in the model's row layout: bf16, q4_1, q5_0,
 * q5_1, iq4_nl (blocks of 32) and the k-quants q2_k ... q6_k (super-blocks of
 * 256). compiler/quant/GgmlBlocks.h gives each layout.
 *
 * row_<fmt>(w, y, k) decodes a row as ggml does (each product rounded; the
 * generated library builds with -ffp-contract=off). matmul_blocks multiplies
 * activations quantized with one scale per weight block (32, or 256 for the
 * k-quants, so that an ISA's dot sums a whole super-block in integers) by the
 * weights: each block of a weight row unpacked once to int16 (unpack_block),
 * then an exact int32 dot per 32 for every activation row (block_dot); or,
 * where an ISA header defines KILN_UK_HAS_QDOT_BLOCKS before including this
 * one, its dots straight from the blocks (qdot_isa_q45k, qdot_isa_q6k,
 * qdot_isa_q23k and qdot_isa_b32, declared below), row by row or, with
 * KILN_UK_QDOT_ROWS, several activation rows per weight row. */
#ifndef KILN_UK_BLOCKS_H
#define KILN_UK_BLOCKS_H

#include "codegen_targets/c99/kiln_uk_base.h"

static const int8_t kiln_uk_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                1,    13,   25,  38,  53,  69,  89,  113};

static inline int32_t idot_i8(const int8_t *x, const int8_t *v, int32_t n) {
  int32_t s = 0, j;
  for (j = 0; j < n; ++j)
    s += (int32_t)x[j] * (int32_t)v[j];
  return s;
}

static inline int32_t isum_i8(const int8_t *x, int32_t n) {
  int32_t s = 0, j;
  for (j = 0; j < n; ++j)
    s += x[j];
  return s;
}

static inline float load_bf16(const uint8_t *p) {
  uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint32_t load_u32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* --- unpacking one block's codes to int8 (offsets included) ------------- */

/* 32 four-bit codes: byte j holds code j (low) and j + 16 (high). */
static inline void unpack_nibbles32(const uint8_t *qs, int8_t *v, int32_t bias) {
  int32_t j;
  for (j = 0; j < 16; ++j) {
    v[j] = (int8_t)((qs[j] & 15) - bias);
    v[j + 16] = (int8_t)((qs[j] >> 4) - bias);
  }
}

/* The fifth bits of q5_0 / q5_1: bit j of qh is code j's. */
static inline void unpack_q5(const uint8_t *qh4, const uint8_t *qs, int8_t *v, int32_t bias) {
  const uint32_t qh = load_u32le(qh4);
  int32_t j;
  for (j = 0; j < 16; ++j) {
    v[j] = (int8_t)(((qs[j] & 15) | (int32_t)(((qh >> j) << 4) & 0x10)) - bias);
    v[j + 16] = (int8_t)(((qs[j] >> 4) | (int32_t)((qh >> (j + 12)) & 0x10)) - bias);
  }
}

static inline void unpack_iq4nl(const uint8_t *qs, int8_t *v) {
  int32_t j;
  for (j = 0; j < 16; ++j) {
    v[j] = kiln_uk_iq4nl_values[qs[j] & 15];
    v[j + 16] = kiln_uk_iq4nl_values[qs[j] >> 4];
  }
}

/* The eight 6-bit scales and mins of q4_k / q5_k. */
static inline void unpack_scale_min_k4(const uint8_t *q, int32_t *sc, int32_t *m) {
  int32_t j;
  for (j = 0; j < 4; ++j) {
    sc[j] = q[j] & 63;
    m[j] = q[j + 4] & 63;
    sc[j + 4] = (q[j + 8] & 15) | ((q[j] >> 6) << 4);
    m[j + 4] = (q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4);
  }
}

/* q4_k / q5_k codes 0..15 / 0..31 of a super-block (qh null for q4_k). */
static inline void unpack_q45k(const uint8_t *qh, const uint8_t *qs, int8_t *v) {
  int32_t c, l;
  for (c = 0; c < 4; ++c)
    for (l = 0; l < 32; ++l) {
      int32_t lo = qs[32 * c + l] & 15, hi = qs[32 * c + l] >> 4;
      if (qh) {
        lo |= ((qh[l] >> (2 * c)) & 1) << 4;
        hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
      }
      v[64 * c + l] = (int8_t)lo;
      v[64 * c + 32 + l] = (int8_t)hi;
    }
}

/* q6_k codes minus 32 of a super-block. */
static inline void unpack_q6k(const uint8_t *ql, const uint8_t *qh, int8_t *v) {
  int32_t h, l;
  for (h = 0; h < 2; ++h)
    for (l = 0; l < 32; ++l) {
      const uint8_t a = ql[64 * h + l], b = ql[64 * h + 32 + l], hb = qh[32 * h + l];
      int8_t *o = v + 128 * h + l;
      o[0] = (int8_t)(((a & 15) | ((hb & 3) << 4)) - 32);
      o[32] = (int8_t)(((b & 15) | (((hb >> 2) & 3) << 4)) - 32);
      o[64] = (int8_t)(((a >> 4) | (((hb >> 4) & 3) << 4)) - 32);
      o[96] = (int8_t)(((b >> 4) | (((hb >> 6) & 3) << 4)) - 32);
    }
}

/* q3_k's 16 six-bit scales, packed in 12 bytes at p, minus 32. */
static inline void unpack_q3k_scales(const uint8_t *p, int32_t *sc) {
  int32_t s;
  for (s = 0; s < 16; ++s) {
    int32_t group = s / 4, i = s % 4;
    uint8_t byte = p[(group & 1) ? 4 + i : i];
    int32_t low = group < 2 ? byte & 15 : byte >> 4;
    sc[s] = (low | (((p[8 + i] >> (2 * group)) & 3) << 4)) - 32;
  }
}

/* q3_k codes -4..3 and scales minus 32 of a super-block. Loops over l
 * innermost, with constant shifts, so that they vectorize. */
static inline void unpack_q3k(const uint8_t *blk, int8_t *v, int32_t *sc) {
  const uint8_t *hm = blk, *qs = blk + 32;
  int32_t h, j, l;
  unpack_q3k_scales(blk + 96, sc);
  for (h = 0; h < 2; ++h)
    for (j = 0; j < 4; ++j)
      for (l = 0; l < 32; ++l)
        v[128 * h + 32 * j + l] = (int8_t)(((qs[32 * h + l] >> (2 * j)) & 3) - 4 +
                                           4 * ((hm[l] >> (4 * h + j)) & 1));
}

/* q2_k codes 0..3 of a super-block. */
static inline void unpack_q2k(const uint8_t *qs, int8_t *v) {
  int32_t h, j, l;
  for (h = 0; h < 2; ++h)
    for (j = 0; j < 4; ++j)
      for (l = 0; l < 32; ++l)
        v[128 * h + 32 * j + l] = (int8_t)((qs[32 * h + l] >> (2 * j)) & 3);
}

/* v = sc[sub-block of 16] * c over a super-block. */
static inline void scale_by16(const int8_t *c, const int32_t *sc, int16_t *v) {
  int32_t s, i;
  for (s = 0; s < 16; ++s)
    for (i = 0; i < 16; ++i)
      v[16 * s + i] = (int16_t)(sc[s] * c[16 * s + i]);
}

/* --- rows ----------------------------------------------------------------- */

static inline void row_bf16(const uint8_t *w, float *y, int32_t k) {
  int32_t i;
  for (i = 0; i < k; ++i)
    y[i] = load_bf16(w + 2 * i);
}

static inline void row_q4_1(const uint8_t *w, float *y, int32_t k) {
  int8_t v[32];
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 20 * b;
    const float d = load_f16(blk), m = load_f16(blk + 2);
    unpack_nibbles32(blk + 4, v, 0);
    for (j = 0; j < 32; ++j)
      y[32 * b + j] = (float)v[j] * d + m;
  }
}

static inline void row_q5_0(const uint8_t *w, float *y, int32_t k) {
  int8_t v[32];
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 22 * b;
    const float d = load_f16(blk);
    unpack_q5(blk + 2, blk + 6, v, 16);
    for (j = 0; j < 32; ++j)
      y[32 * b + j] = (float)v[j] * d;
  }
}

static inline void row_q5_1(const uint8_t *w, float *y, int32_t k) {
  int8_t v[32];
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 24 * b;
    const float d = load_f16(blk), m = load_f16(blk + 2);
    unpack_q5(blk + 4, blk + 8, v, 0);
    for (j = 0; j < 32; ++j)
      y[32 * b + j] = (float)v[j] * d + m;
  }
}

static inline void row_iq4_nl(const uint8_t *w, float *y, int32_t k) {
  int8_t v[32];
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 18 * b;
    const float d = load_f16(blk);
    unpack_iq4nl(blk + 2, v);
    for (j = 0; j < 32; ++j)
      y[32 * b + j] = d * (float)v[j];
  }
}

static inline void row_q2_k(const uint8_t *w, float *y, int32_t k) {
  int8_t v[256];
  int32_t sb, e;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + 84 * sb;
    const float d = load_f16(blk + 80), dmin = load_f16(blk + 82);
    unpack_q2k(blk + 16, v);
    for (e = 0; e < 256; ++e) {
      const uint8_t s = blk[e / 16];
      const float dl = d * (float)(s & 15), ml = dmin * (float)(s >> 4);
      y[256 * sb + e] = dl * (float)v[e] - ml;
    }
  }
}

static inline void row_q3_k(const uint8_t *w, float *y, int32_t k) {
  int8_t v[256];
  int32_t sc[16], sb, e;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + 110 * sb;
    const float d = load_f16(blk + 108);
    unpack_q3k(blk, v, sc);
    for (e = 0; e < 256; ++e)
      y[256 * sb + e] = (d * (float)sc[e / 16]) * (float)v[e];
  }
}

/* q4_k and q5_k: `bytes` per super-block, the codes' bits at qh (q5_k) and qs. */
static inline void row_q45k(const uint8_t *w, float *y, int32_t k, int32_t five) {
  int8_t v[256];
  int32_t sc[8], m[8], sb, e;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + (five ? 176 : 144) * sb;
    const float d = load_f16(blk), dmin = load_f16(blk + 2);
    unpack_scale_min_k4(blk + 4, sc, m);
    unpack_q45k(five ? blk + 16 : 0, five ? blk + 48 : blk + 16, v);
    for (e = 0; e < 256; ++e) {
      const float d1 = d * (float)sc[e / 32], m1 = dmin * (float)m[e / 32];
      y[256 * sb + e] = d1 * (float)v[e] - m1;
    }
  }
}

static inline void row_q4_k(const uint8_t *w, float *y, int32_t k) { row_q45k(w, y, k, 0); }
static inline void row_q5_k(const uint8_t *w, float *y, int32_t k) { row_q45k(w, y, k, 1); }

static inline void row_q6_k(const uint8_t *w, float *y, int32_t k) {
  int8_t v[256];
  int32_t sb, e;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + 210 * sb;
    const int8_t *sc = (const int8_t *)(const void *)(blk + 192);
    const float d = load_f16(blk + 208);
    unpack_q6k(blk, blk + 128, v);
    for (e = 0; e < 256; ++e)
      y[256 * sb + e] = (d * (float)sc[e / 16]) * (float)v[e];
  }
}

/* --- matmul ---------------------------------------------------------------- */

#ifdef KILN_UK_HAS_QDOT_BLOCKS
/* A row of q4_k (five = 0) or q5_k, of q6_k, of a format of 32-blocks, dotted
 * with activations quantized by blocks_quantize_row; the ISA header defines
 * them after including this header. */
#ifdef KILN_UK_QDOT_ROWS
/* q4_k / q5_k and q6_k against nr <= KILN_UK_QDOT_ROWS rows of activations
 * at s, stride bytes apart, into y[r * ldy] */
KILN_UK_INLINE void qdot_isa_q45k(const uint8_t *s, size_t stride, int32_t nr, const uint8_t *w,
                                  int32_t k, int32_t five, float *y, size_t ldy);
KILN_UK_INLINE void qdot_isa_q6k(const uint8_t *s, size_t stride, int32_t nr, const uint8_t *w,
                                 int32_t k, float *y, size_t ldy);
#else
static inline float qdot_isa_q45k(const int8_t *xq, const float *xd, const float *xa,
                                  const uint8_t *w, int32_t k, int32_t five);
static inline float qdot_isa_q6k(const int8_t *xq, const float *xd, const float *xa,
                                 const uint8_t *w, int32_t k);
#endif
static inline float qdot_isa_b32(int fmt, const int8_t *xq, const float *xd, const float *xa,
                                 const uint8_t *w, int32_t k);
static inline float qdot_isa_q23k(const int8_t *xq, const float *xd, const float *xa,
                                  const uint8_t *w, int32_t k, int32_t three);

/* q2_k (three = 0) or q3_k: for each sub-block of 16 its integer scale sc
 * (q2_k's low nibble, q3_k's six bits minus 32), and the float that its
 * activations' scaled sum is subtracted times: q2_k's dmin x min, q3_k's
 * 4 x d x sc for its codes' offset of 4 (the ISA dots take codes 0..3 / 0..7). */
static inline void blocks_q23k_scales(const uint8_t *blk, int32_t three, int32_t *sc, float *off) {
  int32_t s;
  if (three) {
    const float d = load_f16(blk + 108);
    unpack_q3k_scales(blk + 96, sc);
    for (s = 0; s < 16; ++s)
      off[s] = 4.0f * d * (float)sc[s];
  } else {
    const float dmin = load_f16(blk + 82);
    for (s = 0; s < 16; ++s) {
      sc[s] = blk[s] & 15;
      off[s] = dmin * (float)(blk[s] >> 4);
    }
  }
}
#endif

#ifndef KILN_UK_HAS_DOT_BF16
static inline float dot_bf16(const float *x, const uint8_t *w, int32_t k) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t i, j, whole = k - k % 8;
  for (i = 0; i < whole; i += 8)
    for (j = 0; j < 8; ++j)
      s[j] += x[i + j] * load_bf16(w + 2 * (i + j));
  for (i = whole; i < k; ++i)
    s[0] += x[i] * load_bf16(w + 2 * i);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}
#endif

enum {
  KILN_UK_Q4_1, KILN_UK_Q5_0, KILN_UK_Q5_1, KILN_UK_IQ4_NL,
  KILN_UK_Q2_K, KILN_UK_Q3_K, KILN_UK_Q4_K, KILN_UK_Q5_K, KILN_UK_Q6_K
};

/* Elements and bytes of one block of a format. */
static inline int32_t kiln_uk_block_elements(int fmt) { return fmt >= KILN_UK_Q2_K ? 256 : 32; }
static inline int32_t kiln_uk_block_bytes(int fmt) {
  static const int32_t bytes[] = {20, 22, 24, 18, 84, 110, 144, 176, 210};
  return bytes[fmt];
}

/* The activations of the block-format kernels: per group of g (the weight
 * format's block: 32, or 256 for the k-quants) an f32 scale and int8 values,
 * as quantize_act, plus for each 16 the scale times the sum of its values (the
 * mins and offsets of a block meet the activations only through it; q2_k's
 * mins are per 16); then, for the panels' integer sums, for each 64 a 32-bit
 * word of the int16 sums of its two 32s (q4_k's mins) and for each 16 the
 * int32 sum (q6_k's offset of 32). Scratch per row: k/g scales, k/16 of those
 * products, k values, the words, the sums. */
static inline size_t blocks_act_stride(int32_t k, int32_t g) {
  return (size_t)(k / g + k / 16) * 4u + (size_t)k + (size_t)(k + 63) / 64u * 4u +
         (size_t)(k / 16) * 4u;
}

static inline void blocks_quantize_row(const float *x, uint8_t *row, int32_t k, int32_t g) {
  float *d = (float *)(void *)row;
  float *a = d + k / g;
  int8_t *q = (int8_t *)(void *)(a + k / 16);
  uint32_t *pairs = (uint32_t *)(void *)(q + k);
  int32_t *sums = (int32_t *)(void *)(pairs + (k + 63) / 64);
  int32_t h;
  quantize_act(x, d, q, k, g);
  for (h = 0; h < k / 16; ++h)
    a[h] = d[h * 16 / g] * (float)isum_i8(q + 16 * h, 16);
  for (h = 0; h < (k + 63) / 64; ++h) {
    int32_t lo = isum_i8(q + 64 * h, 32), hi = 64 * h + 32 < k ? isum_i8(q + 64 * h + 32, 32) : 0;
    pairs[h] = (uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16;
  }
  for (h = 0; h < k / 16; ++h)
    sums[h] = isum_i8(q + 16 * h, 16);
}

/* One block unpacked: int16 values with every integer offset and sub-block
 * scale folded in, a float scale per 32 and a float coefficient per 16 of the
 * activations' scaled sums xa, so that the block's dot with the activations is
 *   sum over groups g of xd[g] * ws[g] * (xq . v) + wm[2g] xa[2g] + wm[2g+1] xa[2g+1]. */
KILN_UK_INLINE void unpack_block(int fmt, const uint8_t *blk, int16_t *v, float *ws, float *wm) {
  int8_t c[256];
  int32_t e, g;
  switch (fmt) {
  case KILN_UK_Q4_1:
  case KILN_UK_Q5_1:
    if (fmt == KILN_UK_Q4_1)
      unpack_nibbles32(blk + 4, c, 0);
    else
      unpack_q5(blk + 4, blk + 8, c, 0);
    ws[0] = load_f16(blk);
    wm[0] = wm[1] = load_f16(blk + 2);
    break;
  case KILN_UK_Q5_0:
  case KILN_UK_IQ4_NL:
    if (fmt == KILN_UK_Q5_0)
      unpack_q5(blk + 2, blk + 6, c, 16);
    else
      unpack_iq4nl(blk + 2, c);
    ws[0] = load_f16(blk);
    wm[0] = wm[1] = 0.0f;
    break;
  case KILN_UK_Q2_K: {
    const float d = load_f16(blk + 80), dmin = load_f16(blk + 82);
    int32_t sc[16];
    unpack_q2k(blk + 16, c);
    for (g = 0; g < 16; ++g) {
      sc[g] = blk[g] & 15;
      wm[g] = -(dmin * (float)(blk[g] >> 4));
    }
    scale_by16(c, sc, v);
    for (g = 0; g < 8; ++g)
      ws[g] = d;
    return;
  }
  case KILN_UK_Q3_K: {
    int32_t sc[16];
    unpack_q3k(blk, c, sc);
    scale_by16(c, sc, v);
    for (g = 0; g < 8; ++g)
      ws[g] = load_f16(blk + 108), wm[2 * g] = wm[2 * g + 1] = 0.0f;
    return;
  }
  case KILN_UK_Q4_K:
  case KILN_UK_Q5_K: {
    const int32_t five = fmt == KILN_UK_Q5_K;
    const float d = load_f16(blk), dmin = load_f16(blk + 2);
    int32_t sc[8], m[8];
    unpack_scale_min_k4(blk + 4, sc, m);
    unpack_q45k(five ? blk + 16 : 0, five ? blk + 48 : blk + 16, c);
    for (g = 0; g < 8; ++g) {
      ws[g] = d * (float)sc[g];
      wm[2 * g] = wm[2 * g + 1] = -(dmin * (float)m[g]);
    }
    break;
  }
  default: { /* KILN_UK_Q6_K */
    int32_t sc[16];
    for (g = 0; g < 16; ++g)
      sc[g] = (int8_t)blk[192 + g];
    unpack_q6k(blk, blk + 128, c);
    scale_by16(c, sc, v);
    for (g = 0; g < 8; ++g)
      ws[g] = load_f16(blk + 208), wm[2 * g] = wm[2 * g + 1] = 0.0f;
    return;
  }
  }
  for (e = 0; e < kiln_uk_block_elements(fmt); ++e)
    v[e] = c[e];
}

static inline int32_t idot_i8_i16(const int8_t *x, const int16_t *v, int32_t n) {
  int32_t s = 0, j;
  for (j = 0; j < n; ++j)
    s += (int32_t)x[j] * (int32_t)v[j];
  return s;
}

#ifndef KILN_UK_HAS_QDOT_BLOCKS
/* One unpacked block of `groups` groups of 32 against one activation row's,
 * whose scale for the block is xd. */
static inline float block_dot(const int8_t *xq, float xd, const float *xa, const int16_t *v,
                              const float *ws, const float *wm, int32_t groups) {
  float acc = 0.0f;
  int32_t g;
  for (g = 0; g < groups; ++g)
    acc += xd * ws[g] * (float)idot_i8_i16(xq + 32 * g, v + 32 * g, 32) +
           (wm[2 * g] * xa[2 * g] + wm[2 * g + 1] * xa[2 * g + 1]);
  return acc;
}
#endif

/* Columns [j0, j1) of y (rows x n) = the rows quantized in scratch (by
 * blocks_quantize_row) times the transpose of the n x k weights w in format
 * fmt. Each block of a weight row is unpacked once for all rows; each output
 * sums its blocks in order, whatever the rows and the column range. */
KILN_UK_INLINE void matmul_blocks(int fmt, const uint8_t *w, float *y, const void *scratch,
                                  int32_t rows, int32_t n, int32_t k, int32_t j0, int32_t j1) {
  const int32_t e = kiln_uk_block_elements(fmt), bb = kiln_uk_block_bytes(fmt);
  const size_t stride = blocks_act_stride(k, e), rb = (size_t)(k / e) * (size_t)bb;
  const uint8_t *s = (const uint8_t *)scratch;
  int32_t j, r;
#ifdef KILN_UK_HAS_QDOT_BLOCKS
#ifdef KILN_UK_QDOT_ROWS
  /* q4_k, q5_k, q6_k: a weight row's super-blocks unpacked once per
   * KILN_UK_QDOT_ROWS activation rows (one row: its own instance) */
  if (fmt == KILN_UK_Q4_K || fmt == KILN_UK_Q5_K || fmt == KILN_UK_Q6_K) {
    for (j = j0; j < j1; ++j)
      for (r = 0; r < rows; r += KILN_UK_QDOT_ROWS) {
        const int32_t nr = rows - r < KILN_UK_QDOT_ROWS ? rows - r : KILN_UK_QDOT_ROWS;
        const uint8_t *row = w + (size_t)j * rb, *sr = s + (size_t)r * stride;
        float *yr = y + (size_t)r * (size_t)n + j;
        if (fmt == KILN_UK_Q6_K) {
          if (nr == 1)
            qdot_isa_q6k(sr, stride, 1, row, k, yr, (size_t)n);
          else
            qdot_isa_q6k(sr, stride, nr, row, k, yr, (size_t)n);
        } else if (nr == 1)
          qdot_isa_q45k(sr, stride, 1, row, k, fmt == KILN_UK_Q5_K, yr, (size_t)n);
        else
          qdot_isa_q45k(sr, stride, nr, row, k, fmt == KILN_UK_Q5_K, yr, (size_t)n);
      }
    return;
  }
#endif
  /* the ISA's dot, row by row */
  for (j = j0; j < j1; ++j)
    for (r = 0; r < rows; ++r) {
      const float *xd = (const float *)(const void *)(s + (size_t)r * stride), *xa = xd + k / e;
      const int8_t *xq = (const int8_t *)(const void *)(xa + k / 16);
      const uint8_t *row = w + (size_t)j * rb;
      y[(size_t)r * (size_t)n + j] =
#ifndef KILN_UK_QDOT_ROWS
          fmt == KILN_UK_Q6_K ? qdot_isa_q6k(xq, xd, xa, row, k)
          : fmt == KILN_UK_Q4_K || fmt == KILN_UK_Q5_K
              ? qdot_isa_q45k(xq, xd, xa, row, k, fmt == KILN_UK_Q5_K) :
#endif
          fmt == KILN_UK_Q2_K || fmt == KILN_UK_Q3_K
              ? qdot_isa_q23k(xq, xd, xa, row, k, fmt == KILN_UK_Q3_K)
              : qdot_isa_b32(fmt, xq, xd, xa, row, k);
    }
#else
  int16_t v[256];
  float ws[8], wm[16];
  int32_t b;
  for (j = j0; j < j1; ++j) {
    const uint8_t *row = w + (size_t)j * rb;
    for (r = 0; r < rows; ++r)
      y[(size_t)r * (size_t)n + j] = 0.0f;
    for (b = 0; b < k / e; ++b) {
      unpack_block(fmt, row + (size_t)b * (size_t)bb, v, ws, wm);
      for (r = 0; r < rows; ++r) {
        const float *xd = (const float *)(const void *)(s + (size_t)r * stride), *xa = xd + k / e;
        const int8_t *xq = (const int8_t *)(const void *)(xa + k / 16);
        y[(size_t)r * (size_t)n + j] +=
            block_dot(xq + b * e, xd[b], xa + b * (e / 16), v, ws, wm, e / 32);
      }
    }
  }
#endif
}

#endif /* KILN_UK_BLOCKS_H */
