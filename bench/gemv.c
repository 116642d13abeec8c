/* One decode GEMV stream, alone: the panel kernels a decode step calls for its
 * matmuls (one activation row, or a batch of `rows` decodes, against n x k weights in the target's panel
 * layout) over `matrices` such matrices, more than the caches hold, against a
 * plain read of the same bytes in the same pass. Decode is bound by that read:
 * the ratio says how much of the read bandwidth the kernel keeps.
 *
 *   cc -O3 -march=native -pthread -I. -Iruntime/include bench/gemv.c -o gemv -lm
 *   ./gemv q4_0 [n=5632] [k=2048] [matrices=48] [passes=9] [threads=1] [rows=1] [mr]
 *
 * q4_0, q8_0, f16, or a GGUF block format the panels read (q4_1, q5_0, q5_1,
 * iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k; k a multiple of its block).
 *
 * Prints the median pass of each in GB/s and the median of the per-pass
 * ratios (kernel time over read time: 1.0 is the read's speed). With threads,
 * each matrix is split as --threads splits it (whole panels; the read: the
 * same bytes) with a barrier after it, as a schedule's shares run. The kernels
 * come from the best panel library the compiler flags allow (AVX-512, AVX2),
 * or from -DKILN_BENCH_HEADER='"kernels/..."'. mr is the register tile's rows (default
 * the kernels' largest, KILN_UK_MR_MAX), as tile-for-cache would pin it. */
#define _DEFAULT_SOURCE /* madvise is not in strict POSIX on glibc */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_common.h"
#ifndef KILN_BENCH_HEADER
#error "bench/gemv.c needs a panel kernel library: build with -march=native on x86, or set KILN_BENCH_HEADER"
#endif
#include KILN_BENCH_HEADER
#include "kernels/c99/kiln_uk_matmul_panels.h"
#include "bench/bench_formats.h"

#define GROUP 32
#define MAX_THREADS 8

static int32_t tile_rows = KILN_UK_MR_MAX;

/* Panels p0..p1 of the decode matmul with the family a constant, as
 * generated code calls it. */
static void gemv(int family, const uint8_t *w, const float *x, const void *scratch, float *y,
                 int32_t rows, int32_t n, int32_t k, int32_t p0, int32_t p1) {
#define GEMV_INT(f, g) kiln_uk_matmul_panel_int(f, w, y, scratch, rows, n, k, g, tile_rows, k, p0, p1)
  switch (family) {
  case KILN_UK_I4: GEMV_INT(KILN_UK_I4, GROUP); break;
  case KILN_UK_I8: GEMV_INT(KILN_UK_I8, GROUP); break;
  case KILN_UK_Q4_1: GEMV_INT(KILN_UK_Q4_1, 32); break;
  case KILN_UK_Q5_0: GEMV_INT(KILN_UK_Q5_0, 32); break;
  case KILN_UK_Q5_1: GEMV_INT(KILN_UK_Q5_1, 32); break;
  case KILN_UK_IQ4_NL: GEMV_INT(KILN_UK_IQ4_NL, 32); break;
  case KILN_UK_Q2_K: GEMV_INT(KILN_UK_Q2_K, 256); break;
  case KILN_UK_Q3_K: GEMV_INT(KILN_UK_Q3_K, 256); break;
  case KILN_UK_Q4_K: GEMV_INT(KILN_UK_Q4_K, 256); break;
  case KILN_UK_Q5_K: GEMV_INT(KILN_UK_Q5_K, 256); break;
  case KILN_UK_Q6_K: GEMV_INT(KILN_UK_Q6_K, 256); break;
  default: kiln_uk_matmul_panel_float(KILN_UK_F16, x, w, y, rows, n, k, tile_rows, k, p0, p1);
  }
#undef GEMV_INT
}

/* One pass of `threads` workers over every matrix: the kernel or the read. */
typedef struct gemv_pass {
  int family, read, threads;
  int32_t rows, n, k, matrices;
  size_t bytes;
  const uint8_t *w;
  const float *x;
  const void *scratch;
  float *y;
  int arrived, sense;
  uint64_t sink[MAX_THREADS];
} gemv_pass;

typedef struct worker {
  gemv_pass *p;
  int t;
} worker;

/* Spins until every worker has arrived (a schedule's barrier between kernels). */
static void barrier(gemv_pass *p, int *sense) {
  *sense = !*sense;
  if (__atomic_add_fetch(&p->arrived, 1, __ATOMIC_SEQ_CST) == p->threads) {
    __atomic_store_n(&p->arrived, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&p->sense, *sense, __ATOMIC_SEQ_CST);
  } else {
    while (__atomic_load_n(&p->sense, __ATOMIC_SEQ_CST) != *sense)
      ;
  }
}

static void *run_share(void *arg) {
  const worker *wk = (const worker *)arg;
  gemv_pass *p = wk->p;
  const int32_t panels = (p->n + KILN_UK_NR - 1) / KILN_UK_NR;
  const int32_t p0 = panels * wk->t / p->threads, p1 = panels * (wk->t + 1) / p->threads;
  const size_t b0 = p->bytes * (size_t)wk->t / (size_t)p->threads & ~(size_t)63;
  const size_t b1 = p->bytes * (size_t)(wk->t + 1) / (size_t)p->threads & ~(size_t)63;
  int sense = 0;
  int32_t m;
  for (m = 0; m < p->matrices; ++m) {
    const uint8_t *w = p->w + p->bytes * (size_t)m;
    if (p->read)
      p->sink[wk->t] ^= read_all(w + b0, b1 - b0);
    else
      gemv(p->family, w, p->x, p->scratch, p->y, p->rows, p->n, p->k, p0, p1);
    if (p->threads > 1)
      barrier(p, &sense);
  }
  return NULL;
}

