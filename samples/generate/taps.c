/* kiln-generate's use of a KILN_TAPS build's taps while --perplexity runs:
 *
 *   --imatrix-out FILE  every matmul's input rows summed per column (x^2),
 *     written as llama.cpp's legacy importance matrix: int32 entries; per
 *     weight int32 name length, name, int32 ncall, int32 columns, float32
 *     mean(x^2) * ncall per column; then int32 chunks, int32 length and the
 *     text's name.
 *   --moments-out FILE  every matmul's input second moments: "KILNMOM1",
 *     int32 entries; per input int32 length, its weights' names joined by
 *     '+', int32 columns, int64 rows seen, then mean(x x^T)'s upper triangle
 *     row by row, float32 (compiler/quant/Imatrix.h reads it).
 *   --taps-out FILE  every op's result, as it comes: int32 length, "LAYER OP
 *     [WEIGHTS]", int32 rows, int32 cols, rows x cols float32 (little-endian
 *     hosts), until the end of the file. */
#include "kiln_generate.h"

#include <stdlib.h>
#include <string.h>

#ifdef KILN_TAPS

typedef struct entry {
  char *name;
  int32_t cols;
  int64_t rows; /* input rows summed */
  double *sum2; /* per column */
} entry;

/* --moments-out: one matrix per tap (the weights it names share the input),
 * the upper triangle of the sum of x x^T over the rows seen. */
typedef struct moments {
  char *names; /* "a+b" as the tap names them */
  int32_t cols;
  int64_t rows;
  double *sum; /* cols x cols, row i from column i on */
  float *part; /* the same, one call's rows */
} moments;

static entry *entries;
static moments *sets;
static int32_t n_entries, cap_entries, n_sets, cap_sets, collecting, gathering, failed;
static FILE *results;

/* items with room for one more than n (of `size` bytes each), grown when
 * full: the same array, a larger one, or NULL when out of memory. */
static void *room(void *items, int32_t n, int32_t *cap, size_t size) {
  int32_t grown = *cap ? 2 * *cap : 64;
  if (n < *cap)
    return items;
  items = realloc(items, size * (size_t)grown);
  if (items)
    *cap = grown;
  return items;
}

static entry *find(const char *name, size_t len, int32_t cols) {
  int32_t i;
  entry *e, *grown;
  for (i = 0; i < n_entries; ++i)
    if (strlen(entries[i].name) == len && !memcmp(entries[i].name, name, len))
      return entries[i].cols == cols ? &entries[i] : NULL;
  if (!(grown = room(entries, n_entries, &cap_entries, sizeof(entry))))
    return NULL;
  entries = grown;
  e = &entries[n_entries];
  e->name = malloc(len + 1);
  e->sum2 = calloc((size_t)cols, sizeof(double));
  if (!e->name || !e->sum2) {
    free(e->name), free(e->sum2);
    return NULL;
  }
  memcpy(e->name, name, len);
  e->name[len] = '\0';
  e->cols = cols, e->rows = 0;
  ++n_entries;
  return e;
}

static moments *find_moments(const char *names, int32_t cols) {
  int32_t i;
  moments *g, *grown;
  for (i = 0; i < n_sets; ++i)
    if (!strcmp(sets[i].names, names))
      return sets[i].cols == cols ? &sets[i] : NULL;
  if (!(grown = room(sets, n_sets, &cap_sets, sizeof(moments))))
    return NULL;
  sets = grown;
  g = &sets[n_sets];
  g->names = malloc(strlen(names) + 1);
  g->sum = calloc((size_t)cols * (size_t)cols, sizeof(double));
  g->part = calloc((size_t)cols * (size_t)cols, sizeof(float));
  if (!g->names || !g->sum || !g->part) {
    free(g->names), free(g->sum), free(g->part);
    return NULL;
  }
  strcpy(g->names, names);
  g->cols = cols, g->rows = 0;
  ++n_sets;
  return g;
}

/* The rows' x x^T into g: one call's rows summed in float (a prefill chunk
 * of them at most), eight at a time so that each row of the partial sum is
 * read once per eight, then added to the double sum. */
