/* The kernels of an imported graph's ops beyond a decoder's: elementwise maps
 * and zips, copies through strides (transpose, broadcast, slice, concat),
 * gathers, casts, comparisons, a mean over dimensions, products of two
 * activations and bidirectional attention. Every shape is a constant of the
 * generated kernel that calls them. Plain C99. */
#ifndef KILN_UK_GRAPH_H
#define KILN_UK_GRAPH_H

#include "kernels/c99/kiln_uk_base.h"
#include "kernels/c99/kiln_uk_elementwise.h"

/* Dimensions of the tensors the strided kernels walk. */
#define KILN_UK_MAX_RANK 8

/* Element types of a graph's tensors (kiln_graph.h's kiln_element). */
enum {
  KILN_UK_ELEM_F32 = 0,
  KILN_UK_ELEM_I64 = 1,
  KILN_UK_ELEM_I32 = 2,
  KILN_UK_ELEM_I8 = 3,
  KILN_UK_ELEM_U8 = 4,
  KILN_UK_ELEM_BOOL = 5,
  KILN_UK_ELEM_F16 = 6,
  KILN_UK_ELEM_F64 = 7
};

static inline double kiln_uk_load_real(int elem, const uint8_t *p, int64_t i) {
  float f;
  double r;
  int64_t l;
  int32_t n;
  uint16_t h;
  switch (elem) {
  case KILN_UK_ELEM_F16:
    memcpy(&h, p + 2 * i, 2);
    return kiln_f16_to_f32(h);
  case KILN_UK_ELEM_F64:
    memcpy(&r, p + 8 * i, 8);
    return r;
  case KILN_UK_ELEM_F32:
    memcpy(&f, p + 4 * i, 4);
    return f;
  case KILN_UK_ELEM_I64:
    memcpy(&l, p + 8 * i, 8);
    return (double)l;
  case KILN_UK_ELEM_I32:
    memcpy(&n, p + 4 * i, 4);
    return n;
  case KILN_UK_ELEM_I8:
    return (int8_t)p[i];
  default:
    return p[i];
  }
}

static inline int64_t kiln_uk_load_int(int elem, const uint8_t *p, int64_t i) {
  int64_t l;
  int32_t n;
  if (elem == KILN_UK_ELEM_I64) {
    memcpy(&l, p + 8 * i, 8);
    return l;
  }
  if (elem == KILN_UK_ELEM_I32) {
    memcpy(&n, p + 4 * i, 4);
    return n;
  }
  return (int64_t)kiln_uk_load_real(elem, p, i);
}

/* Element i of y as `elem` from v (a float to an integer: towards zero). */
static inline void kiln_uk_store(int elem, uint8_t *y, int64_t i, double v) {
  float f;
  int64_t l;
  int32_t n;
  uint16_t h;
  switch (elem) {
  case KILN_UK_ELEM_F16:
    h = kiln_f32_to_f16((float)v);
    memcpy(y + 2 * i, &h, 2);
    break;
  case KILN_UK_ELEM_F64:
    memcpy(y + 8 * i, &v, 8);
    break;
  case KILN_UK_ELEM_F32:
    f = (float)v;
    memcpy(y + 4 * i, &f, 4);
    break;
  case KILN_UK_ELEM_I64:
    l = (int64_t)v;
    memcpy(y + 8 * i, &l, 8);
    break;
  case KILN_UK_ELEM_I32:
    n = (int32_t)v;
    memcpy(y + 4 * i, &n, 4);
    break;
  case KILN_UK_ELEM_I8:
    y[i] = (uint8_t)(int8_t)v;
    break;
  case KILN_UK_ELEM_BOOL:
    y[i] = v != 0;
    break;
  default:
    y[i] = (uint8_t)v;
  }
}

