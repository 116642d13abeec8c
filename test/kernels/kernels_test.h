/* Shared by the kernel test's two translation units: the c99 reference one and
 * the one built with an ISA's flags and header. */
#ifndef KILN_TEST_KERNELS_TEST_H
#define KILN_TEST_KERNELS_TEST_H

#include "kernels/c99/kiln_uk_pack.h"

#include <stdint.h>

/* A matmul over row-layout weights exactly as the generated kernels write it:
 * float rows take dot_<family>; int rows are quantized once into scratch, then
 * every output is qdot_<family>. Uses whichever helpers are in scope. */
#define KERNELS_TEST_ROW_MATMUL(family, x, w, y, scratch, rows, n, k, g)                 \
  do {                                                                                   \
    size_t rb_ = kiln_uk_row_bytes(family, k, g);                                        \
    size_t st_ = kiln_uk_act_stride(KILN_UK_ACT_ROWS, k, g);                             \
    uint8_t *s_ = (uint8_t *)(scratch);                                                  \
    int32_t n_, r_;                                                                      \
    if ((family) >= KILN_UK_I8)                                                          \
      for (r_ = 0; r_ < (rows); ++r_)                                                    \
        quantize_act((x) + (size_t)r_ * (k), (float *)(void *)(s_ + r_ * st_),           \
                     (int8_t *)(void *)(s_ + r_ * st_ + ((k) / (g)) * 4u), k, g);        \
    for (n_ = 0; n_ < (n); ++n_)                                                         \
      for (r_ = 0; r_ < (rows); ++r_) {                                                  \
        const uint8_t *row_ = (w) + (size_t)n_ * rb_;                                    \
        const uint8_t *sr_ = s_ + r_ * st_;                                              \
        float *out_ = (y) + (size_t)r_ * (n) + n_;                                       \
        switch (family) {                                                                \
        case KILN_UK_F32: *out_ = dot_f32((x) + (size_t)r_ * (k), row_, k); break;       \
        case KILN_UK_F16: *out_ = dot_f16((x) + (size_t)r_ * (k), row_, k); break;       \
        case KILN_UK_I8:                                                                 \
          *out_ = qdot_i8((const int8_t *)(const void *)(sr_ + ((k) / (g)) * 4u),        \
                          (const float *)(const void *)sr_, row_, k, g);                 \
          break;                                                                         \
        default:                                                                         \
          *out_ = qdot_i4((const int8_t *)(const void *)(sr_ + ((k) / (g)) * 4u),        \
                          (const float *)(const void *)sr_, row_, k, g);                 \
        }                                                                                \
      }                                                                                  \
  } while (0)

void ref_matmul(int family, const float *x, const uint8_t *w, float *y, void *scratch,
                int32_t rows, int32_t n, int32_t k, int32_t g);
void ref_quantize_act(const float *x, float *d, int8_t *q, int32_t k, int32_t g);
float ref_kv_dot(int family, const float *q, const uint8_t *row, int32_t hd);
void ref_attend(int family, const float *q, int32_t nq, const uint8_t *keys,
                const uint8_t *values, size_t stride, int32_t ring, int32_t t0, int32_t t1,
                int32_t hd, float scale, float *y);
void ref_rms_norm_row(const float *x, const float *g, float *y, int32_t d, float eps);
void ref_silu(const float *x, float *y, int32_t n);
void ref_kv_axpy(int family, float *acc, float e, const uint8_t *row, int32_t hd);
void ref_row(int family, const uint8_t *w, float *y, int32_t k, int32_t g);
void ref_vec(int add, const float *a, const float *b, float *y, int32_t n);
void ref_kv_store(int family, const float *x, uint8_t *row, int32_t hd);
void ref_rope_head(const float *x, float *y, const float *cc, const float *ss, int32_t rd,
                   int32_t hd, int neox);

#endif