static void add_moments(moments *g, const float *x, int32_t rows) {
  const int32_t n = g->cols;
  float *part = g->part;
  int32_t r = 0, i, j;
  for (; r + 8 <= rows; r += 8) {
    const float *x0 = x + (size_t)r * n, *x1 = x0 + n, *x2 = x1 + n, *x3 = x2 + n,
                *x4 = x3 + n, *x5 = x4 + n, *x6 = x5 + n, *x7 = x6 + n;
    for (i = 0; i < n; ++i) {
      float *s = part + (size_t)i * n;
      const float a0 = x0[i], a1 = x1[i], a2 = x2[i], a3 = x3[i], a4 = x4[i], a5 = x5[i],
                  a6 = x6[i], a7 = x7[i];
      for (j = i; j < n; ++j)
        s[j] += ((a0 * x0[j] + a1 * x1[j]) + (a2 * x2[j] + a3 * x3[j])) +
                ((a4 * x4[j] + a5 * x5[j]) + (a6 * x6[j] + a7 * x7[j]));
    }
  }
  for (; r < rows; ++r) {
    const float *x0 = x + (size_t)r * n;
    for (i = 0; i < n; ++i)
      for (j = i; j < n; ++j)
        part[(size_t)i * n + j] += x0[i] * x0[j];
  }
  for (i = 0; i < n; ++i)
    for (j = i; j < n; ++j) {
      g->sum[(size_t)i * n + j] += part[(size_t)i * n + j];
      part[(size_t)i * n + j] = 0;
    }
  g->rows += rows;
}

static int put32(FILE *f, int32_t v) {
  unsigned char b[4];
  b[0] = (unsigned char)v, b[1] = (unsigned char)(v >> 8);
  b[2] = (unsigned char)(v >> 16), b[3] = (unsigned char)(v >> 24);
  return fwrite(b, 4, 1, f) == 1;
}

static int put_float(FILE *f, float v) {
  int32_t bits;
  memcpy(&bits, &v, 4);
  return put32(f, bits);
}

/* A matmul's input rows into each weight's sums ("a+b": the same rows for
 * both), an op's result into --taps-out's file. */
static void tap(void *ctx, int32_t kind, const char *what, const float *x, int32_t rows,
                int32_t cols) {
  const char *name = what;
  (void)ctx;
  if (kind == KILN_TAP_RESULT) {
    if (results && !failed)
      failed = !(put32(results, (int32_t)strlen(what)) &&
                 fwrite(what, strlen(what), 1, results) == 1 && put32(results, rows) &&
                 put32(results, cols) &&
                 fwrite(x, sizeof(float), (size_t)rows * cols, results) == (size_t)rows * cols);
    return;
  }
  if (gathering && !failed) {
    moments *g = find_moments(what, cols);
    if (!g) {
      failed = 1;
      return;
    }
    add_moments(g, x, rows);
  }
  while (collecting && *name) {
    size_t len = strcspn(name, "+");
    entry *e = find(name, len, cols);
    int32_t r, c;
    if (!e) {
      failed = 1;
      return;
    }
    for (r = 0; r < rows; ++r)
      for (c = 0; c < cols; ++c) {
        double v = x[(size_t)r * cols + c];
        e->sum2[c] += v * v;
      }
    e->rows += rows;
    name += len + (name[len] == '+');
  }
}

int taps_attach(const options *o) {
  if (!o->imatrix_out && !o->taps_out && !o->moments_out)
    return 1;
  if (!o->perplexity) {
    fprintf(stderr, "kiln-generate: --imatrix-out and --taps-out read --perplexity's run\n");
    return 0;
  }
  if (o->taps_out && !(results = fopen(o->taps_out, "wb"))) {
    perror(o->taps_out);
    return 0;
  }
  collecting = o->imatrix_out != NULL;
  gathering = o->moments_out != NULL;
  model.tap = tap;
  model.tap_ctx = NULL;
  return 1;
}

