/* The shared micro-kernel test: one ISA variant (its header chosen by
 * KILN_TEST_ISA_HEADER, built with its flags) against the c99 kernels
 * (kernels_ref.c, built without ISA flags), and the c99 kernels against a naive
 * double-precision matmul of the dequantized operands. Every format, shapes with
 * ragged tails (n not a multiple of the panel, k not a multiple of the vector),
 * and every row count 1..C that the tiles split differently.
 *
 * Exit status 77 (ctest's skip) when the CPU lacks the variant's instructions. */
#include KILN_TEST_ISA_HEADER
#include "kernels/c99/kiln_uk_c99.h"

#include "kernels_test.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_N 160
#ifdef KILN_UK_NR
#define MAX_K 1280 /* the panel tiles take groups 16 at a time: more than 32 of them */
#else
#define MAX_K 512
#endif
#define MAX_ROWS 17

static int passed, failed;

static void check(int ok, const char *what) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    printf("FAIL %s\n", what);
  }
}

static uint32_t rng = 12345u;
static float uniform(void) { /* in [-1, 1) */
  rng = rng * 1664525u + 1013904223u;
  return (float)(rng >> 8) / 8388608.0f - 1.0f;
}
static uint8_t byte(void) {
  rng = rng * 1664525u + 1013904223u;
  return (uint8_t)(rng >> 24);
}

static void put_f16(uint8_t *p, float v) {
  uint16_t h = kiln_f32_to_f16(v);
  memcpy(p, &h, 2);
}

/* Random weights of n rows in the row layout. */
static void random_weights(int family, uint8_t *w, int32_t n, int32_t k, int32_t g) {
  size_t rb = kiln_uk_row_bytes(family, k, g), i;
  int32_t r, j, b;
  for (r = 0; r < n; ++r) {
    uint8_t *row = w + (size_t)r * rb;
    if (family == KILN_UK_F32) {
      for (j = 0; j < k; ++j) {
        float v = uniform();
        memcpy(row + 4 * j, &v, 4);
      }
    } else if (family == KILN_UK_F16) {
      for (j = 0; j < k; ++j)
        put_f16(row + 2 * j, uniform());
    } else {
      size_t gb = family == KILN_UK_I8 ? (size_t)(2 + g) : (size_t)(2 + g / 2);
      for (b = 0; b < k / g; ++b) {
        put_f16(row + b * gb, 0.001f + 0.05f * (uniform() + 1.0f));
        for (i = 2; i < gb; ++i) /* int8 weights take -128 too: a file may hold it */
          row[b * gb + i] = byte();
      }
      /* Extreme values: an all -127 (i8) / all -8 (i4) group, a zero scale,
       * an all 127 (i8) / all 7 (i4) group. */
      if (r == 0)
        memset(row + 2, family == KILN_UK_I8 ? 0x81 : 0x00, gb - 2);
      if (r == 1)
        memset(row, 0, 2);
      if (r == 2)
        memset(row + 2, family == KILN_UK_I8 ? 0x7f : 0xff, gb - 2);
    }
  }
}

static double weight_value(int family, const uint8_t *w, int32_t k, int32_t g, int32_t row,
                           int32_t j) {
  const uint8_t *r = w + (size_t)row * kiln_uk_row_bytes(family, k, g);
  float f;
  if (family == KILN_UK_F32) {
    memcpy(&f, r + 4 * j, 4);
    return f;
  }
  if (family == KILN_UK_F16)
    return kiln_uk_load_f16(r + 2 * j);
  if (family == KILN_UK_I8) {
    const uint8_t *blk = r + (size_t)(j / g) * (size_t)(2 + g);
    return (double)kiln_uk_load_f16(blk) * (double)(int8_t)blk[2 + j % g];
  }
  {
    const uint8_t *blk = r + (size_t)(j / g) * (size_t)(2 + g / 2);
    int32_t i = j % g, h = g / 2;
    int v = i < h ? (blk[2 + i] & 15) : (blk[2 + i - h] >> 4);
    return (double)kiln_uk_load_f16(blk) * (double)(v - 8);
  }
}

static uint8_t w_rows[MAX_N * MAX_K * 4];
#ifdef KILN_UK_NR
static uint8_t w_panels[(MAX_N + KILN_UK_NR) * MAX_K * 4];
#endif
static float x[MAX_ROWS * MAX_K], y[MAX_ROWS * MAX_N], y_ref[MAX_ROWS * MAX_N],
    y_tile[MAX_ROWS * MAX_N];
static uint8_t scratch[MAX_ROWS * (MAX_K * 8 + MAX_K) + 64];
static float xd[MAX_K];
static int8_t xq[MAX_K];

/* The variant's matmul: panel kernels (register tile mr, K block kc) when the
 * ISA has them, over the panels in `pieces` ranges (as threads split them),
 * else the row-layout loop with the ISA's helpers. */
static void isa_matmul(int family, int32_t rows, int32_t n, int32_t k, int32_t g, int32_t mr,
                       int32_t kc, int32_t pieces, float *out) {
#ifdef KILN_UK_NR
  const int32_t panels = (n + KILN_UK_NR - 1) / KILN_UK_NR;
  int32_t i;
  kiln_uk_pack_panels(family, w_rows, w_panels, n, k, g, KILN_UK_NR);
  if (family >= KILN_UK_I8)
    kiln_uk_panel_quantize_rows(x, scratch, rows, k, g);
  for (i = 0; i < pieces; ++i) {
    int32_t p0 = panels * i / pieces, p1 = panels * (i + 1) / pieces;
    if (family >= KILN_UK_I8)
      kiln_uk_matmul_panel_int(family, w_panels, out, scratch, rows, n, k, g, mr, kc, p0, p1);
    else
      kiln_uk_matmul_panel_float(family, x, w_panels, out, rows, n, k, mr, kc, p0, p1);
  }
#else
  (void)mr;
  (void)kc;
  (void)pieces;
  KERNELS_TEST_ROW_MATMUL(family, x, w_rows, out, scratch, rows, n, k, g);
#endif
}

static const char *family_name(int f) {
  return f == KILN_UK_F32   ? "f32"
         : f == KILN_UK_F16 ? "f16"
         : f == KILN_UK_I8  ? "i8"
         : f == KILN_UK_Q4  ? "q4"
                            : "i4";
}

static void test_matmul(int family, int32_t rows, int32_t n, int32_t k, int32_t g) {
  char what[160];
  double worst_isa = 0, worst_ref = 0;
  int32_t r, i, j;
  random_weights(family, w_rows, n, k, g);
  for (i = 0; i < rows * k; ++i)
    x[i] = uniform() * (i % 7 == 0 ? 4.0f : 1.0f);
  for (i = 0; i < k; ++i) /* all int8 codes 127: the integer sums' largest magnitudes */
    x[i] = 1.0f;
  ref_matmul(family, x, w_rows, y_ref, scratch, rows, n, k, g);
  isa_matmul(family, rows, n, k, g, 8, k, 1, y);
  for (r = 0; r < rows; ++r) {
    /* The naive product of the operands the kernels see: int families use the
     * c99 quantization of the activations. */
    const float *xr = x + (size_t)r * k;
    if (family >= KILN_UK_I8)
      ref_quantize_act(xr, xd, xq, k, g);
    for (i = 0; i < n; ++i) {
      double sum = 0, mag = 0;
      for (j = 0; j < k; ++j) {
        double a = family >= KILN_UK_I8 ? (double)xd[j / g] * xq[j] : xr[j];
        double t = a * weight_value(family, w_rows, k, g, i, j);
        sum += t;
        mag += fabs(t);
      }
      /* Float sums in another order: a few ulps of the magnitude. */
      mag = mag * 2e-6 + 1e-30;
      if (fabs(y_ref[r * n + i] - sum) / mag > worst_ref)
        worst_ref = fabs(y_ref[r * n + i] - sum) / mag;
      if (fabs(y[r * n + i] - y_ref[r * n + i]) / mag > worst_isa)
        worst_isa = fabs(y[r * n + i] - y_ref[r * n + i]) / mag;
    }
  }
  snprintf(what, sizeof what, "%s matmul %s rows %d n %d k %d g %d: c99 vs naive %.3g, vs c99 %.3g",
           KILN_TEST_ISA_NAME, family_name(family), (int)rows, (int)n, (int)k, (int)g, worst_ref,
           worst_isa);
  check(worst_ref <= 1.0 && worst_isa <= 1.0, what);
  /* Other register tiles and K blocks: the same sums in the same order. */
  if (k >= 2 * g) {
    int32_t tiles[3][2], t;
    tiles[0][0] = 1, tiles[0][1] = g;
    tiles[1][0] = 3, tiles[1][1] = (k / g / 2) * g;
    tiles[2][0] = 5, tiles[2][1] = 2 * g;
    for (t = 0; t < 3; ++t) {
      isa_matmul(family, rows, n, k, g, tiles[t][0], tiles[t][1], 1, y_tile);
      snprintf(what, sizeof what, "%s matmul %s rows %d n %d k %d g %d tile mr %d kc %d: same bits",
               KILN_TEST_ISA_NAME, family_name(family), (int)rows, (int)n, (int)k, (int)g,
               (int)tiles[t][0], (int)tiles[t][1]);
      check(memcmp(y, y_tile, sizeof(float) * (size_t)(rows * n)) == 0, what);
    }
  }
#ifdef KILN_UK_NR
  /* The panels in ranges of any size (as shares of threads): the same bits. */
  {
    int32_t pieces;
    for (pieces = 2; pieces <= 7; pieces += 5) {
      memset(y_tile, 0, sizeof(float) * (size_t)(rows * n));
      isa_matmul(family, rows, n, k, g, 8, k, pieces, y_tile);
      snprintf(what, sizeof what, "%s matmul %s rows %d n %d k %d g %d in %d panel ranges: same bits",
               KILN_TEST_ISA_NAME, family_name(family), (int)rows, (int)n, (int)k, (int)g,
               (int)pieces);
      check(memcmp(y, y_tile, sizeof(float) * (size_t)(rows * n)) == 0, what);
    }
  }
#endif
}

