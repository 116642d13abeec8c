/* Machine probes for bench/shapes.py: what the cores of this host can do at best.
 *
 *   cc -O2 -march=native -pthread bench/probes.c -o probes && ./probes [bandwidth [N] | peaks [N]]
 *
 * Prints one JSON line (with `bandwidth`, the read bandwidth only, so that
 * shapes.py can probe it again between its rounds of runs; with N, of N threads):
 *   bandwidth_gbs  single-core read bandwidth, summing a 1 GiB buffer (best pass)
 *   cache_gbs      the same over an 8 MiB buffer (cache_bytes) that stays in cache
 *   fma_gflops     FP32 fused multiply-add peak, 2 flops per lane per FMA
 *   int8_gops      int8 dot-product peak, 2 ops per int8 multiply-add
 * and which instructions each peak used. The peaks are one core's. With
 * `peaks [N]`, only the two peaks, of N threads running at the same time
 * (summed), as encoders.py probes them beside each timed run. */
#define _POSIX_C_SOURCE 200809L

#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- (a) read bandwidth ----------------------------------------------------- */

#define BW_BYTES ((size_t)1 << 30)
#define BW_PASSES 5
/* A buffer that stays in this core's caches (L2 or a slice of L3), read again
 * and again: the bandwidth a model that small sees. */
#define CACHE_BYTES ((size_t)8 << 20)
#define CACHE_PASSES 64

static uint64_t sum_buffer(const uint8_t *buf, size_t bytes) {
  size_t i;
#if defined(__AVX512F__)
  /* Four independent accumulators so the adds never limit the loads. */
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (i = 0; i < bytes; i += 256) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512((const void *)(buf + i)));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512((const void *)(buf + i + 64)));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512((const void *)(buf + i + 128)));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512((const void *)(buf + i + 192)));
  }
  return (uint64_t)_mm512_reduce_add_epi64(
      _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
#elif defined(__AVX2__)
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  uint64_t lanes[4];
  for (i = 0; i < bytes; i += 128) {
    a0 = _mm256_add_epi64(a0, _mm256_load_si256((const __m256i *)(buf + i)));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256((const __m256i *)(buf + i + 32)));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256((const __m256i *)(buf + i + 64)));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256((const __m256i *)(buf + i + 96)));
  }
  a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  _mm256_storeu_si256((__m256i *)lanes, a0);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
#else
  const uint64_t *w = (const uint64_t *)(const void *)buf;
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (i = 0; i < bytes / 8; i += 4) {
    s0 += w[i];
    s1 += w[i + 1];
    s2 += w[i + 2];
    s3 += w[i + 3];
  }
  return s0 + s1 + s2 + s3;
#endif
}

/* One thread's part of a bandwidth pass: the sum of its slice, between two
 * barriers so every thread reads at once and the pass's time is the slowest
 * slice's. */
typedef struct bw_slice {
  uint8_t *buf;
  size_t bytes;
  int passes;
  pthread_barrier_t *barrier;
  uint64_t check;
} bw_slice;

static void *bw_worker(void *arg) {
  bw_slice *s = arg;
  size_t i;
  int pass;
  /* Every page written first, by the thread that reads it, so the passes read
   * memory, not fault in zero pages. */
  for (i = 0; i < s->bytes; ++i)
    s->buf[i] = (uint8_t)(i * 131u + 7u);
  for (pass = 0; pass < s->passes; ++pass) {
    pthread_barrier_wait(s->barrier);
    s->check += sum_buffer(s->buf, s->bytes);
    pthread_barrier_wait(s->barrier);
  }
  return NULL;
}

#define MAX_THREADS 64

/* Best read bandwidth of `threads` threads over `passes` sums of a `bytes`
 * buffer cut into one slice each, GB/s; 0 if the threads cannot be had. */