static int write_imatrix(const options *o) {
  FILE *f = fopen(o->imatrix_out, "wb");
  int ok;
  int32_t i, c, chunks = 0;
  const char *base = strrchr(o->perplexity, '/');
  base = base ? base + 1 : o->perplexity;
  ok = f && put32(f, n_entries);
  for (i = 0; ok && i < n_entries; ++i) {
    const entry *e = &entries[i];
    /* Chunks of --ctx rows: llama.cpp's ncall; the means times it are stored. */
    int32_t ncall = (int32_t)(e->rows / o->ctx > 0 ? e->rows / o->ctx : 1);
    chunks = ncall > chunks ? ncall : chunks;
    ok = put32(f, (int32_t)strlen(e->name)) && fwrite(e->name, strlen(e->name), 1, f) == 1 &&
         put32(f, ncall) && put32(f, e->cols);
    for (c = 0; ok && c < e->cols; ++c)
      ok = put_float(f, (float)(e->sum2[c] / (double)(e->rows ? e->rows : 1) * ncall));
  }
  ok = ok && put32(f, chunks) && put32(f, (int32_t)strlen(base)) &&
       fwrite(base, strlen(base), 1, f) == 1;
  if (f && fclose(f) != 0)
    ok = 0;
  if (!ok)
    perror(o->imatrix_out);
  return ok;
}

static int write_moments(const options *o) {
  FILE *f = fopen(o->moments_out, "wb");
  int ok;
  int32_t i, a, b;
  ok = f && fwrite("KILNMOM1", 8, 1, f) == 1 && put32(f, n_sets);
  for (i = 0; ok && i < n_sets; ++i) {
    const moments *g = &sets[i];
    const double rows = (double)(g->rows ? g->rows : 1);
    ok = put32(f, (int32_t)strlen(g->names)) && fwrite(g->names, strlen(g->names), 1, f) == 1 &&
         put32(f, g->cols) && put32(f, (int32_t)(g->rows & 0xffffffff)) &&
         put32(f, (int32_t)(g->rows >> 32));
    for (a = 0; ok && a < g->cols; ++a)
      for (b = a; ok && b < g->cols; ++b)
        ok = put_float(f, (float)(g->sum[(size_t)a * g->cols + b] / rows));
  }
  if (f && fclose(f) != 0)
    ok = 0;
  if (!ok)
    perror(o->moments_out);
  return ok;
}

int taps_finish(const options *o, int ran) {
  int ok = !failed;
  int32_t i;
  if (!ran) /* the run said what went wrong: release, write nothing */
    ok = 0;
  else if (failed)
    fprintf(stderr, "kiln-generate: %s: %s\n",
            o->taps_out ? o->taps_out : o->imatrix_out ? o->imatrix_out : o->moments_out,
            "out of memory or room while collecting the taps");
  if (results && fclose(results) != 0 && ok) {
    perror(o->taps_out);
    ok = 0;
  }
  results = NULL;
  if (ok && o->imatrix_out) {
    if (n_entries == 0) {
      fprintf(stderr, "kiln-generate: %s: no matmul input was seen\n", o->imatrix_out);
      ok = 0;
    } else {
      ok = write_imatrix(o);
    }
  }
  if (ok && o->moments_out) {
    if (n_sets == 0) {
      fprintf(stderr, "kiln-generate: %s: no matmul input was seen\n", o->moments_out);
      ok = 0;
    } else {
      ok = write_moments(o);
    }
  }
  for (i = 0; i < n_entries; ++i)
    free(entries[i].name), free(entries[i].sum2);
  free(entries);
  entries = NULL, n_entries = cap_entries = 0;
  for (i = 0; i < n_sets; ++i)
    free(sets[i].names), free(sets[i].sum), free(sets[i].part);
  free(sets);
  sets = NULL, n_sets = cap_sets = 0;
  return ok;
}

#else

int taps_attach(const options *o) {
  if (o->imatrix_out || o->taps_out || o->moments_out)
    fprintf(stderr, "kiln-generate: --imatrix-out, --moments-out and --taps-out need a build "
                    "with -DKILN_TAPS=ON\n");
  return !o->imatrix_out && !o->taps_out && !o->moments_out;
}

int taps_finish(const options *o, int ran) {
  (void)o;
  return ran;
}

#endif
