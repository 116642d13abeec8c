/* Matmuls over weights in the model's row layout: a row of k values is k
 * floats, k halves, or k/g groups of an f16 scale followed by g int8 (i8) or
 * g/2 bytes of two nibbles (i4: byte j holds value j low and j + g/2 high,
 * each + 8). dot_<family> and qdot_<family> give one output; row_<family>
 * decodes a row (the embeddings). An ISA header included before this one
 * defines KILN_UK_HAS_<HELPER> for each helper it provides with the same name
 * and signature. */
#ifndef KILN_UK_MATMUL_ROWS_H
#define KILN_UK_MATMUL_ROWS_H

#include "kernels/c99/kiln_uk_base.h"
#include "kernels/c99/kiln_uk_block_decode.h"
#include "kernels/c99/kiln_uk_elementwise.h"

#ifndef KILN_UK_HAS_DOT_F32
/* Eight partial sums in a fixed order: deterministic, and the compiler may
 * keep them in vector lanes. */
static inline float kiln_uk_dot_f32(const float *x, const uint8_t *w, int32_t k) {
  const float *r = (const float *)(const void *)w;
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t i, j, whole = k - k % 8;
  for (i = 0; i < whole; i += 8)
    for (j = 0; j < 8; ++j)
      s[j] += x[i + j] * r[i + j];
  for (i = whole; i < k; ++i)
    s[0] += x[i] * r[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}
#endif

/* A dot of 16-bit float weights (f16 or bf16, by `load`), in dot_f32's order. */
#define KILN_UK_HALF_DOT(name, load)                                                         \
  static inline float name(const float *x, const uint8_t *w, int32_t k) {                  \
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                 \
    int32_t i, j, whole = k - k % 8;                                                       \
    for (i = 0; i < whole; i += 8)                                                         \
      for (j = 0; j < 8; ++j)                                                              \
        s[j] += x[i + j] * load(w + 2 * (i + j));                                          \
    for (i = whole; i < k; ++i)                                                            \
      s[0] += x[i] * load(w + 2 * i);                                                      \
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));             \
  }

#ifndef KILN_UK_HAS_DOT_F16
KILN_UK_HALF_DOT(kiln_uk_dot_f16, kiln_uk_load_f16)
#endif

#ifndef KILN_UK_HAS_QDOT_I8
/* int8 weights (f16 scale + g int8 per group) against int8 activations. */
static inline int32_t kiln_uk_group_i8(const int8_t *x, const uint8_t *codes, int32_t g) {
  const int8_t *q = (const int8_t *)(const void *)codes;
  int32_t s = 0, j;
  for (j = 0; j < g; ++j)
    s += (int32_t)x[j] * (int32_t)q[j];
  return s;
}
KILN_UK_QDOT_ROW(kiln_uk_qdot_i8, 1, kiln_uk_group_i8)
#endif

#ifndef KILN_UK_HAS_QDOT_I4
/* int4 weights (f16 scale + g/2 bytes per group; byte j holds value j in its
 * low nibble and value j + g/2 in its high nibble, each stored as value + 8).
 * Unpacking a group to int8 first keeps both loops simple enough to vectorize. */
static inline int32_t kiln_uk_group_i4(const int8_t *x, const uint8_t *codes, int32_t g) {
  int8_t v[256];
  int32_t s = 0, j, h = g / 2;
  for (j = 0; j < h; ++j) {
    v[j] = (int8_t)((codes[j] & 15) - 8);
    v[j + h] = (int8_t)((codes[j] >> 4) - 8);
  }
  for (j = 0; j < g; ++j)
    s += (int32_t)x[j] * (int32_t)v[j];
  return s;
}
KILN_UK_QDOT_ROW(kiln_uk_qdot_i4, 2, kiln_uk_group_i4)
#endif

#ifndef KILN_UK_HAS_ROW_F32
static inline void kiln_uk_row_f32(const uint8_t *w, float *y, int32_t k) {
  memcpy(y, w, (size_t)k * sizeof(float));
}
#endif