static double probe_bandwidth(size_t bytes, int passes, int threads, uint64_t *check) {
  pthread_t tid[MAX_THREADS];
  bw_slice slice[MAX_THREADS];
  pthread_barrier_t barrier;
  const size_t part = bytes / (size_t)threads / 256 * 256;
  void *mem = NULL;
  double best = 0.0;
  int t, pass, started = 0;
  if (threads < 1 || threads > MAX_THREADS || posix_memalign(&mem, 4096, part * threads) != 0)
    return 0.0;
  pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1u);
  for (t = 0; t < threads; ++t) {
    slice[t] = (bw_slice){(uint8_t *)mem + part * (size_t)t, part, passes, &barrier, 0};
    if (pthread_create(&tid[t], NULL, bw_worker, &slice[t]) != 0)
      break;
    ++started;
  }
  if (started < threads) { /* nobody waits at the barrier: it is never reached */
    fprintf(stderr, "probes: could not start %d threads\n", threads);
    exit(1);
  }
  for (pass = 0; pass < passes; ++pass) {
    double t0, dt;
    pthread_barrier_wait(&barrier);
    t0 = now();
    pthread_barrier_wait(&barrier);
    dt = now() - t0;
    if ((double)(part * (size_t)threads) / dt > best)
      best = (double)(part * (size_t)threads) / dt;
  }
  for (t = 0; t < threads; ++t) {
    pthread_join(tid[t], NULL);
    *check += slice[t].check;
  }
  pthread_barrier_destroy(&barrier);
  free(mem);
  return best * 1e-9;
}

/* ---- chains ------------------------------------------------------------------ */

/* Twelve independent accumulator chains: FMA and vpdpbusd have a latency of 4-5
 * cycles on two ports, so about ten must be in flight; twelve plus the two operands
 * still fit AVX2's sixteen registers. The chains are written out as separate
 * variables because GCC keeps a rolled loop's accumulator array in memory. */
#define CHAINS 12
#define REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define ITERS 100000000L

/* An empty asm that claims to change v: the compiler must assume a new value at
 * every use, so it can neither hoist nor share the work that reads v. */
#if defined(__AVX512F__)
#define OPAQUE(v) __asm__ volatile("" : "+v"(v))
#elif defined(__AVX2__)
#define OPAQUE(v) __asm__ volatile("" : "+x"(v))
#else
#define OPAQUE(v) __asm__ volatile("" : "+r"(v))
#endif

/* ---- (b) FP32 FMA peak ------------------------------------------------------ */

#if defined(__AVX512F__)
typedef __m512 vfloat;
#define FMA_ISA "vfmadd zmm (AVX-512F)"
#define FMA_LANES 16
#define VF_SET1 _mm512_set1_ps
#define VF_FMA _mm512_fmadd_ps
#define VF_ADD _mm512_add_ps
#define VF_STORE _mm512_storeu_ps
#elif defined(__AVX2__) && defined(__FMA__)
typedef __m256 vfloat;
#define FMA_ISA "vfmadd ymm (AVX2/FMA)"
#define FMA_LANES 8
#define VF_SET1 _mm256_set1_ps
#define VF_FMA _mm256_fmadd_ps
#define VF_ADD _mm256_add_ps
#define VF_STORE _mm256_storeu_ps
#else
typedef float vfloat;
#define FMA_ISA "scalar mul+add"
#define FMA_LANES 1
#define VF_SET1(x) (x)
#define VF_FMA(x, y, z) ((x) * (y) + (z))
#define VF_ADD(x, y) ((x) + (y))
#define VF_STORE(p, v) (*(p) = (v))
#endif

/* acc = acc * a + b converges to b / (1 - a): no overflow, no denormals. */
static double probe_fma(float *check) {
  vfloat a = VF_SET1(0.999999f), b = VF_SET1(1e-6f), total = VF_SET1(0.0f);
  float out[FMA_LANES];
  double t0, dt;
  long it;
#define DECLARE(k) vfloat acc##k = VF_SET1((float)k);
#define STEP(k) acc##k = VF_FMA(acc##k, a, b);
#define SUM(k) total = VF_ADD(total, acc##k);
  REP12(DECLARE)
  t0 = now();
  for (it = 0; it < ITERS; ++it) {
    REP12(STEP)
  }
  dt = now() - t0;
  REP12(SUM)
#undef DECLARE
#undef STEP
#undef SUM
  VF_STORE(out, total);
  *check += out[0];
  return 2.0 * FMA_LANES * CHAINS * (double)ITERS / dt * 1e-9;
}

