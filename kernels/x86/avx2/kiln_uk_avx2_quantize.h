/* x86-avx2 and x86-avxvnni: activation rows quantized to int8 with their group sums, for the
 * panel kernels and the block formats' setup (which includes it first). */
#ifndef KILN_UK_AVX2_QUANTIZE_H
#define KILN_UK_AVX2_QUANTIZE_H

#include "kernels/x86/avx2/kiln_uk_avx2_base.h"

#define KILN_UK_HAS_QUANTIZE_ACT_SUMS 1
/* As kiln_uk_quantize_act (the same int8 values and scales), plus each group's sum of
 * int8 values. g is a multiple of 8. */
static inline void kiln_uk_quantize_act_sums(const float *x, float *d, int32_t *s, int8_t *q, int32_t k,
                                     int32_t g) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  int32_t b, j, i;
  for (b = 0; b < k / g; ++b) {
    const float *xb = x + g * b;
    __m256 amax = _mm256_setzero_ps();
    float id;
    int32_t sum = 0;
    for (j = 0; j < g; j += 8)
      amax = _mm256_max_ps(amax, _mm256_and_ps(_mm256_loadu_ps(xb + j), absmask));
    d[b] = kiln_uk_hmax8(amax) / 127.0f;
    id = d[b] != 0.0f ? 1.0f / d[b] : 0.0f;
    for (j = 0; j < g; j += 8) {
      int32_t iv[8];
      _mm256_storeu_si256((__m256i *)(void *)iv,
                          _mm256_cvttps_epi32(kiln_uk_round_away8(
                              _mm256_mul_ps(_mm256_loadu_ps(xb + j), _mm256_set1_ps(id)))));
      for (i = 0; i < 8; ++i) {
        q[g * b + j + i] = (int8_t)iv[i];
        sum += iv[i];
      }
    }
    s[b] = sum;
  }
}

#endif /* KILN_UK_AVX2_QUANTIZE_H */
