/* The NEON tile of an encoder's bidirectional attention (kiln_uk_graph.h): a
 * block of KILN_UK_ATTEND_ROWS queries four at a time against 16 keys (or 16
 * features of the values) in sixteen q-register sums, as the AVX2 tile takes
 * its quads. The portable tile's 8 x 16 sums live in memory: a load and a
 * store for every four products. A quad with fewer rows repeats its last row
 * in the unused sums, which are not stored. */
#ifndef KILN_UK_NEON_GRAPH_H
#define KILN_UK_NEON_GRAPH_H

#include "kernels/arm/neon/kiln_uk_neon_base.h"

#define KILN_UK_HAS_ATTEND_QUADS 1
#define KILN_UK_ATTEND_COLS 16

/* The first `valid` (1 to 4) floats at p, lane by lane: the ragged vector
 * is loaded at every step, where a copy through memory would cost a call. */
static inline float32x4_t kiln_uk_attend_load_part(const float *p, int32_t valid) {
  float32x4_t v = vdupq_n_f32(0.0f);
  if (valid == 4)
    return vld1q_f32(p);
  v = vld1q_lane_f32(p, v, 0);
  if (valid > 1)
    v = vld1q_lane_f32(p + 1, v, 1);
  if (valid > 2)
    v = vld1q_lane_f32(p + 2, v, 2);
  return v;
}

/* As the portable tile, for up to four rows over `blocks` vectors of 4
 * columns, the last one holding `last` of them when `ragged`: each lane sums
 * over k in order whatever the blocks. The sums are four arrays of four with
 * every index a constant, so that they stay in registers. */
KILN_UK_INLINE void kiln_uk_attend_quad(const float *a, int64_t lda, const float *b, int64_t ldb,
                                        int64_t k, int64_t col, int64_t n, int64_t rows,
                                        float *out, int64_t ldo, float scale, int blocks,
                                        int ragged) {
  const int32_t last = (int32_t)(n - 4 * (blocks - 1));
  const float *ar[4];
  float32x4_t acc[4][4];
  int64_t l, r;
  int j;
#pragma GCC unroll 4
  for (r = 0; r < 4; ++r) {
    ar[r] = a + (r < rows ? r : rows - 1) * lda;
#pragma GCC unroll 4
    for (j = 0; j < 4; ++j)
      acc[r][j] = vdupq_n_f32(0.0f);
  }
  for (l = 0; l < k; ++l) {
    const float *bl = b + l * ldb + col;
    float32x4_t x[4];
#pragma GCC unroll 4
    for (j = 0; j < 4; ++j)
      if (j < blocks)
        x[j] = ragged && j == blocks - 1 ? kiln_uk_attend_load_part(bl + 4 * j, last)
                                         : vld1q_f32(bl + 4 * j);
#pragma GCC unroll 4
    for (r = 0; r < 4; ++r) {
      const float32x4_t w = vld1q_dup_f32(ar[r] + l);
#pragma GCC unroll 4
      for (j = 0; j < 4; ++j)
        if (j < blocks)
          acc[r][j] = vfmaq_f32(acc[r][j], w, x[j]);
    }
  }
#pragma GCC unroll 4
  for (r = 0; r < 4; ++r) {
    float *o = out + r * ldo + col;
    if (r >= rows)
      break;
#pragma GCC unroll 4
    for (j = 0; j < 4; ++j)
      if (j < blocks)
        kiln_uk_store_lanes(o + 4 * j, vmulq_n_f32(acc[r][j], scale), j == blocks - 1 ? last : 4);
  }
}

/* Four rows (kiln_uk_graph.h takes the block's rows in quads). */
static inline void kiln_uk_attend_quad_tile(const float *a, int64_t lda, const float *b,
                                            int64_t ldb, int64_t k, int64_t col, int64_t n,
                                            int64_t rows, float *out, int64_t ldo, float scale) {
  const int blocks = (int)((n + 3) / 4);
  if (n == 16)
    kiln_uk_attend_quad(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 4, 0);
  else if (blocks == 4)
    kiln_uk_attend_quad(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 4, 1);
  else if (blocks == 3)
    kiln_uk_attend_quad(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 3, 1);
  else if (blocks == 2)
    kiln_uk_attend_quad(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 2, 1);
  else
    kiln_uk_attend_quad(a, lda, b, ldb, k, col, n, rows, out, ldo, scale, 1, 1);
}

#endif /* KILN_UK_NEON_GRAPH_H */
