/* What a block of each GGUF format beyond q8_0/q4_0 holds: bf16, q4_1, q5_0,
 * q5_1, iq4_nl (blocks of 32) and the k-quants q2_k ... q6_k (super-blocks of
 * 256) and the ternary tq2_0, in the model's row layout (compiler/quant/GgmlBlocks.h gives each).
 * unpack_* give a block's integer codes; row_<fmt>(w, y, k) decodes a row as
 * ggml does, each product rounded, with no fused multiply-add (the generated
 * library and kiln-compile, which decodes with these, build with
 * -ffp-contract=off). The one decoder of these formats: the kernels, the
 * compiler's quantizer and the tests all use it. Plain C99 that C++ also
 * compiles. */
#ifndef KILN_UK_BLOCK_DECODE_H
#define KILN_UK_BLOCK_DECODE_H

#include "kernels/c99/kiln_uk_base.h"

static const int8_t kiln_uk_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                1,    13,   25,  38,  53,  69,  89,  113};

static inline float kiln_uk_load_bf16(const uint8_t *p) {
  uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint32_t kiln_uk_load_u32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* --- unpacking one block's codes to int8 (offsets included) ------------- */

/* 32 four-bit codes: byte j holds code j (low) and j + 16 (high). */
static inline void kiln_uk_unpack_nibbles32(const uint8_t *qs, int8_t *v, int32_t bias) {
  int32_t j;
  for (j = 0; j < 16; ++j) {
    v[j] = (int8_t)((qs[j] & 15) - bias);
    v[j + 16] = (int8_t)((qs[j] >> 4) - bias);
  }
}

/* The fifth bits of q5_0 / q5_1: bit j of qh is code j's. */
static inline void kiln_uk_unpack_q5(const uint8_t *qh4, const uint8_t *qs, int8_t *v, int32_t bias) {
  const uint32_t qh = kiln_uk_load_u32le(qh4);
  int32_t j;
  for (j = 0; j < 16; ++j) {
    v[j] = (int8_t)(((qs[j] & 15) | (int32_t)(((qh >> j) << 4) & 0x10)) - bias);
    v[j + 16] = (int8_t)(((qs[j] >> 4) | (int32_t)((qh >> (j + 12)) & 0x10)) - bias);
  }
}

static inline void kiln_uk_unpack_iq4nl(const uint8_t *qs, int8_t *v) {
  int32_t j;
  for (j = 0; j < 16; ++j) {
    v[j] = kiln_uk_iq4nl_values[qs[j] & 15];
    v[j + 16] = kiln_uk_iq4nl_values[qs[j] >> 4];
  }
}

/* The eight 6-bit scales and mins of q4_k / q5_k. */
static inline void kiln_uk_unpack_scale_min_k4(const uint8_t *q, int32_t *sc, int32_t *m) {
  int32_t j;
  for (j = 0; j < 4; ++j) {
    sc[j] = q[j] & 63;
    m[j] = q[j + 4] & 63;
    sc[j + 4] = (q[j + 8] & 15) | ((q[j] >> 6) << 4);
    m[j + 4] = (q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4);
  }
}

/* q4_k / q5_k codes 0..15 / 0..31 of a super-block (qh null for q4_k). */
static inline void kiln_uk_unpack_q45k(const uint8_t *qh, const uint8_t *qs, int8_t *v) {
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
static inline void kiln_uk_unpack_q6k(const uint8_t *ql, const uint8_t *qh, int8_t *v) {
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
static inline void kiln_uk_unpack_q3k_scales(const uint8_t *p, int32_t *sc) {
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
static inline void kiln_uk_unpack_q3k(const uint8_t *blk, int8_t *v, int32_t *sc) {
  const uint8_t *hm = blk, *qs = blk + 32;
  int32_t h, j, l;
  kiln_uk_unpack_q3k_scales(blk + 96, sc);
  for (h = 0; h < 2; ++h)
    for (j = 0; j < 4; ++j)
      for (l = 0; l < 32; ++l)
        v[128 * h + 32 * j + l] = (int8_t)(((qs[32 * h + l] >> (2 * j)) & 3) - 4 +
                                           4 * ((hm[l] >> (4 * h + j)) & 1));
}

/* q2_k codes 0..3 of a super-block. */
static inline void kiln_uk_unpack_q2k(const uint8_t *qs, int8_t *v) {
  int32_t h, j, l;
  for (h = 0; h < 2; ++h)
    for (j = 0; j < 4; ++j)
      for (l = 0; l < 32; ++l)
        v[128 * h + 32 * j + l] = (int8_t)((qs[32 * h + l] >> (2 * j)) & 3);
}

/* tq2_0's ternary values of a block: q2_k's 2-bit codes, less one (code 3,
 * which no writer uses, decodes to 2 as in ggml). */
static inline void kiln_uk_unpack_tq2_0(const uint8_t *qs, int8_t *v) {
  int32_t e;
  kiln_uk_unpack_q2k(qs, v);
  for (e = 0; e < 256; ++e)
    v[e] = (int8_t)(v[e] - 1);
}

/* --- rows ----------------------------------------------------------------- */

static inline void kiln_uk_row_bf16(const uint8_t *w, float *y, int32_t k) {
  int32_t i;
  for (i = 0; i < k; ++i)
    y[i] = kiln_uk_load_bf16(w + 2 * i);
}

static inline void kiln_uk_row_q4_1(const uint8_t *w, float *y, int32_t k) {
  int8_t v[32];
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 20 * b;
    const float d = kiln_uk_load_f16(blk), m = kiln_uk_load_f16(blk + 2);
    kiln_uk_unpack_nibbles32(blk + 4, v, 0);
    for (j = 0; j < 32; ++j)
      y[32 * b + j] = (float)v[j] * d + m;
  }
}

static inline void kiln_uk_row_q5_0(const uint8_t *w, float *y, int32_t k) {
  int8_t v[32];
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 22 * b;
    const float d = kiln_uk_load_f16(blk);
    kiln_uk_unpack_q5(blk + 2, blk + 6, v, 16);
    for (j = 0; j < 32; ++j)
      y[32 * b + j] = (float)v[j] * d;
  }
}

static inline void kiln_uk_row_q5_1(const uint8_t *w, float *y, int32_t k) {
  int8_t v[32];
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 24 * b;
    const float d = kiln_uk_load_f16(blk), m = kiln_uk_load_f16(blk + 2);
    kiln_uk_unpack_q5(blk + 4, blk + 8, v, 0);
    for (j = 0; j < 32; ++j)
      y[32 * b + j] = (float)v[j] * d + m;
  }
}

static inline void kiln_uk_row_iq4_nl(const uint8_t *w, float *y, int32_t k) {
  int8_t v[32];
  int32_t b, j;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + 18 * b;
    const float d = kiln_uk_load_f16(blk);
    kiln_uk_unpack_iq4nl(blk + 2, v);
    for (j = 0; j < 32; ++j)
      y[32 * b + j] = d * (float)v[j];
  }
}