static void test_kv(int family, int32_t hd) {
  uint8_t row[2 + 4 * 256];
  float q[256], acc[256], acc_ref[256];
  double mag = 0;
  int32_t i, ok = 1;
  char what[120];
  for (i = 0; i < hd; ++i) {
    q[i] = uniform();
    acc[i] = acc_ref[i] = uniform();
  }
  for (i = 0; i < 2 + 4 * hd; ++i)
    row[i] = byte();
  if (family == KILN_UK_F16)
    for (i = 0; i < hd; ++i)
      put_f16(row + 2 * i, uniform());
  if (family == KILN_UK_F32)
    for (i = 0; i < hd; ++i) {
      float v = uniform();
      memcpy(row + 4 * i, &v, 4);
    }
  if (family == KILN_UK_I8)
    put_f16(row, 0.01f);
  if (family == KILN_UK_Q4)
    for (i = 0; i < hd / 32; ++i) {
      put_f16(row + 20 * i, 0.01f + 0.005f * (float)i);
      put_f16(row + 20 * i + 2, -0.1f * uniform());
    }
  for (i = 0; i < hd; ++i)
    mag += fabs(q[i]) * (family == KILN_UK_I8 ? 1.28 : 1.0);
  if (family == KILN_UK_F32 || family == KILN_UK_F16) {
    float a = family == KILN_UK_F32 ? kiln_uk_kv_dot_f32(q, row, hd) : kiln_uk_kv_dot_f16(q, row, hd);
    ok &= fabs(a - ref_kv_dot(family, q, row, hd)) <= 2e-6 * mag + 1e-30;
  } else {
    /* The quantized query against the dequantized row: in double with the
     * query's int8 values and scales, and with the float query within the
     * rounding of the query (half a step of its group's scale per value). */
    kv_query kq;
    float back[256];
    double naive = 0.0, naive_f = 0.0, bound = 0.0;
    const int32_t g = kiln_uk_kv_query_group(hd);
    float a;
    kiln_uk_kv_query_set(&kq, q, hd);
    a = family == KILN_UK_Q4 ? kiln_uk_kv_qdot_q4(&kq, row, hd) : kiln_uk_kv_qdot_i8(&kq, row, hd);
    kiln_uk_kv_load_row(family, row, back, hd);
    for (i = 0; i < hd; ++i) {
      naive += (double)kq.d[i / g] * (double)kq.q[i] * (double)back[i];
      naive_f += (double)q[i] * (double)back[i];
      bound += 0.5 * (double)kq.d[i / g] * fabs((double)back[i]);
    }
    ok &= fabs(a - naive) <= 2e-6 * mag + 1e-30;
    ok &= fabs(a - naive_f) <= bound + 2e-6 * mag;
  }
  if (family == KILN_UK_F32)
    kiln_uk_kv_axpy_f32(acc, 0.37f, row, hd);
  else if (family == KILN_UK_F16)
    kiln_uk_kv_axpy_f16(acc, 0.37f, row, hd);
  else if (family == KILN_UK_Q4)
    kiln_uk_kv_axpy_q4(acc, 0.37f, row, hd);
  else
    kiln_uk_kv_axpy_i8(acc, 0.37f, row, hd);
  ref_kv_axpy(family, acc_ref, 0.37f, row, hd);
  for (i = 0; i < hd; ++i)
    ok &= fabsf(acc[i] - acc_ref[i]) <= 1e-6f * (1.0f + fabsf(acc_ref[i]));
  snprintf(what, sizeof what, "%s kv %s hd %d", KILN_TEST_ISA_NAME, family_name(family), (int)hd);
  check(ok, what);
}

/* The int4 store: each value back within half a quantization step of the
 * block (its d / 2, plus the f16 rounding of d and m), and a block's minimum
 * and maximum represented. */
static void test_kv_store_q4(int32_t hd) {
  uint8_t row[8 * 20];
  float xs[256], back[256];
  int32_t i, ok = 1;
  char what[80];
  for (i = 0; i < hd; ++i)
    xs[i] = uniform() * (i % 32 == 5 ? 8.0f : 1.0f);
  xs[31] = xs[30]; /* ties */
  kiln_uk_kv_store_q4(xs, row, hd);
  kiln_uk_kv_load_row(KILN_UK_Q4, row, back, hd);
  for (i = 0; i < hd; ++i) {
    const float d = kiln_uk_load_f16(row + 20 * (i / 32));
    ok &= fabsf(back[i] - xs[i]) <= 0.5f * d + 1e-2f * (fabsf(xs[i]) + d);
  }
  snprintf(what, sizeof what, "%s kv_store_q4 hd %d: within half a step", KILN_TEST_ISA_NAME,
           (int)hd);
  check(ok, what);
  /* Both quantized stores give c99's bytes, so a cache reads the same on every
   * target: random rows, and rows of exact half steps (i8: scale 0.5 from a
   * largest value of 63.5; q4: d 0.5 and m 0 from 0 and 7.5), which round away
   * from zero. */
  {
    uint8_t row_ref[8 * 20], i8[2 + 256], i8_ref[2 + 256];
    int32_t pass;
    ok = 1;
    for (pass = 0; pass < 2; ++pass) {
      if (pass == 1)
        for (i = 0; i < hd; ++i)
          xs[i] = i % 32 == 0 ? 0.0f : i % 32 == 1 ? 7.5f : (float)(i % 15) * 0.5f + 0.25f;
      kiln_uk_kv_store_q4(xs, row, hd);
      ref_kv_store(KILN_UK_Q4, xs, row_ref, hd);
      ok &= memcmp(row, row_ref, (size_t)hd / 32u * 20u) == 0;
      if (pass == 1)
        for (i = 0; i < hd; ++i)
          xs[i] = i == 0 ? 63.5f : (float)(i % 9 - 4) * 0.5f + (i % 2 ? 0.25f : -0.25f);
      kiln_uk_kv_store_i8(xs, i8, hd);
      ref_kv_store(KILN_UK_I8, xs, i8_ref, hd);
      ok &= memcmp(i8, i8_ref, 2u + (size_t)hd) == 0;
    }
    snprintf(what, sizeof what, "%s kv_store_q4 and kv_store_i8 hd %d: c99's bytes, ties too",
             KILN_TEST_ISA_NAME, (int)hd);
    check(ok, what);
  }
}

/* Attention of a group of query heads over cache rows t0..t1 of one KV head, in
 * a cache whose rows hold 3 such heads (so rows are strided). */
/* Cache rows the attend test holds: spans longer than attend's chunks. */
#define ATTEND_ROWS 320

/* A naive softmax in double: w[t] = e^(s_t - max s) for the scores s_t =
 * 0.125 x qh . row t (keys + t stride, as kv_load_row reads it), t0..t1;
 * returns their sum. */
static double naive_weights(int family, const double *qh, const uint8_t *keys, size_t stride,
                            int32_t t0, int32_t t1, int32_t hd, double *w) {
  double mx = -1e300, sum = 0.0;
  float row[256];
  int32_t t, i;
  for (t = t0; t <= t1; ++t) {
    double s = 0.0;
    kiln_uk_kv_load_row(family, keys + (size_t)t * stride, row, hd);
    for (i = 0; i < hd; ++i)
      s += qh[i] * (double)row[i];
    w[t] = s * 0.125;
    mx = w[t] > mx ? w[t] : mx;
  }
  for (t = t0; t <= t1; ++t)
    sum += (w[t] = exp(w[t] - mx));
  return sum;
}

/* attend of nq query heads over positions t0..t1 of one cache head among nkv
 * (nkv = 1: the rows are contiguous, as in a head-major cache). */
static void test_attend(int family, int32_t nq, int32_t hd, int32_t t0, int32_t t1, int32_t nkv) {
  static uint8_t keys[ATTEND_ROWS * 3 * (2 + 4 * 128)], values[ATTEND_ROWS * 3 * (2 + 4 * 128)];
  static float q[9 * 128], out[9 * 128], out_ref[9 * 128];
  const size_t head_bytes = family == KILN_UK_F32   ? 4u * hd
                            : family == KILN_UK_F16 ? 2u * hd
                            : family == KILN_UK_Q4  ? (size_t)hd / 32u * 20u
                                                    : 2u + hd;
  const size_t stride = (size_t)nkv * head_bytes, at = (size_t)(nkv - 1) * head_bytes;
  int32_t t, i, ok = 1;
  char what[120];
  for (i = 0; i < nq * hd; ++i)
    q[i] = uniform() * 2.0f;
  for (t = 0; t <= t1; ++t) {
    uint8_t *k = keys + (size_t)t * stride + at, *v = values + (size_t)t * stride + at;
    for (i = 0; i < hd; ++i) {
      float kv = uniform(), vv = uniform();
      if (family == KILN_UK_F32) {
        memcpy(k + 4 * i, &kv, 4);
        memcpy(v + 4 * i, &vv, 4);
      } else if (family == KILN_UK_F16) {
        put_f16(k + 2 * i, kv);
        put_f16(v + 2 * i, vv);
      } else {
        k[2 + i] = (uint8_t)(int8_t)(kv * 127.0f);
        v[2 + i] = (uint8_t)(int8_t)(vv * 127.0f);
      }
    }
    if (family == KILN_UK_I8) {
      put_f16(k, 0.015f + 0.005f * (float)(t % 3)); /* scores of rows with other scales */
      put_f16(v, 0.01f);
    }
    if (family == KILN_UK_Q4) { /* whole rows of floats through the int4 store */
      static float kf[128], vf[128];
      for (i = 0; i < hd; ++i)
        kf[i] = uniform(), vf[i] = uniform();
      kiln_uk_kv_store_q4(kf, k, hd);
      kiln_uk_kv_store_q4(vf, v, hd);
    }
  }
  kiln_uk_attend(family, q, nq, keys + at, values + at, stride, ATTEND_ROWS, NULL, 0, t0, t1, hd, 0.125f,
         out);
  ref_attend(family, q, nq, keys + at, values + at, stride, ATTEND_ROWS, t0, t1, hd, 0.125f,
             out_ref);
  /* The outputs are convex combinations of values in [-1, 1]. */
  for (i = 0; i < nq * hd; ++i)
    ok &= fabsf(out[i] - out_ref[i]) <= 2e-6f;
  snprintf(what, sizeof what, "%s attend %s heads %d hd %d rows %d..%d of %d", KILN_TEST_ISA_NAME,
           family_name(family), (int)nq, (int)hd, (int)t0, (int)t1, (int)nkv);
  check(ok, what);
  /* Each head of the group alone: the same bits (the group only shares loads). */
  {
    static float out_one[128];
    int32_t h;
    ok = 1;
    for (h = 0; h < nq; ++h) {
      kiln_uk_attend(family, q + h * hd, 1, keys + at, values + at, stride, ATTEND_ROWS, NULL, 0, t0, t1,
             hd, 0.125f, out_one);
      ok &= memcmp(out_one, out + h * hd, sizeof(float) * (size_t)hd) == 0;
    }
    snprintf(what, sizeof what, "%s attend %s heads %d hd %d rows %d..%d: each head alone, same bits",
             KILN_TEST_ISA_NAME, family_name(family), (int)nq, (int)hd, (int)t0, (int)t1);
    check(ok, what);
  }
  /* The same positions from a ring of `ring` rows (position t in row t % ring,
   * later positions written over earlier ones): the same bits. */
  {
    static uint8_t rk[ATTEND_ROWS * 3 * (2 + 4 * 128)], rv[ATTEND_ROWS * 3 * (2 + 4 * 128)];
    static float out_ring[9 * 128];
    const int32_t ring = t1 - t0 + 1 + (t0 % 3);
    for (t = 0; t <= t1; ++t) {
      memcpy(rk + (size_t)(t % ring) * stride, keys + (size_t)t * stride, stride);
      memcpy(rv + (size_t)(t % ring) * stride, values + (size_t)t * stride, stride);
    }
    kiln_uk_attend(family, q, nq, rk + at, rv + at, stride, ring, NULL, 0, t0, t1, hd, 0.125f,
           out_ring);
    snprintf(what, sizeof what, "%s attend %s heads %d hd %d rows %d..%d from a ring of %d: same bits",
             KILN_TEST_ISA_NAME, family_name(family), (int)nq, (int)hd, (int)t0, (int)t1,
             (int)ring);
    check(memcmp(out_ring, out, sizeof(float) * (size_t)(nq * hd)) == 0, what);
  }
  /* Against a naive softmax in double over the dequantized rows, with the
   * query as the kernels score it: as it is, or for int8 and int4 rows its
   * int8 values times their scales (kv_query). */
  {
    int32_t h;
    ok = 1;
    for (h = 0; h < nq; ++h) {
      double w[ATTEND_ROWS], sum, qh[128];
      float row[128];
      if (family == KILN_UK_I8 || family == KILN_UK_Q4) {
        kv_query kq;
        kiln_uk_kv_query_set(&kq, q + h * hd, hd);
        for (i = 0; i < hd; ++i)
          qh[i] = (double)kq.d[i / kiln_uk_kv_query_group(hd)] * (double)kq.q[i];
      } else {
        for (i = 0; i < hd; ++i)
          qh[i] = q[h * hd + i];
      }
      sum = naive_weights(family, qh, keys + at, stride, t0, t1, hd, w);
      for (i = 0; i < hd; ++i) {
        double a = 0.0;
        for (t = t0; t <= t1; ++t) {
          kiln_uk_kv_load_row(family, values + (size_t)t * stride + at, row, hd);
          a += w[t] / sum * (double)row[i];
        }
        ok &= fabs(out[h * hd + i] - a) <= 1e-5;
      }
    }
    snprintf(what, sizeof what, "%s attend %s heads %d hd %d rows %d..%d vs naive softmax",
             KILN_TEST_ISA_NAME, family_name(family), (int)nq, (int)hd, (int)t0, (int)t1);
    check(ok, what);
  }
}