static inline void kiln_uk_cast(int from, int to, const uint8_t *x, uint8_t *y, int64_t n) {
  int64_t i;
  for (i = 0; i < n; ++i) {
    if (from < KILN_UK_ELEM_BOOL && from != KILN_UK_ELEM_F32 && to < KILN_UK_ELEM_BOOL &&
        to != KILN_UK_ELEM_F32)
      kiln_uk_store(to, y, i, (double)kiln_uk_load_int(from, x, i));
    else
      kiln_uk_store(to, y, i, kiln_uk_load_real(from, x, i));
  }
}

enum { KILN_UK_MAP_SQRT, KILN_UK_MAP_ERF, KILN_UK_MAP_TANH };

static inline void kiln_uk_map(int op, const float *x, float *y, int64_t n) {
  int64_t i;
  for (i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = op == KILN_UK_MAP_SQRT ? sqrtf(v) : op == KILN_UK_MAP_ERF ? erff(v) : tanhf(v);
  }
}

/* Exact GELU, x / 2 * (1 + erf(x / sqrt(2))), with erf as Abramowitz and
 * Stegun's 7.1.26 (absolute error at most 1.5e-7): 1 - poly(t) exp(-z^2),
 * t = 1 / (1 + p |z|), the exponentials a block at a time by exp_block (an
 * ISA's vector one where it has one), every other loop one a compiler
 * vectorizes. The Erf op keeps erff. */