static inline void kiln_uk_row_q2_k(const uint8_t *w, float *y, int32_t k) {
  int8_t v[256];
  int32_t sb, e;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + 84 * sb;
    const float d = kiln_uk_load_f16(blk + 80), dmin = kiln_uk_load_f16(blk + 82);
    kiln_uk_unpack_q2k(blk + 16, v);
    for (e = 0; e < 256; ++e) {
      const uint8_t s = blk[e / 16];
      const float dl = d * (float)(s & 15), ml = dmin * (float)(s >> 4);
      y[256 * sb + e] = dl * (float)v[e] - ml;
    }
  }
}

static inline void kiln_uk_row_q3_k(const uint8_t *w, float *y, int32_t k) {
  int8_t v[256];
  int32_t sc[16], sb, e;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + 110 * sb;
    const float d = kiln_uk_load_f16(blk + 108);
    kiln_uk_unpack_q3k(blk, v, sc);
    for (e = 0; e < 256; ++e)
      y[256 * sb + e] = (d * (float)sc[e / 16]) * (float)v[e];
  }
}

/* q4_k and q5_k: `bytes` per super-block, the codes' bits at qh (q5_k) and qs. */
static inline void kiln_uk_row_q45k(const uint8_t *w, float *y, int32_t k, int32_t five) {
  int8_t v[256];
  int32_t sc[8], m[8], sb, e;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + (five ? 176 : 144) * sb;
    const float d = kiln_uk_load_f16(blk), dmin = kiln_uk_load_f16(blk + 2);
    kiln_uk_unpack_scale_min_k4(blk + 4, sc, m);
    kiln_uk_unpack_q45k(five ? blk + 16 : 0, five ? blk + 48 : blk + 16, v);
    for (e = 0; e < 256; ++e) {
      const float d1 = d * (float)sc[e / 32], m1 = dmin * (float)m[e / 32];
      y[256 * sb + e] = d1 * (float)v[e] - m1;
    }
  }
}

static inline void kiln_uk_row_q4_k(const uint8_t *w, float *y, int32_t k) { kiln_uk_row_q45k(w, y, k, 0); }
static inline void kiln_uk_row_q5_k(const uint8_t *w, float *y, int32_t k) { kiln_uk_row_q45k(w, y, k, 1); }

static inline void kiln_uk_row_q6_k(const uint8_t *w, float *y, int32_t k) {
  int8_t v[256];
  int32_t sb, e;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + 210 * sb;
    const int8_t *sc = (const int8_t *)(const void *)(blk + 192);
    const float d = kiln_uk_load_f16(blk + 208);
    kiln_uk_unpack_q6k(blk, blk + 128, v);
    for (e = 0; e < 256; ++e)
      y[256 * sb + e] = (d * (float)sc[e / 16]) * (float)v[e];
  }
}

/* tq2_0: blocks of 256 ternary values (qs[64] as q2_k's, then f16 d). */
static inline void kiln_uk_row_tq2_0(const uint8_t *w, float *y, int32_t k) {
  int8_t v[256];
  int32_t b, e;
  for (b = 0; b < k / 256; ++b) {
    const uint8_t *blk = w + 66 * b;
    const float d = kiln_uk_load_f16(blk + 64);
    kiln_uk_unpack_tq2_0(blk, v);
    for (e = 0; e < 256; ++e)
      y[256 * b + e] = (float)v[e] * d;
  }
}

#endif /* KILN_UK_BLOCK_DECODE_H */
