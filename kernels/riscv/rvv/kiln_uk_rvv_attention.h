/* riscv-rvv: attention's inner loops over KV cache rows in vectors. */
#ifndef KILN_UK_RVV_ATTENTION_H
#define KILN_UK_RVV_ATTENTION_H

#include "kernels/riscv/rvv/kiln_uk_rvv_base.h"

/* The KV helpers' dot and axpy over one cache row. */
static inline float kiln_uk_kv_dot_rvv(int family, const float *q, const uint8_t *row, int32_t hd) {
  const size_t vlmax = __riscv_vsetvlmax_e32m1();
  vfloat32m1_t acc = __riscv_vfmv_v_f_f32m1(0.0f, vlmax);
  int32_t i = 0;
  while (i < hd) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(hd - i));
    acc = __riscv_vfmacc_vv_f32m1_tu(acc, __riscv_vle32_v_f32m1(q + i, vl),
                                     kiln_uk_kv_load_rvv(family, row, i, vl), vl);
    i += (int32_t)vl;
  }
  return __riscv_vfmv_f_s_f32m1_f32(
      __riscv_vfredosum_vs_f32m1_f32m1(acc, __riscv_vfmv_s_f_f32m1(0.0f, 1), vlmax));
}
static inline void kiln_uk_kv_axpy_rvv(int family, float *acc, float e, const uint8_t *row, int32_t hd) {
  int32_t i = 0;
  while (i < hd) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(hd - i));
    __riscv_vse32_v_f32m1(acc + i,
                          __riscv_vfmacc_vf_f32m1(__riscv_vle32_v_f32m1(acc + i, vl), e,
                                                  kiln_uk_kv_load_rvv(family, row, i, vl), vl),
                          vl);
    i += (int32_t)vl;
  }
}
#define KILN_UK_HAS_KV_F32 1
#define KILN_UK_HAS_KV_F16 1
#define KILN_UK_HAS_KV_I8 1
KILN_UK_KV_HELPERS(kiln_uk_kv_dot_rvv, kiln_uk_kv_axpy_rvv)

/* KV cache rows in vectors: an int8 row's exact dot with the query, and a q4
 * block (16 code bytes: values 0-15 in the low nibbles, 16-31 in the high
 * ones); the row loops and each block's float expression stay the portable
 * ones. */
#define KILN_UK_HAS_KV_I8_DOT 1
static inline int32_t kiln_uk_kv_i8_dot(const int8_t *k, const int8_t *q, int32_t n) {
  return kiln_uk_dot_i8(k, q, n);
}

#define KILN_UK_HAS_KV_Q4_DOT 1
static inline int32_t kiln_uk_kv_q4_dot(const uint8_t *codes, const int8_t *q) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  const vuint8m1_t c = __riscv_vle8_v_u8m1(codes, vl);
  return kiln_uk_blocks_dot16(__riscv_vreinterpret_v_u8m1_i8m1(__riscv_vand_vx_u8m1(c, 15, vl)), q) +
         kiln_uk_blocks_dot16(__riscv_vreinterpret_v_u8m1_i8m1(__riscv_vsrl_vx_u8m1(c, 4, vl)), q + 16);
}

#define KILN_UK_HAS_KV_Q4_AXPY 1
static inline void kiln_uk_kv_q4_axpy(float *a, float ed, float em, const uint8_t *codes) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  const vuint8m1_t c = __riscv_vle8_v_u8m1(codes, vl);
  int32_t k;
  for (k = 0; k < 2; ++k) { /* values 16k..16k+15 */
    const vuint8m1_t h = k ? __riscv_vsrl_vx_u8m1(c, 4, vl) : __riscv_vand_vx_u8m1(c, 15, vl);
    const vfloat32m4_t x = __riscv_vfcvt_f_xu_v_f32m4(__riscv_vzext_vf4_u32m4(h, vl), vl);
    const vfloat32m4_t v = __riscv_vfmacc_vf_f32m4(__riscv_vfmv_v_f_f32m4(em, vl), ed, x, vl);
    __riscv_vse32_v_f32m4(a + 16 * k,
                          __riscv_vfadd_vv_f32m4(__riscv_vle32_v_f32m4(a + 16 * k, vl), v, vl), vl);
  }
}

#endif /* KILN_UK_RVV_ATTENTION_H */
