/* The AVX-512 tile of an encoder's bidirectional attention (kiln_uk_graph.h):
 * a block of KILN_UK_ATTEND_ROWS queries against 16 keys (or 16 features of
 * the values) in eight zmm sums. A block with fewer rows repeats its last row
 * in the unused sums, which are not stored. */
#ifndef KILN_UK_AVX512_GRAPH_H
#define KILN_UK_AVX512_GRAPH_H

#include "kernels/x86/avx512/kiln_uk_avx512_base.h"

#define KILN_UK_HAS_ATTEND_TILES 1

static inline void kiln_uk_attend_tile(const float *a, int64_t lda, const float *b, int64_t ldb,
                                       int64_t k, int64_t col, int64_t n, int64_t rows, float *out,
                                       int64_t ldo, float scale) {
  const __mmask16 m = kiln_uk_tail_mask((int32_t)n);
  const float *ar[8];
  __m512 acc[8];
  int64_t l, r;
  for (r = 0; r < 8; ++r) {
    ar[r] = a + (r < rows ? r : rows - 1) * lda;
    acc[r] = _mm512_setzero_ps();
  }
  for (l = 0; l < k; ++l) {
    const __m512 x = _mm512_maskz_loadu_ps(m, b + l * ldb + col);
    acc[0] = _mm512_fmadd_ps(_mm512_set1_ps(ar[0][l]), x, acc[0]);
    acc[1] = _mm512_fmadd_ps(_mm512_set1_ps(ar[1][l]), x, acc[1]);
    acc[2] = _mm512_fmadd_ps(_mm512_set1_ps(ar[2][l]), x, acc[2]);
    acc[3] = _mm512_fmadd_ps(_mm512_set1_ps(ar[3][l]), x, acc[3]);
    acc[4] = _mm512_fmadd_ps(_mm512_set1_ps(ar[4][l]), x, acc[4]);
    acc[5] = _mm512_fmadd_ps(_mm512_set1_ps(ar[5][l]), x, acc[5]);
    acc[6] = _mm512_fmadd_ps(_mm512_set1_ps(ar[6][l]), x, acc[6]);
    acc[7] = _mm512_fmadd_ps(_mm512_set1_ps(ar[7][l]), x, acc[7]);
  }
  for (r = 0; r < rows; ++r)
    _mm512_mask_storeu_ps(out + r * ldo + col, m, _mm512_mul_ps(acc[r], _mm512_set1_ps(scale)));
}

#endif /* KILN_UK_AVX512_GRAPH_H */