#ifndef KILN_UK_HAS_ROW_F16
static inline void kiln_uk_row_f16(const uint8_t *w, float *y, int32_t k) {
  int32_t i;
  for (i = 0; i < k; ++i)
    y[i] = kiln_uk_load_f16(w + 2 * i);
}
#endif

#ifndef KILN_UK_HAS_ROW_I8
static inline void kiln_uk_row_i8(const uint8_t *w, float *y, int32_t k, int32_t g) {
  int32_t b, j;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + g) * b;
    const int8_t *q = (const int8_t *)(const void *)(blk + 2);
    float d = kiln_uk_load_f16(blk);
    for (j = 0; j < g; ++j)
      y[g * b + j] = d * (float)q[j];
  }
}
#endif

#ifndef KILN_UK_HAS_ROW_I4
static inline void kiln_uk_row_i4(const uint8_t *w, float *y, int32_t k, int32_t g) {
  int32_t b, j, h = g / 2;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + h) * b;
    float d = kiln_uk_load_f16(blk);
    for (j = 0; j < h; ++j) {
      y[g * b + j] = d * (float)((blk[2 + j] & 15) - 8);
      y[g * b + j + h] = d * (float)((blk[2 + j] >> 4) - 8);
    }
  }
}
#endif

#ifndef KILN_UK_HAS_DOT_BF16
KILN_UK_HALF_DOT(kiln_uk_dot_bf16, kiln_uk_load_bf16)
#endif

/* The row decoder of a family: row_<family>(w, y, k), with the group g for
 * int8 and int4. */
KILN_UK_INLINE void kiln_uk_row(int family, const uint8_t *w, float *y, int32_t k, int32_t g) {
  switch (family) {
  case KILN_UK_F32: kiln_uk_row_f32(w, y, k); break;
  case KILN_UK_F16: kiln_uk_row_f16(w, y, k); break;
  case KILN_UK_BF16: kiln_uk_row_bf16(w, y, k); break;
  case KILN_UK_I8: kiln_uk_row_i8(w, y, k, g); break;
  case KILN_UK_I4: kiln_uk_row_i4(w, y, k, g); break;
  case KILN_UK_Q4_1: kiln_uk_row_q4_1(w, y, k); break;
  case KILN_UK_Q5_0: kiln_uk_row_q5_0(w, y, k); break;
  case KILN_UK_Q5_1: kiln_uk_row_q5_1(w, y, k); break;
  case KILN_UK_IQ4_NL: kiln_uk_row_iq4_nl(w, y, k); break;
  case KILN_UK_Q2_K: kiln_uk_row_q2_k(w, y, k); break;
  case KILN_UK_Q3_K: kiln_uk_row_q3_k(w, y, k); break;
  case KILN_UK_Q4_K: kiln_uk_row_q4_k(w, y, k); break;
  case KILN_UK_Q5_K: kiln_uk_row_q5_k(w, y, k); break;
  case KILN_UK_TQ2_0: kiln_uk_row_tq2_0(w, y, k); break;
  default: kiln_uk_row_q6_k(w, y, k); break;
  }
}

/* Rows r0..r1-1 of y (d floats each): row tokens[r] of a table of `family`
 * in the row layout (groups of g), decoded. */
KILN_UK_INLINE void kiln_uk_embed_rows(int family, const uint8_t *table, const int32_t *tokens, float *y,
                               int32_t r0, int32_t r1, int32_t d, int32_t g) {
  const size_t rb = kiln_uk_row_bytes(family, d, g);
  int32_t r;
  for (r = r0; r < r1; ++r)
    kiln_uk_row(family, table + (size_t)tokens[r] * rb, y + (size_t)r * (size_t)d, d, g);
}

/* Input rows quantized for row-layout int8/int4 weights, one per
 * KILN_UK_ACT_ROWS stride of scratch: the group scales, then the values. */
