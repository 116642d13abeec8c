/* One decode step's attention over a long KV cache, alone: kiln_uk_attend (the
 * micro-kernel the generated attention calls per KV head) over `heads` cache
 * heads of `positions` rows each, head-major as kiln-compile lays them out, one
 * query head per cache head (an MHA model such as the M shape: 12 layers x 12
 * heads = 144). Caches are flushed before every timed pass (a 1 GiB sweep), as
 * a decode step finds them after streaming the weights.
 *
 *   cc -O3 -march=native -I. -Iruntime/include bench/attend.c -o attend -lm
 *   ./attend q4 [heads=144] [positions=2048] [passes=15] [warm|flushed] [capacity]
 *
 * Prints the median pass: ns per (head, key) and the cache bytes read per
 * second; then a plain read of the same bytes in the same order (per head its
 * keys, then its values), flushed the same way, and the median per-pass ratio
 * of the two: attention is bound by that read. `capacity` (at least
 * `positions`) is the rows a head holds, as kiln-compile sizes them for the
 * maximum context: each head's rows past `positions` are a gap the streams
 * jump at the next head. `warm` leaves the caches as
 * the last pass left them. The kernels
 * come from the best library the compiler flags allow (AVX-512, AVX2, else
 * c99), or from -DKILN_BENCH_HEADER='"kernels/..."'. */
#define _DEFAULT_SOURCE /* madvise is not in strict POSIX on glibc */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_common.h"
#ifndef KILN_BENCH_HEADER
#define KILN_BENCH_HEADER "kernels/c99/kiln_uk_c99.h"
#endif
#include KILN_BENCH_HEADER
/* What the ISA library leaves out (on AVX2, attend itself), as the generated
 * kernels include it. */
#include "kernels/c99/kiln_uk_c99.h"

#define HD 64
#define SWEEP_BYTES ((size_t)1 << 30)

static float uniform(void) { return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f; }

/* Position p of a head at `head` (rows of row_bytes; q4t: in tiles of 16). */
static void store(int family, const float *x, uint8_t *head, int32_t p, size_t row_bytes) {
  uint8_t *row = head + (size_t)p * row_bytes;
  int32_t i;
  if (family == KILN_UK_Q4T) {
    kiln_uk_kv_store_q4t(x, head + (size_t)(p / 16) * 16u * row_bytes, p % 16, HD);
  } else if (family == KILN_UK_Q4) {
    kiln_uk_kv_store_q4(x, row, HD);
  } else if (family == KILN_UK_I8) {
    kiln_uk_kv_store_i8(x, row, HD);
  } else if (family == KILN_UK_F32) {
    memcpy(row, x, sizeof(float) * HD);
  } else {
    for (i = 0; i < HD; ++i) {
      const uint16_t h = kiln_f32_to_f16(x[i]);
      memcpy(row + 2 * i, &h, sizeof h);
    }
  }
}

/* attend with the family a constant, as generated code calls it. */
/* Rows a head holds for n positions: tiled caches hold whole tiles of 16. */
static size_t head_rows(int family, int32_t n) {
  return (size_t)(family == KILN_UK_Q4T ? (n + 15) & ~15 : n);
}

