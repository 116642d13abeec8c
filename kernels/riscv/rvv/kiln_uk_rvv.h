/* riscv-rvv: RISC-V Vector 1.0 dot products, of the int8/int4 groups and of
 * the block formats' blocks, and the row-wise ops (KV rows, exp, silu,
 * rms_norm, rope, embedding rows, add, mul). Vector length agnostic: loops take
 * whatever the hardware's VLEN gives them (the block dots, 16 bytes at a time,
 * need the V extension's least VLEN, 128). */
#ifndef KILN_UK_RVV_H
#define KILN_UK_RVV_H

#if !defined(__riscv_v_intrinsic) || __riscv_v_intrinsic < 12000
#error "this model was generated for riscv-rvv: build with -march=rv64gcv (RVV 1.0 intrinsics)"
#endif
#include <riscv_vector.h>

#include "kernels/c99/kiln_uk_base.h"

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

/* Halves (IEEE bits at p) as floats, vl of them: rv64gcv has no half-precision
 * conversion, so normals move their exponent and mantissa into place,
 * subnormals are their mantissa times 2^-24, infinities and NaNs keep an
 * all-ones exponent. Exact, as the scalar conversion is. */
static inline vfloat32m1_t f16_to_f32_rvv(const uint8_t *p, size_t vl) {
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
static inline vfloat32m1_t i8_to_f32_rvv(const uint8_t *p, size_t vl) {
  return __riscv_vfcvt_f_x_v_f32m1(
      __riscv_vsext_vf4_i32m1(__riscv_vle8_v_i8mf4((const int8_t *)(const void *)p, vl), vl), vl);
}

/* Values i.. of an f32, f16 or i8 (unscaled) cache row, vl of them. */
static inline vfloat32m1_t kv_load_rvv(int family, const uint8_t *row, int32_t i, size_t vl) {
  return family == KILN_UK_F32   ? __riscv_vle32_v_f32m1((const float *)(const void *)row + i, vl)
         : family == KILN_UK_F16 ? f16_to_f32_rvv(row + 2 * i, vl)
                                 : i8_to_f32_rvv(row + 2 + i, vl);
}

/* Embedding rows: halves converted, int8 and int4 groups times their scale,
 * the same products as the portable rows. */
#define KILN_UK_HAS_ROW_F16 1
static inline void row_f16(const uint8_t *w, float *y, int32_t k) {
  int32_t i = 0;
  while (i < k) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(k - i));
    __riscv_vse32_v_f32m1(y + i, f16_to_f32_rvv(w + 2 * i, vl), vl);
    i += (int32_t)vl;
  }
}

#define KILN_UK_HAS_ROW_I8 1
static inline void row_i8(const uint8_t *w, float *y, int32_t k, int32_t g) {
  int32_t b, j;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + g) * b;
    const float d = load_f16(blk);
    for (j = 0; j < g;) {
      const size_t vl = __riscv_vsetvl_e32m1((size_t)(g - j));
      __riscv_vse32_v_f32m1(y + g * b + j, __riscv_vfmul_vf_f32m1(i8_to_f32_rvv(blk + 2 + j, vl), d, vl),
                            vl);
      j += (int32_t)vl;
    }
  }
}

#define KILN_UK_HAS_ROW_I4 1
static inline void row_i4(const uint8_t *w, float *y, int32_t k, int32_t g) {
  int32_t b, j, h = g / 2;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + h) * b;
    const float d = load_f16(blk);
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

#define KILN_UK_HAS_VEC_ARITH 1
/* y = a + b and y = a * b over n values (residual adds and gated products of
 * the unfused schedule). */
static inline void vec_add(const float *a, const float *b, float *y, int32_t n) {
  int32_t i = 0;
  while (i < n) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(n - i));
    __riscv_vse32_v_f32m1(
        y + i, __riscv_vfadd_vv_f32m1(__riscv_vle32_v_f32m1(a + i, vl), __riscv_vle32_v_f32m1(b + i, vl), vl),
        vl);
    i += (int32_t)vl;
  }
}
static inline void vec_mul(const float *a, const float *b, float *y, int32_t n) {
  int32_t i = 0;
  while (i < n) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(n - i));
    __riscv_vse32_v_f32m1(
        y + i, __riscv_vfmul_vv_f32m1(__riscv_vle32_v_f32m1(a + i, vl), __riscv_vle32_v_f32m1(b + i, vl), vl),
        vl);
    i += (int32_t)vl;
  }
}