/* attend over a tiled int4 cache (KILN_UK_Q4T) of nq query heads, positions
 * t0..t1: the tiles hold the rows kv_store_q4 writes (kv_tile_put_q4, and
 * kv_store_q4t and kv_load_q4t agree with it), against a naive softmax in
 * double over the dequantized rows, within 1e-5 plus what weighting the
 * values in bytes may cost: per chunk of attend's tiles (128 positions from
 * t0's tile on) each weight e d within half a step of 1/255 of the chunk's
 * largest, so at most n x 7.5 x that largest / 255 over the sum of e (codes
 * are at most 15). Each head alone gives the same bits. */
static void test_attend_q4t(int32_t nq, int32_t hd, int32_t t0, int32_t t1) {
  enum { CAP = 320 };
  static uint8_t rows_k[CAP * 160], rows_v[CAP * 160], tk[CAP * 160], tv[CAP * 160];
  static float q[9 * 256], out[9 * 256], out_one[256];
  const size_t hb = (size_t)hd / 32u * 20u;
  float x[256], xr[256], xt[256];
  int32_t t, i, h, ok = 1, same = 1;
  char what[120];
  for (i = 0; i < nq * hd; ++i)
    q[i] = uniform() * 2.0f;
  for (t = 0; t <= t1; ++t) {
    uint8_t *tile = tk + (size_t)(t / 16) * 16u * hb;
    for (i = 0; i < hd; ++i)
      x[i] = uniform();
    kiln_uk_kv_store_q4(x, rows_k + (size_t)t * hb, hd);
    kiln_uk_kv_store_q4t(x, tile, t % 16, hd);
    kiln_uk_kv_load_row(KILN_UK_Q4, rows_k + (size_t)t * hb, xr, hd);
    kiln_uk_kv_load_q4t(tile, t % 16, xt, hd);
    same &= memcmp(xr, xt, sizeof(float) * (size_t)hd) == 0;
    for (i = 0; i < hd; ++i)
      x[i] = uniform();
    kiln_uk_kv_store_q4(x, rows_v + (size_t)t * hb, hd);
    kiln_uk_kv_tile_put_q4(rows_v + (size_t)t * hb, tv + (size_t)(t / 16) * 16u * hb, t % 16, hd);
  }
  snprintf(what, sizeof what, "%s kv_store_q4t and kv_load_q4t hd %d: kv_store_q4's rows",
           KILN_TEST_ISA_NAME, (int)hd);
  check(same, what);
  kiln_uk_attend(KILN_UK_Q4T, q, nq, tk, tv, hb, CAP, NULL, 0, t0, t1, hd, 0.125f, out);
  for (h = 0; h < nq; ++h) {
    kv_query kq;
    double w[CAP], qh[256], sum, slack = 0.0;
    float row[256];
    int32_t c;
    kiln_uk_kv_query_set(&kq, q + h * hd, hd);
    for (i = 0; i < hd; ++i)
      qh[i] = (double)kq.d[i / 32] * (double)kq.q[i];
    sum = naive_weights(KILN_UK_Q4, qh, rows_k, hb, t0, t1, hd, w);
    for (c = t0 & ~15; c <= t1; c += 128) { /* attend's chunks */
      double top = 0.0;
      int32_t n = 0;
      for (t = c > t0 ? c : t0; t <= t1 && t < c + 128; ++t, ++n)
        for (i = 0; i < hd / 32; ++i) {
          const double ed = w[t] * (double)kiln_uk_load_f16(rows_v + (size_t)t * hb + 20 * i);
          top = ed > top ? ed : top;
        }
      slack += n * 7.5 * top / 255.0;
    }
    for (i = 0; i < hd; ++i) {
      double a = 0.0;
      for (t = t0; t <= t1; ++t) {
        kiln_uk_kv_load_row(KILN_UK_Q4, rows_v + (size_t)t * hb, row, hd);
        a += w[t] / sum * (double)row[i];
      }
      ok &= fabs(out[h * hd + i] - a) <= 1e-5 + slack / sum;
    }
    kiln_uk_attend(KILN_UK_Q4T, q + h * hd, 1, tk, tv, hb, CAP, NULL, 0, t0, t1, hd, 0.125f, out_one);
    same &= memcmp(out_one, out + h * hd, sizeof(float) * (size_t)hd) == 0;
  }
  snprintf(what, sizeof what, "%s attend q4t heads %d hd %d rows %d..%d vs naive softmax",
           KILN_TEST_ISA_NAME, (int)nq, (int)hd, (int)t0, (int)t1);
  check(ok, what);
  snprintf(what, sizeof what, "%s attend q4t heads %d hd %d rows %d..%d: each head alone, same bits",
           KILN_TEST_ISA_NAME, (int)nq, (int)hd, (int)t0, (int)t1);
  check(same, what);
}

/* rope_head: the same bits as c99 in place and out of place, for both pair
 * layouts and partial rotary (rd < hd), and the rotation in double within a
 * few roundings. */
static void test_rope(int32_t rd, int32_t hd, int neox) {
  static float x[256], y[256], y_ref[256], inplace[256], cc[256], ss[256];
  int32_t i, ok = 1;
  char what[100];
  for (i = 0; i < hd; ++i)
    inplace[i] = x[i] = uniform() * 4.0f;
  for (i = 0; i < rd / 2; ++i) {
    const double angle = 3.0 * (double)uniform();
    const int32_t a = neox ? i : 2 * i, b = neox ? i + rd / 2 : 2 * i + 1;
    cc[a] = cc[b] = (float)cos(angle);
    ss[a] = -(ss[b] = (float)sin(angle));
  }
  kiln_uk_rope_head(x, y, cc, ss, rd, hd, neox);
  ref_rope_head(x, y_ref, cc, ss, rd, hd, neox);
  kiln_uk_rope_head(inplace, inplace, cc, ss, rd, hd, neox);
  ok &= memcmp(y, y_ref, sizeof(float) * (size_t)hd) == 0;
  ok &= memcmp(y, inplace, sizeof(float) * (size_t)hd) == 0;
  for (i = 0; i < hd; ++i) {
    const int32_t partner = i >= rd ? i : neox ? (i < rd / 2 ? i + rd / 2 : i - rd / 2) : i ^ 1;
    const double want = i >= rd ? (double)x[i]
                                : (double)x[i] * cc[i] + (double)x[partner] * ss[i];
    ok &= fabs(y[i] - want) <= 1e-6 * (fabs(x[i]) + fabs(x[partner]));
  }
  snprintf(what, sizeof what, "%s rope_head rd %d hd %d %s: c99's bits, and in place",
           KILN_TEST_ISA_NAME, (int)rd, (int)hd, neox ? "neox" : "pairs");
  check(ok, what);
}

/* tq2_0's decoder against the format's definition, bit for bit. */
static void test_tq2_0_decode(void) {
  static uint8_t w[66 * 4];
  static float y[1024], want[1024];
  int32_t i;
  for (i = 0; i < (int32_t)sizeof w; ++i)
    w[i] = byte();
  for (i = 0; i < 4; ++i)
    put_f16(w + 66 * i + 64, uniform());
  kiln_uk_row_tq2_0(w, y, 1024);
  ref_row_tq2_0(w, want, 1024);
  check(memcmp(y, want, sizeof y) == 0, KILN_TEST_ISA_NAME " row_tq2_0: the definition's values");
}

/* Embedding rows (f16, i8, i4) and the elementwise add and mul: exact, so
 * c99's bits. */
static void test_rows_exact(int32_t k, int32_t g) {
  static uint8_t w[2 * MAX_K + 64];
  static float y[MAX_K], y_ref[MAX_K], a[MAX_K], b[MAX_K];
  static const int families[] = {KILN_UK_F16, KILN_UK_I8, KILN_UK_I4};
  int32_t i, ok = 1;
  size_t f;
  char what[80];
  for (f = 0; f < sizeof families / sizeof families[0]; ++f) {
    random_weights(families[f], w, 1, k, g);
    if (families[f] == KILN_UK_F16)
      kiln_uk_row_f16(w, y, k);
    else if (families[f] == KILN_UK_I8)
      kiln_uk_row_i8(w, y, k, g);
    else
      kiln_uk_row_i4(w, y, k, g);
    ref_row(families[f], w, y_ref, k, g);
    ok &= memcmp(y, y_ref, sizeof(float) * (size_t)k) == 0;
  }
  for (i = 0; i < k; ++i)
    a[i] = uniform() * 3.0f, b[i] = uniform();
  kiln_uk_vec_add(a, b, y, k);
  ref_vec(1, a, b, y_ref, k);
  ok &= memcmp(y, y_ref, sizeof(float) * (size_t)k) == 0;
  kiln_uk_vec_mul(a, b, y, k);
  ref_vec(0, a, b, y_ref, k);
  ok &= memcmp(y, y_ref, sizeof(float) * (size_t)k) == 0;
  snprintf(what, sizeof what, "%s embedding rows and vec_add/mul k %d g %d: c99's bits",
           KILN_TEST_ISA_NAME, (int)k, (int)g);
  check(ok, what);
}

