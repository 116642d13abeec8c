/* The c99 micro-kernels behind plain functions, compiled without any ISA flags,
 * so kernels_test.c can hold an ISA variant against them in the same program. */
#include "kernels_test.h"

#include "kernels/c99/kiln_uk_c99.h"

void ref_matmul(int family, const float *x, const uint8_t *w, float *y, void *scratch,
                int32_t rows, int32_t n, int32_t k, int32_t g) {
  KERNELS_TEST_ROW_MATMUL(family, x, w, y, scratch, rows, n, k, g);
}

void ref_quantize_act(const float *x, float *d, int8_t *q, int32_t k, int32_t g) {
  kiln_uk_quantize_act(x, d, q, k, g);
}

float ref_kv_dot(int family, const float *q, const uint8_t *row, int32_t hd) {
  kv_query kq;
  if (family == KILN_UK_I8 || family == KILN_UK_Q4)
    kiln_uk_kv_query_set(&kq, q, hd);
  return kiln_uk_kv_dot(family, q, &kq, row, hd);
}

void ref_attend(int family, const float *q, int32_t nq, const uint8_t *keys,
                const uint8_t *values, size_t stride, int32_t ring, int32_t t0, int32_t t1,
                int32_t hd, float scale, float *y) {
  kiln_uk_attend(family, q, nq, keys, values, stride, ring, NULL, 0, t0, t1, hd, scale, y);
}

void ref_rms_norm_row(const float *x, const float *g, float *y, int32_t d, float eps) {
  kiln_uk_rms_norm_row(x, g, y, d, eps);
}

void ref_silu(const float *x, float *y, int32_t n) { kiln_uk_silu(x, y, n); }

void ref_kv_axpy(int family, float *acc, float e, const uint8_t *row, int32_t hd) {
  kiln_uk_kv_axpy(family, acc, e, row, hd);
}

void ref_rope_head(const float *x, float *y, const float *cc, const float *ss, int32_t rd,
                   int32_t hd, int neox) {
  kiln_uk_rope_head(x, y, cc, ss, rd, hd, neox);
}

void ref_row(int family, const uint8_t *w, float *y, int32_t k, int32_t g) {
  if (family == KILN_UK_F16)
    kiln_uk_row_f16(w, y, k);
  else if (family == KILN_UK_I8)
    kiln_uk_row_i8(w, y, k, g);
  else
    kiln_uk_row_i4(w, y, k, g);
}

/* tq2_0 as its definition reads (ggml's dequantize_row_tq2_0): per block, each
 * half of qs in four passes, bits 2l of its 32 bytes, value (code - 1) * d. */
void ref_row_tq2_0(const uint8_t *w, float *y, int32_t k) {
  int32_t b, j, l, m, n = 0;
  for (b = 0; b < k / 256; ++b) {
    const uint8_t *qs = w + 66 * b;
    const float d = kiln_uk_load_f16(qs + 64);
    for (j = 0; j < 64; j += 32)
      for (l = 0; l < 4; ++l)
        for (m = 0; m < 32; ++m)
          y[n++] = (float)(((qs[j + m] >> (2 * l)) & 3) - 1) * d;
  }
}

void ref_vec(int add, const float *a, const float *b, float *y, int32_t n) {
  if (add)
    kiln_uk_vec_add(a, b, y, n);
  else
    kiln_uk_vec_mul(a, b, y, n);
}

void ref_kv_store(int family, const float *x, uint8_t *row, int32_t hd) {
  if (family == KILN_UK_Q4)
    kiln_uk_kv_store_q4(x, row, hd);
  else
    kiln_uk_kv_store_i8(x, row, hd);
}

void ref_rope_rows(const float *x, float *y, int32_t ld, int32_t rows, int32_t pos, int32_t h0,
                   int32_t h1, const double *freq, int32_t rd, int32_t hd, int neox,
                   float mscale) {
  kiln_uk_rope_rows(x, y, ld, rows, pos, h0, h1, freq, rd, hd, neox, mscale);
}

void ref_attention_rows(int family, int layout, const float *q, const uint8_t *keys,
                        const uint8_t *values, float *y, int32_t u0, int32_t u1, int32_t rows,
                        int32_t pos, int32_t nh, int32_t nkv, int32_t hd, int32_t window,
                        int32_t cap, float scale) {
  kiln_uk_attention_rows(family, layout, q, keys, values, y, u0, u1, rows, pos, nh, nkv, hd, window, cap,
                 scale);
}

void ref_kv_load_row(int family, const uint8_t *row, float *x, int32_t hd) {
  kiln_uk_kv_load_row(family, row, x, hd);
}
