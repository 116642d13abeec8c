/* Shared by the kernel test's two translation units: the c99 reference one and
 * the one built with an ISA's flags and header. */
#ifndef KILN_TEST_KERNELS_TEST_H
#define KILN_TEST_KERNELS_TEST_H

#include "kernels/c99/kiln_uk_pack.h"

#include <stdint.h>

/* A matmul over row-layout weights as the generated kernels call it: the
 * input quantized once (int8, int4), then matmul_rows over every column. Uses
 * whichever kernels are in scope. */
#define KERNELS_TEST_ROW_MATMUL(family, x, w, y, scratch, rows, n, k, g)                 \
  do {                                                                                   \
    if ((family) == KILN_UK_I8 || (family) == KILN_UK_I4)                                \
      kiln_uk_quantize_act_rows(x, scratch, rows, k, g);                                 \
    kiln_uk_matmul_rows(family, x, w, y, scratch, rows, n, k, g, 0, n);                  \
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
void ref_row_tq2_0(const uint8_t *w, float *y, int32_t k);
void ref_vec(int add, const float *a, const float *b, float *y, int32_t n);
void ref_kv_store(int family, const float *x, uint8_t *row, int32_t hd);
void ref_rope_head(const float *x, float *y, const float *cc, const float *ss, int32_t rd,
                   int32_t hd, int neox);
void ref_rope_rows(const float *x, float *y, int32_t ld, int32_t rows, int32_t pos, int32_t h0,
                   int32_t h1, const double *freq, int32_t rd, int32_t hd, int neox,
                   float mscale);
void ref_attention_rows(int family, int layout, const float *q, const uint8_t *keys,
                        const uint8_t *values, float *y, int32_t u0, int32_t u1, int32_t rows,
                        int32_t pos, int32_t nh, int32_t nkv, int32_t hd, int32_t window,
                        int32_t cap, float scale);
void ref_kv_load_row(int family, const uint8_t *row, float *x, int32_t hd);

#endif
