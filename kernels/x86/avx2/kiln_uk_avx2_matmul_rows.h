/* x86-avx2: AVX2/FMA/F16C versions of the portable row-layout dot products.
 * Only the hot helpers change (same names and signatures), so every kernel
 * body is shared with c99. */
#ifndef KILN_UK_AVX2_MATMUL_ROWS_H
#define KILN_UK_AVX2_MATMUL_ROWS_H

#include "kernels/x86/avx2/kiln_uk_avx2_base.h"

#define KILN_UK_HAS_DOT_F32 1
static inline float kiln_uk_dot_f32(const float *x, const uint8_t *w, int32_t k) {
  const float *r = (const float *)(const void *)w;
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int32_t i, whole = k - k % 16;
  float s;
  for (i = 0; i < whole; i += 16) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(r + i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(r + i + 8), a1);
  }
  s = kiln_uk_hsum_ps(_mm256_add_ps(a0, a1));
  for (i = whole; i < k; ++i)
    s += x[i] * r[i];
  return s;
}

#define KILN_UK_HAS_DOT_F16 1
static inline float kiln_uk_dot_f16(const float *x, const uint8_t *w, int32_t k) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int32_t i, whole = k - k % 16;
  float s;
  for (i = 0; i < whole; i += 16) {
    __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(w + 2 * i)));
    __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(w + 2 * i + 16)));
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), w0, a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), w1, a1);
  }
  s = kiln_uk_hsum_ps(_mm256_add_ps(a0, a1));
  for (i = whole; i < k; ++i)
    s += x[i] * kiln_uk_load_f16(w + 2 * i);
  return s;
}

#define KILN_UK_HAS_QDOT_I8 1
/* int8 weights (f16 scale + g int8 per group, g a multiple of 32) against int8
 * activations: int32 sums per group, scaled and accumulated in float lanes. */
static inline float kiln_uk_qdot_i8(const int8_t *xq, const float *xd, const uint8_t *w, int32_t k,
                     int32_t g) {
  __m256 acc = _mm256_setzero_ps();
  int32_t b, j;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + g) * b;
    __m256i s = _mm256_setzero_si256();
    for (j = 0; j < g; j += 32)
      s = _mm256_add_epi32(s, kiln_uk_dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)(blk + 2 + j)),
                                        _mm256_loadu_si256((const __m256i *)(const void *)(xq + g * b + j))));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(xd[b] * kiln_uk_load_f16(blk)), acc);
  }
  return kiln_uk_hsum_ps(acc);
}

#define KILN_UK_HAS_QDOT_I4 1
/* int4 weights: byte j of a group holds value j (low nibble) and j + g/2 (high
 * nibble), each + 8. Nibbles are spread to int8 lanes 32 values at a time. */
static inline float kiln_uk_qdot_i4(const int8_t *xq, const float *xd, const uint8_t *w, int32_t k,
                     int32_t g) {
  const __m256i low = _mm256_set1_epi8(15), eight = _mm256_set1_epi8(8);
  __m256 acc = _mm256_setzero_ps();
  int32_t b, j, h = g / 2;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + h) * b;
    const int8_t *xb = xq + g * b;
    __m256i s = _mm256_setzero_si256();
    if (h == 16) {
      __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
      __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
      __m256i v = _mm256_sub_epi8(_mm256_and_si256(both, low), eight);
      s = kiln_uk_dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)xb), v);
    } else {
      for (j = 0; j < h; j += 32) {
        __m256i raw = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2 + j));
        __m256i lo = _mm256_sub_epi8(_mm256_and_si256(raw, low), eight);
        __m256i hi = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low), eight);
        s = _mm256_add_epi32(s, kiln_uk_dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)(xb + j)), lo));
        s = _mm256_add_epi32(s, kiln_uk_dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)(xb + h + j)), hi));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(xd[b] * kiln_uk_load_f16(blk)), acc);
  }
  return kiln_uk_hsum_ps(acc);
}

#endif /* KILN_UK_AVX2_MATMUL_ROWS_H */