/* The row-wise ops: relative error of a few float roundings. */
static void test_rows(int32_t d) {
  static float g[MAX_K], out[MAX_K], out_ref[MAX_K];
  int32_t i, ok = 1;
  char what[80];
  for (i = 0; i < d; ++i) {
    x[i] = uniform() * (i % 5 ? 3.0f : 40.0f);
    g[i] = 1.0f + 0.1f * uniform();
  }
  kiln_uk_rms_norm_row(x, g, out, d, 1e-5f);
  ref_rms_norm_row(x, g, out_ref, d, 1e-5f);
  for (i = 0; i < d; ++i)
    ok &= fabsf(out[i] - out_ref[i]) <= 1e-6f * (fabsf(out_ref[i]) + 1e-6f);
  kiln_uk_silu(x, out, d);
  ref_silu(x, out_ref, d);
  for (i = 0; i < d; ++i)
    ok &= fabsf(out[i] - out_ref[i]) <= 1e-6f * (fabsf(out_ref[i]) + 1e-6f);
  snprintf(what, sizeof what, "%s rms_norm_row and silu d %d", KILN_TEST_ISA_NAME, (int)d);
  check(ok, what);
  /* silu over a range that starts anywhere (a thread's rows): the same bits. */
  for (i = 1; i < d && i < 9; ++i) {
    kiln_uk_silu(x + i, out_ref + i, d - i);
    ok &= memcmp(out + i, out_ref + i, sizeof(float) * (size_t)(d - i)) == 0;
  }
  snprintf(what, sizeof what, "%s silu from offsets 1..8 of d %d: same bits", KILN_TEST_ISA_NAME,
           (int)d);
  check(ok, what);
}

#ifdef KILN_UK_NR
/* The panel kernels quantize activations themselves: the same int8 values and
 * scales as c99, and exact group sums. */
static void test_quantize_sums(int32_t k, int32_t g) {
  float d[MAX_K], d_ref[MAX_K];
  int32_t s[MAX_K], i, b, ok = 1;
  int8_t q[MAX_K], q_ref[MAX_K];
  char what[80];
  for (i = 0; i < k; ++i)
    x[i] = uniform() * 3.0f;
  for (b = 0; b < k / g; ++b) { /* in every group: ties of the rounding once its scale is set */
    float *xb = x + b * g;
    xb[0] = b % 3 == 2 ? 0.0f : 3.0f; /* the scale 3 / 127 (a zero group at b % 3 == 2) */
    xb[1] = 0.5f * 3.0f / 127.0f;
    xb[2] = -(float)(b % 100 + 1) * 0.5f * 3.0f / 127.0f;
    xb[3] = -3.0f * (float)(b % 2);
    if (b % 3 == 2)
      for (i = 1; i < g; ++i)
        xb[i] = 0.0f;
  }
  kiln_uk_quantize_act_sums(x, d, s, q, k, g);
  ref_quantize_act(x, d_ref, q_ref, k, g);
  for (b = 0; b < k / g; ++b) {
    int32_t sum = 0;
    for (i = 0; i < g; ++i)
      sum += q_ref[b * g + i];
    ok &= d[b] == d_ref[b] && s[b] == sum;
  }
  ok &= memcmp(q, q_ref, (size_t)k) == 0;
  snprintf(what, sizeof what, "%s quantize_act_sums k %d g %d", KILN_TEST_ISA_NAME, (int)k, (int)g);
  check(ok, what);
}
#endif

/* Whether the ISA reads block format fmt in panels. */
static int has_block_panels(int fmt) {
  (void)fmt;
  return 0
#ifdef KILN_UK_HAS_PANEL_KQUANTS
         || fmt == KILN_UK_Q4_K || fmt == KILN_UK_Q5_K || fmt == KILN_UK_Q6_K
#endif
#ifdef KILN_UK_HAS_PANEL_B32
         || kiln_uk_is_b32_family(fmt)
#endif
#ifdef KILN_UK_HAS_PANEL_Q2K
         || fmt == KILN_UK_Q2_K
#endif
#ifdef KILN_UK_HAS_PANEL_Q3K
         || fmt == KILN_UK_Q3_K
#endif
      ;
}

#if defined(KILN_UK_HAS_PANEL_KQUANTS) || defined(KILN_UK_HAS_PANEL_B32) || defined(KILN_UK_HAS_PANEL_Q2K)
/* Worst error of y (rows x n) against the naive double sum of the decoded
 * rows of w_rows times the dequantized activations in scratch, in units of
 * the float rounding bound. */
static double block_panel_error(int fmt, const float *yp, int32_t rows, int32_t n, int32_t k,
                                size_t stride, size_t rb) {
  static float wrow[MAX_K];
  const int32_t e = kiln_uk_block_elements(fmt);
  double worst = 0.0;
  int32_t r, j, b;
  for (j = 0; j < n; ++j) {
    kiln_uk_row(fmt, w_rows + (size_t)j * rb, wrow, k, 0);
    for (r = 0; r < rows; ++r) {
      const float *d = (const float *)(const void *)(scratch + (size_t)r * stride);
      const int8_t *q = (const int8_t *)(const void *)(d + k / e + k / 16);
      double sum = 0.0, mag = 0.0;
      for (b = 0; b < k; ++b) {
        double t = (double)q[b] * (double)d[b / e] * (double)wrow[b];
        sum += t;
        mag += t < 0 ? -t : t;
      }
      sum = ((double)yp[(size_t)r * (size_t)n + j] - sum) / (mag * 1e-5 + 1e-6);
      worst = sum > worst ? sum : -sum > worst ? -sum : worst;
    }
  }
  return worst;
}

/* Bit i of a panel's bytes (-1 for none) whose flip test_block_panels
 * expects to see: first row, first block; the top mantissa bit of its scale,
 * of its min (m, dmin), a bit of its fifth bits or sub-block scales, the
 * lowest bit of its first code (q6_k: bit 3). */
static int32_t block_panel_mutation(int fmt, int32_t i) {
  const int32_t nr = KILN_UK_NR;
  if (kiln_uk_is_b32_family(fmt)) {
    const int32_t mins = fmt == KILN_UK_Q4_1 || fmt == KILN_UK_Q5_1;
    const int32_t five = fmt == KILN_UK_Q5_0 || fmt == KILN_UK_Q5_1;
    const int32_t at[4] = {8 + 1, mins ? 8 * 2 * nr + 8 + 1 : -1, five ? 8 * (2 + 2 * mins) * nr : -1,
                           8 * kiln_uk_b32_head(fmt) * nr};
    return at[i];
  }
  if (fmt == KILN_UK_Q6_K) {
    /* a code's bit 3: a flip of its lowest can stay under the bound */
    const int32_t at[4] = {8 * 208 * nr + 8 + 1, -1, 8 * 192 * nr + 4, 3};
    return at[i];
  }
  if (fmt == KILN_UK_Q3_K) { /* d, bit 3 of a scale, a high bit, a code */
    const int32_t at[4] = {8 + 1, 8 * 2 * nr + 3, 8 * 14 * nr, 8 * 46 * nr};
    return at[i];
  }
  if (fmt == KILN_UK_Q2_K) {
    const int32_t at[4] = {8 + 1, 8 * 2 * nr + 8 + 1, 8 * 4 * nr + 1, 8 * 20 * nr};
    return at[i];
  }
  {
    const int32_t at[4] = {8 + 1, 8 * 2 * nr + 8 + 1, 8 * 4 * nr + 2, 8 * (fmt == KILN_UK_Q5_K ? 48 : 16) * nr};
    return at[i];
  }
}

/* A block format repacked into panels (the weights and activations test_blocks
 * made): each output against the naive sum of the decoded row, and the same
 * bits for every register tile, K block, panel range and row count (decode's
 * path). A flipped bit of a panel's scale, min, fifth bits or codes (its
 * first row's, in the first block) must move the outputs past the bound. */
static void test_block_panels(int fmt, int32_t rows, int32_t n, int32_t k, size_t stride,
                              size_t rb) {
  const int family = fmt;
  const char *name = kiln_uk_family_name(fmt);
  const int32_t e = kiln_uk_block_elements(fmt);
  static float y_panel[MAX_ROWS * MAX_N], y_other[MAX_ROWS * MAX_N];
  const int32_t tiles[][3] = {{1, e, 1}, {3, 8 * e < k ? 8 * e : e, 2}, {5, MAX_K, 3}, {8, e, 5}};
  const int32_t panels = (n + KILN_UK_NR - 1) / KILN_UK_NR;
  double worst;
  int32_t i, r, j, same = 1;
  char what[112];
  kiln_uk_pack_panels(family, w_rows, w_panels, n, k, e, KILN_UK_NR);
  /* the layout's inverse gives every row's blocks back */
  for (j = 0; j < n; ++j)
    for (i = 0; i < k / e; ++i) {
      uint8_t blk[256];
      const size_t bb = (size_t)kiln_uk_block_bytes(fmt);
      kiln_uk_panel_block_row(family, w_panels + ((size_t)(j / KILN_UK_NR) * (size_t)(k / e) + (size_t)i) * bb * KILN_UK_NR,
                              j % KILN_UK_NR, KILN_UK_NR, blk);
      same &= memcmp(blk, w_rows + (size_t)j * rb + (size_t)i * bb, bb) == 0;
    }
  snprintf(what, sizeof what, "%s %s panels n %d k %d: panel_block_row inverts the packing",
           KILN_TEST_ISA_NAME, name, (int)n, (int)k);
  check(same, what);
  kiln_uk_matmul_panel_int(family, w_panels, y_panel, scratch, rows, n, k, e, 8, k, 0, panels);
  worst = block_panel_error(fmt, y_panel, rows, n, k, stride, rb);
  snprintf(what, sizeof what, "%s %s panels rows %d n %d k %d: error %.2f of bound",
           KILN_TEST_ISA_NAME, name, (int)rows, (int)n, (int)k, worst);
  check(worst <= 1.0, what);
  for (i = 0; i < (int32_t)(sizeof tiles / sizeof tiles[0]); ++i) {
    const int32_t pieces = tiles[i][2];
    for (j = 0; j < pieces; ++j)
      kiln_uk_matmul_panel_int(family, w_panels, y_other, scratch, rows, n, k, e, tiles[i][0],
                       tiles[i][1], panels * j / pieces, panels * (j + 1) / pieces);
    same &= memcmp(y_other, y_panel, sizeof(float) * (size_t)(rows * n)) == 0;
  }
  for (r = 0; r < rows; ++r) {
    kiln_uk_matmul_panel_int(family, w_panels, y_other, scratch + (size_t)r * stride, 1, n, k, e,
                     8, k, 0, panels);
    same &= memcmp(y_other, y_panel + (size_t)r * (size_t)n, sizeof(float) * (size_t)n) == 0;
  }
  snprintf(what, sizeof what, "%s %s panels rows %d n %d k %d: tiles, ranges and rows agree",
           KILN_TEST_ISA_NAME, name, (int)rows, (int)n, (int)k);
  check(same, what);
  for (i = 0; i < 4; ++i) {
    const int32_t at = block_panel_mutation(fmt, i);
    if (at < 0)
      continue;
    w_panels[at / 8] ^= (uint8_t)(1u << at % 8);
    kiln_uk_matmul_panel_int(family, w_panels, y_other, scratch, rows, n, k, e, 8, k, 0, panels);
    w_panels[at / 8] ^= (uint8_t)(1u << at % 8);
    worst = block_panel_error(fmt, y_other, rows, n, k, stride, rb);
    snprintf(what, sizeof what, "%s %s panels rows %d n %d k %d: bit %d of the panel flipped, error %.0f",
             KILN_TEST_ISA_NAME, name, (int)rows, (int)n, (int)k, (int)at, worst);
    check(worst > 1.0, what);
  }
}
#endif

