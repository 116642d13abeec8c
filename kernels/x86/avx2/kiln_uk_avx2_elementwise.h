/* x86-avx2: exp, rms_norm, rope and silu, 8 lanes at a time. */
#ifndef KILN_UK_AVX2_ELEMENTWISE_H
#define KILN_UK_AVX2_ELEMENTWISE_H

#include "kernels/x86/avx2/kiln_uk_avx2_base.h"

/* e^x, 8 lanes: 2^n e^r with n = round(x log2 e), |r| <= ln2 / 2, a degree-6
 * Taylor polynomial for e^r (relative error about 1e-7), and 2^n built in the
 * exponent bits; x is clamped to [-87, 88] so n stays a normal exponent. */
static inline __m256 kiln_uk_exp256_ps(__m256 x) {
  __m256 n, r, p;
  __m256i e;
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  p = _mm256_set1_ps(1.0f / 720.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

#define KILN_UK_HAS_EXP_BLOCK 1
static inline void kiln_uk_exp_block(const float *x, float m, float *e, int32_t n) {
  int32_t i;
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(e + i, kiln_uk_exp256_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(m))));
  for (; i < n; ++i)
    e[i] = expf(x[i] - m);
}

#define KILN_UK_HAS_RMS_NORM_ROW 1
/* As the portable rms_norm_row: the sum of squares in double lanes, then the
 * scaling 8 floats at a time (each element rounded as the portable one). */
static inline void kiln_uk_rms_norm_row(const float *x, const float *g, float *y, int32_t d, float eps) {
  __m256d s0 = _mm256_setzero_pd(), s1 = s0;
  double lanes[4], ss;
  float scale;
  int32_t i;
  for (i = 0; i + 8 <= d; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    s0 = _mm256_fmadd_pd(lo, lo, s0);
    s1 = _mm256_fmadd_pd(hi, hi, s1);
  }
  _mm256_storeu_pd(lanes, _mm256_add_pd(s0, s1));
  ss = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < d; ++i)
    ss += (double)x[i] * (double)x[i];
  scale = (float)(1.0 / sqrt(ss / d + (double)eps));
  for (i = 0; i + 8 <= d; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i),
                                                        _mm256_set1_ps(scale)),
                                          _mm256_loadu_ps(g + i)));
  for (; i < d; ++i)
    y[i] = x[i] * scale * g[i];
}

#define KILN_UK_HAS_ROPE_HEAD 1
/* As the portable rope_head, 8 values at a time: the products and their sum
 * as separate instructions, so the bits are the reference's. */
static inline void kiln_uk_rope_head(const float *x, float *y, const float *cc, const float *ss,
                             int32_t rd, int32_t hd, int neox) {
  const int32_t h = rd / 2;
  int32_t j;
  if (neox) {
    for (j = 0; j < h; j += 8) {
      const int32_t n = h - j < 8 ? h - j : 8;
      const __m256 a = kiln_uk_load_lanes(x + j, n), b = kiln_uk_load_lanes(x + j + h, n);
      kiln_uk_store_lanes(y + j,
                  _mm256_add_ps(_mm256_mul_ps(a, kiln_uk_load_lanes(cc + j, n)),
                                _mm256_mul_ps(b, kiln_uk_load_lanes(ss + j, n))), n);
      kiln_uk_store_lanes(y + j + h,
                  _mm256_add_ps(_mm256_mul_ps(b, kiln_uk_load_lanes(cc + j + h, n)),
                                _mm256_mul_ps(a, kiln_uk_load_lanes(ss + j + h, n))), n);
    }
  } else {
    for (j = 0; j < rd; j += 8) {
      const int32_t n = rd - j < 8 ? rd - j : 8;
      const __m256 a = kiln_uk_load_lanes(x + j, n);
      kiln_uk_store_lanes(y + j,
                  _mm256_add_ps(_mm256_mul_ps(a, kiln_uk_load_lanes(cc + j, n)),
                                _mm256_mul_ps(_mm256_permute_ps(a, 0xb1), kiln_uk_load_lanes(ss + j, n))),
                  n);
    }
  }
  for (j = rd; j < hd; ++j)
    y[j] = x[j];
}

#define KILN_UK_HAS_SILU 1
static inline __m256 kiln_uk_silu8(__m256 v) {
  __m256 d = _mm256_add_ps(_mm256_set1_ps(1.0f), kiln_uk_exp256_ps(_mm256_sub_ps(_mm256_setzero_ps(), v)));
  return _mm256_div_ps(v, d);
}

/* The tail goes through the vector code too, so every element gets the same
 * bits wherever a call's range starts (threads split the rows). */
static inline void kiln_uk_silu(const float *x, float *y, int32_t n) {
  float t[8] = {0};
  int32_t i, j;
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, kiln_uk_silu8(_mm256_loadu_ps(x + i)));
  if (i == n)
    return;
  for (j = 0; i + j < n; ++j)
    t[j] = x[i + j];
  _mm256_storeu_ps(t, kiln_uk_silu8(_mm256_loadu_ps(t)));
  for (j = 0; i + j < n; ++j)
    y[i + j] = t[j];
}

#endif /* KILN_UK_AVX2_ELEMENTWISE_H */