/* ---- (c) int8 dot-product peak ---------------------------------------------- */

/* vpdpbusd in asm: GCC 12 surrounds the intrinsic with register copies that sit on
 * the accumulator chain. AT&T order: signed bytes, unsigned bytes, accumulator. */
#if defined(__AVX512VNNI__)
static inline __m512i dot_vnni512(__m512i acc, __m512i u8, __m512i s8) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}
#elif defined(__AVXVNNI__)
static inline __m256i dot_avxvnni(__m256i acc, __m256i u8, __m256i s8) {
  __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u8), "x"(s8));
  return acc;
}
#endif

/* VI_DOT(acc, a, b) adds to each int32 lane of acc the products of unsigned bytes
 * of a with signed bytes of b; INT8_MACS is the products per VI_DOT. */
#if defined(__AVX512VNNI__)
typedef __m512i vint;
#define INT8_ISA "vpdpbusd zmm (AVX512-VNNI)"
#define INT8_MACS 64
#define VI_SET1_8 _mm512_set1_epi8
#define VI_SET1_32 _mm512_set1_epi32
#define VI_DOT dot_vnni512
#define VI_ADD _mm512_add_epi32
#define VI_STORE(p, v) _mm512_storeu_si512((void *)(p), v)
#define VI_LANES 16
#elif defined(__AVXVNNI__)
typedef __m256i vint;
#define INT8_ISA "vpdpbusd ymm (AVX-VNNI)"
#define INT8_MACS 32
#define VI_SET1_8 _mm256_set1_epi8
#define VI_SET1_32 _mm256_set1_epi32
#define VI_DOT dot_avxvnni
#define VI_ADD _mm256_add_epi32
#define VI_STORE(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define VI_LANES 8
#elif defined(__AVX2__)
/* The pre-VNNI idiom: vpmaddubsw (u8*s8, pairs summed to int16), vpmaddwd against
 * ones (widen to int32), vpaddd. */
typedef __m256i vint;
#define INT8_ISA "vpmaddubsw+vpmaddwd ymm (AVX2)"
#define INT8_MACS 32
#define VI_SET1_8 _mm256_set1_epi8
#define VI_SET1_32 _mm256_set1_epi32
#define VI_DOT(acc, x, y) \
  _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1)))
#define VI_ADD _mm256_add_epi32
#define VI_STORE(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define VI_LANES 8
#else
typedef int32_t vint;
#define INT8_ISA "scalar int8 multiply-add"
#define INT8_MACS 1
#define VI_SET1_8(x) (x)
#define VI_SET1_32(x) (x)
#define VI_DOT(acc, x, y) ((acc) + (int32_t)(uint8_t)(x) * (int32_t)(int8_t)(y))
#define VI_ADD(x, y) ((x) + (y))
#define VI_STORE(p, v) (*(p) = (v))
#define VI_LANES 1
#endif

static double probe_int8(uint32_t *check) {
  vint a = VI_SET1_8(3), b = VI_SET1_8(-2), total = VI_SET1_32(0);
  int32_t out[VI_LANES];
  double t0, dt;
  long it;
  /* Without OPAQUE the AVX2 and scalar forms would compute a*b once per iteration
   * and share it between the chains. */
#define DECLARE(k) vint acc##k = VI_SET1_32(k);
#define STEP(k) OPAQUE(a); acc##k = VI_DOT(acc##k, a, b);
#define SUM(k) total = VI_ADD(total, acc##k);
  REP12(DECLARE)
  t0 = now();
  for (it = 0; it < ITERS; ++it) {
    REP12(STEP)
  }
  dt = now() - t0;
  REP12(SUM)
#undef DECLARE
#undef STEP
#undef SUM
  VI_STORE(out, total);
  *check += (uint32_t)out[0];
  return 2.0 * INT8_MACS * CHAINS * (double)ITERS / dt * 1e-9;
}