#ifdef KILN_UK_HAS_PANEL_B32
/* iq4_nl's codebook in the panel kernels against the format's definition
 * (ggml's kvalues_iq4nl): row r of a block of 32 all code r, scale 1, against
 * activations of all ones, gives 32 times entry r. */
static void test_iq4nl_codebook(void) {
  static const int8_t spec[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                  1,    13,   25,  38,  53,  69,  89,  113};
  int32_t r, ok = 1;
  char what[80];
  for (r = 0; r < 16; ++r) {
    uint8_t *blk = w_rows + 18 * r;
    put_f16(blk, 1.0f);
    memset(blk + 2, r | r << 4, 16);
  }
  for (r = 0; r < 32; ++r)
    x[r] = 1.0f;
  kiln_uk_blocks_quantize_row(x, scratch, 32, 32);
  kiln_uk_pack_panels(KILN_UK_IQ4_NL, w_rows, w_panels, 16, 32, 32, KILN_UK_NR);
  kiln_uk_matmul_panel_int(KILN_UK_IQ4_NL, w_panels, y, scratch, 1, 16, 32, 32, 1, 32, 0,
                           (16 + KILN_UK_NR - 1) / KILN_UK_NR);
  for (r = 0; r < 16; ++r)
    ok &= fabsf(y[r] - 32.0f * (float)spec[r]) <= 0.01f;
  snprintf(what, sizeof what, "%s iq4_nl panels: the codebook's 16 entries", KILN_TEST_ISA_NAME);
  check(ok, what);
}
#endif

/* The GGUF block formats the kernels read. */
static const int block_formats[] = {KILN_UK_Q4_1, KILN_UK_Q5_0, KILN_UK_Q5_1, KILN_UK_IQ4_NL,
                                    KILN_UK_Q2_K, KILN_UK_Q3_K, KILN_UK_Q4_K, KILN_UK_Q5_K,
                                    KILN_UK_Q6_K, KILN_UK_TQ2_0};

/* The GGUF block formats: matmul_blocks against a naive double sum of the
 * decoded weights (kiln_uk_row) times the dequantized activations, within float
 * rounding; and each output the same bits whatever the rows and columns of
 * the call (decode vs prefill, thread shares). */
static void test_blocks(int fmt, int32_t rows, int32_t n, int32_t k) {
  /* Offsets of each format's f16 scale (and min) within a block. */
  int32_t scale_at[2];
  const int32_t e = kiln_uk_block_elements(fmt), bb = kiln_uk_block_bytes(fmt);
  const size_t rb = (size_t)(k / e) * (size_t)bb, stride = kiln_uk_act_stride(KILN_UK_ACT_BLOCKS, k, e);
  static float wrow[MAX_K], y_part[MAX_ROWS * MAX_N];
  double worst = 0.0;
  int32_t i, r, j, b, same = 1;
  char what[96];
  kiln_uk_block_scales_at(fmt, scale_at);
  /* The first weight row with every bit set but its scales' (each code its
   * largest) against a first activation row of int8 codes 127: the integer
   * sums' largest magnitudes, where int16 lanes would overflow first. */
  for (i = 0; i < (int32_t)rb * n; ++i)
    w_rows[i] = i < (int32_t)rb ? 0xff : byte();
  for (i = 0; i < n * (k / e); ++i) { /* scales of 0.01 to 0.05, either sign: every block counts */
    uint8_t *blk = w_rows + (size_t)i * (size_t)bb;
    float u = uniform();
    put_f16(blk + scale_at[0], (u < 0 ? -0.01f : 0.01f) + u * 0.04f);
    if (scale_at[1] >= 0) {
      u = uniform();
      put_f16(blk + scale_at[1], (u < 0 ? -0.01f : 0.01f) + u * 0.04f);
    }
  }
  for (i = 0; i < rows * k; ++i)
    x[i] = i < k ? 1.0f : uniform() * 2.0f;
  for (r = 0; r < rows; ++r)
    kiln_uk_blocks_quantize_row(x + (size_t)r * (size_t)k, scratch + (size_t)r * stride, k, e);
  kiln_uk_matmul_blocks(fmt, w_rows, y, scratch, rows, n, k, 0, n);
  for (j = 0; j < n; ++j) {
    kiln_uk_row(fmt, w_rows + (size_t)j * rb, wrow, k, 0);
    for (r = 0; r < rows; ++r) {
      const float *d = (const float *)(const void *)(scratch + (size_t)r * stride);
      const int8_t *q = (const int8_t *)(const void *)(d + k / e + k / 16);
      double sum = 0.0, mag = 0.0;
      for (b = 0; b < k; ++b) {
        double t = (double)q[b] * (double)d[b / e] * (double)wrow[b];
        sum += t;
        mag += t < 0 ? -t : t;
      }
      sum = ((double)y[(size_t)r * (size_t)n + j] - sum) / (mag * 1e-5 + 1e-6);
      worst = sum > worst ? sum : -sum > worst ? -sum : worst;
    }
  }
  /* Each row alone, and the columns in two ranges, give the same bits. */
  for (r = 0; r < rows; ++r) {
    kiln_uk_matmul_blocks(fmt, w_rows, y_part, scratch + (size_t)r * stride, 1, n, k, 0, n / 2);
    kiln_uk_matmul_blocks(fmt, w_rows, y_part, scratch + (size_t)r * stride, 1, n, k, n / 2, n);
    same &= memcmp(y_part, y + (size_t)r * (size_t)n, sizeof(float) * (size_t)n) == 0;
  }
  snprintf(what, sizeof what, "%s matmul_blocks %s rows %d n %d k %d: error %.2f of bound",
           KILN_TEST_ISA_NAME, kiln_uk_family_name(fmt), (int)rows, (int)n, (int)k, worst);
#if defined(KILN_UK_HAS_PANEL_KQUANTS) || defined(KILN_UK_HAS_PANEL_B32) || defined(KILN_UK_HAS_PANEL_Q2K)
  if (has_block_panels(fmt))
    test_block_panels(fmt, rows, n, k, stride, rb);
#endif
  check(worst <= 1.0, what);
  snprintf(what, sizeof what, "%s matmul_blocks %s rows %d n %d k %d: rows and ranges agree",
           KILN_TEST_ISA_NAME, kiln_uk_family_name(fmt), (int)rows, (int)n, (int)k);
  check(same, what);
}

/* --- the kernels the generated code calls once per op -------------------- */

/* embed_rows of tokens from a table of each family: each row as the family's
 * decoder (c99's, ref_row) gives it, bit for bit; vec_scale after it. */
static void test_embed(int family, int32_t d, int32_t g) {
  static uint8_t table[8 * 512 * 4];
  static float y[5 * 512], want[512];
  const int32_t tokens[5] = {3, 0, 7, 3, 5};
  int32_t r, i, ok = 1;
  char what[100];
  random_weights(family, table, 8, d, g);
  kiln_uk_embed_rows(family, table, tokens, y, 1, 5, d, g);
  for (r = 1; r < 5; ++r) {
    if (family == KILN_UK_F32)
      memcpy(want, table + (size_t)tokens[r] * kiln_uk_row_bytes(family, d, g), 4u * (size_t)d);
    else
      ref_row(family, table + (size_t)tokens[r] * kiln_uk_row_bytes(family, d, g), want, d, g);
    ok &= memcmp(y + (size_t)r * (size_t)d, want, sizeof(float) * (size_t)d) == 0;
  }
  kiln_uk_vec_scale(y + d, d, 2.0f);
  for (i = 0; i < d; ++i)
    ok &= y[d + i] == 2.0f * want[0 * 0 + i] || tokens[1] != tokens[4];
  snprintf(what, sizeof what, "%s embed_rows %s d %d g %d: the rows' decoder's bits",
           KILN_TEST_ISA_NAME, family_name(family), (int)d, (int)g);
  check(ok, what);
}

/* kiln_uk_rms_norm_rows (per group of g, as per-head norms), layer_norm_rows and
 * softmax_rows against naive doubles; bias_add_rows, add_residual_cols,
 * swiglu_cols exact or against naive silu. */
static void test_row_ops(int32_t d, int32_t g) {
  static float x[4 * 512], y[4 * 512], w[512], b[512], up[4 * 512], res[4 * 512];
  const float eps = 1e-5f;
  double worst_rms = 0, worst_ln = 0, worst_sm = 0, worst_sw = 0;
  int32_t r, i, j, exact = 1;
  char what[160];
  for (i = 0; i < 4 * d; ++i)
    x[i] = uniform() * 3.0f, up[i] = uniform(), res[i] = uniform();
  for (i = 0; i < d; ++i)
    w[i] = 0.5f + uniform(), b[i] = uniform();
  kiln_uk_rms_norm_rows(x, w, y, 1, 3, d, g, eps);
  for (r = 1; r < 3; ++r)
    for (i = 0; i < d; i += g) {
      double ss = 0;
      for (j = 0; j < g; ++j)
        ss += (double)x[r * d + i + j] * x[r * d + i + j];
      for (j = 0; j < g; ++j) {
        double want = x[r * d + i + j] / sqrt(ss / g + eps) * w[j];
        double e = fabs(y[r * d + i + j] - want) / (fabs(want) + 1e-3);
        worst_rms = e > worst_rms ? e : worst_rms;
      }
    }
  kiln_uk_layer_norm_rows(x, w, b, y, 0, 4, d, eps);
  for (r = 0; r < 4; ++r) {
    double mean = 0, var = 0;
    for (i = 0; i < d; ++i)
      mean += x[r * d + i];
    mean /= d;
    for (i = 0; i < d; ++i)
      var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
    var /= d;
    for (i = 0; i < d; ++i) {
      double norm = (x[r * d + i] - mean) / sqrt(var + eps);
      double want = norm * w[i] + b[i];
      /* float rounding of the normalized value and its two operations */
      double e = fabs(y[r * d + i] - want) / (fabs(norm * w[i]) + fabs(b[i]) + 1e-3);
      worst_ln = e > worst_ln ? e : worst_ln;
    }
  }
  kiln_uk_softmax_rows(x, y, 0, 4, d);
  for (r = 0; r < 4; ++r) {
    double mx = -1e300, sum = 0;
    for (i = 0; i < d; ++i)
      mx = x[r * d + i] > mx ? x[r * d + i] : mx;
    for (i = 0; i < d; ++i)
      sum += exp(x[r * d + i] - mx);
    for (i = 0; i < d; ++i) {
      double e = fabs(y[r * d + i] - exp(x[r * d + i] - mx) / sum);
      worst_sm = e > worst_sm ? e : worst_sm;
    }
  }
  kiln_uk_bias_add_rows(x, b, y, 1, 4, d);
  for (r = 1; r < 4; ++r)
    for (i = 0; i < d; ++i)
      exact &= y[r * d + i] == x[r * d + i] + b[i];
  memcpy(y, x, sizeof(float) * (size_t)(4 * d));
  kiln_uk_add_residual_cols(y, res, 4, d, d / 3, d);
  for (r = 0; r < 4; ++r)
    for (i = 0; i < d; ++i)
      exact &= y[r * d + i] == (i < d / 3 ? x[r * d + i] : x[r * d + i] + res[r * d + i]);
  memcpy(y, x, sizeof(float) * (size_t)(4 * d));
  kiln_uk_swiglu_cols(y, up, 4, d, 0, d / 2);
  for (r = 0; r < 4; ++r)
    for (i = 0; i < d; ++i) {
      double v = x[r * d + i], want = i < d / 2 ? v / (1.0 + exp(-v)) * up[r * d + i] : v;
      double e = fabs(y[r * d + i] - want);
      worst_sw = e > worst_sw ? e : worst_sw;
    }
  snprintf(what, sizeof what,
           "%s row ops d %d g %d vs naive: rms_norm %.2g, layer_norm %.2g, softmax %.2g, "
           "swiglu %.2g; bias and residual exact",
           KILN_TEST_ISA_NAME, (int)d, (int)g, worst_rms, worst_ln, worst_sm, worst_sw);
  check(worst_rms <= 1e-5 && worst_ln <= 1e-5 && worst_sm <= 1e-6 && worst_sw <= 1e-5 && exact,
        what);
}

