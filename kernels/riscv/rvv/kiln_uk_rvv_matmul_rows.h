/* riscv-rvv: RISC-V Vector 1.0 dot products of the row-layout int8/int4
 * groups and f32 weights, and the embedding rows. */
#ifndef KILN_UK_RVV_MATMUL_ROWS_H
#define KILN_UK_RVV_MATMUL_ROWS_H

#include "kernels/riscv/rvv/kiln_uk_rvv_base.h"

#define KILN_UK_HAS_DOT_F32 1
static inline float kiln_uk_dot_f32(const float *x, const uint8_t *w, int32_t k) {
  const float *r = (const float *)(const void *)w;
  size_t vlmax = __riscv_vsetvlmax_e32m4();
  vfloat32m4_t acc = __riscv_vfmv_v_f_f32m4(0.0f, vlmax);
  int32_t i = 0;
  while (i < k) {
    size_t vl = __riscv_vsetvl_e32m4((size_t)(k - i));
    /* Tail-undisturbed: a short last step keeps the other lanes' sums. */
    acc = __riscv_vfmacc_vv_f32m4_tu(acc, __riscv_vle32_v_f32m4(x + i, vl),
                                     __riscv_vle32_v_f32m4(r + i, vl), vl);
    i += (int32_t)vl;
  }
  return __riscv_vfmv_f_s_f32m1_f32(
      __riscv_vfredusum_vs_f32m4_f32m1(acc, __riscv_vfmv_s_f_f32m1(0.0f, 1), vlmax));
}

#define KILN_UK_HAS_QDOT_I8 1
static inline int32_t kiln_uk_rvv_group_i8(const int8_t *x, const uint8_t *q, int32_t g) {
  return kiln_uk_dot_i8(x, (const int8_t *)(const void *)q, g);
}
KILN_UK_QDOT_ROW(kiln_uk_qdot_i8, 1, kiln_uk_rvv_group_i8)

#define KILN_UK_HAS_QDOT_I4 1
/* int4 weights: byte j of a group holds value j (low nibble) and j + g/2 (high
 * nibble), each + 8; both halves are spread to int8 and dotted like int8. */
static inline int32_t kiln_uk_rvv_group_i4(const int8_t *xb, const uint8_t *q, int32_t g) {
  const int32_t h = g / 2;
  vint32m1_t sum = __riscv_vmv_s_x_i32m1(0, 1);
  int32_t j = 0;
  while (j < h) {
    size_t vl = __riscv_vsetvl_e8m1((size_t)(h - j));
    vuint8m1_t raw = __riscv_vle8_v_u8m1(q + j, vl);
    vint8m1_t lo = __riscv_vsub_vx_i8m1(
        __riscv_vreinterpret_v_u8m1_i8m1(__riscv_vand_vx_u8m1(raw, 15, vl)), 8, vl);
    vint8m1_t hi = __riscv_vsub_vx_i8m1(
        __riscv_vreinterpret_v_u8m1_i8m1(__riscv_vsrl_vx_u8m1(raw, 4, vl)), 8, vl);
    sum = __riscv_vwredsum_vs_i16m2_i32m1(
        __riscv_vwmul_vv_i16m2(__riscv_vle8_v_i8m1(xb + j, vl), lo, vl), sum, vl);
    sum = __riscv_vwredsum_vs_i16m2_i32m1(
        __riscv_vwmul_vv_i16m2(__riscv_vle8_v_i8m1(xb + h + j, vl), hi, vl), sum, vl);
    j += (int32_t)vl;
  }
  return __riscv_vmv_x_s_i32m1_i32(sum);
}
KILN_UK_QDOT_ROW(kiln_uk_qdot_i4, 2, kiln_uk_rvv_group_i4)

/* Embedding rows: halves converted, int8 and int4 groups times their scale,
 * the same products as the portable rows. */
#define KILN_UK_HAS_ROW_F16 1
static inline void kiln_uk_row_f16(const uint8_t *w, float *y, int32_t k) {
  int32_t i = 0;
  while (i < k) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(k - i));
    __riscv_vse32_v_f32m1(y + i, kiln_uk_f16_to_f32_rvv(w + 2 * i, vl), vl);
    i += (int32_t)vl;
  }
}

#define KILN_UK_HAS_ROW_I8 1
static inline void kiln_uk_row_i8(const uint8_t *w, float *y, int32_t k, int32_t g) {
  int32_t b, j;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + g) * b;
    const float d = kiln_uk_load_f16(blk);
    for (j = 0; j < g;) {
      const size_t vl = __riscv_vsetvl_e32m1((size_t)(g - j));
      __riscv_vse32_v_f32m1(y + g * b + j, __riscv_vfmul_vf_f32m1(kiln_uk_i8_to_f32_rvv(blk + 2 + j, vl), d, vl),
                            vl);
      j += (int32_t)vl;
    }
  }
}

#define KILN_UK_HAS_ROW_I4 1
static inline void kiln_uk_row_i4(const uint8_t *w, float *y, int32_t k, int32_t g) {
  int32_t b, j, h = g / 2;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + h) * b;
    const float d = kiln_uk_load_f16(blk);
    for (j = 0; j < h;) {
      const size_t vl = __riscv_vsetvl_e32m1((size_t)(h - j));
      const vint32m1_t c = __riscv_vreinterpret_v_u32m1_i32m1(
          __riscv_vzext_vf4_u32m1(__riscv_vle8_v_u8mf4(blk + 2 + j, vl), vl));
      const vint32m1_t lo = __riscv_vsub_vx_i32m1(__riscv_vand_vx_i32m1(c, 15, vl), 8, vl);
      const vint32m1_t hi = __riscv_vsub_vx_i32m1(__riscv_vsra_vx_i32m1(c, 4, vl), 8, vl);
      __riscv_vse32_v_f32m1(y + g * b + j,
                            __riscv_vfmul_vf_f32m1(__riscv_vfcvt_f_x_v_f32m1(lo, vl), d, vl), vl);
      __riscv_vse32_v_f32m1(y + g * b + j + h,
                            __riscv_vfmul_vf_f32m1(__riscv_vfcvt_f_x_v_f32m1(hi, vl), d, vl), vl);
      j += (int32_t)vl;
    }
  }
}

#endif /* KILN_UK_RVV_MATMUL_ROWS_H */