static inline void kiln_uk_quantize_act_rows(const float *x, void *scratch, int32_t rows, int32_t k,
                                     int32_t g) {
  const size_t stride = kiln_uk_act_stride(KILN_UK_ACT_ROWS, k, g);
  int32_t r;
  for (r = 0; r < rows; ++r) {
    uint8_t *sr = (uint8_t *)scratch + (size_t)r * stride;
    kiln_uk_quantize_act(x + (size_t)r * (size_t)k, (float *)(void *)sr,
                 (int8_t *)(void *)(sr + (size_t)(k / g) * 4u), k, g);
  }
}

/* As quantize_act_rows, each row first through rms_norm_row with gamma and
 * eps (norm_scratch_row has where). */
static inline void kiln_uk_norm_quantize_act_rows(const float *x, const float *gamma, void *scratch,
                                          int32_t rows, int32_t k, int32_t g, int32_t floats,
                                          float eps) {
  const size_t stride = kiln_uk_act_stride(KILN_UK_ACT_ROWS, k, g);
  float *t = kiln_uk_norm_scratch_row(scratch, rows, stride, floats);
  int32_t r;
  for (r = 0; r < rows; ++r) {
    uint8_t *sr = (uint8_t *)scratch + (size_t)r * stride;
    kiln_uk_rms_norm_row(x + (size_t)r * (size_t)k, gamma, t, k, eps);
    kiln_uk_quantize_act(t, (float *)(void *)sr, (int8_t *)(void *)(sr + (size_t)(k / g) * 4u), k, g);
  }
}

/* Columns lo..hi-1 of y (rows x n) = x (rows x k) times the transpose of n x k
 * weights of `family` in the row layout: dot_<family> of the float rows, or
 * qdot_<family> of the rows quantize_act_rows left in scratch (int8, int4).
 * Every output is computed the same way whatever the range. */
KILN_UK_INLINE void kiln_uk_matmul_rows(int family, const float *x, const uint8_t *w, float *y,
                                const void *scratch, int32_t rows, int32_t n, int32_t k,
                                int32_t g, int32_t lo, int32_t hi) {
  const size_t rb = kiln_uk_row_bytes(family, k, g);
  const size_t stride = kiln_uk_act_stride(KILN_UK_ACT_ROWS, k, g);
  int32_t j, r;
#ifdef KILN_UK_HAS_QDOT_PAIR
  /* The ISA's dot of two weight rows at once, then the last odd one alone. */
  if (family == KILN_UK_I8 || family == KILN_UK_I4) {
    for (; lo + 1 < hi; lo += 2)
      for (r = 0; r < rows; ++r) {
        const uint8_t *sr = (const uint8_t *)scratch + (size_t)r * stride;
        kiln_uk_qdot_pair(family, (const int8_t *)(const void *)(sr + (size_t)(k / g) * 4u),
                          (const float *)(const void *)sr, w + (size_t)lo * rb, rb, k, g,
                          y + (size_t)r * (size_t)n + lo);
      }
  }
#endif
  for (j = lo; j < hi; ++j) {
    const uint8_t *row = w + (size_t)j * rb;
    for (r = 0; r < rows; ++r) {
      float *out = y + (size_t)r * (size_t)n + j;
      if (family == KILN_UK_F32) {
        *out = kiln_uk_dot_f32(x + (size_t)r * (size_t)k, row, k);
      } else if (family == KILN_UK_F16) {
        *out = kiln_uk_dot_f16(x + (size_t)r * (size_t)k, row, k);
      } else if (family == KILN_UK_BF16) {
        *out = kiln_uk_dot_bf16(x + (size_t)r * (size_t)k, row, k);
      } else {
        const uint8_t *sr = (const uint8_t *)scratch + (size_t)r * stride;
        const int8_t *xq = (const int8_t *)(const void *)(sr + (size_t)(k / g) * 4u);
        const float *xd = (const float *)(const void *)sr;
        *out = family == KILN_UK_I8 ? kiln_uk_qdot_i8(xq, xd, row, k, g) : kiln_uk_qdot_i4(xq, xd, row, k, g);
      }
    }
  }
}

#endif /* KILN_UK_MATMUL_ROWS_H */
