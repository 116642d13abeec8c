/* The AVX2 tile of an encoder's bidirectional attention (kiln_uk_graph.h):
 * a block of KILN_UK_ATTEND_ROWS queries four at a time against 24 keys (or
 * 24 features of the values) in twelve ymm sums. Eight rows of one vector
 * would take a broadcast for every FMA, and eight rows of two vectors need
 * all sixteen registers for their sums alone. A quad with fewer rows repeats
 * its last row in the unused sums, which are not stored. */
#ifndef KILN_UK_AVX2_GRAPH_H
#define KILN_UK_AVX2_GRAPH_H

#include "kernels/x86/avx2/kiln_uk_avx2_base.h"

#define KILN_UK_HAS_ATTEND_QUADS 1
#define KILN_UK_ATTEND_COLS 24

/* Lanes below n (clamped to 0..8) all ones: maskload's mask. */
static inline __m256i kiln_uk_lanes_below(int64_t n) {
  const int32_t c = (int32_t)(n < 0 ? 0 : n > 8 ? 8 : n);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Vector j of a tile's row: the last of `blocks` masked when ragged. */
KILN_UK_INLINE __m256 kiln_uk_attend_load(const float *p, int j, int blocks, int ragged,
                                          __m256i last) {
  return ragged && j == blocks - 1 ? _mm256_maskload_ps(p + 8 * j, last)
                                   : _mm256_loadu_ps(p + 8 * j);
}
KILN_UK_INLINE void kiln_uk_attend_store(float *p, int j, int blocks, __m256i last, __m256 v,
                                         float scale) {
  v = _mm256_mul_ps(v, _mm256_set1_ps(scale));
  if (j == blocks - 1)
    _mm256_maskstore_ps(p + 8 * j, last, v);
  else
    _mm256_storeu_ps(p + 8 * j, v);
}

/* As the portable tile, for up to four rows over `blocks` vectors of 8
 * columns, the last one masked to n when `ragged`: each lane sums over k in
 * order whatever the blocks. The sums are three arrays of four with every
 * index a constant, so that they stay in registers. */
KILN_UK_INLINE void kiln_uk_attend_quad(const float *a, int64_t lda, const float *b, int64_t ldb,
                                        int64_t k, int64_t col, int64_t n, int64_t rows,
                                        float *out, int64_t ldo, float scale, int blocks,
                                        int ragged) {
  const __m256i last = kiln_uk_lanes_below(n - 8 * (blocks - 1));
  const float *ar[4];
  __m256 acc0[4], acc1[4], acc2[4];
  int64_t l, r;
#pragma GCC unroll 4
  for (r = 0; r < 4; ++r) {
    ar[r] = a + (r < rows ? r : rows - 1) * lda;
    acc0[r] = acc1[r] = acc2[r] = _mm256_setzero_ps();
  }
  for (l = 0; l < k; ++l) {
    const float *bl = b + l * ldb + col;
    const __m256 x0 = kiln_uk_attend_load(bl, 0, blocks, ragged, last);
    const __m256 x1 = blocks > 1 ? kiln_uk_attend_load(bl, 1, blocks, ragged, last) : x0;
    const __m256 x2 = blocks > 2 ? kiln_uk_attend_load(bl, 2, blocks, ragged, last) : x0;
#pragma GCC unroll 4
    for (r = 0; r < 4; ++r) {
      const __m256 w = _mm256_broadcast_ss(ar[r] + l);
      acc0[r] = _mm256_fmadd_ps(w, x0, acc0[r]);
      if (blocks > 1)
        acc1[r] = _mm256_fmadd_ps(w, x1, acc1[r]);
      if (blocks > 2)
        acc2[r] = _mm256_fmadd_ps(w, x2, acc2[r]);
    }
  }
#pragma GCC unroll 4
  for (r = 0; r < 4; ++r) {
    float *o = out + r * ldo + col;
    if (r >= rows)
      break;
    kiln_uk_attend_store(o, 0, blocks, last, acc0[r], scale);
    if (blocks > 1)
      kiln_uk_attend_store(o, 1, blocks, last, acc1[r], scale);
    if (blocks > 2)
      kiln_uk_attend_store(o, 2, blocks, last, acc2[r], scale);
  }
}

/* Four rows (kiln_uk_graph.h takes the block's rows in quads). */
static inline void kiln_uk_attend_quad_tile(const float *a, int64_t lda, const float *b,
                                            int64_t ldb, int64_t k, int64_t col, int64_t n,
                                            int64_t rows, float *out, int64_t ldo, float scale) {
  const int blocks = (int)((n + 7) / 8);
  if (n == 24)
    kiln_uk_attend_quad(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 3, 0);
  else if (blocks == 3)
    kiln_uk_attend_quad(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 3, 1);
  else if (blocks == 2)
    kiln_uk_attend_quad(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 2, 1);
  else
    kiln_uk_attend_quad(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 1, 1);
}

#endif /* KILN_UK_AVX2_GRAPH_H */