/* rope_rows: heads h0..h1-1 of rows at positions pos.. against the naive
 * rotation in double with the same frequencies, and c99's bits. */
static void test_rope_rows(int32_t rd, int32_t hd, int neox, float mscale) {
  enum { HEADS = 3, ROWS = 3 };
  static float x[ROWS * HEADS * 256], y[ROWS * HEADS * 256], y_ref[ROWS * HEADS * 256];
  double freq[128], worst = 0;
  const int32_t ld = HEADS * hd, pos = 1000;
  int32_t r, h, i, same;
  char what[120];
  for (i = 0; i < rd / 2; ++i)
    freq[i] = pow(10000.0, -2.0 * i / rd);
  for (i = 0; i < ROWS * ld; ++i)
    x[i] = y[i] = y_ref[i] = uniform();
  kiln_uk_rope_rows(x, y, ld, ROWS, pos, 1, HEADS, freq, rd, hd, neox, mscale);
  ref_rope_rows(x, y_ref, ld, ROWS, pos, 1, HEADS, freq, rd, hd, neox, mscale);
  same = memcmp(y, y_ref, sizeof(float) * (size_t)(ROWS * ld)) == 0;
  for (r = 0; r < ROWS; ++r)
    for (h = 0; h < HEADS; ++h)
      for (i = 0; i < hd; ++i) {
        const float *xh = x + r * ld + h * hd;
        double want = xh[i];
        if (h >= 1 && i < rd) {
          const int32_t pair = neox ? i % (rd / 2) : i / 2;
          const int first = neox ? i < rd / 2 : i % 2 == 0;
          const int32_t partner = neox ? (first ? i + rd / 2 : i - rd / 2) : i ^ 1;
          const double a = (pos + r) * freq[pair], c = cos(a) * mscale, s = sin(a) * mscale;
          want = xh[i] * c + (first ? -s : s) * xh[partner];
        }
        worst = fabs(y[r * ld + h * hd + i] - want) > worst ? fabs(y[r * ld + h * hd + i] - want)
                                                            : worst;
      }
  snprintf(what, sizeof what, "%s rope_rows rd %d hd %d %s mscale %g: c99's bits, naive %.2g",
           KILN_TEST_ISA_NAME, (int)rd, (int)hd, neox ? "neox" : "pairs", (double)mscale, worst);
  check(same && worst <= 2e-6 * (1 + mscale), what);
}

/* The bytes of (slot, head) of a cache, as the layouts are specified
 * (kiln_uk_attention.h): written out here apart from kv_at. */
static size_t naive_at(int layout, int32_t slot, int32_t head, int32_t cap, int32_t heads,
                       size_t hb) {
  if (layout == KILN_UK_KV_POS_MAJOR)
    return ((size_t)slot * (size_t)heads + (size_t)head) * hb;
  return (size_t)head * (size_t)cap * hb + (size_t)(layout == KILN_UK_KV_TILED ? slot / 16 * 16 : slot) * hb;
}

static const char *layout_name(int layout) {
  return layout == KILN_UK_KV_POS_MAJOR ? "pos-major" : layout == KILN_UK_KV_HEAD_MAJOR ? "head-major" : "tiled";
}

/* kv_store_rows into a ring of `cap` rows (pos wraps) in each layout: every
 * (position, head) where the layout says, with the bytes of kv_store_<family>
 * (or row i of its tile); nothing else written; kv_load_at reads it back;
 * kv_rerope_rows turns rows r0..r1-1 as loading, roping and storing each
 * does. */
static void test_kv_rows(int family, int layout, int32_t hd) {
  enum { HEADS = 3, ROWS = 5, CAP = 19 };
  static uint8_t cache[CAP * HEADS * 600 + 32 * 16 * 600], expect[CAP * HEADS * 600 + 32 * 16 * 600];
  static float x[ROWS * HEADS * 128], back[128], want[128];
  const size_t hb = kiln_uk_kv_head_bytes(family, hd);
  const size_t bytes = (size_t)(layout == KILN_UK_KV_TILED ? 32 : CAP) * HEADS * hb;
  const int32_t cap = layout == KILN_UK_KV_TILED ? 32 : CAP, pos = layout == KILN_UK_KV_TILED ? 9 : 16;
  double freq[64];
  int32_t r, h, i, ok = 1, loads = 1;
  char what[140];
  for (i = 0; i < ROWS * HEADS * hd; ++i)
    x[i] = uniform();
  memset(cache, 0xa5, bytes);
  memset(expect, 0xa5, bytes);
  kiln_uk_kv_store_rows(family, layout, x, HEADS * hd, cache, 1, ROWS, 0, HEADS, pos, hd, HEADS, cap, 1);
  for (r = 1; r < ROWS; ++r)
    for (h = 0; h < HEADS; ++h) {
      const int32_t slot = (pos + r) % cap;
      uint8_t row[600];
      const float *xr = x + (size_t)(r * HEADS + h) * (size_t)hd;
      if (family == KILN_UK_F32 || family == KILN_UK_F16)
        family == KILN_UK_F32 ? kiln_uk_kv_store_f32(xr, row, hd) : kiln_uk_kv_store_f16(xr, row, hd);
      else
        ref_kv_store(family, xr, row, hd);
      if (layout == KILN_UK_KV_TILED)
        kiln_uk_kv_tile_put_q4(row, expect + naive_at(layout, slot, h, cap, HEADS, hb), slot % 16, hd);
      else
        memcpy(expect + naive_at(layout, slot, h, cap, HEADS, hb), row, hb);
      kiln_uk_kv_load_at(family, layout, cache, slot, h, cap, HEADS, back, hd);
      ref_kv_load_row(family, row, want, hd);
      loads &= memcmp(back, want, sizeof(float) * (size_t)hd) == 0;
    }
  ok = memcmp(cache, expect, bytes) == 0;
  /* kv_rerope_rows: each row loaded, turned by rope_rows, stored again. */
  for (i = 0; i < hd / 2; ++i)
    freq[i] = pow(10000.0, -2.0 * i / hd);
  memcpy(expect, cache, bytes);
  kiln_uk_kv_rerope_rows(family, layout, cache, pos + 1, pos + 3, -7, hd, HEADS, cap, freq, hd, 1);
  for (r = pos + 1; r < pos + 3; ++r)
    for (h = 0; h < HEADS; ++h) {
      kiln_uk_kv_load_at(family, layout, expect, r, h, cap, HEADS, back, hd);
      ref_rope_rows(back, back, hd, 1, -7, 0, 1, freq, hd, hd, 1, 1.0f);
      kiln_uk_kv_store_at(family, layout, back, expect, r, h, cap, HEADS, hd);
    }
  ok &= memcmp(cache, expect, bytes) == 0;
  snprintf(what, sizeof what, "%s kv_store_rows, kv_load_at, kv_rerope_rows %s %s hd %d: the layout's bytes",
           KILN_TEST_ISA_NAME, family_name(family), layout_name(layout), (int)hd);
  check(ok && loads, what);
}

/* attention_rows over a cache kv_store_rows filled, every (KV head, row)
 * unit against kiln_uk_attend (c99's, ref_attend) called with the unit's query heads
 * and its head's rows where the layout puts them: within 2e-6 (attend's own
 * tolerance against c99), or for the tiled int4 cache 2e-3 (a variant may
 * weight its values in bytes, test_attend_q4t); with a window and without. */
static volatile int32_t attention_hd = 32; /* not a constant: GCC's loop
                                              warnings on inlined tails */
static void test_attention_rows(int family, int layout, int32_t window) {
  enum { NH = 4, NKV = 2, ROWS = 3, CAP = 32 };
  const int32_t HD = attention_hd;
  const float tol = layout == KILN_UK_KV_TILED ? 2e-3f : 2e-6f;
  double worst = 0;
  static uint8_t keys[CAP * NKV * 128], values[CAP * NKV * 128];
  static float q[ROWS * NH * 32], kv[NKV * 32], y[ROWS * NH * 32], want[NH * 32];
  const size_t hb = kiln_uk_kv_head_bytes(family, HD);
  const int32_t pos = 20;
  int32_t t, i, u, ok = 1;
  char what[140];
  for (i = 0; i < ROWS * NH * HD; ++i)
    q[i] = uniform();
  for (t = 0; t < pos + ROWS; ++t) {
    for (i = 0; i < NKV * HD; ++i)
      kv[i] = uniform();
    kiln_uk_kv_store_rows(family, layout, kv, 0, keys, 0, 1, 0, NKV, t, HD, NKV, CAP, 0);
    for (i = 0; i < NKV * HD; ++i)
      kv[i] = uniform();
    kiln_uk_kv_store_rows(family, layout, kv, 0, values, 0, 1, 0, NKV, t, HD, NKV, CAP, 0);
  }
  kiln_uk_attention_rows(family, layout, q, keys, values, y, 0, ROWS * NKV, ROWS, pos, NH, NKV, HD,
                 window, CAP, 0.125f);
  for (u = 0; u < ROWS * NKV; ++u) {
    const int32_t g = u / ROWS, r = u % ROWS, p = pos + r;
    const int32_t t0 = window && p - window + 1 > 0 ? p - window + 1 : 0;
    const size_t at = (size_t)(r * NH * HD + g * (NH / NKV) * HD);
    const size_t head = naive_at(layout, 0, g, CAP, NKV, hb);
    const size_t stride = layout == KILN_UK_KV_POS_MAJOR ? NKV * hb : hb;
    ref_attend(layout == KILN_UK_KV_TILED ? KILN_UK_Q4T : family, q + at, NH / NKV, keys + head,
               values + head, stride, CAP, t0, p, HD, 0.125f, want);
    for (i = 0; i < (NH / NKV) * HD; ++i) {
      ok &= fabsf(y[at + i] - want[i]) <= tol;
      worst = fabs(y[at + i] - want[i]) > worst ? fabs(y[at + i] - want[i]) : worst;
    }
  }
  snprintf(what, sizeof what, "%s attention_rows %s %s window %d: attend per unit, %.2g",
           KILN_TEST_ISA_NAME, family_name(family), layout_name(layout), (int)window, worst);
  check(ok, what);
}