/* ---- (d) peaks of several cores at once ---------------------------------------- */

typedef struct peak_job {
  int int8; /* 0: the FMA probe, 1: the int8 one */
  double rate;
  float fma_check;
  uint32_t int8_check;
} peak_job;

static void *peak_worker(void *arg) {
  peak_job *j = (peak_job *)arg;
  j->rate = j->int8 ? probe_int8(&j->int8_check) : probe_fma(&j->fma_check);
  return NULL;
}

/* The summed peak of `threads` threads running one probe at the same time:
 * what the cores give together, shared units and clocks included. */
static double probe_peak_threads(int int8, int threads, double *check) {
  pthread_t tid[MAX_THREADS];
  peak_job job[MAX_THREADS];
  double sum = 0.0;
  int t;
  for (t = 0; t < threads; ++t) {
    job[t] = (peak_job){int8, 0.0, 0.0f, 0u};
    if (pthread_create(&tid[t], NULL, peak_worker, &job[t]) != 0) {
      fprintf(stderr, "probes: could not start %d threads\n", threads);
      exit(1);
    }
  }
  for (t = 0; t < threads; ++t) {
    pthread_join(tid[t], NULL);
    sum += job[t].rate;
    *check += (double)job[t].fma_check + (double)job[t].int8_check;
  }
  return sum;
}

/* Best of a few runs: the first one can pay for frequency ramp-up. */
int main(int argc, char **argv) {
  uint64_t bw_check = 0;
  float fma_check = 0.0f;
  uint32_t int8_check = 0;
  double bw, cache_bw, fma = 0.0, dot = 0.0, x;
  int r;
  if (argc > 1 && strcmp(argv[1], "bandwidth") == 0) {
    const int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (threads < 1 || threads > MAX_THREADS) {
      fprintf(stderr, "probes: bandwidth threads must be 1..%d, not '%s'\n", MAX_THREADS, argv[2]);
      return 2;
    }
    bw = probe_bandwidth(BW_BYTES, BW_PASSES, threads, &bw_check);
    printf("{\"bandwidth_gbs\": %.2f, \"threads\": %d, \"check\": \"%llx\"}\n", bw, threads,
           (unsigned long long)bw_check);
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "peaks") == 0) {
    const int threads = argc > 2 ? atoi(argv[2]) : 1;
    double check = 0.0;
    if (threads < 1 || threads > MAX_THREADS) {
      fprintf(stderr, "probes: peaks threads must be 1..%d, not '%s'\n", MAX_THREADS, argv[2]);
      return 2;
    }
    fma = probe_peak_threads(0, threads, &check);
    dot = probe_peak_threads(1, threads, &check);
    printf("{\"fma_gflops\": %.1f, \"int8_gops\": %.1f, \"threads\": %d, \"check\": \"%g\"}\n",
           fma, dot, threads, check);
    return 0;
  }
  bw = probe_bandwidth(BW_BYTES, BW_PASSES, 1, &bw_check);
  cache_bw = probe_bandwidth(CACHE_BYTES, CACHE_PASSES, 1, &bw_check);
  for (r = 0; r < 3; ++r) {
    if ((x = probe_fma(&fma_check)) > fma)
      fma = x;
    if ((x = probe_int8(&int8_check)) > dot)
      dot = x;
  }
  /* The checks print so the sums count as used. */
  printf("{\"bandwidth_gbs\": %.2f, \"bandwidth_bytes\": %lu, \"cache_gbs\": %.2f, "
         "\"cache_bytes\": %lu, \"fma_gflops\": %.1f, "
         "\"fma_isa\": \"%s\", \"int8_gops\": %.1f, \"int8_isa\": \"%s\", "
         "\"check\": \"%llx/%g/%lx\"}\n",
         bw, (unsigned long)BW_BYTES, cache_bw, (unsigned long)CACHE_BYTES, fma, FMA_ISA, dot,
         INT8_ISA,
         (unsigned long long)bw_check, (double)fma_check, (unsigned long)int8_check);
  return 0;
}
