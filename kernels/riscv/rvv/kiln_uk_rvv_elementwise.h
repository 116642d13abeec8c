/* riscv-rvv: add, mul, exp, silu, rms_norm and rope in vectors. */
#ifndef KILN_UK_RVV_ELEMENTWISE_H
#define KILN_UK_RVV_ELEMENTWISE_H

#include "kernels/riscv/rvv/kiln_uk_rvv_base.h"

#define KILN_UK_HAS_VEC_ARITH 1
/* y = a + b and y = a * b over n values (residual adds and gated products of
 * the unfused schedule). */
static inline void kiln_uk_vec_add(const float *a, const float *b, float *y, int32_t n) {
  int32_t i = 0;
  while (i < n) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(n - i));
    __riscv_vse32_v_f32m1(
        y + i, __riscv_vfadd_vv_f32m1(__riscv_vle32_v_f32m1(a + i, vl), __riscv_vle32_v_f32m1(b + i, vl), vl),
        vl);
    i += (int32_t)vl;
  }
}
static inline void kiln_uk_vec_mul(const float *a, const float *b, float *y, int32_t n) {
  int32_t i = 0;
  while (i < n) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(n - i));
    __riscv_vse32_v_f32m1(
        y + i, __riscv_vfmul_vv_f32m1(__riscv_vle32_v_f32m1(a + i, vl), __riscv_vle32_v_f32m1(b + i, vl), vl),
        vl);
    i += (int32_t)vl;
  }
}

#define KILN_UK_HAS_EXP_BLOCK 1
static inline void kiln_uk_exp_block(const float *x, float m, float *e, int32_t n) {
  int32_t i = 0;
  while (i < n) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(n - i));
    __riscv_vse32_v_f32m1(
        e + i, kiln_uk_exp_rvv(__riscv_vfsub_vf_f32m1(__riscv_vle32_v_f32m1(x + i, vl), m, vl), vl), vl);
    i += (int32_t)vl;
  }
}

#define KILN_UK_HAS_SILU 1
/* Every value by the same vector code wherever a range starts. */
static inline void kiln_uk_silu(const float *x, float *y, int32_t n) {
  int32_t i = 0;
  while (i < n) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(n - i));
    const vfloat32m1_t v = __riscv_vle32_v_f32m1(x + i, vl);
    __riscv_vse32_v_f32m1(
        y + i,
        __riscv_vfdiv_vv_f32m1(v,
                               __riscv_vfadd_vf_f32m1(kiln_uk_exp_rvv(__riscv_vfneg_v_f32m1(v, vl), vl),
                                                      1.0f, vl),
                               vl),
        vl);
    i += (int32_t)vl;
  }
}

#define KILN_UK_HAS_RMS_NORM_ROW 1
/* As the portable rms_norm_row: the sum of squares in double lanes (widening
 * multiply-adds), summed in order, then x times the scale times g. */
static inline void kiln_uk_rms_norm_row(const float *x, const float *g, float *y, int32_t d, float eps) {
  const size_t vlmax = __riscv_vsetvlmax_e32m1();
  vfloat64m2_t ss = __riscv_vfmv_v_f_f64m2(0.0, vlmax);
  float scale;
  int32_t i = 0;
  while (i < d) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(d - i));
    const vfloat32m1_t v = __riscv_vle32_v_f32m1(x + i, vl);
    ss = __riscv_vfwmacc_vv_f64m2_tu(ss, v, v, vl);
    i += (int32_t)vl;
  }
  scale = (float)(1.0 / sqrt(__riscv_vfmv_f_s_f64m1_f64(__riscv_vfredosum_vs_f64m2_f64m1(
                                 ss, __riscv_vfmv_s_f_f64m1(0.0, 1), vlmax)) /
                                 d +
                             (double)eps));
  for (i = 0; i < d;) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(d - i));
    __riscv_vse32_v_f32m1(
        y + i,
        __riscv_vfmul_vv_f32m1(__riscv_vfmul_vf_f32m1(__riscv_vle32_v_f32m1(x + i, vl), scale, vl),
                               __riscv_vle32_v_f32m1(g + i, vl), vl),
        vl);
    i += (int32_t)vl;
  }
}

#define KILN_UK_HAS_ROPE_HEAD 1
/* As the portable rope_head: the products and their sum as separate
 * instructions, so the bits are the reference's. A step of pairs takes an
 * even number of values (at most VLMAX, which is even). */
static inline void kiln_uk_rope_head(const float *x, float *y, const float *cc, const float *ss,
                             int32_t rd, int32_t hd, int neox) {
  const size_t vlmax = __riscv_vsetvlmax_e32m1();
  const int32_t h = rd / 2;
  int32_t j = 0;
  if (neox) {
    while (j < h) {
      const size_t vl = __riscv_vsetvl_e32m1((size_t)(h - j));
      const vfloat32m1_t a = __riscv_vle32_v_f32m1(x + j, vl), b = __riscv_vle32_v_f32m1(x + j + h, vl);
      __riscv_vse32_v_f32m1(y + j,
                            __riscv_vfadd_vv_f32m1(
                                __riscv_vfmul_vv_f32m1(a, __riscv_vle32_v_f32m1(cc + j, vl), vl),
                                __riscv_vfmul_vv_f32m1(b, __riscv_vle32_v_f32m1(ss + j, vl), vl), vl),
                            vl);
      __riscv_vse32_v_f32m1(
          y + j + h,
          __riscv_vfadd_vv_f32m1(
              __riscv_vfmul_vv_f32m1(b, __riscv_vle32_v_f32m1(cc + j + h, vl), vl),
              __riscv_vfmul_vv_f32m1(a, __riscv_vle32_v_f32m1(ss + j + h, vl), vl), vl),
          vl);
      j += (int32_t)vl;
    }
  } else {
    while (j < rd) {
      const size_t vl = __riscv_vsetvl_e32m1((size_t)rd - (size_t)j < vlmax ? (size_t)(rd - j) : vlmax);
      const vfloat32m1_t a = __riscv_vle32_v_f32m1(x + j, vl);
      const vfloat32m1_t partner =
          __riscv_vrgather_vv_f32m1(a, __riscv_vxor_vx_u32m1(__riscv_vid_v_u32m1(vl), 1, vl), vl);
      __riscv_vse32_v_f32m1(y + j,
                            __riscv_vfadd_vv_f32m1(
                                __riscv_vfmul_vv_f32m1(a, __riscv_vle32_v_f32m1(cc + j, vl), vl),
                                __riscv_vfmul_vv_f32m1(partner, __riscv_vle32_v_f32m1(ss + j, vl), vl),
                                vl),
                            vl);
      j += (int32_t)vl;
    }
  }
  for (j = rd; j < hd; ++j)
    y[j] = x[j];
}

#endif /* KILN_UK_RVV_ELEMENTWISE_H */