/* attention_paged over a pool of pages that kv_store_paged filled for two
 * sessions with scattered page tables, both rows in one call (a batch), each
 * unit against attention_rows over the session's own contiguous cache with
 * the same rows: equal bit for bit (the same blocks of positions), or for the
 * tiled int4 cache within 2e-3 (its chunks end at page ends: bytes weights
 * per chunk, test_attend_q4t). Then a page copied (kv_copy_page) and mapped
 * in place of the original gives the same bits. */
static void test_attention_paged(int family, int layout) {
  enum { NH = 4, NKV = 2, PAGE = 16, PAGES = 6, CAP = PAGE * PAGES, SOLO = 48 };
  const int32_t HD = attention_hd;
  const float tol = layout == KILN_UK_KV_TILED ? 2e-3f : 0.0f;
  static uint8_t keys[CAP * NKV * 128], values[CAP * NKV * 128];
  static uint8_t sk[2][SOLO * NKV * 128], sv[2][SOLO * NKV * 128];
  static float q[2 * NH * 32], kv[NKV * 32], y[2 * NH * 32], want[NH * 32], again[NH * 32];
  static const int32_t pa[3] = {3, 0, 5}, pb[2] = {1, 4}, pc[3] = {2, 0, 5};
  const int32_t *tables[2] = {pa, pb}, at[2] = {40, 21};
  const size_t hb = kiln_uk_kv_head_bytes(family, HD);
  int32_t s, t, i, ok = 1;
  double worst = 0;
  char what[140];
  memset(keys, 0, sizeof keys);
  memset(values, 0, sizeof values);
  for (i = 0; i < 2 * NH * HD; ++i)
    q[i] = uniform();
  for (s = 0; s < 2; ++s)
    for (t = 0; t <= at[s]; ++t) {
      for (i = 0; i < NKV * HD; ++i)
        kv[i] = uniform();
      kiln_uk_kv_store_paged(family, layout, kv, 0, keys, 0, 1, 0, NKV, &t, &tables[s], PAGE, HD,
                     NKV, CAP);
      kiln_uk_kv_store_rows(family, layout, kv, 0, sk[s], 0, 1, 0, NKV, t, HD, NKV, SOLO, 0);
      for (i = 0; i < NKV * HD; ++i)
        kv[i] = uniform();
      kiln_uk_kv_store_paged(family, layout, kv, 0, values, 0, 1, 0, NKV, &t, &tables[s], PAGE,
                     HD, NKV, CAP);
      kiln_uk_kv_store_rows(family, layout, kv, 0, sv[s], 0, 1, 0, NKV, t, HD, NKV, SOLO, 0);
    }
  kiln_uk_attention_paged(family, layout, q, keys, values, y, 0, 2 * NKV, 2, at, tables, PAGE, NH,
                  NKV, HD, CAP, 0.125f);
  for (s = 0; s < 2; ++s) {
    kiln_uk_attention_rows(family, layout, q + s * NH * HD, sk[s], sv[s], want, 0, NKV, 1, at[s],
                   NH, NKV, HD, 0, SOLO, 0.125f);
    for (i = 0; i < NH * HD; ++i) {
      const double d = fabs(y[s * NH * HD + i] - want[i]);
      ok &= d <= tol;
      worst = d > worst ? d : worst;
    }
  }
  kiln_uk_kv_copy_page(layout, keys, 3, 2, PAGE, NKV, CAP, hb);
  kiln_uk_kv_copy_page(layout, values, 3, 2, PAGE, NKV, CAP, hb);
  memset(keys + naive_at(layout, 3 * PAGE, 0, CAP, NKV, hb), 0xff, hb); /* the original is no longer read */
  tables[0] = pc;
  kiln_uk_attention_paged(family, layout, q, keys, values, again, 0, NKV, 1, at, tables, PAGE, NH,
                  NKV, HD, CAP, 0.125f);
  ok &= memcmp(again, y, sizeof(float) * NH * HD) == 0;
  snprintf(what, sizeof what, "%s attention_paged %s %s: a session's own cache, %.2g; a copied page",
           KILN_TEST_ISA_NAME, family_name(family), layout_name(layout), worst);
  check(ok, what);
}

/* kv_shift_heads: in each head's block, rows keep + drop.. moved down by drop
 * (rows, or a tiled head's positions), or a wrapped ring turned by drop rows;
 * the range of rows whose keys are to be turned. */
static void test_kv_shift(void) {
  enum { ROWS = 24, RB = 20, BLOCK = ROWS * RB };
  static uint8_t k[2 * BLOCK], v[2 * BLOCK], k0[2 * BLOCK], v0[2 * BLOCK];
  static uint8_t tk[32 * 40], tk0[32 * 40], tv[32 * 40];
  int32_t i, h, r0, r1, ok = 1;
  for (i = 0; i < 2 * BLOCK; ++i)
    k0[i] = byte(), v0[i] = byte();
  memcpy(k, k0, sizeof k), memcpy(v, v0, sizeof v);
  /* two heads, 20 positions: keep 3, drop 5 */
  kiln_uk_kv_shift_heads(k, v, 2, BLOCK, RB, ROWS, 0, 0, 20, 3, 5, &r0, &r1);
  for (h = 0; h < 2; ++h) {
    for (i = 0; i < 12; ++i)
      ok &= memcmp(k + h * BLOCK + (3 + i) * RB, k0 + h * BLOCK + (8 + i) * RB, RB) == 0 &&
            memcmp(v + h * BLOCK + (3 + i) * RB, v0 + h * BLOCK + (8 + i) * RB, RB) == 0;
    ok &= memcmp(k + h * BLOCK, k0 + h * BLOCK, 3 * RB) == 0;
  }
  ok &= r0 == 3 && r1 == 15;
  memcpy(k, k0, sizeof k), memcpy(v, v0, sizeof v);
  kiln_uk_kv_shift_heads(k, v, 1, BLOCK, RB, ROWS, 1, 0, 40, 2, 7, &r0, &r1); /* a wrapped ring: turned by 7 */
  for (i = 0; i < ROWS; ++i)
    ok &= memcmp(k + i * RB, k0 + ((i + 7) % ROWS) * RB, RB) == 0;
  ok &= r0 == 0 && r1 == ROWS;
  /* a tiled int4 head of hd 64 (40 bytes a position): position by position */
  for (i = 0; i < (int32_t)sizeof tk0; ++i)
    tk0[i] = byte();
  memcpy(tk, tk0, sizeof tk), memcpy(tv, tk0, sizeof tv);
  kiln_uk_kv_shift_heads(tk, tv, 1, sizeof tk, 40, 32, 0, 64, 30, 4, 9, &r0, &r1);
  for (i = 0; i < 17; ++i) {
    uint8_t a[40], b[40];
    kiln_uk_kv_tile_get_q4(tk + (size_t)((4 + i) / 16) * 16 * 40, (4 + i) % 16, a, 64);
    kiln_uk_kv_tile_get_q4(tk0 + (size_t)((13 + i) / 16) * 16 * 40, (13 + i) % 16, b, 64);
    ok &= memcmp(a, b, 40) == 0;
  }
  ok &= r0 == 4 && r1 == 21;
  check(ok, KILN_TEST_ISA_NAME " kv_shift_heads: rows moved per head, a wrapped ring turned, tiles by position");
}

/* The norm-then-quantize setups: each row as rms_norm_row, then the layout's
 * quantizer, would give it (the same bytes). */
static void test_norm_quantize(int32_t k, int32_t g) {
  static float x[3 * 512], gamma[512], t[512];
  static uint8_t s[3 * 4096 + 3 * 512 * 4 + 64 + 2048], want[4096];
  const size_t stride = kiln_uk_act_stride(KILN_UK_ACT_ROWS, k, g);
  int32_t r, i, ok = 1;
  char what[100];
  for (i = 0; i < 3 * k; ++i)
    x[i] = uniform() * 2.0f;
  for (i = 0; i < k; ++i)
    gamma[i] = 0.5f + uniform();
  kiln_uk_norm_quantize_act_rows(x, gamma, s, 3, k, g, 5, 1e-5f);
  ok &= kiln_uk_norm_scratch_row(s, 3, stride, 5) ==
        (float *)(void *)(s + ((3 * stride + 63) & ~(size_t)63) + 3 * 5 * 4);
  for (r = 0; r < 3; ++r) {
    ref_rms_norm_row(x + r * k, gamma, t, k, 1e-5f);
    ref_quantize_act(t, (float *)(void *)want, (int8_t *)(void *)(want + (k / g) * 4), k, g);
    ok &= memcmp(s + r * stride, want, stride) == 0;
  }
  snprintf(what, sizeof what, "%s norm_quantize_act_rows k %d g %d: norm, then quantize_act",
           KILN_TEST_ISA_NAME, (int)k, (int)g);
  check(ok, what);
}

/* An encoder's attention (kiln_uk_attend_bidirectional) against the naive
 * double softmax, in every column tiling of keys and features the shapes
 * give (whole and ragged tiles of the ISA's KILN_UK_ATTEND_COLS, fewer
 * queries than a block and more), with no bias, a bias per query and one row
 * for every query; keys masked with -inf in both, and in the per-query bias
 * one query with every key masked, which is NaN as softmax gives it. */
static void test_attend_bidirectional(int32_t batch, int32_t s, int32_t t, int32_t d, int32_t e,
                                      int32_t bias_rows) {
  enum { MAX_B = 2, MAX_S = 12, MAX_T = 100, MAX_D = 40 };
  static float q[MAX_B * MAX_S * MAX_D], kt[MAX_B * MAX_D * MAX_T], v[MAX_B * MAX_T * MAX_D],
      bias[MAX_B * MAX_S * MAX_T], y[MAX_B * MAX_S * MAX_D];
  static uint8_t scratch[8 * MAX_T * 4 + 64];
  const float scale = 0.125f;
  double worst = 0;
  int32_t b, i, j, c, nan_ok = 1;
  char what[160];
  for (i = 0; i < batch * s * d; ++i)
    q[i] = uniform() * 2.0f;
  for (i = 0; i < batch * d * t; ++i)
    kt[i] = uniform() * 2.0f;
  for (i = 0; i < batch * t * e; ++i)
    v[i] = uniform();
  for (i = 0; i < batch * (bias_rows ? bias_rows : 1) * t; ++i)
    bias[i] = (i * 7) % 5 == 0 ? -INFINITY : uniform();
  if (bias_rows > 1)
    for (j = 0; j < t; ++j)
      bias[2 * t + j] = -INFINITY; /* batch 0, query 2: every key masked */
  for (j = 0; j < t; ++j) /* at least one key open in every row but that one */
    for (b = 0; b < batch * (bias_rows ? bias_rows : 1); ++b)
      if (!(bias_rows > 1 && b == 2))
        bias[b * t + (b % t)] = 0.0f;
  kiln_uk_attend_bidirectional(q, kt, v, bias_rows ? bias : NULL, bias_rows, y, scratch, batch, s,
                               t, d, e, scale);
  for (b = 0; b < batch; ++b)
    for (i = 0; i < s; ++i) {
      double p[MAX_T], peak = -INFINITY, sum = 0;
      const float *br = bias + (b * bias_rows + (bias_rows == 1 ? 0 : i)) * t;
      for (j = 0; j < t; ++j) {
        double dot = 0;
        for (c = 0; c < d; ++c)
          dot += (double)q[(b * s + i) * d + c] * kt[(b * d + c) * t + j];
        p[j] = scale * dot + (bias_rows ? br[j] : 0.0);
        peak = p[j] > peak ? p[j] : peak;
      }
      for (j = 0; j < t; ++j)
        sum += p[j] = exp(p[j] - peak);
      for (c = 0; c < e; ++c) {
        double ref = 0;
        const float got = y[(b * s + i) * e + c];
        for (j = 0; j < t; ++j)
          ref += p[j] / sum * v[(b * t + j) * e + c];
        if (peak == -INFINITY) {
          nan_ok &= got != got;
          continue;
        }
        /* v's values are at most 1: the error is absolute. */
        if (!(fabs(got - ref) <= worst))
          worst = got == got ? fabs(got - ref) : INFINITY;
      }
    }
  snprintf(what, sizeof what,
           "%s attend_bidirectional batch %d s %d t %d d %d e %d bias rows %d: worst %.3g",
           KILN_TEST_ISA_NAME, (int)batch, (int)s, (int)t, (int)d, (int)e, (int)bias_rows, worst);
  check(worst <= 2e-6 && nan_ok, what);
}

