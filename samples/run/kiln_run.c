/* kiln-run: runs a generated graph on a hosted system.
 *
 *   kiln-run [--pack FILE] --input NAME=FILE.npy ... --output-dir DIR [--repeat N] [-t N]
 *
 * Each input of the graph is read from its .npy file (the element type and
 * shape must be the graph's: the header of the generated code lists them);
 * each output is written as DIR/<output name>.npy in its own type (a '/' of
 * the name written as '_'). --repeat N
 * runs the graph N times and prints the median and fastest time of a run.
 * -t N runs a graph compiled with --threads=M (N <= M) on N threads.
 *
 * Built by the CMakeLists.txt that kiln-compile writes next to the graph; the
 * graph is chosen at compile time through KILN_GRAPH_* definitions. */
#define _POSIX_C_SOURCE 200809L

#include KILN_GRAPH_HEADER
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if KILN_THREADS > 1
#include "kiln/kiln_pool.h"
#endif

#define KILN_MAX_INPUTS 64
#define KILN_MAX_REPEAT 1000

static KILN_GRAPH_TYPE graph;
#if KILN_THREADS > 1
static kiln_pool pool;
#endif
static uint8_t arena[KILN_ARENA_BYTES + 1] __attribute__((aligned(64)));

static void usage(void) {
  fprintf(stderr,
          "usage: kiln-run [--pack FILE] --input NAME=FILE.npy ... --output-dir DIR [--repeat N] "
          "[-t N]\n"
          "  --input NAME=FILE  the graph input NAME from a .npy file of its type and shape\n"
          "  --output-dir DIR   each output written as DIR/<output name>.npy\n"
          "  --repeat N         run N times; print the median and fastest run in ms\n"
          "  -t N               threads (at most the --threads the graph was compiled with)\n");
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Whether `a` (read from `path`) has the element type and shape of `info`;
 * says what differs otherwise. */
static int matches(const kiln_tensor_info *info, const npy_array *a, const char *path) {
  int32_t i;
  int same = a->rank == info->rank;
  if (strcmp(a->descr, npy_descr(info->element)) != 0) {
    fprintf(stderr, "kiln-run: error: %s: input '%s' is %s, the file holds %s\n", path, info->name,
            npy_descr(info->element), a->descr);
    return 0;
  }
  for (i = 0; same && i < a->rank; ++i)
    same = a->shape[i] == info->shape[i];
  if (!same || a->bytes != info->bytes) {
    fprintf(stderr, "kiln-run: error: %s: input '%s' has shape (", path, info->name);
    for (i = 0; i < info->rank; ++i)
      fprintf(stderr, "%s%lld", i ? ", " : "", (long long)info->shape[i]);
    fprintf(stderr, "), the file (");
    for (i = 0; i < a->rank; ++i)
      fprintf(stderr, "%s%lld", i ? ", " : "", (long long)a->shape[i]);
    fprintf(stderr, ")%s\n", same ? " with another number of bytes" : "");
    return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  const kiln_graph_api *api = &KILN_GRAPH_API;
  const char *pack = KILN_DEFAULT_PACK, *out_dir = NULL;
  const char *input_path[KILN_MAX_INPUTS] = {0};
  const void *inputs[KILN_MAX_INPUTS];
  void *outputs[KILN_MAX_INPUTS];
  npy_array arrays[KILN_MAX_INPUTS];
  double times[KILN_MAX_REPEAT];
  char error[512];
  int32_t i, repeat = 1, threads = 1;
  int status = 1;
  kiln_pack_source src;
  kiln_status s;

  if (api->inputs > KILN_MAX_INPUTS || api->outputs > KILN_MAX_INPUTS) {
    fprintf(stderr, "kiln-run: error: the graph has more than %d inputs or outputs\n",
            KILN_MAX_INPUTS);
    return 1;
  }
  for (i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(arg, "--pack") && value) {
      pack = value, ++i;
    } else if (!strcmp(arg, "--output-dir") && value) {
      out_dir = value, ++i;
    } else if (!strcmp(arg, "--repeat") && value) {
      repeat = atoi(value), ++i;
      if (repeat < 1 || repeat > KILN_MAX_REPEAT) {
        fprintf(stderr, "kiln-run: error: --repeat %s: expected 1 to %d\n", value, KILN_MAX_REPEAT);
        return 1;
      }
    } else if (!strcmp(arg, "-t") && value) {
      threads = atoi(value), ++i;
      if (threads < 1 || threads > api->threads) {
        fprintf(stderr,
                "kiln-run: error: -t %s: the graph was compiled for at most %d thread%s "
                "(kiln-compile --threads)\n",
                value, (int)api->threads, api->threads == 1 ? "" : "s");
        return 1;
      }
    } else if (!strcmp(arg, "--input") && value) {
      const char *eq = strchr(value, '=');
      int32_t k, found = -1;
      ++i;
      for (k = 0; eq && k < api->inputs; ++k)
        if (strlen(api->input_info[k].name) == (size_t)(eq - value) &&
            !strncmp(api->input_info[k].name, value, (size_t)(eq - value)))
          found = k;
      if (found < 0) {
        fprintf(stderr, "kiln-run: error: --input %s: expected NAME=FILE with NAME one of:", value);
        for (k = 0; k < api->inputs; ++k)
          fprintf(stderr, " %s", api->input_info[k].name);
        fprintf(stderr, "\n");
        return 1;
      }
      input_path[found] = eq + 1;
    } else {
      usage();
      return 1;
    }
  }
  if (!out_dir && repeat == 1) {
    usage();
    return 1;
  }
  for (i = 0; i < api->inputs; ++i)
    if (!input_path[i]) {
      fprintf(stderr, "kiln-run: error: no --input for the graph's input '%s'\n",
              api->input_info[i].name);
      return 1;
    }

  memset(arrays, 0, sizeof arrays);
  memset(outputs, 0, sizeof outputs);
  for (i = 0; i < api->inputs; ++i) {
    if (!npy_read(input_path[i], &arrays[i], error, sizeof error)) {
      fprintf(stderr, "kiln-run: error: %s\n", error);
      goto done;
    }
    if (!matches(&api->input_info[i], &arrays[i], input_path[i]))
      goto done;
    inputs[i] = arrays[i].data;
  }
  for (i = 0; i < api->outputs; ++i)
    if (!(outputs[i] = malloc(api->output_info[i].bytes ? api->output_info[i].bytes : 1))) {
      fprintf(stderr, "kiln-run: error: out of memory\n");
      goto done;
    }

  s = kiln_pack_source_open_file(&src, pack);
  if (s == KILN_OK)
    s = api->open(&graph, &src, arena, KILN_ARENA_BYTES);
  if (s != KILN_OK) {
    fprintf(stderr, "kiln-run: error: %s: %s\n", pack, kiln_status_message(s));
    kiln_pack_source_close(&src);
    goto done;
  }
#if KILN_THREADS > 1
  if (threads > 1) {
    kiln_workers w;
    s = kiln_pool_start(&pool, threads);
    if (s != KILN_OK) {
      fprintf(stderr, "kiln-run: error: starting %d threads: %s\n", (int)threads,
              kiln_status_message(s));
      api->close(&graph);
      kiln_pack_source_close(&src);
      goto done;
    }
    /* One CPU each where there are enough; else the system places them. */
    (void)kiln_pool_pin(&pool);
    w = kiln_pool_workers(&pool);
    api->set_workers(&graph, &w);
  }
#endif
  for (i = 0; i < repeat; ++i) {
    const double start = now_ms();
    s = api->run(&graph, inputs, outputs);
    times[i] = now_ms() - start;
    if (s != KILN_OK) {
      fprintf(stderr, "kiln-run: error: %s\n", kiln_status_message(s));
      break;
    }
  }
  api->close(&graph);
#if KILN_THREADS > 1
  if (threads > 1)
    kiln_pool_stop(&pool);
#endif
  kiln_pack_source_close(&src);
  if (s != KILN_OK)
    goto done;
  if (repeat > 1) {
    qsort(times, (size_t)repeat, sizeof times[0], compare_doubles);
    printf("%s: %d runs, median %.3f ms, fastest %.3f ms\n", api->name, repeat, times[repeat / 2],
           times[0]);
  }
  for (i = 0; out_dir && i < api->outputs; ++i) {
    const kiln_tensor_info *o = &api->output_info[i];
    char path[4096];
    size_t at = (size_t)snprintf(path, sizeof path, "%s/", out_dir), k;
    /* The name as a file name: a path separator in it becomes '_'. */
    for (k = 0; o->name[k] && at + 5 < sizeof path; ++k)
      path[at++] = o->name[k] == '/' || o->name[k] == '\\' ? '_' : o->name[k];
    snprintf(path + at, sizeof path - at, ".npy");
    if (!npy_write(path, npy_descr(o->element), o->shape, o->rank, outputs[i], o->bytes)) {
      fprintf(stderr, "kiln-run: error: %s: cannot be written\n", path);
      goto done;
    }
  }
  status = 0;
done:
  for (i = 0; i < api->inputs; ++i)
    npy_free(&arrays[i]);
  for (i = 0; i < api->outputs; ++i)
    free(outputs[i]);
  return status;
}
