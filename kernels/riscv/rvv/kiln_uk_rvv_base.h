/* riscv-rvv: what the RISC-V Vector kernels share: the target check, the
 * headers, the int8 dot, the conversions of halves and int8 to floats and
 * exp. Vector length agnostic: loops take whatever the hardware's VLEN gives
 * them. */
#ifndef KILN_UK_RVV_BASE_H
#define KILN_UK_RVV_BASE_H

#if !defined(__riscv_v_intrinsic) || __riscv_v_intrinsic < 12000
#error "this model was generated for riscv-rvv: build with -march=rv64gcv (RVV 1.0 intrinsics)"
#endif
#include <riscv_vector.h>

#include "kernels/c99/kiln_uk_base.h"

/* Sum of n int8 products, widened to int16 then reduced into int32. */
static inline int32_t kiln_uk_dot_i8(const int8_t *a, const int8_t *b, int32_t n) {
  vint32m1_t sum = __riscv_vmv_s_x_i32m1(0, 1);
  int32_t j = 0;
  while (j < n) {
    size_t vl = __riscv_vsetvl_e8m1((size_t)(n - j));
    vint16m2_t p = __riscv_vwmul_vv_i16m2(__riscv_vle8_v_i8m1(a + j, vl),
                                          __riscv_vle8_v_i8m1(b + j, vl), vl);
    sum = __riscv_vwredsum_vs_i16m2_i32m1(p, sum, vl);
    j += (int32_t)vl;
  }
  return __riscv_vmv_x_s_i32m1_i32(sum);
}

/* Halves (IEEE bits at p) as floats, vl of them: rv64gcv has no half-precision
 * conversion, so normals move their exponent and mantissa into place,
 * subnormals are their mantissa times 2^-24, infinities and NaNs keep an
 * all-ones exponent. Exact, as the scalar conversion is. */
static inline vfloat32m1_t kiln_uk_f16_to_f32_rvv(const uint8_t *p, size_t vl) {
  const vuint32m1_t h =
      __riscv_vzext_vf2_u32m1(__riscv_vle16_v_u16mf2((const uint16_t *)(const void *)p, vl), vl);
  const vuint32m1_t e = __riscv_vand_vx_u32m1(__riscv_vsrl_vx_u32m1(h, 10, vl), 31, vl);
  const vuint32m1_t m = __riscv_vsll_vx_u32m1(__riscv_vand_vx_u32m1(h, 0x3ff, vl), 13, vl);
  vuint32m1_t bits = __riscv_vor_vv_u32m1(
      __riscv_vsll_vx_u32m1(__riscv_vadd_vx_u32m1(e, 112, vl), 23, vl), m, vl);
  const vfloat32m1_t tiny = __riscv_vfmul_vf_f32m1(
      __riscv_vfcvt_f_xu_v_f32m1(__riscv_vand_vx_u32m1(h, 0x3ff, vl), vl), 5.9604644775390625e-8f,
      vl);
  bits = __riscv_vmerge_vvm_u32m1(bits, __riscv_vor_vx_u32m1(m, 0x7f800000u, vl),
                                  __riscv_vmseq_vx_u32m1_b32(e, 31, vl), vl);
  bits = __riscv_vmerge_vvm_u32m1(bits, __riscv_vreinterpret_v_f32m1_u32m1(tiny),
                                  __riscv_vmseq_vx_u32m1_b32(e, 0, vl), vl);
  bits = __riscv_vor_vv_u32m1(
      bits, __riscv_vsll_vx_u32m1(__riscv_vand_vx_u32m1(h, 0x8000, vl), 16, vl), vl);
  return __riscv_vreinterpret_v_u32m1_f32m1(bits);
}

/* vl int8 values at p as floats. */
static inline vfloat32m1_t kiln_uk_i8_to_f32_rvv(const uint8_t *p, size_t vl) {
  return __riscv_vfcvt_f_x_v_f32m1(
      __riscv_vsext_vf4_i32m1(__riscv_vle8_v_i8mf4((const int8_t *)(const void *)p, vl), vl), vl);
}

/* Values i.. of an f32, f16 or i8 (unscaled) cache row, vl of them. */
static inline vfloat32m1_t kiln_uk_kv_load_rvv(int family, const uint8_t *row, int32_t i, size_t vl) {
  return family == KILN_UK_F32   ? __riscv_vle32_v_f32m1((const float *)(const void *)row + i, vl)
         : family == KILN_UK_F16 ? kiln_uk_f16_to_f32_rvv(row + 2 * i, vl)
                                 : kiln_uk_i8_to_f32_rvv(row + 2 + i, vl);
}

/* e^x as the AVX-512 exp_ps computes it (2^n e^r, |r| <= ln2 / 2, a degree-6
 * polynomial), 2^n put into the exponent: x is clamped to [-87, 88] so n stays
 * a normal exponent (e^-87 is 1.6e-38). */
static inline vfloat32m1_t kiln_uk_exp_rvv(vfloat32m1_t x, size_t vl) {
  vfloat32m1_t r, p, nf;
  vint32m1_t n;
  x = __riscv_vfmin_vf_f32m1(__riscv_vfmax_vf_f32m1(x, -87.0f, vl), 88.0f, vl);
  n = __riscv_vfcvt_x_f_v_i32m1(__riscv_vfmul_vf_f32m1(x, 1.44269504f, vl), vl);
  nf = __riscv_vfcvt_f_x_v_f32m1(n, vl);
  r = __riscv_vfnmsac_vf_f32m1(x, 0.693359375f, nf, vl);
  r = __riscv_vfnmsac_vf_f32m1(r, -2.12194440e-4f, nf, vl);
  p = __riscv_vfmv_v_f_f32m1(1.0f / 720.0f, vl);
  p = __riscv_vfmadd_vv_f32m1(p, r, __riscv_vfmv_v_f_f32m1(1.0f / 120.0f, vl), vl);
  p = __riscv_vfmadd_vv_f32m1(p, r, __riscv_vfmv_v_f_f32m1(1.0f / 24.0f, vl), vl);
  p = __riscv_vfmadd_vv_f32m1(p, r, __riscv_vfmv_v_f_f32m1(1.0f / 6.0f, vl), vl);
  p = __riscv_vfmadd_vv_f32m1(p, r, __riscv_vfmv_v_f_f32m1(0.5f, vl), vl);
  p = __riscv_vfmadd_vv_f32m1(p, r, __riscv_vfmv_v_f_f32m1(1.0f, vl), vl);
  p = __riscv_vfmadd_vv_f32m1(p, r, __riscv_vfmv_v_f_f32m1(1.0f, vl), vl);
  return __riscv_vreinterpret_v_i32m1_f32m1(__riscv_vadd_vv_i32m1(
      __riscv_vreinterpret_v_f32m1_i32m1(p), __riscv_vsll_vx_i32m1(n, 23, vl), vl));
}

#endif /* KILN_UK_RVV_BASE_H */
