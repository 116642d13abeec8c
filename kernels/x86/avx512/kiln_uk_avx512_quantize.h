/* x86-avx512: activation rows quantized to int8 with their group sums, for the
 * panel kernels and the block formats' setup (which includes it first). */
#ifndef KILN_UK_AVX512_QUANTIZE_H
#define KILN_UK_AVX512_QUANTIZE_H

#include "kernels/x86/avx512/kiln_uk_avx512_base.h"

/* The lanes of a and b combined: the larger, or (add) the int32 sum. */
static inline __m512 kiln_uk_combine(__m512 a, __m512 b, int add) {
  return add ? _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)))
             : _mm512_max_ps(a, b);
}

/* The 16 lanes of each of v[0..15] combined into one value, all 16 in one
 * vector: lane i is v[(i % 4) * 4 + i / 4]'s (the order the shuffles leave).
 * Pairs of vectors are folded together, 128 bits then 32 bits at a time: 45
 * instructions for 16 vectors, against one horizontal reduction each. v is
 * overwritten. */
static inline __m512 kiln_uk_reduce16(__m512 *v, int add) {
  __m512 a, b;
  int32_t i;
  for (i = 0; i < 8; ++i) /* lanes 0|1 and 2|3 of v[2i], then of v[2i + 1] */
    v[i] = kiln_uk_combine(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)), add);
  for (i = 0; i < 4; ++i) /* lane l: the 4 floats left of v[4i + l] */
    v[i] = kiln_uk_combine(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)), add);
  a = kiln_uk_combine(_mm512_unpacklo_ps(v[0], v[1]), _mm512_unpackhi_ps(v[0], v[1]), add);
  b = kiln_uk_combine(_mm512_unpacklo_ps(v[2], v[3]), _mm512_unpackhi_ps(v[2], v[3]), add);
  return kiln_uk_combine(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)), add);
}

#define KILN_UK_HAS_QUANTIZE_ACT_SUMS 1
/* As kiln_uk_quantize_act (same scale and rounding, so the same int8 values), plus the
 * sum of each group's int8 values: the kernels subtract bias x sum to undo the
 * unsigned bias of the weight bytes. g is a multiple of 16. Sixteen groups at
 * a time: their maxima and sums reduced together (kiln_uk_reduce16), the
 * scales divided in one vector (the same quotients: division is exact per
 * lane). roundf is x + 0.49999997 with x's sign, truncated: the same integer
 * for every float of magnitude below 2^23 (checked for all of them up to 129). */
static inline void kiln_uk_quantize_act_sums(const float *x, float *d, int32_t *s, int8_t *q, int32_t k,
                                     int32_t g) {
  const __m512 zero = _mm512_setzero_ps();
  const __m512i half = _mm512_set1_epi32(0x3effffff), sign = _mm512_set1_epi32((int32_t)0x80000000u);
  int32_t b0, b, j;
  for (b0 = 0; b0 < k / g; b0 += 16) {
    const int32_t nb = k / g - b0 < 16 ? k / g - b0 : 16;
    const __mmask16 live = (__mmask16)((1u << nb) - 1u);
    __m512 v[16], dv;
    float id[16];
    for (b = 0; b < 16; ++b) {
      __m512 amax = zero;
      for (j = 0; b < nb && j < g; j += 16)
        amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_loadu_ps(x + g * (b0 + b) + j)));
      v[b % 4 * 4 + b / 4] = amax;
    }
    dv = _mm512_div_ps(kiln_uk_reduce16(v, 0), _mm512_set1_ps(127.0f));
    _mm512_mask_storeu_ps(d + b0, live, dv);
    _mm512_storeu_ps(id, _mm512_maskz_div_ps(_mm512_cmp_ps_mask(dv, zero, _CMP_NEQ_UQ),
                                             _mm512_set1_ps(1.0f), dv));
    for (b = 0; b < 16; ++b) {
      __m512i sum = _mm512_setzero_si512();
      for (j = 0; b < nb && j < g; j += 16) {
        const __m512 t = _mm512_mul_ps(_mm512_loadu_ps(x + g * (b0 + b) + j), _mm512_set1_ps(id[b]));
        const __m512 h = _mm512_castsi512_ps(
            _mm512_ternarylogic_epi32(half, _mm512_castps_si512(t), sign, 0xf8)); /* half | (t & sign) */
        const __m512i i = _mm512_cvttps_epi32(_mm512_add_ps(t, h));
        sum = _mm512_add_epi32(sum, i);
        _mm_storeu_si128((__m128i *)(void *)(q + g * (b0 + b) + j), _mm512_cvtsepi32_epi8(i));
      }
      v[b % 4 * 4 + b / 4] = _mm512_castsi512_ps(sum);
    }
    _mm512_mask_storeu_epi32(s + b0, live, _mm512_castps_si512(kiln_uk_reduce16(v, 1)));
  }
}

#endif /* KILN_UK_AVX512_QUANTIZE_H */
