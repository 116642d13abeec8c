/* Runs net_forward of kernels-to-c.mlir on seeded weights and tokens and
 * compares every value it writes with a naive double-precision reference of
 * the same ops. The offsets are the ones the .mlir file gives its weights and
 * values. Exits 1 on any difference above 1e-5 (relative to the value's
 * scale). */
#include "net.h"

#include <math.h>
#include <stdio.h>

enum { ROWS = 4, D = 16, N = 8, VOCAB = 8 };

static uint32_t seed = 12345u;
static float uniform(void) { /* in [-1, 1) */
  seed = seed * 1664525u + 1013904223u;
  return (float)(seed >> 8) / 8388608.0f - 1.0f;
}

static int close_to(const char *what, const float *got, const double *want, int n) {
  int i, ok = 1;
  for (i = 0; i < n; ++i)
    if (fabs(got[i] - want[i]) > 1e-5 * (1.0 + fabs(want[i]))) {
      printf("%s[%d]: %.9g, want %.9g\n", what, i, got[i], want[i]);
      ok = 0;
    }
  return ok;
}

int main(void) {
  static float w[1184 / 4], a[1152 / 4];
  const float *table = w, *gamma = w + 128, *beta = w + 144, *proj = w + 160, *bias = w + 288;
  const int32_t tokens[ROWS] = {3, 0, 7, 5};
  double x[ROWS][D], n[ROWS][D], g[ROWS][D], m[ROWS][N], y[ROWS][N], p[ROWS][N];
  int r, i, j, ok = 1;
  for (i = 0; i < 1184 / 4; ++i)
    w[i] = uniform();
  net_forward((const uint8_t *)w, (uint8_t *)a, tokens, ROWS, 0);
  for (r = 0; r < ROWS; ++r) {
    double mean = 0.0, var = 0.0, sum = 0.0, top = -INFINITY;
    for (i = 0; i < D; ++i)
      mean += (x[r][i] = table[tokens[r] * D + i]) / D;
    for (i = 0; i < D; ++i)
      var += (x[r][i] - mean) * (x[r][i] - mean) / D;
    for (i = 0; i < D; ++i) {
      n[r][i] = (x[r][i] - mean) / sqrt(var + 1e-5) * gamma[i] + beta[i];
      g[r][i] = 0.5 * n[r][i] *
                (1.0 + tanh(0.7978845608028654 * (n[r][i] + 0.044715 * pow(n[r][i], 3))));
    }
    for (j = 0; j < N; ++j) {
      m[r][j] = 0.0;
      for (i = 0; i < D; ++i)
        m[r][j] += g[r][i] * proj[j * D + i];
      y[r][j] = m[r][j] + bias[j];
      top = y[r][j] > top ? y[r][j] : top;
    }
    for (j = 0; j < N; ++j)
      sum += exp(y[r][j] - top);
    for (j = 0; j < N; ++j)
      p[r][j] = exp(y[r][j] - top) / sum;
  }
  ok &= close_to("embed", a, &x[0][0], ROWS * D);
  ok &= close_to("layer_norm", a + 64, &n[0][0], ROWS * D);
  ok &= close_to("gelu", a + 128, &g[0][0], ROWS * D);
  ok &= close_to("matmul", a + 192, &m[0][0], ROWS * N);
  ok &= close_to("bias_add", a + 224, &y[0][0], ROWS * N);
  ok &= close_to("softmax", a + 256, &p[0][0], ROWS * N);
  printf("%s\n", ok ? "net_forward matches the reference" : "net_forward differs");
  return ok ? 0 : 1;
}