int main(void) {
  static const int32_t ns[] = {1, 15, 16, 17, 40, 80, 160};
  static const int32_t float_ks[] = {1, 7, 16, 33, 64, 200};
  static const int32_t groups[][2] = {{KILN_UK_I8, 32}, {KILN_UK_I8, 64}, {KILN_UK_I8, 256},
                                      {KILN_UK_I4, 32}, {KILN_UK_I4, 64}, {KILN_UK_I4, 128}};
  size_t a, b;
  int32_t rows, hd;
  if (!(KILN_TEST_CPU_CHECK)) {
    printf("SKIP %s: this CPU lacks its instructions\n", KILN_TEST_ISA_NAME);
    return 77;
  }
#ifdef KILN_UK_NR
  check(KILN_UK_NR == KILN_TEST_PANEL_ROWS, KILN_TEST_ISA_NAME ": the ISA table's panel rows");
#else
  check(KILN_TEST_PANEL_ROWS == 0, KILN_TEST_ISA_NAME ": the ISA table's panel rows (none)");
#endif
  for (rows = 1; rows <= MAX_ROWS; ++rows)
    for (a = 0; a < sizeof ns / sizeof ns[0]; ++a) {
      int32_t n = ns[a];
      if ((rows > 9 && rows != MAX_ROWS && n != 17) || (n == 160 && rows > 2))
        continue;
      for (b = 0; b < sizeof float_ks / sizeof float_ks[0]; ++b) {
        test_matmul(KILN_UK_F32, rows, n, float_ks[b], 1);
        test_matmul(KILN_UK_F16, rows, n, float_ks[b], 1);
      }
      for (b = 0; b < sizeof groups / sizeof groups[0]; ++b) {
        int32_t g = groups[b][1];
        test_matmul(groups[b][0], rows, n, g, g);
        test_matmul(groups[b][0], rows, n, 2 * g, g);
        if (g == 32)
          test_matmul(groups[b][0], rows, n, 7 * g, g);
      }
    }
  for (a = 0; a < 4; ++a) {
    static const int32_t spans[][2] = {{0, 0}, {0, 15}, {0, 16}, {3, 40}, {0, 63}, {20, 33}};
    static const int32_t hds[] = {8, 24, 64, 96, 128};
    int family = a == 0 ? KILN_UK_F32 : a == 1 ? KILN_UK_F16 : a == 2 ? KILN_UK_I8 : KILN_UK_Q4;
    for (b = 0; b < sizeof spans / sizeof spans[0]; ++b) {
      size_t h;
      for (h = 0; h < sizeof hds / sizeof hds[0]; ++h)
        if (family != KILN_UK_Q4 || hds[h] % 32 == 0) /* q4: whole blocks of 32 */
          test_attend(family, 1 + (int32_t)(b % 4), hds[h], spans[b][0], spans[b][1], 3);
    /* A group larger than the heads attend keeps at once (it runs in parts). */
    test_attend(family, 9, 64, 3, 40, 3);
    }
    /* Spans over several of attend's chunks, from contiguous rows and not;
     * the ring test wraps inside a chunk. */
    test_attend(family, 1, 64, 0, 299, 1);
    test_attend(family, 2, 64, 5, 290, 1);
    test_attend(family, 3, 32, 130, 319, 3);
    test_attend(family, 2, 96, 17, 17, 1);
    test_attend(family, 1, 32, 0, 150, 1);
    test_attend(family, 2, 128, 3, 200, 1);
    test_attend(family, 1, 96, 0, 100, 1);
  }
  { /* the tiled int4 cache: tiles whole and not, chunks of tiles and more */
    static const int32_t spans[][2] = {{0, 0}, {0, 15}, {0, 16}, {3, 40}, {20, 33},
                                       {0, 127}, {5, 290}, {17, 319}};
    static const int32_t hds[] = {32, 64, 96, 128, 256};
    for (b = 0; b < sizeof spans / sizeof spans[0]; ++b)
      for (a = 0; a < sizeof hds / sizeof hds[0]; ++a)
        test_attend_q4t(1 + (int32_t)(b % 3) * 4, hds[a], spans[b][0], spans[b][1]);
  }
  for (hd = 1; hd <= 511; hd = hd * 2 + 1)
    test_rows(hd);
  test_rows_exact(32, 32);
  test_rows_exact(96, 32);
  test_rows_exact(512, 64);
  test_rows_exact(256, 256);
  test_tq2_0_decode();
  for (hd = 2; hd <= 256; hd += hd < 40 ? 2 : 24) {
    test_rope(hd, hd, 0);
    test_rope(hd, hd, 1);
    if (hd % 4 == 0) { /* partial rotary: the rest passes through */
      test_rope(hd / 2, hd, 0);
      test_rope(hd / 2, hd, 1);
    }
  }
  for (hd = 8; hd <= 256; hd += 8) {
    test_kv(KILN_UK_F32, hd);
    test_kv(KILN_UK_F16, hd);
    test_kv(KILN_UK_I8, hd);
    if (hd % 32 == 0)
      test_kv(KILN_UK_Q4, hd);
  }
  for (hd = 32; hd <= 256; hd += 32)
    test_kv_store_q4(hd);
#ifdef KILN_UK_NR
  test_quantize_sums(64, 32);
  test_quantize_sums(512, 64);
  test_quantize_sums(256, 256);
  test_quantize_sums(1280, 32); /* 16 groups at a time: two whole sets and 8 */
  test_quantize_sums(1152, 64);
  test_quantize_sums(1024, 16);
#endif
#ifdef KILN_UK_HAS_PANEL_B32
  test_iq4nl_codebook();
#endif
  {
    for (a = 0; a < sizeof block_formats / sizeof block_formats[0]; ++a) {
      const int fmt = block_formats[a];
      const int32_t e = kiln_uk_block_elements(fmt);
      test_blocks(fmt, 1, 17, e);
      test_blocks(fmt, 3, 16, 2 * e);
      test_blocks(fmt, MAX_ROWS, 5, e == 32 ? 7 * e : e);
      /* Several whole panels and a ragged one (decode's path), more tiles. */
      if (has_block_panels(fmt)) {
        test_blocks(fmt, 1, 80, 2 * e);
        test_blocks(fmt, 9, 70, e == 32 ? 12 * e : e);
      }
      /* Super-blocks five deep, more rows than a tile: more than one batch
       * of a panel's unpacked codes (KILN_UK_UNPACK_BLOCKS). */
      if (has_block_panels(fmt) && e == 256 && 5 * e <= MAX_K)
        test_blocks(fmt, 9, 24, 5 * e);
      /* Blocks of 32 eight at a time, then one more (the ISA dots' two loops). */
      if (e == 32)
        test_blocks(fmt, 2, 9, 9 * e);
    }
  }
  {
    static const int32_t layouts[] = {KILN_UK_KV_POS_MAJOR, KILN_UK_KV_HEAD_MAJOR};
    static const int kv_families[] = {KILN_UK_F32, KILN_UK_F16, KILN_UK_I8, KILN_UK_Q4};
    for (a = 0; a < 4; ++a)
      for (b = 0; b < 2; ++b) {
        test_kv_rows(kv_families[a], layouts[b], 64);
        test_attention_rows(kv_families[a], layouts[b], 0);
        test_attention_rows(kv_families[a], layouts[b], 7);
        test_attention_paged(kv_families[a], layouts[b]);
      }
    test_kv_rows(KILN_UK_Q4, KILN_UK_KV_TILED, 64);
    test_attention_rows(KILN_UK_Q4, KILN_UK_KV_TILED, 0);
    test_attention_paged(KILN_UK_Q4, KILN_UK_KV_TILED);
    test_kv_shift();
  }
  test_embed(KILN_UK_F32, 64, 1);
  test_embed(KILN_UK_F16, 96, 1);
  test_embed(KILN_UK_I8, 128, 32);
  test_embed(KILN_UK_I4, 128, 64);
  test_row_ops(64, 64);
  test_row_ops(96, 32);
  test_row_ops(200, 200);
  test_rope_rows(32, 32, 0, 1.0f);
  test_rope_rows(64, 64, 1, 1.0f);
  test_rope_rows(32, 64, 1, 1.1875f);
  test_norm_quantize(64, 32);
  test_norm_quantize(512, 64);
  {
    /* every count of valid lanes in a tile's last vector, for vectors of 4 and 8 */
    static const int32_t keys[] = {1, 2, 3, 5, 6, 7, 14, 15, 16, 17, 23, 31, 32, 33, 48, 49, 97, 100};
    size_t a;
    for (a = 0; a < sizeof keys / sizeof keys[0]; ++a) {
      test_attend_bidirectional(2, 9, keys[a], 8, 8, 0);
      test_attend_bidirectional(2, 12, keys[a], 40, 40, 12);
      test_attend_bidirectional(2, 7, keys[a], 32, 33, 1);
      test_attend_bidirectional(1, 1, keys[a], 16, 17, 1);
      test_attend_bidirectional(1, 5, keys[a], 16, 22, 0);
    }
  }
#ifdef KILN_UK_NR
  { /* more than 32 groups, which the panel tiles take 16 at a time */
    static const int32_t rows_of[] = {1, 9};
    for (a = 0; a < 2; ++a) {
      test_matmul(KILN_UK_I8, rows_of[a], 17, 37 * 32, 32);
      test_matmul(KILN_UK_I4, rows_of[a], 17, 37 * 32, 32);
    }
    for (a = 0; a < sizeof block_formats / sizeof block_formats[0]; ++a)
      if (kiln_uk_block_elements(block_formats[a]) == 32)
        test_blocks(block_formats[a], 9, 33, 37 * 32);
  }
#endif
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