/* The KV helpers' dot and axpy over one cache row. */
static inline float kv_dot_rvv(int family, const float *q, const uint8_t *row, int32_t hd) {
  const size_t vlmax = __riscv_vsetvlmax_e32m1();
  vfloat32m1_t acc = __riscv_vfmv_v_f_f32m1(0.0f, vlmax);
  int32_t i = 0;
  while (i < hd) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(hd - i));
    acc = __riscv_vfmacc_vv_f32m1_tu(acc, __riscv_vle32_v_f32m1(q + i, vl),
                                     kv_load_rvv(family, row, i, vl), vl);
    i += (int32_t)vl;
  }
  return __riscv_vfmv_f_s_f32m1_f32(
      __riscv_vfredosum_vs_f32m1_f32m1(acc, __riscv_vfmv_s_f_f32m1(0.0f, 1), vlmax));
}
static inline void kv_axpy_rvv(int family, float *acc, float e, const uint8_t *row, int32_t hd) {
  int32_t i = 0;
  while (i < hd) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(hd - i));
    __riscv_vse32_v_f32m1(acc + i,
                          __riscv_vfmacc_vf_f32m1(__riscv_vle32_v_f32m1(acc + i, vl), e,
                                                  kv_load_rvv(family, row, i, vl), vl),
                          vl);
    i += (int32_t)vl;
  }
}
#define KILN_UK_HAS_KV_F32 1
#define KILN_UK_HAS_KV_F16 1
#define KILN_UK_HAS_KV_I8 1
KILN_UK_KV_HELPERS(kv_dot_rvv, kv_axpy_rvv)

/* e^x as the AVX-512 exp_ps computes it (2^n e^r, |r| <= ln2 / 2, a degree-6
 * polynomial), 2^n put into the exponent: x is clamped to [-87, 88] so n stays
 * a normal exponent (e^-87 is 1.6e-38). */
static inline vfloat32m1_t exp_rvv(vfloat32m1_t x, size_t vl) {
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

#define KILN_UK_HAS_EXP_BLOCK 1
static inline void exp_block(const float *x, float m, float *e, int32_t n) {
  int32_t i = 0;
  while (i < n) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(n - i));
    __riscv_vse32_v_f32m1(
        e + i, exp_rvv(__riscv_vfsub_vf_f32m1(__riscv_vle32_v_f32m1(x + i, vl), m, vl), vl), vl);
    i += (int32_t)vl;
  }
}

#define KILN_UK_HAS_SILU 1
/* Every value by the same vector code wherever a range starts. */
static inline void silu(const float *x, float *y, int32_t n) {
  int32_t i = 0;
  while (i < n) {
    const size_t vl = __riscv_vsetvl_e32m1((size_t)(n - i));
    const vfloat32m1_t v = __riscv_vle32_v_f32m1(x + i, vl);
    __riscv_vse32_v_f32m1(
        y + i,
        __riscv_vfdiv_vv_f32m1(v,
                               __riscv_vfadd_vf_f32m1(exp_rvv(__riscv_vfneg_v_f32m1(v, vl), vl),
                                                      1.0f, vl),
                               vl),
        vl);
    i += (int32_t)vl;
  }
}

#define KILN_UK_HAS_RMS_NORM_ROW 1
/* As the portable rms_norm_row: the sum of squares in double lanes (widening
 * multiply-adds), summed in order, then x times the scale times g. */
static inline void rms_norm_row(const float *x, const float *g, float *y, int32_t d, float eps) {
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
static inline void rope_head(const float *x, float *y, const float *cc, const float *ss,
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

/* The GGUF block formats dotted straight from the file's blocks (as the
 * NEON header does): each 16 codes widened to int8 lanes (VLEN >= 128 holds
 * them in one register), times 16 activations into int16, reduced into int32,
 * then the sub-block's integer scale; a k-quant super-block summed in integers
 * before its one float scale; mins and offsets through the activations'
 * scaled sums per 16. */
#define KILN_UK_HAS_QDOT_BLOCKS 1
#include "kernels/c99/kiln_uk_blocks.h"

/* 16 int8 codes against 16 activations. */
static inline int32_t blocks_dot16(vint8m1_t c, const int8_t *x) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  vint16m2_t p = __riscv_vwmul_vv_i16m2(c, __riscv_vle8_v_i8m1(x, vl), vl);
  return __riscv_vmv_x_s_i32m1_i32(
      __riscv_vwredsum_vs_i16m2_i32m1(p, __riscv_vmv_s_x_i32m1(0, 1), vl));
}

/* Of each of the 16 bytes at p, the bits `mask` selects after a shift right
 * by `bit`, moved up to bit `to`. */
static inline vuint8m1_t blocks_bits16(const uint8_t *p, int32_t bit, uint8_t mask, int32_t to) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  vuint8m1_t v = __riscv_vand_vx_u8m1(__riscv_vsrl_vx_u8m1(__riscv_vle8_v_u8m1(p, vl),
                                                          (size_t)bit, vl), mask, vl);
  return __riscv_vsll_vx_u8m1(v, (size_t)to, vl);
}

