/* Matmuls over the other GGUF block formats in the model's row layout
 * (kiln_uk_block_decode.h decodes them). matmul_blocks multiplies
 * activations quantized with one scale per weight block (32, or 256 for the
 * k-quants, so that an ISA's dot sums a whole super-block in integers) by the
 * weights: each block of a weight row unpacked once to int16 (unpack_block),
 * then an exact int32 dot per 32 for every activation row (block_dot); or,
 * where an ISA header defines KILN_UK_HAS_QDOT_BLOCKS before including this
 * one, its dots straight from the blocks (qdot_isa_q45k, qdot_isa_q6k,
 * qdot_isa_q23k and qdot_isa_b32, declared below), row by row or, with
 * KILN_UK_QDOT_ROWS, several activation rows per weight row, for the formats
 * those dots read (kiln_uk_isa_dots_blocks); any other block format takes the
 * portable kernel on every ISA. */
#ifndef KILN_UK_MATMUL_BLOCKS_H
#define KILN_UK_MATMUL_BLOCKS_H

#include "kernels/c99/kiln_uk_block_decode.h"
#include "kernels/c99/kiln_uk_elementwise.h"

static inline int32_t kiln_uk_idot_i8(const int8_t *x, const int8_t *v, int32_t n) {
  int32_t s = 0, j;
  for (j = 0; j < n; ++j)
    s += (int32_t)x[j] * (int32_t)v[j];
  return s;
}

static inline int32_t kiln_uk_isum_i8(const int8_t *x, int32_t n) {
  int32_t s = 0, j;
  for (j = 0; j < n; ++j)
    s += x[j];
  return s;
}

#ifndef KILN_UK_HAS_ISUMS16
/* s[h] = the sum of q[16h .. 16h + 15], for h < n16. */
static inline void kiln_uk_isums16(const int8_t *q, int32_t *s, int32_t n16) {
  int32_t h;
  for (h = 0; h < n16; ++h)
    s[h] = kiln_uk_isum_i8(q + 16 * h, 16);
}
#endif

/* v = sc[sub-block of 16] * c over a super-block. */
static inline void kiln_uk_scale_by16(const int8_t *c, const int32_t *sc, int16_t *v) {
  int32_t s, i;
  for (s = 0; s < 16; ++s)
    for (i = 0; i < 16; ++i)
      v[16 * s + i] = (int16_t)(sc[s] * c[16 * s + i]);
}

/* --- matmul ---------------------------------------------------------------- */

#ifdef KILN_UK_HAS_QDOT_BLOCKS
/* A row of q4_k (five = 0) or q5_k, of q6_k, of a format of 32-blocks, dotted
 * with activations quantized by blocks_quantize_row; the ISA header defines
 * them after including this header. */
#ifdef KILN_UK_QDOT_ROWS
/* q4_k / q5_k and q6_k against nr <= KILN_UK_QDOT_ROWS rows of activations
 * at s, stride bytes apart, into y[r * ldy] */
KILN_UK_INLINE void kiln_uk_qdot_isa_q45k(const uint8_t *s, size_t stride, int32_t nr, const uint8_t *w,
                                  int32_t k, int32_t five, float *y, size_t ldy);
KILN_UK_INLINE void kiln_uk_qdot_isa_q6k(const uint8_t *s, size_t stride, int32_t nr, const uint8_t *w,
                                 int32_t k, float *y, size_t ldy);
#else
static inline float kiln_uk_qdot_isa_q45k(const int8_t *xq, const float *xd, const float *xa,
                                  const uint8_t *w, int32_t k, int32_t five);
static inline float kiln_uk_qdot_isa_q6k(const int8_t *xq, const float *xd, const float *xa,
                                 const uint8_t *w, int32_t k);
#endif
static inline float kiln_uk_qdot_isa_b32(int fmt, const int8_t *xq, const float *xd, const float *xa,
                                 const uint8_t *w, int32_t k);
static inline float kiln_uk_qdot_isa_q23k(const int8_t *xq, const float *xd, const float *xa,
                                  const uint8_t *w, int32_t k, int32_t three);

