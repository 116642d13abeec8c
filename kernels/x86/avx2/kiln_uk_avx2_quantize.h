/* x86-avx2 and x86-avxvnni: activation rows quantized to int8 with their group sums, for the
 * panel kernels and the block formats' setup (which includes it first). */
#ifndef KILN_UK_AVX2_QUANTIZE_H
#define KILN_UK_AVX2_QUANTIZE_H

#include "kernels/x86/avx2/kiln_uk_avx2_base.h"

/* The lanes of a and b combined: the larger, or (add) the int32 sum. */
static inline __m256 kiln_uk_combine8(__m256 a, __m256 b, int add) {
  return add ? _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b)))
             : _mm256_max_ps(a, b);
}

/* The 8 lanes of each of v[0..7] combined into one value, all 8 in one
 * vector: lane i is v[2 (i % 4) + i / 4]'s (the order the shuffles leave).
 * Pairs are folded 128 bits, then 32 bits at a time: 21 instructions for 8
 * vectors, against one horizontal reduction each. v is overwritten. */
static inline __m256 kiln_uk_reduce8(__m256 *v, int add) {
  __m256 a, b;
  int32_t i;
  for (i = 0; i < 4; ++i) /* low half: v[2i]'s halves combined; high half: v[2i + 1]'s */
    v[i] = kiln_uk_combine8(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20),
                            _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31), add);
  a = kiln_uk_combine8(_mm256_unpacklo_ps(v[0], v[1]), _mm256_unpackhi_ps(v[0], v[1]), add);
  b = kiln_uk_combine8(_mm256_unpacklo_ps(v[2], v[3]), _mm256_unpackhi_ps(v[2], v[3]), add);
  return kiln_uk_combine8(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)), add);
}

#define KILN_UK_HAS_QUANTIZE_ACT_SUMS 1
/* As kiln_uk_quantize_act (the same int8 values and scales), plus each group's sum of
 * int8 values. g is a multiple of 8. Eight groups at a time: their maxima and
 * sums reduced together (kiln_uk_reduce8), the scales divided in one vector
 * (division is exact per lane: the same quotients), the int8 values packed in
 * vectors. */
static inline void kiln_uk_quantize_act_sums(const float *x, float *d, int32_t *s, int8_t *q, int32_t k,
                                     int32_t g) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), zero = _mm256_setzero_ps();
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int32_t b0, b, j;
  for (b0 = 0; b0 < k / g; b0 += 8) {
    const int32_t nb = k / g - b0 < 8 ? k / g - b0 : 8;
    __m256 v[8], dv;
    float dl[8], id[8];
    int32_t sl[8];
    for (b = 0; b < 8; ++b) {
      __m256 amax = zero;
      for (j = 0; b < nb && j < g; j += 8)
        amax = _mm256_max_ps(amax, _mm256_and_ps(_mm256_loadu_ps(x + g * (b0 + b) + j), absmask));
      v[2 * (b % 4) + b / 4] = amax;
    }
    dv = _mm256_div_ps(kiln_uk_reduce8(v, 0), _mm256_set1_ps(127.0f));
    _mm256_storeu_ps(dl, dv);
    _mm256_storeu_ps(id, _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), dv),
                                       _mm256_cmp_ps(dv, zero, _CMP_NEQ_UQ)));
    for (b = 0; b < 8; ++b) {
      __m256i sum = _mm256_setzero_si256();
      for (j = 0; b < nb && j < g; j += 8) {
        const __m256i i = _mm256_cvttps_epi32(
            kiln_uk_round_away8(_mm256_mul_ps(_mm256_loadu_ps(x + g * (b0 + b) + j), _mm256_set1_ps(id[b]))));
        /* int32 -> int16 -> int8 within each half, then the two halves' low words side by side */
        const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i, i), _mm256_packs_epi32(i, i));
        sum = _mm256_add_epi32(sum, i);
        _mm_storel_epi64((__m128i *)(void *)(q + g * (b0 + b) + j),
                         _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(p, order)));
      }
      v[2 * (b % 4) + b / 4] = _mm256_castsi256_ps(sum);
    }
    _mm256_storeu_si256((__m256i *)(void *)sl, _mm256_castps_si256(kiln_uk_reduce8(v, 1)));
    for (b = 0; b < nb; ++b) {
      d[b0 + b] = dl[b];
      s[b0 + b] = sl[b];
    }
  }
}

#endif /* KILN_UK_AVX2_QUANTIZE_H */
