/* x86-avx512: rms_norm, rope and silu, 16 lanes at a time. */
#ifndef KILN_UK_AVX512_ELEMENTWISE_H
#define KILN_UK_AVX512_ELEMENTWISE_H

#include "kernels/x86/avx512/kiln_uk_avx512_base.h"

#define KILN_UK_HAS_RMS_NORM_ROW 1
/* As the portable rms_norm_row: the sum of squares in double lanes. */
static inline void kiln_uk_rms_norm_row(const float *x, const float *g, float *y, int32_t d, float eps) {
  __m512d s0 = _mm512_setzero_pd(), s1 = s0;
  float scale;
  int32_t i;
  for (i = 0; i < d; i += 16) {
    __m512 v = _mm512_maskz_loadu_ps(kiln_uk_tail_mask(d - i), x + i);
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    s0 = _mm512_fmadd_pd(lo, lo, s0);
    s1 = _mm512_fmadd_pd(hi, hi, s1);
  }
  scale = (float)(1.0 / sqrt(_mm512_reduce_add_pd(_mm512_add_pd(s0, s1)) / d + (double)eps));
  for (i = 0; i < d; i += 16) {
    __mmask16 m = kiln_uk_tail_mask(d - i);
    _mm512_mask_storeu_ps(y + i, m,
                          _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i),
                                                      _mm512_set1_ps(scale)),
                                        _mm512_maskz_loadu_ps(m, g + i)));
  }
}

#define KILN_UK_HAS_ROPE_HEAD 1
/* As the portable rope_head, 16 values at a time: the products and their sum
 * as separate instructions, so the bits are the reference's. */
static inline void kiln_uk_rope_head(const float *x, float *y, const float *cc, const float *ss,
                             int32_t rd, int32_t hd, int neox) {
  const int32_t h = rd / 2;
  int32_t j;
  if (neox) {
    for (j = 0; j < h; j += 16) {
      const __mmask16 m = kiln_uk_tail_mask(h - j);
      const __m512 a = _mm512_maskz_loadu_ps(m, x + j), b = _mm512_maskz_loadu_ps(m, x + j + h);
      _mm512_mask_storeu_ps(y + j, m,
                            _mm512_add_ps(_mm512_mul_ps(a, _mm512_maskz_loadu_ps(m, cc + j)),
                                          _mm512_mul_ps(b, _mm512_maskz_loadu_ps(m, ss + j))));
      _mm512_mask_storeu_ps(
          y + j + h, m,
          _mm512_add_ps(_mm512_mul_ps(b, _mm512_maskz_loadu_ps(m, cc + j + h)),
                        _mm512_mul_ps(a, _mm512_maskz_loadu_ps(m, ss + j + h))));
    }
  } else {
    for (j = 0; j < rd; j += 16) {
      const __mmask16 m = kiln_uk_tail_mask(rd - j);
      const __m512 a = _mm512_maskz_loadu_ps(m, x + j);
      _mm512_mask_storeu_ps(
          y + j, m,
          _mm512_add_ps(_mm512_mul_ps(a, _mm512_maskz_loadu_ps(m, cc + j)),
                        _mm512_mul_ps(_mm512_permute_ps(a, 0xb1), _mm512_maskz_loadu_ps(m, ss + j))));
    }
  }
  for (j = rd; j < hd; ++j)
    y[j] = x[j];
}

#define KILN_UK_HAS_EXP_BLOCK 1
static inline void kiln_uk_exp_block(const float *x, float m, float *e, int32_t n) {
  int32_t i;
  for (i = 0; i < n; i += 16) {
    __mmask16 k = kiln_uk_tail_mask(n - i);
    _mm512_mask_storeu_ps(e + i, k,
                          kiln_uk_exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i),
                                                       _mm512_set1_ps(m))));
  }
}

#define KILN_UK_HAS_SILU 1
static inline void kiln_uk_silu(const float *x, float *y, int32_t n) {
  int32_t i;
  for (i = 0; i < n; i += 16) {
    __mmask16 m = kiln_uk_tail_mask(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __m512 e = kiln_uk_exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), v));
    _mm512_mask_storeu_ps(y + i, m, _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), e)));
  }
}

#endif /* KILN_UK_AVX512_ELEMENTWISE_H */