/* q2_k (three = 0) or q3_k: for each sub-block of 16 its integer scale sc
 * (q2_k's low nibble, q3_k's six bits minus 32), and the float that its
 * activations' scaled sum is subtracted times: q2_k's dmin x min, q3_k's
 * 4 x d x sc for its codes' offset of 4 (the ISA dots take codes 0..3 / 0..7). */
static inline void kiln_uk_blocks_q23k_scales(const uint8_t *blk, int32_t three, int32_t *sc, float *off) {
  int32_t s;
  if (three) {
    const float d = kiln_uk_load_f16(blk + 108);
    kiln_uk_unpack_q3k_scales(blk + 96, sc);
    for (s = 0; s < 16; ++s)
      off[s] = 4.0f * d * (float)sc[s];
  } else {
    const float dmin = kiln_uk_load_f16(blk + 82);
    for (s = 0; s < 16; ++s) {
      sc[s] = blk[s] & 15;
      off[s] = dmin * (float)(blk[s] >> 4);
    }
  }
}
#endif


/* One row of activations for the block-format kernels, as kiln_uk_abi.h lays
 * out KILN_UK_ACT_BLOCKS: per group of g (the weight format's block: 32, or
 * 256 for the k-quants) a scale and int8 values, as quantize_act. */
static inline void kiln_uk_blocks_quantize_row(const float *x, uint8_t *row, int32_t k, int32_t g) {
  float *d = (float *)(void *)row;
  float *a = d + k / g;
  int8_t *q = (int8_t *)(void *)(a + k / 16);
  uint32_t *pairs = (uint32_t *)(void *)(q + k);
  int32_t *sums = (int32_t *)(void *)(pairs + (k + 63) / 64);
  int32_t h;
#ifdef KILN_UK_HAS_QUANTIZE_ACT_SUMS
  kiln_uk_quantize_act_sums(x, d, sums, q, k, g); /* the ISA's; its group sums are overwritten */
#else
  kiln_uk_quantize_act(x, d, q, k, g);
#endif
  kiln_uk_isums16(q, sums, k / 16);
  for (h = 0; h < k / 16; ++h)
    a[h] = d[h * 16 / g] * (float)sums[h];
  for (h = 0; h < (k + 63) / 64; ++h) {
    int32_t lo = sums[4 * h] + sums[4 * h + 1];
    int32_t hi = 64 * h + 32 < k ? sums[4 * h + 2] + sums[4 * h + 3] : 0;
    pairs[h] = (uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16;
  }
}

/* Input rows quantized for the block formats, one per KILN_UK_ACT_BLOCKS
 * stride of scratch: the setup of a matmul over them. */
static inline void kiln_uk_blocks_quantize_rows(const float *x, void *scratch, int32_t rows, int32_t k,
                                        int32_t g) {
  const size_t stride = kiln_uk_act_stride(KILN_UK_ACT_BLOCKS, k, g);
  int32_t r;
  for (r = 0; r < rows; ++r)
    kiln_uk_blocks_quantize_row(x + (size_t)r * (size_t)k, (uint8_t *)scratch + (size_t)r * stride, k,
                        g);
}

/* As blocks_quantize_rows, each row first through rms_norm_row with gamma and
 * eps (norm_scratch_row has where). */
static inline void kiln_uk_blocks_norm_quantize_rows(const float *x, const float *gamma, void *scratch,
                                             int32_t rows, int32_t k, int32_t g, int32_t floats,
                                             float eps) {
  const size_t stride = kiln_uk_act_stride(KILN_UK_ACT_BLOCKS, k, g);
  float *t = kiln_uk_norm_scratch_row(scratch, rows, stride, floats);
  int32_t r;
  for (r = 0; r < rows; ++r) {
    kiln_uk_rms_norm_row(x + (size_t)r * (size_t)k, gamma, t, k, eps);
    kiln_uk_blocks_quantize_row(t, (uint8_t *)scratch + (size_t)r * stride, k, g);
  }
}

/* One block unpacked: int16 values with every integer offset and sub-block
 * scale folded in, a float scale per 32 and a float coefficient per 16 of the
 * activations' scaled sums xa, so that the block's dot with the activations is
 *   sum over groups g of xd[g] * ws[g] * (xq . v) + wm[2g] xa[2g] + wm[2g+1] xa[2g+1]. */
KILN_UK_INLINE void kiln_uk_unpack_block(int fmt, const uint8_t *blk, int16_t *v, float *ws, float *wm) {
  int8_t c[256];
  int32_t e, g;
  switch (fmt) {
  case KILN_UK_Q4_1:
  case KILN_UK_Q5_1:
    if (fmt == KILN_UK_Q4_1)
      kiln_uk_unpack_nibbles32(blk + 4, c, 0);
    else
      kiln_uk_unpack_q5(blk + 4, blk + 8, c, 0);
    ws[0] = kiln_uk_load_f16(blk);
    wm[0] = wm[1] = kiln_uk_load_f16(blk + 2);
    break;
  case KILN_UK_Q5_0:
  case KILN_UK_IQ4_NL:
    if (fmt == KILN_UK_Q5_0)
      kiln_uk_unpack_q5(blk + 2, blk + 6, c, 16);
    else
      kiln_uk_unpack_iq4nl(blk + 2, c);
    ws[0] = kiln_uk_load_f16(blk);
    wm[0] = wm[1] = 0.0f;
    break;
  case KILN_UK_Q2_K: {
    const float d = kiln_uk_load_f16(blk + 80), dmin = kiln_uk_load_f16(blk + 82);
    int32_t sc[16];
    kiln_uk_unpack_q2k(blk + 16, c);
    for (g = 0; g < 16; ++g) {
      sc[g] = blk[g] & 15;
      wm[g] = -(dmin * (float)(blk[g] >> 4));
    }
    kiln_uk_scale_by16(c, sc, v);
    for (g = 0; g < 8; ++g)
      ws[g] = d;
    return;
  }
  case KILN_UK_Q3_K: {
    int32_t sc[16];
    kiln_uk_unpack_q3k(blk, c, sc);
    kiln_uk_scale_by16(c, sc, v);
    for (g = 0; g < 8; ++g)
      ws[g] = kiln_uk_load_f16(blk + 108), wm[2 * g] = wm[2 * g + 1] = 0.0f;
    return;
  }
  case KILN_UK_Q4_K:
  case KILN_UK_Q5_K: {
    const int32_t five = fmt == KILN_UK_Q5_K;
    const float d = kiln_uk_load_f16(blk), dmin = kiln_uk_load_f16(blk + 2);
    int32_t sc[8], m[8];
    kiln_uk_unpack_scale_min_k4(blk + 4, sc, m);
    kiln_uk_unpack_q45k(five ? blk + 16 : 0, five ? blk + 48 : blk + 16, c);
    for (g = 0; g < 8; ++g) {
      ws[g] = d * (float)sc[g];
      wm[2 * g] = wm[2 * g + 1] = -(dmin * (float)m[g]);
    }
    break;
  }
  case KILN_UK_TQ2_0:
    kiln_uk_unpack_tq2_0(blk, c);
    for (g = 0; g < 8; ++g)
      ws[g] = kiln_uk_load_f16(blk + 64), wm[2 * g] = wm[2 * g + 1] = 0.0f;
    break;
  default: { /* KILN_UK_Q6_K */
    int32_t sc[16];
    for (g = 0; g < 16; ++g)
      sc[g] = (int8_t)blk[192 + g];
    kiln_uk_unpack_q6k(blk, blk + 128, c);
    kiln_uk_scale_by16(c, sc, v);
    for (g = 0; g < 8; ++g)
      ws[g] = kiln_uk_load_f16(blk + 208), wm[2 * g] = wm[2 * g + 1] = 0.0f;
    return;
  }
  }
  for (e = 0; e < kiln_uk_block_elements(fmt); ++e)
    v[e] = c[e];
}

static inline int32_t kiln_uk_idot_i8_i16(const int8_t *x, const int16_t *v, int32_t n) {
  int32_t s = 0, j;
  for (j = 0; j < n; ++j)
    s += (int32_t)x[j] * (int32_t)v[j];
  return s;
}

/* One unpacked block of `groups` groups of 32 against one activation row's,
 * whose scale for the block is xd. */
static inline float kiln_uk_block_dot(const int8_t *xq, float xd, const float *xa, const int16_t *v,
                              const float *ws, const float *wm, int32_t groups) {
  float acc = 0.0f;
  int32_t g;
  for (g = 0; g < groups; ++g)
    acc += xd * ws[g] * (float)kiln_uk_idot_i8_i16(xq + 32 * g, v + 32 * g, 32) +
           (wm[2 * g] * xa[2 * g] + wm[2 * g + 1] * xa[2 * g + 1]);
  return acc;
}

/* Whether an ISA's qdot_isa_* read format fmt: the k-quants and q4_1, q5_0,
 * q5_1, iq4_nl. */
static inline int kiln_uk_isa_dots_blocks(int fmt) {
#ifdef KILN_UK_HAS_QDOT_BLOCKS
  return fmt == KILN_UK_Q2_K || fmt == KILN_UK_Q3_K || fmt == KILN_UK_Q4_K ||
         fmt == KILN_UK_Q5_K || fmt == KILN_UK_Q6_K || fmt == KILN_UK_Q4_1 ||
         fmt == KILN_UK_Q5_0 || fmt == KILN_UK_Q5_1 || fmt == KILN_UK_IQ4_NL;
#else
  (void)fmt;
  return 0;
#endif
}

/* Columns [j0, j1) of y (rows x n) = the rows quantized in scratch (by
 * blocks_quantize_row) times the transpose of the n x k weights w in format
 * fmt. Each block of a weight row is unpacked once for all rows; each output
 * sums its blocks in order, whatever the rows and the column range. */
KILN_UK_INLINE void kiln_uk_matmul_blocks(int fmt, const uint8_t *w, float *y, const void *scratch,
                                  int32_t rows, int32_t n, int32_t k, int32_t j0, int32_t j1) {
  const int32_t e = kiln_uk_block_elements(fmt), bb = kiln_uk_block_bytes(fmt);
  const size_t stride = kiln_uk_act_stride(KILN_UK_ACT_BLOCKS, k, e), rb = (size_t)(k / e) * (size_t)bb;
  const uint8_t *s = (const uint8_t *)scratch;
  int16_t v[256];
  float ws[8], wm[16];
  int32_t j, r, b;
#ifdef KILN_UK_HAS_QDOT_BLOCKS
  if (kiln_uk_isa_dots_blocks(fmt)) {
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
              kiln_uk_qdot_isa_q6k(sr, stride, 1, row, k, yr, (size_t)n);
            else
              kiln_uk_qdot_isa_q6k(sr, stride, nr, row, k, yr, (size_t)n);
          } else if (nr == 1)
            kiln_uk_qdot_isa_q45k(sr, stride, 1, row, k, fmt == KILN_UK_Q5_K, yr, (size_t)n);
          else
            kiln_uk_qdot_isa_q45k(sr, stride, nr, row, k, fmt == KILN_UK_Q5_K, yr, (size_t)n);
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
            fmt == KILN_UK_Q6_K ? kiln_uk_qdot_isa_q6k(xq, xd, xa, row, k)
            : fmt == KILN_UK_Q4_K || fmt == KILN_UK_Q5_K
                ? kiln_uk_qdot_isa_q45k(xq, xd, xa, row, k, fmt == KILN_UK_Q5_K) :
#endif
            fmt == KILN_UK_Q2_K || fmt == KILN_UK_Q3_K
                ? kiln_uk_qdot_isa_q23k(xq, xd, xa, row, k, fmt == KILN_UK_Q3_K)
                : kiln_uk_qdot_isa_b32(fmt, xq, xd, xa, row, k);
      }
    return;
  }
#endif
  for (j = j0; j < j1; ++j) {
    const uint8_t *row = w + (size_t)j * rb;
    for (r = 0; r < rows; ++r)
      y[(size_t)r * (size_t)n + j] = 0.0f;
    for (b = 0; b < k / e; ++b) {
      kiln_uk_unpack_block(fmt, row + (size_t)b * (size_t)bb, v, ws, wm);
      for (r = 0; r < rows; ++r) {
        const float *xd = (const float *)(const void *)(s + (size_t)r * stride), *xa = xd + k / e;
        const int8_t *xq = (const int8_t *)(const void *)(xa + k / 16);
        y[(size_t)r * (size_t)n + j] +=
            kiln_uk_block_dot(xq + b * e, xd[b], xa + b * (e / 16), v, ws, wm, e / 32);
      }
    }
  }
}

#endif /* KILN_UK_MATMUL_BLOCKS_H */