static inline float qdot_isa_q45k(const int8_t *xq, const float *xd, const float *xa,
                                  const uint8_t *w, int32_t k, int32_t five) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  float acc = 0.0f, mins = 0.0f;
  int32_t sb, c, half;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + (five ? 176 : 144) * sb;
    const uint8_t *qs = blk + (five ? 48 : 16);
    int32_t sc[8], m[8], sum = 0;
    float sbmins = 0.0f;
    unpack_scale_min_k4(blk + 4, sc, m);
    for (c = 0; c < 4; ++c) {
      const int32_t b = 8 * sb + 2 * c;
      for (half = 0; half < 2; ++half) {
        const vuint8m1_t q = __riscv_vle8_v_u8m1(qs + 32 * c + 16 * half, vl);
        vuint8m1_t lo = __riscv_vand_vx_u8m1(q, 15, vl), hi = __riscv_vsrl_vx_u8m1(q, 4, vl);
        if (five) {
          lo = __riscv_vor_vv_u8m1(lo, blocks_bits16(blk + 16 + 16 * half, 2 * c, 1, 4), vl);
          hi = __riscv_vor_vv_u8m1(hi, blocks_bits16(blk + 16 + 16 * half, 2 * c + 1, 1, 4), vl);
        }
        sum += sc[2 * c] * blocks_dot16(__riscv_vreinterpret_v_u8m1_i8m1(lo), xq + 32 * b + 16 * half) +
               sc[2 * c + 1] *
                   blocks_dot16(__riscv_vreinterpret_v_u8m1_i8m1(hi), xq + 32 * b + 32 + 16 * half);
      }
      sbmins += (float)m[2 * c] * (xa[2 * b] + xa[2 * b + 1]) +
                (float)m[2 * c + 1] * (xa[2 * b + 2] + xa[2 * b + 3]);
    }
    acc += (float)sum * (xd[sb] * load_f16(blk));
    mins += load_f16(blk + 2) * sbmins;
  }
  return acc - mins;
}

static inline float qdot_isa_q6k(const int8_t *xq, const float *xd, const float *xa,
                                 const uint8_t *w, int32_t k) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  float acc = 0.0f;
  int32_t sb, h, i, half;
  (void)xa; /* the codes carry their offset of 32: no sums needed */
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + 210 * sb;
    const int8_t *sc = (const int8_t *)(const void *)(blk + 192);
    int32_t sum = 0;
    for (h = 0; h < 2; ++h)
      for (i = 0; i < 4; ++i)
        for (half = 0; half < 2; ++half) {
          const vuint8m1_t src = __riscv_vle8_v_u8m1(blk + 64 * h + 32 * (i & 1) + 16 * half, vl);
          const vuint8m1_t low = i < 2 ? __riscv_vand_vx_u8m1(src, 15, vl) : __riscv_vsrl_vx_u8m1(src, 4, vl);
          const vuint8m1_t code =
              __riscv_vor_vv_u8m1(low, blocks_bits16(blk + 128 + 32 * h + 16 * half, 2 * i, 3, 4), vl);
          sum += sc[8 * h + 2 * i + half] *
                 blocks_dot16(__riscv_vsub_vx_i8m1(__riscv_vreinterpret_v_u8m1_i8m1(code), 32, vl),
                              xq + 256 * sb + 128 * h + 32 * i + 16 * half);
        }
    acc += (float)sum * (xd[sb] * load_f16(blk + 208));
  }
  return acc;
}

/* q2_k (three = 0) or q3_k: codes 0..3 from two bits of qs (q3_k: 0..7 with
 * hmask's bit as 4, its offset of 4 taken off through the activations' sums). */
static inline float qdot_isa_q23k(const int8_t *xq, const float *xd, const float *xa,
                                  const uint8_t *w, int32_t k, int32_t three) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  float acc = 0.0f, offsets = 0.0f;
  int32_t sb, h, j, half;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + (three ? 110 : 84) * sb;
    const uint8_t *qs = blk + (three ? 32 : 16);
    int32_t sc[16], sum = 0;
    float off[16];
    blocks_q23k_scales(blk, three, sc, off);
    for (h = 0; h < 2; ++h)
      for (j = 0; j < 4; ++j) {
        const int32_t b = 8 * sb + 4 * h + j, s = 8 * h + 2 * j;
        for (half = 0; half < 2; ++half) {
          vuint8m1_t u = blocks_bits16(qs + 32 * h + 16 * half, 2 * j, 3, 0);
          if (three)
            u = __riscv_vor_vv_u8m1(u, blocks_bits16(blk + 16 * half, 4 * h + j, 1, 2), vl);
          sum += sc[s + half] *
                 blocks_dot16(__riscv_vreinterpret_v_u8m1_i8m1(u), xq + 32 * b + 16 * half);
        }
        offsets += off[s] * xa[2 * b] + off[s + 1] * xa[2 * b + 1];
      }
    acc += (float)sum * (xd[sb] * load_f16(blk + (three ? 108 : 80)));
  }
  return acc - offsets;
}