static void attend_head(int family, const float *q, const uint8_t *keys, const uint8_t *values,
                        size_t stride, int32_t positions, float *y) {
  if (family == KILN_UK_Q4T)
    kiln_uk_attend(KILN_UK_Q4T, q, 1, keys, values, stride, positions, NULL, 0, 0, positions - 1, HD, 0.125f, y);
  else if (family == KILN_UK_Q4)
    kiln_uk_attend(KILN_UK_Q4, q, 1, keys, values, stride, positions, NULL, 0, 0, positions - 1, HD, 0.125f, y);
  else if (family == KILN_UK_I8)
    kiln_uk_attend(KILN_UK_I8, q, 1, keys, values, stride, positions, NULL, 0, 0, positions - 1, HD, 0.125f, y);
  else if (family == KILN_UK_F32)
    kiln_uk_attend(KILN_UK_F32, q, 1, keys, values, stride, positions, NULL, 0, 0, positions - 1, HD, 0.125f, y);
  else
    kiln_uk_attend(KILN_UK_F16, q, 1, keys, values, stride, positions, NULL, 0, 0, positions - 1, HD, 0.125f, y);
}

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "q4";
  const int family = strcmp(name, "q4t") == 0  ? KILN_UK_Q4T
                     : strcmp(name, "q4") == 0 ? KILN_UK_Q4
                     : strcmp(name, "q8") == 0 ? KILN_UK_I8
                     : strcmp(name, "f16") == 0 ? KILN_UK_F16
                     : strcmp(name, "f32") == 0 ? KILN_UK_F32
                                                : -1;
  const int32_t heads = argc > 2 ? atoi(argv[2]) : 144, positions = argc > 3 ? atoi(argv[3]) : 2048;
  const int passes = argc > 4 ? atoi(argv[4]) : 15, warm = argc > 5 && strcmp(argv[5], "warm") == 0;
  const int32_t capacity = argc > 6 ? atoi(argv[6]) : positions;
  size_t head_bytes, per_head, head_stride;
  uint8_t *keys, *values, *sweep = NULL;
  float *q, *y, x[HD], check = 0.0f;
  double *seconds, *reads, *ratio, median;
  volatile uint64_t sink = 0;
  int32_t h, p, i;
  int pass;
  if (family < 0 || heads < 1 || positions < 1 || passes < 1 || capacity < positions) {
    fprintf(stderr,
            "usage: %s q4|q4t|q8|f16|f32 [heads] [positions] [passes] [warm|flushed] "
            "[capacity >= positions]\n",
            argv[0]);
    return 2;
  }
  head_bytes = family == KILN_UK_Q4 || family == KILN_UK_Q4T ? HD / 32 * 20
               : family == KILN_UK_I8                       ? 2 + HD
               : family == KILN_UK_F32                      ? 4 * HD
                                                            : 2 * HD;
  per_head = head_bytes * head_rows(family, positions);
  head_stride = head_bytes * head_rows(family, capacity);
  keys = large(head_stride * (size_t)heads);
  values = large(head_stride * (size_t)heads);
  q = malloc(sizeof(float) * HD * (size_t)heads);
  y = malloc(sizeof(float) * HD * (size_t)heads);
  seconds = malloc(sizeof(double) * (size_t)passes);
  reads = malloc(sizeof(double) * (size_t)passes);
  ratio = malloc(sizeof(double) * (size_t)passes);
  if (!warm)
    sweep = malloc(SWEEP_BYTES);
  if (!keys || !values || !q || !y || !seconds || !reads || !ratio || (!warm && !sweep)) {
    fprintf(stderr, "%s: out of memory\n", argv[0]);
    return 1;
  }
  if (sweep)
    memset(sweep, 1, SWEEP_BYTES);
  srand(1);
  for (h = 0; h < heads; ++h)
    for (p = 0; p < positions; ++p) {
      for (i = 0; i < HD; ++i)
        x[i] = 2.0f * uniform();
      store(family, x, keys + (size_t)h * head_stride, p, head_bytes);
      for (i = 0; i < HD; ++i)
        x[i] = 2.0f * uniform();
      store(family, x, values + (size_t)h * head_stride, p, head_bytes);
    }
  for (i = 0; i < HD * heads; ++i)
    q[i] = uniform();
  for (pass = 0; pass < passes; ++pass) {
    double t;
    size_t b;
    for (b = 0; sweep && b < SWEEP_BYTES; b += 64)
      sink += sweep[b];
    t = now();
    for (h = 0; h < heads; ++h)
      attend_head(family, q + (size_t)h * HD, keys + (size_t)h * head_stride,
                  values + (size_t)h * head_stride, head_bytes, positions, y + (size_t)h * HD);
    seconds[pass] = now() - t;
    for (b = 0; sweep && b < SWEEP_BYTES; b += 64)
      sink += sweep[b];
    t = now();
    for (h = 0; h < heads; ++h)
      sink += read_all(keys + (size_t)h * head_stride, per_head) ^
              read_all(values + (size_t)h * head_stride, per_head);
    reads[pass] = now() - t;
    ratio[pass] = seconds[pass] / reads[pass];
  }
  for (i = 0; i < HD * heads; ++i)
    check += y[i];
  qsort(seconds, (size_t)passes, sizeof(double), by_value);
  qsort(reads, (size_t)passes, sizeof(double), by_value);
  qsort(ratio, (size_t)passes, sizeof(double), by_value);
  median = seconds[passes / 2];
  printf("%s %s cache, %d heads x %d positions of %d, hd %d, %s: %.3f ms a pass, %.2f ns per "
         "(head, key), %.1f GB/s; read %.1f GB/s, attend/read %.2f (check %.6f)\n",
         KILN_BENCH_HEADER, name, (int)heads, (int)positions, (int)capacity, HD,
         warm ? "warm" : "flushed",
         median * 1e3, median * 1e9 / ((double)heads * positions),
         2.0 * (double)per_head * heads / median * 1e-9,
         2.0 * (double)per_head * heads / reads[passes / 2] * 1e-9, ratio[passes / 2],
         (double)check);
  return 0;
}