/* Seconds of one pass, the caller being worker 0. */
static double run_pass(gemv_pass *p) {
  pthread_t helpers[MAX_THREADS];
  worker wk[MAX_THREADS];
  double t0;
  int t;
  p->arrived = p->sense = 0;
  for (t = 0; t < p->threads; ++t) {
    wk[t].p = p;
    wk[t].t = t;
  }
  t0 = now();
  for (t = 1; t < p->threads; ++t)
    if (pthread_create(&helpers[t], NULL, run_share, &wk[t]) != 0) {
      fprintf(stderr, "gemv: cannot start a thread\n");
      exit(1);
    }
  run_share(&wk[0]);
  for (t = 1; t < p->threads; ++t)
    pthread_join(helpers[t], NULL);
  return now() - t0;
}

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "q4_0";
  const int family = family_of(name);
  const int32_t g = family == KILN_UK_F16                                  ? 1
                    : family >= 0 && kiln_uk_is_block_family(family) ? kiln_uk_block_elements(family)
                                                                     : GROUP;
  const int32_t n = argc > 2 ? atoi(argv[2]) : 5632, k = argc > 3 ? atoi(argv[3]) : 2048;
  const int matrices = argc > 4 ? atoi(argv[4]) : 48, passes = argc > 5 ? atoi(argv[5]) : 9;
  const int threads = argc > 6 ? atoi(argv[6]) : 1;
  const int32_t act_rows = argc > 7 ? atoi(argv[7]) : 1;
  tile_rows = argc > 8 ? atoi(argv[8]) : KILN_UK_MR_MAX;
  size_t bytes, total;
  uint8_t *rows, *w, *scratch;
  float *x, *y, check = 0.0f;
  double *kernel, *sweep, *ratio;
  uint64_t sink = 0;
  gemv_pass p;
  int32_t i, r, m;
  if (family < 0 || n < 1 || k < g || k % (g < GROUP ? GROUP : g) != 0 || matrices < 1 ||
      passes < 1 || threads < 1 || threads > MAX_THREADS || act_rows < 1 || act_rows > 64 ||
      tile_rows < 1 || tile_rows > KILN_UK_MR_MAX) {
    fprintf(stderr,
            "usage: %s q4_0|q8_0|f16|<block format> [n] [k, a multiple of %d or of the block] "
            "[matrices] [passes] [threads, 1..%d] [rows, 1..64] [mr, 1..%d]\n",
            argv[0], GROUP, MAX_THREADS, KILN_UK_MR_MAX);
    return 2;
  }
  bytes = kiln_uk_panel_bytes(family, n, k, g, KILN_UK_NR);
  total = bytes * (size_t)matrices;
  rows = malloc(bytes);
  w = large(total);
  scratch = malloc(kiln_uk_panel_family_stride(family, k, g) * (size_t)act_rows);
  x = malloc(sizeof(float) * (size_t)k * (size_t)act_rows);
  y = malloc(sizeof(float) * (size_t)n * (size_t)act_rows);
  kernel = malloc(sizeof(double) * (size_t)passes);
  sweep = malloc(sizeof(double) * (size_t)passes);
  ratio = malloc(sizeof(double) * (size_t)passes);
  if (!rows || !w || !scratch || !x || !y || !kernel || !sweep || !ratio) {
    fprintf(stderr, "%s: out of memory\n", argv[0]);
    return 1;
  }
  fill_rows(family, rows, n, k, g);
  kiln_uk_pack_panels(family, rows, w, n, k, g, KILN_UK_NR);
  for (m = 1; m < matrices; ++m)
    memcpy(w + bytes * (size_t)m, w, bytes);
  for (i = 0; i < k * act_rows; ++i)
    x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  if (kiln_uk_is_block_family(family))
    for (r = 0; r < act_rows; ++r)
      kiln_uk_blocks_quantize_row(x + (size_t)r * (size_t)k,
                          scratch + (size_t)r * kiln_uk_panel_family_stride(family, k, g), k, g);
  else if (family != KILN_UK_F16)
    kiln_uk_panel_quantize_rows(x, scratch, act_rows, k, GROUP);
  memset(&p, 0, sizeof p);
  p.family = family;
  p.threads = threads;
  p.rows = act_rows;
  p.n = n;
  p.k = k;
  p.matrices = matrices;
  p.bytes = bytes;
  p.w = w;
  p.x = x;
  p.scratch = scratch;
  p.y = y;
  for (r = 0; r < passes; ++r) {
    p.read = 0;
    kernel[r] = run_pass(&p);
    check += y[r % n];
    p.read = 1;
    sweep[r] = run_pass(&p);
    ratio[r] = sweep[r] / kernel[r];
  }
  for (i = 0; i < threads; ++i)
    sink ^= p.sink[i];
  qsort(kernel, (size_t)passes, sizeof(double), by_value);
  qsort(sweep, (size_t)passes, sizeof(double), by_value);
  qsort(ratio, (size_t)passes, sizeof(double), by_value);
  printf("%s %s: %d x %d, %d matrices (%.0f MB), %d thread%s, %d row%s: kernel %.2f GB/s, read %.2f "
         "GB/s, kernel/read %.3f (medians of %d passes; check %g %llu)\n",
         KILN_BENCH_HEADER, name, (int)n, (int)k, matrices, (double)total * 1e-6, threads,
         threads > 1 ? "s" : "", (int)act_rows, act_rows > 1 ? "s" : "",
         (double)total / kernel[passes / 2] * 1e-9,
         (double)total / sweep[passes / 2] * 1e-9, ratio[passes / 2], passes, (double)check,
         (unsigned long long)(sink & 1));
  return 0;
}
