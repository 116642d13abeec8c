/* AVX-512 tiles of an encoder's bidirectional attention (kiln_uk_graph.h):
 * a block of KILN_UK_ATTEND_ROWS queries against 16 keys (or 16 features of
 * the values) in eight zmm sums. A block with fewer rows repeats its last row
 * in the unused sums, which are not stored. */
#ifndef KILN_UK_AVX512_GRAPH_H
#define KILN_UK_AVX512_GRAPH_H

#include "kernels/x86/avx512/kiln_uk_avx512_base.h"

#define KILN_UK_HAS_ATTEND_TILES 1

/* The offset of row r of a block of `rows`, the last one for r past it. */
#define KILN_UK_TILE_ROW(r, rows, stride) (((r) < (rows) ? (r) : (rows)-1) * (stride))

static inline void kiln_uk_attend_scores(const float *q, const float *kt, float *scores,
                                         int64_t rows, int64_t t, int64_t d, int64_t j0, int64_t n,
                                         float scale) {
  const __mmask16 m = kiln_uk_tail_mask((int32_t)n);
  const float *q0 = q + KILN_UK_TILE_ROW(0, rows, d), *q1 = q + KILN_UK_TILE_ROW(1, rows, d),
              *q2 = q + KILN_UK_TILE_ROW(2, rows, d), *q3 = q + KILN_UK_TILE_ROW(3, rows, d),
              *q4 = q + KILN_UK_TILE_ROW(4, rows, d), *q5 = q + KILN_UK_TILE_ROW(5, rows, d),
              *q6 = q + KILN_UK_TILE_ROW(6, rows, d), *q7 = q + KILN_UK_TILE_ROW(7, rows, d);
  __m512 a[8];
  int64_t c, r;
  for (r = 0; r < 8; ++r)
    a[r] = _mm512_setzero_ps();
  for (c = 0; c < d; ++c) {
    const __m512 k = _mm512_maskz_loadu_ps(m, kt + c * t + j0);
    a[0] = _mm512_fmadd_ps(_mm512_set1_ps(q0[c]), k, a[0]);
    a[1] = _mm512_fmadd_ps(_mm512_set1_ps(q1[c]), k, a[1]);
    a[2] = _mm512_fmadd_ps(_mm512_set1_ps(q2[c]), k, a[2]);
    a[3] = _mm512_fmadd_ps(_mm512_set1_ps(q3[c]), k, a[3]);
    a[4] = _mm512_fmadd_ps(_mm512_set1_ps(q4[c]), k, a[4]);
    a[5] = _mm512_fmadd_ps(_mm512_set1_ps(q5[c]), k, a[5]);
    a[6] = _mm512_fmadd_ps(_mm512_set1_ps(q6[c]), k, a[6]);
    a[7] = _mm512_fmadd_ps(_mm512_set1_ps(q7[c]), k, a[7]);
  }
  for (r = 0; r < rows; ++r)
    _mm512_mask_storeu_ps(scores + r * t + j0, m, _mm512_mul_ps(a[r], _mm512_set1_ps(scale)));
}

static inline void kiln_uk_attend_values(const float *p, const float *v, float *y, int64_t rows,
                                         int64_t t, int64_t e, int64_t e0, int64_t n) {
  const __mmask16 m = kiln_uk_tail_mask((int32_t)n);
  const float *p0 = p + KILN_UK_TILE_ROW(0, rows, t), *p1 = p + KILN_UK_TILE_ROW(1, rows, t),
              *p2 = p + KILN_UK_TILE_ROW(2, rows, t), *p3 = p + KILN_UK_TILE_ROW(3, rows, t),
              *p4 = p + KILN_UK_TILE_ROW(4, rows, t), *p5 = p + KILN_UK_TILE_ROW(5, rows, t),
              *p6 = p + KILN_UK_TILE_ROW(6, rows, t), *p7 = p + KILN_UK_TILE_ROW(7, rows, t);
  __m512 a[8];
  int64_t j, r;
  for (r = 0; r < 8; ++r)
    a[r] = _mm512_setzero_ps();
  for (j = 0; j < t; ++j) {
    const __m512 x = _mm512_maskz_loadu_ps(m, v + j * e + e0);
    a[0] = _mm512_fmadd_ps(_mm512_set1_ps(p0[j]), x, a[0]);
    a[1] = _mm512_fmadd_ps(_mm512_set1_ps(p1[j]), x, a[1]);
    a[2] = _mm512_fmadd_ps(_mm512_set1_ps(p2[j]), x, a[2]);
    a[3] = _mm512_fmadd_ps(_mm512_set1_ps(p3[j]), x, a[3]);
    a[4] = _mm512_fmadd_ps(_mm512_set1_ps(p4[j]), x, a[4]);
    a[5] = _mm512_fmadd_ps(_mm512_set1_ps(p5[j]), x, a[5]);
    a[6] = _mm512_fmadd_ps(_mm512_set1_ps(p6[j]), x, a[6]);
    a[7] = _mm512_fmadd_ps(_mm512_set1_ps(p7[j]), x, a[7]);
  }
  for (r = 0; r < rows; ++r)
    _mm512_mask_storeu_ps(y + r * e + e0, m, a[r]);
}

#endif /* KILN_UK_AVX512_GRAPH_H */
