/* What the kernel benchmarks share: the best kernel library the compiler
 * flags allow (KILN_BENCH_HEADER, unless set; left unset below AVX2), a clock,
 * a comparison for qsort, memory in 2 MiB pages, and the plain read that
 * kernels bound by memory are set against. */
#ifndef KILN_BENCH_COMMON_H
#define KILN_BENCH_COMMON_H

#ifndef KILN_BENCH_HEADER
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#define KILN_BENCH_HEADER "kernels/x86/avx512/kiln_uk_avx512.h"
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define KILN_BENCH_HEADER "kernels/x86/avx2/kiln_uk_avx2.h"
#endif
#endif

#include <sys/mman.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Memory in 2 MiB pages where the kernel gives them, as kiln-generate asks
 * for its arena and the pack: 4 KiB pages would add a TLB miss per 4 KiB read. */
static void *large(size_t size) {
  const size_t big = (size_t)2 << 20;
  void *p = aligned_alloc(big, (size + big - 1) & ~(big - 1));
#ifdef MADV_HUGEPAGE
  if (p)
    madvise(p, (size + big - 1) & ~(big - 1), MADV_HUGEPAGE);
#endif
  return p;
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

#endif /* KILN_BENCH_COMMON_H */
