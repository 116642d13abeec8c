/* Row-wise and elementwise kernels: adds and products, rope, rms_norm, the
 * exponential the softmax takes, silu and gelu. An ISA header included before
 * this one replaces a helper by defining KILN_UK_HAS_<HELPER>. */
#ifndef KILN_UK_ELEMENTWISE_H
#define KILN_UK_ELEMENTWISE_H

#include "kernels/c99/kiln_uk_base.h"

#ifndef KILN_UK_HAS_VEC_ARITH
/* y = a + b and y = a * b over n values (residual adds and gated products of
 * the unfused schedule); plain loops that compilers vectorize. */
static inline void kiln_uk_vec_add(const float *a, const float *b, float *y, int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i)
    y[i] = a[i] + b[i];
}
static inline void kiln_uk_vec_mul(const float *a, const float *b, float *y, int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i)
    y[i] = a[i] * b[i];
}
#endif

#ifndef KILN_UK_HAS_ROPE_HEAD
/* One head of hd values turned by rope: value j of the rd rotated ones is
 * x[j] cc[j] + x[partner] ss[j], where the partner is j's other half of its
 * pair ((j, j + rd/2) in NeoX's layout, (2i, 2i + 1) otherwise) and cc, ss
 * hold each pair's cos and sin as the rows' angles give them (ss: -sin at the
 * pair's first value); values rd.. pass through. y may be x. The head is read
 * into a volatile copy first, so this reference stays scalar: GCC's vector
 * code for it can fuse a multiply and an add even with -ffp-contract=off. */
static inline void kiln_uk_rope_head(const float *x, float *y, const float *cc, const float *ss,
                             int32_t rd, int32_t hd, int neox) {
  volatile float t[KILN_UK_MAX_HEAD_DIM];
  int32_t j;
  for (j = 0; j < hd; ++j)
    t[j] = x[j];
  for (j = 0; j < rd; ++j) {
    const int32_t partner = neox ? (j < rd / 2 ? j + rd / 2 : j - rd / 2) : j ^ 1;
    const float a = t[j] * cc[j], b = t[partner] * ss[j]; /* apart: clang fuses within one */
    y[j] = a + b;
  }
  for (j = rd; j < hd; ++j)
    y[j] = t[j];
}
#endif

#ifndef KILN_UK_HAS_RMS_NORM_ROW
/* y = x / sqrt(mean(x^2) + eps) * g over one row of d, the sum of squares in
 * double. */
static inline void kiln_uk_rms_norm_row(const float *x, const float *g, float *y, int32_t d, float eps) {
  double ss = 0.0;
  float scale;
  int32_t i;
  for (i = 0; i < d; ++i)
    ss += (double)x[i] * (double)x[i];
  scale = (float)(1.0 / sqrt(ss / d + (double)eps));
  for (i = 0; i < d; ++i)
    y[i] = x[i] * scale * g[i];
}
#endif

#ifndef KILN_UK_HAS_EXP_BLOCK
/* e[i] = exp(x[i] - m) for n values. */
static inline void kiln_uk_exp_block(const float *x, float m, float *e, int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i)
    e[i] = expf(x[i] - m);
}
#endif

#ifndef KILN_UK_HAS_SILU
/* y = x / (1 + e^-x), n values. */
static inline void kiln_uk_silu(const float *x, float *y, int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i)
    y[i] = x[i] / (1.0f + expf(-x[i]));
}
#endif

/* GELU, tanh approximation: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))). */
static inline void kiln_uk_gelu(const float *x, float *y, int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * v * (1.0f + 0.044715f * v * v)));
  }
}

/* y *= s over n values (gemma3 scales its embeddings by sqrt(n_embd)). */
static inline void kiln_uk_vec_scale(float *y, int32_t n, float s) {
  int32_t i;
  for (i = 0; i < n; ++i)
    y[i] *= s;
}

/* Rows r0..r1-1 of d values normalized by rms_norm_row, each group of g on
 * its own (one per head for the per-head norms of qwen3 and gemma3, the whole
 * row otherwise) with the g weights w. */
