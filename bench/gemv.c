/* One decode GEMV stream, alone: the panel kernels a decode step calls for its
 * matmuls (one activation row against n x k weights in the target's panel
 * layout) over `matrices` such matrices, more than the caches hold, against a
 * plain read of the same bytes in the same pass. Decode is bound by that read:
 * the ratio says how much of the read bandwidth the kernel keeps.
 *
 *   cc -O3 -march=native -I. -Iruntime/include bench/gemv.c -o gemv -lm
 *   ./gemv q4_0 [n=5632] [k=2048] [matrices=48] [passes=9]
 *
 * Prints the median pass of each in GB/s and the median of the per-pass
 * ratios (kernel time over read time: 1.0 is the read's speed). The kernels
 * come from the best panel library the compiler flags allow (AVX-512, AVX2),
 * or from -DKILN_BENCH_HEADER='"codegen_targets/..."'. */
#define _DEFAULT_SOURCE /* madvise is not in strict POSIX on glibc */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_common.h"
#ifndef KILN_BENCH_HEADER
#error "bench/gemv.c needs a panel kernel library: build with -march=native on x86, or set KILN_BENCH_HEADER"
#endif
#include KILN_BENCH_HEADER
#include "codegen_targets/c99/kiln_uk_panels.h"

#define GROUP 32

/* One matrix in the row layout: f16 values, or groups of an f16 scale then
 * int8 values or int4 nibble pairs, all random. */
static void fill_rows(int family, uint8_t *w, int32_t n, int32_t k) {
  const size_t rb = kiln_uk_row_bytes(family, k, GROUP);
  size_t i, at;
  for (i = 0; i < rb * (size_t)n; ++i)
    w[i] = (uint8_t)rand();
  if (family == KILN_UK_F16) {
    for (i = 0; i < (size_t)n * (size_t)k; ++i) {
      const uint16_t h = kiln_f32_to_f16((float)rand() / (float)RAND_MAX - 0.5f);
      memcpy(w + 2 * i, &h, sizeof h);
    }
    return;
  }
  for (at = 0; at < rb * (size_t)n; at += rb / (size_t)(k / GROUP)) {
    const uint16_t h = kiln_f32_to_f16(0.01f);
    memcpy(w + at, &h, sizeof h);
  }
}

/* The decode matmul with the family a constant, as generated code calls it. */
static void gemv(int family, const uint8_t *w, const float *x, const void *scratch, float *y,
                 int32_t n, int32_t k) {
  const int32_t panels = (n + KILN_UK_NR - 1) / KILN_UK_NR;
  if (family == KILN_UK_I4)
    matmul_panel_int(KILN_UK_I4, w, y, scratch, 1, n, k, GROUP, KILN_UK_MR_MAX, k, 0, panels);
  else if (family == KILN_UK_I8)
    matmul_panel_int(KILN_UK_I8, w, y, scratch, 1, n, k, GROUP, KILN_UK_MR_MAX, k, 0, panels);
  else
    matmul_panel_float(KILN_UK_F16, x, w, y, 1, n, k, KILN_UK_MR_MAX, k, 0, panels);
}

/* The plain read: 64-bit sums in four chains, which the compiler vectorizes. */
static uint64_t read_all(const uint8_t *p, size_t bytes) {
  const uint64_t *v = (const uint64_t *)(const void *)p;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i;
  for (i = 0; i + 4 <= bytes / 8; i += 4) {
    a += v[i];
    b += v[i + 1];
    c += v[i + 2];
    d += v[i + 3];
  }
  return a ^ b ^ c ^ d;
}

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "q4_0";
  const int family = strcmp(name, "q4_0") == 0   ? KILN_UK_I4
                     : strcmp(name, "q8_0") == 0 ? KILN_UK_I8
                     : strcmp(name, "f16") == 0  ? KILN_UK_F16
                                                 : -1;
  const int32_t n = argc > 2 ? atoi(argv[2]) : 5632, k = argc > 3 ? atoi(argv[3]) : 2048;
  const int matrices = argc > 4 ? atoi(argv[4]) : 48, passes = argc > 5 ? atoi(argv[5]) : 9;
  size_t bytes, total;
  uint8_t *rows, *w, *scratch;
  float *x, *y, check = 0.0f;
  double *kernel, *sweep, *ratio;
  volatile uint64_t sink = 0;
  int32_t i, pass, m;
  if (family < 0 || n < 1 || k < GROUP || k % GROUP != 0 || matrices < 1 || passes < 1) {
    fprintf(stderr, "usage: %s q4_0|q8_0|f16 [n] [k, a multiple of %d] [matrices] [passes]\n",
            argv[0], GROUP);
    return 2;
  }
  bytes = kiln_uk_panel_bytes(family, n, k, family == KILN_UK_F16 ? 1 : GROUP, KILN_UK_NR);
  total = bytes * (size_t)matrices;
  rows = malloc(bytes);
  w = large(total);
  scratch = malloc(panel_act_stride(k, GROUP));
  x = malloc(sizeof(float) * (size_t)k);
  y = malloc(sizeof(float) * (size_t)n);
  kernel = malloc(sizeof(double) * (size_t)passes);
  sweep = malloc(sizeof(double) * (size_t)passes);
  ratio = malloc(sizeof(double) * (size_t)passes);
  if (!rows || !w || !scratch || !x || !y || !kernel || !sweep || !ratio) {
    fprintf(stderr, "%s: out of memory\n", argv[0]);
    return 1;
  }
  fill_rows(family, rows, n, k);
  kiln_uk_pack_panels(family, rows, w, n, k, family == KILN_UK_F16 ? 1 : GROUP, KILN_UK_NR);
  for (m = 1; m < matrices; ++m)
    memcpy(w + bytes * (size_t)m, w, bytes);
  for (i = 0; i < k; ++i)
    x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  if (family != KILN_UK_F16)
    panel_quantize_rows(x, scratch, 1, k, GROUP);
  for (pass = 0; pass < passes; ++pass) {
    double t0 = now(), t1;
    for (m = 0; m < matrices; ++m)
      gemv(family, w + bytes * (size_t)m, x, scratch, y, n, k);
    t1 = now();
    check += y[pass % n];
    sink ^= read_all(w, total);
    kernel[pass] = t1 - t0;
    sweep[pass] = now() - t1;
    ratio[pass] = sweep[pass] / kernel[pass];
  }
  qsort(kernel, (size_t)passes, sizeof(double), by_value);
  qsort(sweep, (size_t)passes, sizeof(double), by_value);
  qsort(ratio, (size_t)passes, sizeof(double), by_value);
  printf("%s %s: %d x %d, %d matrices (%.0f MB): kernel %.2f GB/s, read %.2f GB/s, "
         "kernel/read %.3f (medians of %d passes; check %g %llu)\n",
         KILN_BENCH_HEADER, name, (int)n, (int)k, matrices, (double)total * 1e-6,
         (double)total / kernel[passes / 2] * 1e-9, (double)total / sweep[passes / 2] * 1e-9,
         ratio[passes / 2], passes, (double)check, (unsigned long long)(sink & 1));
  return 0;
}
