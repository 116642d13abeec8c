/* riscv-rvv: RISC-V Vector 1.0 dot products, of the int8/int4 groups and of
 * the block formats' unpacked blocks. Vector length agnostic: loops take
 * whatever the hardware's VLEN gives them. */
#ifndef KILN_UK_RVV_H
#define KILN_UK_RVV_H

#if !defined(__riscv_v_intrinsic) || __riscv_v_intrinsic < 12000
#error "this model was generated for riscv-rvv: build with -march=rv64gcv (RVV 1.0 intrinsics)"
#endif
#include <riscv_vector.h>

#include "codegen_targets/c99/kiln_uk_base.h"

/* Sum of n int8 products, widened to int16 then reduced into int32. */
static inline int32_t dot_i8(const int8_t *a, const int8_t *b, int32_t n) {
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

#define KILN_UK_HAS_DOT_F32 1
static inline float dot_f32(const float *x, const uint8_t *w, int32_t k) {
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
static inline float qdot_i8(const int8_t *xq, const float *xd, const uint8_t *w, int32_t k,
                     int32_t g) {
  float acc = 0.0f;
  int32_t b;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + g) * b;
    int32_t s = dot_i8(xq + g * b, (const int8_t *)(const void *)(blk + 2), g);
    acc += (float)s * (xd[b] * load_f16(blk));
  }
  return acc;
}

#define KILN_UK_HAS_QDOT_I4 1
/* int4 weights: byte j of a group holds value j (low nibble) and j + g/2 (high
 * nibble), each + 8; both halves are spread to int8 and dotted like int8. */
static inline float qdot_i4(const int8_t *xq, const float *xd, const uint8_t *w, int32_t k,
                     int32_t g) {
  float acc = 0.0f;
  int32_t b, h = g / 2;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + h) * b;
    const int8_t *xb = xq + g * b;
    vint32m1_t sum = __riscv_vmv_s_x_i32m1(0, 1);
    int32_t j = 0;
    while (j < h) {
      size_t vl = __riscv_vsetvl_e8m1((size_t)(h - j));
      vuint8m1_t raw = __riscv_vle8_v_u8m1(blk + 2 + j, vl);
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
    acc += (float)__riscv_vmv_x_s_i32m1_i32(sum) * (xd[b] * load_f16(blk));
  }
  return acc;
}

#define KILN_UK_HAS_BLOCK_DOT 1
/* The block formats (kiln_uk_blocks.h): one unpacked block's int16 values
 * against an activation row's int8, per group of 32, the products widened to
 * int32 and reduced; the floats as the portable block_dot combines them. */
static inline float block_dot(const int8_t *xq, float xd, const float *xa, const int16_t *v,
                              const float *ws, const float *wm, int32_t groups) {
  float acc = 0.0f;
  int32_t g;
  for (g = 0; g < groups; ++g) {
    vint32m1_t sum = __riscv_vmv_s_x_i32m1(0, 1);
    int32_t j = 0;
    while (j < 32) {
      size_t vl = __riscv_vsetvl_e16m4((size_t)(32 - j));
      vint16m4_t x = __riscv_vsext_vf2_i16m4(__riscv_vle8_v_i8m2(xq + 32 * g + j, vl), vl);
      sum = __riscv_vredsum_vs_i32m8_i32m1(
          __riscv_vwmul_vv_i32m8(x, __riscv_vle16_v_i16m4(v + 32 * g + j, vl), vl), sum, vl);
      j += (int32_t)vl;
    }
    acc += xd * ws[g] * (float)__riscv_vmv_x_s_i32m1_i32(sum) +
           (wm[2 * g] * xa[2 * g] + wm[2 * g + 1] * xa[2 * g + 1]);
  }
  return acc;
}

#endif /* KILN_UK_RVV_H */