static inline void kiln_uk_rms_norm_rows(const float *x, const float *w, float *y, int32_t r0, int32_t r1,
                                 int32_t d, int32_t g, float eps) {
  int32_t r, i;
  for (r = r0; r < r1; ++r)
    for (i = 0; i < d; i += g)
      kiln_uk_rms_norm_row(x + (size_t)r * (size_t)d + i, w, y + (size_t)r * (size_t)d + i, g, eps);
}

/* Reductions over a row in KILN_UK_LANES partial results side by side, then
 * combined in lane order: compilers vectorize the lanes without reordering a
 * float operation (one chain of n dependent adds is what a plain loop is
 * without -ffast-math), so every target computes the same bits. */
#define KILN_UK_LANES 16

/* The largest of x[0..n-1] (-inf for none; a NaN is passed over). */
static inline float kiln_uk_max_of(const float *x, int32_t n) {
  float part[KILN_UK_LANES], m = -INFINITY;
  int32_t i = 0, l;
  for (l = 0; l < KILN_UK_LANES; ++l)
    part[l] = -INFINITY;
  for (; i + KILN_UK_LANES <= n; i += KILN_UK_LANES)
    for (l = 0; l < KILN_UK_LANES; ++l)
      part[l] = x[i + l] > part[l] ? x[i + l] : part[l];
  for (; i < n; ++i)
    m = x[i] > m ? x[i] : m;
  for (l = 0; l < KILN_UK_LANES; ++l)
    m = part[l] > m ? part[l] : m;
  return m;
}

/* The sum of x[0..n-1]. */
static inline float kiln_uk_sum_of(const float *x, int32_t n) {
  float part[KILN_UK_LANES], sum = 0.0f;
  int32_t i = 0, l;
  for (l = 0; l < KILN_UK_LANES; ++l)
    part[l] = 0.0f;
  for (; i + KILN_UK_LANES <= n; i += KILN_UK_LANES)
    for (l = 0; l < KILN_UK_LANES; ++l)
      part[l] += x[i + l];
  for (l = 0; l < KILN_UK_LANES; ++l)
    sum += part[l];
  for (; i < n; ++i)
    sum += x[i];
  return sum;
}

/* The sum of (x[i] - c)^p over x[0..n-1] in double, p 1 or 2. */
KILN_UK_INLINE double kiln_uk_moment_of(const float *x, int32_t n, double c, int p) {
  double part[KILN_UK_LANES], sum = 0.0, v;
  int32_t i = 0, l;
  for (l = 0; l < KILN_UK_LANES; ++l)
    part[l] = 0.0;
  for (; i + KILN_UK_LANES <= n; i += KILN_UK_LANES)
    for (l = 0; l < KILN_UK_LANES; ++l) {
      v = (double)x[i + l] - c;
      part[l] += p == 2 ? v * v : v;
    }
  for (l = 0; l < KILN_UK_LANES; ++l)
    sum += part[l];
  for (; i < n; ++i) {
    v = (double)x[i] - c;
    sum += p == 2 ? v * v : v;
  }
  return sum;
}

/* y = (x - mean) / sqrt(var + eps) * w + b over one row of d, the mean and the
 * variance in double (BERT-style encoders' layer norm). */
static inline void kiln_uk_layer_norm_row(const float *x, const float *w, const float *b, float *y,
                                  int32_t d, float eps) {
  const double mean = kiln_uk_moment_of(x, d, 0.0, 1) / d;
  const double ss = kiln_uk_moment_of(x, d, mean, 2);
  float m, scale;
  int32_t i;
  m = (float)mean;
  scale = (float)(1.0 / sqrt(ss / d + (double)eps));
  for (i = 0; i < d; ++i)
    y[i] = (x[i] - m) * scale * w[i] + b[i];
}

static inline void kiln_uk_layer_norm_rows(const float *x, const float *w, const float *b, float *y,
                                   int32_t r0, int32_t r1, int32_t d, float eps) {
  int32_t r;
  for (r = r0; r < r1; ++r)
    kiln_uk_layer_norm_row(x + (size_t)r * (size_t)d, w, b, y + (size_t)r * (size_t)d, d, eps);
}

