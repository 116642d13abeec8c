/* Two builds of the panel kernels (an earlier revision's and the work
 * tree's) on one prefill-shaped matmul in cache: rows x k activations against
 * n x k weights, the two run in alternating order pass after pass. Prints the
 * median of the per-pass time ratios new / old (machines drift between
 * minutes; a ratio of neighbours does not) and whether the outputs are the
 * same bits. bench/tile_ab.sh builds it; this file is compiled three times:
 * with -DKILN_TILE_AB_VARIANT=run_old or run_new (each against its own
 * kernels tree) and once as the driver. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_common.h"
#ifndef KILN_BENCH_HEADER
#error "bench/tile_ab.c needs a panel kernel library: build with -march=native on x86"
#endif
#include KILN_BENCH_HEADER
#include "kernels/c99/kiln_uk_matmul_panels.h"
#include "bench/bench_formats.h"

typedef void tile_run(int, const uint8_t *, float *, const void *, int32_t, int32_t, int32_t, int32_t);

#ifdef KILN_TILE_AB_VARIANT
/* The whole matmul with the family a constant, as generated code calls it. */
void KILN_TILE_AB_VARIANT(int family, const uint8_t *w, float *y, const void *scratch, int32_t rows,
                          int32_t n, int32_t k, int32_t mr) {
  const int32_t p1 = (n + KILN_UK_NR - 1) / KILN_UK_NR;
#define TILE_AB(f, g) kiln_uk_matmul_panel_int(f, w, y, scratch, rows, n, k, g, mr, k, 0, p1)
  switch (family) {
  case KILN_UK_I4: TILE_AB(KILN_UK_I4, 32); break;
  case KILN_UK_I8: TILE_AB(KILN_UK_I8, 32); break;
  case KILN_UK_Q4_1: TILE_AB(KILN_UK_Q4_1, 32); break;
  case KILN_UK_Q5_0: TILE_AB(KILN_UK_Q5_0, 32); break;
  case KILN_UK_Q5_1: TILE_AB(KILN_UK_Q5_1, 32); break;
  case KILN_UK_IQ4_NL: TILE_AB(KILN_UK_IQ4_NL, 32); break;
  case KILN_UK_Q2_K: TILE_AB(KILN_UK_Q2_K, 256); break;
  case KILN_UK_Q3_K: TILE_AB(KILN_UK_Q3_K, 256); break;
  case KILN_UK_Q4_K: TILE_AB(KILN_UK_Q4_K, 256); break;
  case KILN_UK_Q5_K: TILE_AB(KILN_UK_Q5_K, 256); break;
  case KILN_UK_Q6_K: TILE_AB(KILN_UK_Q6_K, 256); break;
  default: break;
  }
#undef TILE_AB
}
#else
tile_run run_old, run_new;

int main(int argc, char **argv) {
  const int family = family_of(argc > 1 ? argv[1] : "q4_0");
  const int32_t n = argc > 2 ? atoi(argv[2]) : 256, k = argc > 3 ? atoi(argv[3]) : 2048;
  const int32_t rows = argc > 4 ? atoi(argv[4]) : 64, mr = argc > 5 ? atoi(argv[5]) : 4;
  const int passes = argc > 6 ? atoi(argv[6]) : 41;
  const int32_t mr_new = argc > 7 ? atoi(argv[7]) : mr; /* another tile height for the new build */
  const int32_t g = family >= 0 && kiln_uk_is_block_family(family) ? kiln_uk_block_elements(family) : 32;
  size_t rb, stride, i;
  uint8_t *src, *w, *scratch;
  float *x, *y0, *y1;
  double *ratio, best[2] = {1e30, 1e30};
  int p;
  if (family < 0 || family == KILN_UK_F16 || n < 1 || k < g || k % g != 0 || rows < 1 || mr < 1 ||
      mr > KILN_UK_MR_MAX || passes < 1 || mr_new < 1 || mr_new > KILN_UK_MR_MAX) {
    fprintf(stderr, "usage: %s q4_0|q8_0|<block format> [n] [k] [rows] [mr, 1..%d] [passes] [new mr]\n",
            argv[0], KILN_UK_MR_MAX);
    return 2;
  }
  rb = kiln_uk_row_bytes(family, k, g);
  stride = kiln_uk_panel_family_stride(family, k, g);
  src = malloc(rb * (size_t)n);
  w = malloc(rb * (size_t)n);
  scratch = malloc(stride * (size_t)rows);
  x = malloc(sizeof(float) * (size_t)k * (size_t)rows);
  y0 = malloc(sizeof(float) * (size_t)n * (size_t)rows);
  y1 = malloc(sizeof(float) * (size_t)n * (size_t)rows);
  ratio = malloc(sizeof(double) * (size_t)passes);
  if (!src || !w || !scratch || !x || !y0 || !y1 || !ratio) {
    fprintf(stderr, "%s: out of memory\n", argv[0]);
    return 1;
  }
  fill_rows(family, src, n, k, g);
  kiln_uk_pack_panels(family, src, w, n, k, g, KILN_UK_NR);
  for (i = 0; i < (size_t)k * (size_t)rows; ++i)
    x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  if (kiln_uk_is_block_family(family))
    for (i = 0; i < (size_t)rows; ++i)
      kiln_uk_blocks_quantize_row(x + i * (size_t)k, scratch + i * stride, k, g);
  else
    kiln_uk_panel_quantize_rows(x, scratch, rows, k, 32);
  for (p = 0; p < passes; ++p) { /* old then new on even passes, new then old on odd ones */
    double t[3], spent[2];
    int first = p % 2;
    t[0] = now();
    (first ? run_new : run_old)(family, w, first ? y1 : y0, scratch, rows, n, k, first ? mr_new : mr);
    t[1] = now();
    (first ? run_old : run_new)(family, w, first ? y0 : y1, scratch, rows, n, k, first ? mr : mr_new);
    t[2] = now();
    spent[first] = t[1] - t[0];
    spent[!first] = t[2] - t[1];
    ratio[p] = spent[1] / spent[0];
    best[0] = spent[0] < best[0] ? spent[0] : best[0];
    best[1] = spent[1] < best[1] ? spent[1] : best[1];
  }
  qsort(ratio, (size_t)passes, sizeof(double), by_value);
  printf("%s %d x %d, %d rows, mr %d (new %d): new / old time %.3f (median of %d pairs); best old %.1f, new %.1f "
         "GMAC/s; %s\n",
         argv[1], (int)n, (int)k, (int)rows, (int)mr, (int)mr_new, ratio[passes / 2], passes,
         1e-9 * n * k * rows / best[0], 1e-9 * n * k * rows / best[1],
         memcmp(y0, y1, sizeof(float) * (size_t)n * (size_t)rows) ? "DIFFERENT outputs" : "the same bits");
  return 0;
}
#endif
