/* The RVV tile of an encoder's bidirectional attention (kiln_uk_graph.h): a
 * block of KILN_UK_ATTEND_ROWS queries four at a time against 16 keys (or 16
 * features of the values), one m4 group of sums per query (16 lanes at the
 * least VLEN, 128), the scalar of each product taken by vfmacc.vf. The
 * ragged tile is the vector length. The portable tile, compiled without
 * vectorization for this target, is scalar with its sums in memory. */
#ifndef KILN_UK_RVV_GRAPH_H
#define KILN_UK_RVV_GRAPH_H

#include "kernels/riscv/rvv/kiln_uk_rvv_base.h"

#define KILN_UK_HAS_ATTEND_QUADS 1

/* Four rows (kiln_uk_graph.h takes the block's rows in quads), as the
 * portable tile: each lane sums over k in order. Four named sums, as RVV's
 * vector types cannot be kept in an array; with fewer rows the last one is
 * repeated in the unused sums, which are not stored. */
static inline void kiln_uk_attend_quad_tile(const float *a, int64_t lda, const float *b,
                                            int64_t ldb, int64_t k, int64_t col, int64_t n,
                                            int64_t rows, float *out, int64_t ldo, float scale) {
  const size_t vl = __riscv_vsetvl_e32m4((size_t)n);
  const float *a0 = a;
  const float *a1 = rows > 1 ? a0 + lda : a0;
  const float *a2 = rows > 2 ? a1 + lda : a1;
  const float *a3 = rows > 3 ? a2 + lda : a2;
  float *o = out + col;
  vfloat32m4_t s0 = __riscv_vfmv_v_f_f32m4(0.0f, vl), s1 = s0, s2 = s0, s3 = s0;
  int64_t l;
  for (l = 0; l < k; ++l) {
    const vfloat32m4_t x = __riscv_vle32_v_f32m4(b + l * ldb + col, vl);
    s0 = __riscv_vfmacc_vf_f32m4(s0, a0[l], x, vl);
    s1 = __riscv_vfmacc_vf_f32m4(s1, a1[l], x, vl);
    s2 = __riscv_vfmacc_vf_f32m4(s2, a2[l], x, vl);
    s3 = __riscv_vfmacc_vf_f32m4(s3, a3[l], x, vl);
  }
  __riscv_vse32_v_f32m4(o, __riscv_vfmul_vf_f32m4(s0, scale, vl), vl);
  if (rows > 1)
    __riscv_vse32_v_f32m4(o + ldo, __riscv_vfmul_vf_f32m4(s1, scale, vl), vl);
  if (rows > 2)
    __riscv_vse32_v_f32m4(o + 2 * ldo, __riscv_vfmul_vf_f32m4(s2, scale, vl), vl);
  if (rows > 3)
    __riscv_vse32_v_f32m4(o + 3 * ldo, __riscv_vfmul_vf_f32m4(s3, scale, vl), vl);
}

#endif /* KILN_UK_RVV_GRAPH_H */