/* y = exp(x - max) / sum over one row of d (y may be x). */
static inline void kiln_uk_softmax_row(const float *x, float *y, int32_t d) {
  float sum;
  int32_t i;
  kiln_uk_exp_block(x, kiln_uk_max_of(x, d), y, d);
  sum = kiln_uk_sum_of(y, d);
  for (i = 0; i < d; ++i)
    y[i] /= sum;
}

static inline void kiln_uk_softmax_rows(const float *x, float *y, int32_t r0, int32_t r1, int32_t d) {
  int32_t r;
  for (r = r0; r < r1; ++r)
    kiln_uk_softmax_row(x + (size_t)r * (size_t)d, y + (size_t)r * (size_t)d, d);
}

/* y = x + b for rows r0..r1-1 of width values (qwen2's q, k and v biases). */
static inline void kiln_uk_bias_add_rows(const float *x, const float *b, float *y, int32_t r0, int32_t r1,
                                 int32_t width) {
  int32_t r, i;
  for (r = r0; r < r1; ++r)
    for (i = 0; i < width; ++i)
      y[(size_t)r * (size_t)width + i] = x[(size_t)r * (size_t)width + i] + b[i];
}

/* Columns n0..n1-1 of every row of y (rows x n) plus the residual res: a
 * residual matmul's epilogue, one float addition per output as the add did. */
static inline void kiln_uk_add_residual_cols(float *y, const float *res, int32_t rows, int32_t n,
                                     int32_t n0, int32_t n1) {
  int32_t r, j;
  for (r = 0; r < rows; ++r)
    for (j = n0; j < n1; ++j)
      y[(size_t)r * (size_t)n + j] += res[(size_t)r * (size_t)n + j];
}

/* Columns n0..n1-1 of every row of y (rows x n, the gate projection) become
 * kiln_uk_silu(y) * up: the gated feed-forward's epilogue. */
static inline void kiln_uk_swiglu_cols(float *y, const float *up, int32_t rows, int32_t n, int32_t n0,
                               int32_t n1) {
  int32_t r, j;
  for (r = 0; r < rows; ++r) {
    float *yr = y + (size_t)r * (size_t)n;
    const float *ur = up + (size_t)r * (size_t)n;
    kiln_uk_silu(yr + n0, yr + n0, n1 - n0);
    for (j = n0; j < n1; ++j)
      yr[j] *= ur[j];
  }
}

/* Heads h0..h1-1 (of hd values, the first rd rotated) of `rows` rows, ld
 * floats apart, row i at position pos + i, roped from x into y (x may be y):
 * pair i turns by the angle (pos + row) * freq[i], formed in double so large
 * positions keep precision; cos and sin are rounded to float and times
 * mscale (phi3's LongRoPE; 1 for the others). The angles depend on the
 * position only: one cos and sin per pair and row, shared by every head, laid
 * out as rope_head reads them (NeoX: pair i is values i and i + rd/2). */
KILN_UK_INLINE void kiln_uk_rope_rows(const float *x, float *y, int32_t ld, int32_t rows, int32_t pos,
                              int32_t h0, int32_t h1, const double *freq, int32_t rd, int32_t hd,
                              int neox, float mscale) {
  float cc[KILN_UK_MAX_HEAD_DIM], ss[KILN_UK_MAX_HEAD_DIM];
  int32_t r, h, i;
  for (r = 0; r < rows; ++r) {
    const double p = (double)(pos + r);
    for (i = 0; i < rd / 2; ++i) {
      const float c = (float)cos(p * freq[i]) * mscale, s = (float)sin(p * freq[i]) * mscale;
      const int32_t a = neox ? i : 2 * i, b = neox ? i + rd / 2 : 2 * i + 1;
      cc[a] = c, ss[a] = -s;
      cc[b] = c, ss[b] = s;
    }
    for (h = h0; h < h1; ++h)
      kiln_uk_rope_head(x + (size_t)r * (size_t)ld + h * hd, y + (size_t)r * (size_t)ld + h * hd, cc, ss,
                rd, hd, neox);
  }
}

#endif /* KILN_UK_ELEMENTWISE_H */
