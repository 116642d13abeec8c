/* The AVX-512 tile of an encoder's bidirectional attention (kiln_uk_graph.h):
 * a block of KILN_UK_ATTEND_ROWS queries against 16 keys (or 16 features of
 * the values) in eight zmm sums. A block with fewer rows repeats its last row
 * in the unused sums, which are not stored. */
#ifndef KILN_UK_AVX512_GRAPH_H
#define KILN_UK_AVX512_GRAPH_H

#include "kernels/x86/avx512/kiln_uk_avx512_base.h"

#define KILN_UK_HAS_ATTEND_TILES 1
/* Three vectors of columns: 24 accumulators take three loads of b and eight
 * broadcasts of a per step, where one vector takes one and eight, so the
 * tile is bound by its FMAs rather than its loads. */
#define KILN_UK_ATTEND_COLS 48

/* As the portable tile, over `blocks` vectors of 16 columns (the last one
 * masked to n): each lane sums over k in order whatever the blocks. The sums
 * are three arrays of eight, their loops unrolled and every index a constant:
 * otherwise GCC keeps them in memory and stores all 24 at every step. */
KILN_UK_INLINE void kiln_uk_attend_tile_blocks(const float *a, int64_t lda, const float *b,
                                               int64_t ldb, int64_t k, int64_t col, int64_t n,
                                               int64_t rows, float *out, int64_t ldo, float scale,
                                               int blocks) {
  const __mmask16 m0 = kiln_uk_tail_mask((int32_t)(n < 16 ? n : 16));
  const __mmask16 m1 = blocks > 1 ? kiln_uk_tail_mask((int32_t)(n - 16 < 16 ? n - 16 : 16)) : 0;
  const __mmask16 m2 = blocks > 2 ? kiln_uk_tail_mask((int32_t)(n - 32 < 16 ? n - 32 : 16)) : 0;
  const float *ar[8];
  __m512 acc0[8], acc1[8], acc2[8];
  int64_t l, r;
  for (r = 0; r < 8; ++r) {
    ar[r] = a + (r < rows ? r : rows - 1) * lda;
    acc0[r] = acc1[r] = acc2[r] = _mm512_setzero_ps();
  }
  for (l = 0; l < k; ++l) {
    const float *bl = b + l * ldb + col;
    const __m512 x0 = _mm512_maskz_loadu_ps(m0, bl);
    const __m512 x1 = blocks > 1 ? _mm512_maskz_loadu_ps(m1, bl + 16) : x0;
    const __m512 x2 = blocks > 2 ? _mm512_maskz_loadu_ps(m2, bl + 32) : x0;
#pragma GCC unroll 8
    for (r = 0; r < 8; ++r) {
      const __m512 w = _mm512_set1_ps(ar[r][l]);
      acc0[r] = _mm512_fmadd_ps(w, x0, acc0[r]);
      if (blocks > 1)
        acc1[r] = _mm512_fmadd_ps(w, x1, acc1[r]);
      if (blocks > 2)
        acc2[r] = _mm512_fmadd_ps(w, x2, acc2[r]);
    }
  }
#pragma GCC unroll 8
  for (r = 0; r < 8; ++r) {
    if (r >= rows)
      break;
    _mm512_mask_storeu_ps(out + r * ldo + col, m0, _mm512_mul_ps(acc0[r], _mm512_set1_ps(scale)));
    if (blocks > 1)
      _mm512_mask_storeu_ps(out + r * ldo + col + 16, m1, _mm512_mul_ps(acc1[r], _mm512_set1_ps(scale)));
    if (blocks > 2)
      _mm512_mask_storeu_ps(out + r * ldo + col + 32, m2, _mm512_mul_ps(acc2[r], _mm512_set1_ps(scale)));
  }
}

static inline void kiln_uk_attend_tile(const float *a, int64_t lda, const float *b, int64_t ldb,
                                       int64_t k, int64_t col, int64_t n, int64_t rows, float *out,
                                       int64_t ldo, float scale) {
  if (n > 32)
    kiln_uk_attend_tile_blocks(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 3);
  else if (n > 16)
    kiln_uk_attend_tile_blocks(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 2);
  else
    kiln_uk_attend_tile_blocks(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 1);
}

#endif /* KILN_UK_AVX512_GRAPH_H */