/* For the 16 codes from bit `shift` of q5_0 / q5_1's qh: 16 where the code's
 * fifth bit is set. */
static inline vuint8m1_t blocks_q5_bits(uint32_t qh, int32_t shift) {
  const size_t vl = __riscv_vsetvl_e16m2(16);
  vuint16m2_t bits = __riscv_vand_vx_u16m2(
      __riscv_vsrl_vv_u16m2(__riscv_vmv_v_x_u16m2((uint16_t)(qh >> shift), vl),
                            __riscv_vid_v_u16m2(vl), vl),
      1, vl);
  return __riscv_vsll_vx_u8m1(__riscv_vncvt_x_x_w_u8m1(bits, vl), 4, vl);
}

static inline float qdot_isa_b32(int fmt, const int8_t *xq, const float *xd, const float *xa,
                                 const uint8_t *w, int32_t k) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  const int32_t bb = kiln_uk_block_bytes(fmt);
  const int32_t at = fmt == KILN_UK_Q4_1 ? 4 : fmt == KILN_UK_Q5_0 ? 6 : fmt == KILN_UK_Q5_1 ? 8 : 2;
  const vint8m1_t table = __riscv_vle8_v_i8m1(kiln_uk_iq4nl_values, vl);
  float acc = 0.0f, extra = 0.0f; /* mins (q4_1, q5_1) or offsets (q5_0) */
  int32_t b;
  for (b = 0; b < k / 32; ++b) {
    const uint8_t *blk = w + bb * b;
    const float d = load_f16(blk);
    const vuint8m1_t q = __riscv_vle8_v_u8m1(blk + at, vl);
    vuint8m1_t lo = __riscv_vand_vx_u8m1(q, 15, vl), hi = __riscv_vsrl_vx_u8m1(q, 4, vl);
    vint8m1_t c0, c1;
    if (fmt == KILN_UK_Q5_0 || fmt == KILN_UK_Q5_1) {
      const uint32_t qh = load_u32le(blk + at - 4);
      lo = __riscv_vor_vv_u8m1(lo, blocks_q5_bits(qh, 0), vl);
      hi = __riscv_vor_vv_u8m1(hi, blocks_q5_bits(qh, 16), vl);
    }
    c0 = fmt == KILN_UK_IQ4_NL ? __riscv_vrgather_vv_i8m1(table, lo, vl)
                               : __riscv_vreinterpret_v_u8m1_i8m1(lo);
    c1 = fmt == KILN_UK_IQ4_NL ? __riscv_vrgather_vv_i8m1(table, hi, vl)
                               : __riscv_vreinterpret_v_u8m1_i8m1(hi);
    acc += (float)(blocks_dot16(c0, xq + 32 * b) + blocks_dot16(c1, xq + 32 * b + 16)) * (xd[b] * d);
    if (fmt == KILN_UK_Q4_1 || fmt == KILN_UK_Q5_1)
      extra += load_f16(blk + 2) * (xa[2 * b] + xa[2 * b + 1]);
    else if (fmt == KILN_UK_Q5_0)
      extra -= 16.0f * d * (xa[2 * b] + xa[2 * b + 1]);
  }
  return acc + extra;
}

/* KV cache rows in vectors: an int8 row's exact dot with the query, and a q4
 * block (16 code bytes: values 0-15 in the low nibbles, 16-31 in the high
 * ones); the row loops and each block's float expression stay the portable
 * ones. */
#define KILN_UK_HAS_KV_I8_DOT 1
static inline int32_t kv_i8_dot(const int8_t *k, const int8_t *q, int32_t n) {
  return dot_i8(k, q, n);
}

#define KILN_UK_HAS_KV_Q4_DOT 1
static inline int32_t kv_q4_dot(const uint8_t *codes, const int8_t *q) {
  const size_t vl = __riscv_vsetvl_e8m1(16);
  const vuint8m1_t c = __riscv_vle8_v_u8m1(codes, vl);
  return blocks_dot16(__riscv_vreinterpret_v_u8m1_i8m1(__riscv_vand_vx_u8m1(c, 15, vl)), q) +
         blocks_dot16(__riscv_vreinterpret_v_u8m1_i8m1(__riscv_vsrl_vx_u8m1(c, 4, vl)), q + 16);
}

#define KILN_UK_HAS_KV_Q4_AXPY 1
static inline void kv_q4_axpy(float *a, float ed, float em, const uint8_t *codes) {
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

#endif /* KILN_UK_RVV_H */