#define KILN_UK_GELU_BLOCK 64
static inline void kiln_uk_gelu_erf(const float *x, float *y, int64_t n) {
  float e[KILN_UK_GELU_BLOCK];
  int64_t i0, i;
  for (i0 = 0; i0 < n; i0 += KILN_UK_GELU_BLOCK) {
    const int32_t m = (int32_t)(n - i0 < KILN_UK_GELU_BLOCK ? n - i0 : KILN_UK_GELU_BLOCK);
    for (i = 0; i < m; ++i) {
      const float z = x[i0 + i] * 0.7071067811865475f;
      e[i] = -z * z;
    }
    kiln_uk_exp_block(e, 0.0f, e, m);
    for (i = 0; i < m; ++i) {
      const float v = x[i0 + i], z = v * 0.7071067811865475f, u = z < 0 ? -z : z;
      const float t = 1.0f / (1.0f + 0.3275911f * u);
      const float poly =
          t * (0.254829592f +
               t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
      const float erf_u = 1.0f - poly * e[i];
      y[i0 + i] = 0.5f * v * (1.0f + (z < 0 ? -erf_u : erf_u));
    }
  }
}

enum { KILN_UK_ZIP_SUB, KILN_UK_ZIP_DIV, KILN_UK_ZIP_POW };

static inline void kiln_uk_zip(int op, const float *a, const float *b, float *y, int64_t n) {
  int64_t i;
  for (i = 0; i < n; ++i)
    y[i] = op == KILN_UK_ZIP_SUB   ? a[i] - b[i]
           : op == KILN_UK_ZIP_DIV ? a[i] / b[i]
                                   : powf(a[i], b[i]);
}

static inline void kiln_uk_fill(float *y, int64_t n, float v) {
  int64_t i;
  for (i = 0; i < n; ++i)
    y[i] = v;
}

/* y[i] = a[i] == b[i], as booleans; floats compare as numbers (-0 == 0). */
static inline void kiln_uk_equal(int elem, const uint8_t *a, const uint8_t *b, uint8_t *y,
                                 int64_t n) {
  int64_t i;
  for (i = 0; i < n; ++i)
    y[i] = elem == KILN_UK_ELEM_F32 || elem >= KILN_UK_ELEM_F16
               ? kiln_uk_load_real(elem, a, i) == kiln_uk_load_real(elem, b, i)
               : kiln_uk_load_int(elem, a, i) == kiln_uk_load_int(elem, b, i);
}

/* y[i] = c[i] ? a[i] : b[i], elements of `size` bytes. */
static inline void kiln_uk_where(int32_t size, const uint8_t *c, const uint8_t *a, const uint8_t *b,
                                 uint8_t *y, int64_t n) {
  int64_t i;
  for (i = 0; i < n; ++i)
    memcpy(y + i * size, (c[i] ? a : b) + i * size, (size_t)size);
}

/* Visits every index of `shape` in row-major order, keeping an offset into
 * each of two tensors with their own strides (in elements; 0 repeats). */
typedef struct kiln_uk_walk {
  int64_t index[KILN_UK_MAX_RANK];
  int64_t a, b;
} kiln_uk_walk;

static inline void kiln_uk_walk_next(kiln_uk_walk *w, const int64_t *shape, const int64_t *sa,
                                     const int64_t *sb, int32_t rank) {
  int32_t k;
  for (k = rank - 1; k >= 0; --k) {
    w->a += sa[k];
    w->b += sb[k];
    if (++w->index[k] < shape[k])
      return;
    w->a -= sa[k] * shape[k];
    w->b -= sb[k] * shape[k];
    w->index[k] = 0;
  }
}

static inline int64_t kiln_uk_count(const int64_t *shape, int32_t rank) {
  int64_t n = 1;
  int32_t k;
  for (k = 0; k < rank; ++k)
    n *= shape[k];
  return n;
}

/* The elements of `shape` (each `size` bytes) from src, at its strides, to
 * dst at its strides: a transpose, a broadcast (stride 0), a slice (src
 * offset, stride times step) or a part of a concat (dst offset). The walk
 * steps over the outer dimensions; the last one is a run, one memcpy where
 * both sides are contiguous (a slice, a head split or merge), else a loop at
 * its strides (a transpose). */
static inline void kiln_uk_copy_strided(int32_t size, const uint8_t *src,
                                        const int64_t *src_strides, uint8_t *dst,
                                        const int64_t *dst_strides, const int64_t *shape,
                                        int32_t rank) {
  int64_t runs, inner, sa, sb, i, j;
  kiln_uk_walk w;
  if (rank == 0) {
    memcpy(dst, src, (size_t)size);
    return;
  }
  runs = kiln_uk_count(shape, rank - 1);
  inner = shape[rank - 1];
  sa = src_strides[rank - 1] * size;
  sb = dst_strides[rank - 1] * size;
  memset(&w, 0, sizeof w);
  for (i = 0; i < runs; ++i) {
    const uint8_t *a = src + w.a * size;
    uint8_t *b = dst + w.b * size;
    if (sa == size && sb == size)
      memcpy(b, a, (size_t)(inner * size));
    else if (size == 4) /* floats: a 4-byte move each, not a memcpy call */
      for (j = 0; j < inner; ++j)
        memcpy(b + j * sb, a + j * sa, 4);
    else
      for (j = 0; j < inner; ++j)
        memcpy(b + j * sb, a + j * sa, (size_t)size);
    kiln_uk_walk_next(&w, shape, src_strides, dst_strides, rank - 1);
  }
}

/* y (the input's shape with the reduced dimensions 1) = the mean of x over
 * the dimensions whose y stride is 0, `count` elements each. */
static inline void kiln_uk_reduce_mean(const float *x, float *y, const int64_t *x_strides,
                                       const int64_t *y_strides, const int64_t *shape, int32_t rank,
                                       int64_t y_count, int64_t count) {
  const int64_t n = kiln_uk_count(shape, rank);
  kiln_uk_walk w;
  int64_t i;
  memset(&w, 0, sizeof w);
  for (i = 0; i < y_count; ++i)
    y[i] = 0;
  for (i = 0; i < n; ++i) {
    y[w.b] += x[w.a];
    kiln_uk_walk_next(&w, shape, x_strides, y_strides, rank);
  }
  for (i = 0; i < y_count; ++i)
    y[i] /= (float)count;
}

/* Whether every index (int32 or int64) is in [lo, hi): the schedule checks
 * the indices of a gather or an embedding before it reads the table. */
static inline int kiln_uk_indices_ok(int elem, const void *indices, int64_t n, int64_t lo,
                                     int64_t hi) {
  int64_t i;
  for (i = 0; i < n; ++i) {
    const int64_t at = kiln_uk_load_int(elem, (const uint8_t *)indices, i);
    if (at < lo || at >= hi)
      return 0;
  }
  return 1;
}

/* y[o, i, :] = x[o, indices[i], :] for o < outer, i < count, rows of `inner`
 * elements of `size` bytes; the indices checked by kiln_uk_indices_ok. */
static inline void kiln_uk_gather(int32_t size, const uint8_t *x, int elem, const uint8_t *indices,
                                  int64_t count, int64_t outer, int64_t axis, int64_t inner,
                                  uint8_t *y) {
  const size_t row = (size_t)(inner * size);
  int64_t o, i;
  for (o = 0; o < outer; ++o)
    for (i = 0; i < count; ++i) {
      int64_t at = kiln_uk_load_int(elem, indices, i);
      if (at < 0)
        at += axis;
      memcpy(y + (size_t)(o * count + i) * row, x + (size_t)(o * axis + at) * row, row);
    }
}

/* y[b] = a[b] (m x k) times c[b] (k x n), for each of `batch` products. */
static inline void kiln_uk_batch_matmul(const float *a, const float *c, float *y, int64_t batch,
                                        int64_t m, int64_t k, int64_t n) {
  int64_t b, i, j, l;
  for (b = 0; b < batch; ++b)
    for (i = 0; i < m; ++i) {
      float *yi = y + (b * m + i) * n;
      for (j = 0; j < n; ++j)
        yi[j] = 0;
      for (l = 0; l < k; ++l) {
        const float x = a[(b * m + i) * k + l];
        const float *cl = c + (b * k + l) * n;
        for (j = 0; j < n; ++j)
          yi[j] += x * cl[j];
      }
    }
}

/* Columns of scores (keys) and of y (features) a block of queries takes at
 * a time: its rows x these columns of sums stay in registers (an ISA with
 * more registers defines more, with its tile). */
#ifndef KILN_UK_ATTEND_COLS
#define KILN_UK_ATTEND_COLS 16
#endif

#if defined(KILN_UK_HAS_ATTEND_QUADS)
/* The ISA's tile of four rows (kiln_uk_attend_quad_tile, the same contract
 * for at most four rows) over the block's rows: four rows of sums fit the
 * registers of AVX2, NEON and RVV where eight do not. */
static inline void kiln_uk_attend_tile(const float *a, int64_t lda, const float *b, int64_t ldb,
                                       int64_t k, int64_t col, int64_t n, int64_t rows, float *out,
                                       int64_t ldo, float scale) {
  int64_t h;
  for (h = 0; h < rows; h += 4)
    kiln_uk_attend_quad_tile(a + h * lda, lda, b, ldb, k, col, n, rows - h < 4 ? rows - h : 4,
                             out + h * ldo, ldo, scale);
}
#elif !defined(KILN_UK_HAS_ATTEND_TILES)
/* out[r][col..col+n) = scale * sum_k a[r][k] b[k][col..col+n) for `rows`
 * rows of a (its rows lda apart, b's ldb, out's ldo): a block of queries'
 * scores (a = q, b = kt) or their weighted values (a = p, b = v). */
static inline void kiln_uk_attend_tile(const float *a, int64_t lda, const float *b, int64_t ldb,
                                       int64_t k, int64_t col, int64_t n, int64_t rows, float *out,
                                       int64_t ldo, float scale) {
  float acc[KILN_UK_ATTEND_ROWS][KILN_UK_ATTEND_COLS];
  int64_t r, c, l;
  for (r = 0; r < KILN_UK_ATTEND_ROWS; ++r)
    for (c = 0; c < KILN_UK_ATTEND_COLS; ++c)
      acc[r][c] = 0;
  for (l = 0; l < k; ++l) {
    const float *bl = b + l * ldb + col;
    float x[KILN_UK_ATTEND_COLS];
    for (c = 0; c < KILN_UK_ATTEND_COLS; ++c)
      x[c] = c < n ? bl[c] : 0.0f;
    for (r = 0; r < KILN_UK_ATTEND_ROWS; ++r) {
      const float w = r < rows ? a[r * lda + l] : 0.0f;
      for (c = 0; c < KILN_UK_ATTEND_COLS; ++c)
        acc[r][c] += w * x[c];
    }
  }
  for (r = 0; r < rows; ++r)
    for (c = 0; c < n; ++c)
      out[r * ldo + col + c] = acc[r][c] * scale;
}
#endif

/* Bidirectional attention: y[b, i] = sum_j p_j v[b, j] with p = softmax over
 * j of scale * q[b, i] . kt[b, :, j] + bias[b, i, j] (bias may be NULL; with
 * bias_rows 1 it is [B, 1, T], one row for every query, else [B, S, T]),
 * q [B, S, D], kt [B, D, T], v [B, T, E]. KILN_UK_ATTEND_ROWS queries at a
 * time: their scores over all keys in `scratch`
 * (kiln_uk_attend_scratch_bytes), computed and applied a register tile of
 * rows x KILN_UK_ATTEND_COLS at a time. A row whose every score is -inf (all
 * masked) is NaN, as softmax gives it. */
static inline void kiln_uk_attend_bidirectional(const float *q, const float *kt, const float *v,
                                                const float *bias, int64_t bias_rows, float *y,
                                                void *scratch, int64_t batch, int64_t s, int64_t t,
                                                int64_t d, int64_t e, float scale) {
  float *scores = (float *)scratch;
  int64_t b, i0, r, j;
  for (b = 0; b < batch; ++b) {
    const float *kb = kt + b * d * t, *vb = v + b * t * e;
    for (i0 = 0; i0 < s; i0 += KILN_UK_ATTEND_ROWS) {
      const int64_t rows = s - i0 < KILN_UK_ATTEND_ROWS ? s - i0 : KILN_UK_ATTEND_ROWS;
      for (j = 0; j < t; j += KILN_UK_ATTEND_COLS)
        kiln_uk_attend_tile(q + (b * s + i0) * d, d, kb, t, d, j,
                            t - j < KILN_UK_ATTEND_COLS ? t - j : KILN_UK_ATTEND_COLS, rows, scores,
                            t, scale);
      for (r = 0; r < rows; ++r) {
        float *sr = scores + r * t;
        float peak, sum, inv;
        if (bias) {
          const float *br = bias + (b * bias_rows + (bias_rows == 1 ? 0 : i0 + r)) * t;
          for (j = 0; j < t; ++j)
            sr[j] += br[j];
        }
        peak = kiln_uk_max_of(sr, (int32_t)t);
        if (peak == -INFINITY) { /* every key masked: NaN, whatever exp_block makes of -inf */
          for (j = 0; j < t; ++j)
            sr[j] = NAN;
          continue;
        }
        kiln_uk_exp_block(sr, peak, sr, (int32_t)t);
        sum = kiln_uk_sum_of(sr, (int32_t)t);
        inv = sum > 0 ? 1.0f / sum : NAN;
        for (j = 0; j < t; ++j)
          sr[j] *= inv;
      }
      for (j = 0; j < e; j += KILN_UK_ATTEND_COLS)
        kiln_uk_attend_tile(scores, t, vb, e, t, j,
                            e - j < KILN_UK_ATTEND_COLS ? e - j : KILN_UK_ATTEND_COLS, rows,
                            y + (b * s + i0) * e, e, 1.0f);
    }
  }
}

#endif /* KILN_UK_GRAPH_H */
