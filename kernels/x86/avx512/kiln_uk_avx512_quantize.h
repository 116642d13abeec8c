/* x86-avx512: activation rows quantized to int8 with their group sums, for the
 * panel kernels and the block formats' setup (which includes it first). */
#ifndef KILN_UK_AVX512_QUANTIZE_H
#define KILN_UK_AVX512_QUANTIZE_H

#include "kernels/x86/avx512/kiln_uk_avx512_base.h"

#define KILN_UK_HAS_QUANTIZE_ACT_SUMS 1
/* As kiln_uk_quantize_act (same scale and rounding, so the same int8 values), plus the
 * sum of each group's int8 values: the kernels subtract bias x sum to undo the
 * unsigned bias of the weight bytes. g is a multiple of 16. */
static inline void kiln_uk_quantize_act_sums(const float *x, float *d, int32_t *s, int8_t *q, int32_t k,
                                     int32_t g) {
  const __m512 half = _mm512_set1_ps(0.5f);
  int32_t b, j;
  for (b = 0; b < k / g; ++b) {
    const float *xb = x + g * b;
    __m512 amax = _mm512_setzero_ps();
    __m512i sum = _mm512_setzero_si512();
    float id;
    for (j = 0; j < g; j += 16)
      amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_loadu_ps(xb + j)));
    d[b] = _mm512_reduce_max_ps(amax) / 127.0f;
    id = d[b] != 0.0f ? 1.0f / d[b] : 0.0f;
    for (j = 0; j < g; j += 16) {
      /* roundf: truncate, then step away from zero when the fraction is >= 0.5. */
      __m512 v = _mm512_mul_ps(_mm512_loadu_ps(xb + j), _mm512_set1_ps(id));
      __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), half, _CMP_GE_OQ);
      __m512 one = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ),
                                        _mm512_set1_ps(1.0f), _mm512_set1_ps(-1.0f));
      __m512i i = _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, one));
      sum = _mm512_add_epi32(sum, i);
      _mm_storeu_si128((__m128i *)(void *)(q + g * b + j), _mm512_cvtsepi32_epi8(i));
    }
    s[b] = _mm512_reduce_add_epi32(sum);
  }
}

#endif /* KILN_UK_AVX512_QUANTIZE_H */
