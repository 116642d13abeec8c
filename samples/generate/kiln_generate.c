/* kiln-generate: talks to a generated model on a hosted system.
 *
 *   kiln-generate [--pack FILE] -p TEXT [-n N] [--temp T] [--top-k K] [--top-p P]
 *                 [--repeat-penalty R] [--seed S] [--ignore-eos] [--dump-logits FILE]
 *   kiln-generate [--pack FILE] --tokens ID,ID,... [-n N] [--no-prefill] [--dump-logits FILE]
 *   kiln-generate [--pack FILE] --perplexity TEXTFILE [--ctx N] [--chunks K]
 *   kiln-generate [--pack FILE] --tokenize -p TEXT
 *   kiln-generate [--pack FILE] --chat [-sys TEXT] [-n N] [sampling options]
 * and with any of them -t N: N threads (a model compiled with --threads=M
 * uses at most M).
 *
 * Built by the CMakeLists.txt that kiln-compile writes next to the model; the
 * model is chosen at compile time through KILN_MODEL_* definitions. The model
 * state, the arena and the logits are static; only this program's own text
 * handling (reading a file, the tokenizer's work buffer) uses the heap. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise is not in strict POSIX on glibc */

#include KILN_MODEL_HEADER
#include "kiln/kiln_model.h"
#include "kiln/kiln_sampler.h"
#include "kiln/kiln_tokenizer.h"
#if KILN_THREADS > 1
#include "kiln/kiln_pool.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

extern const kiln_model_api KILN_MODEL_API;
#ifdef KILN_PROFILE
extern const char *const KILN_PROFILE_NAMES[KILN_PROFILE_SITES];
extern const uint64_t KILN_PROFILE_WEIGHT_BYTES[KILN_PROFILE_SITES];
#endif

static KILN_MODEL_TYPE model;
static uint8_t arena[KILN_ARENA_BYTES] __attribute__((aligned(64)));
static float logits[(size_t)KILN_PREFILL_CHUNK * KILN_VOCAB];
static int32_t tokens[KILN_MAX_CONTEXT];

/* Asks for large pages for the arena's whole 2 MiB pages, before open first
 * touches them: a decode step reads the KV cache as one short stream per head,
 * and with 4 KiB pages M q8_0 decode after 2048 tokens was 0.92x as fast. Only a
 * hint. */
static void arena_large_pages(void) {
#ifdef MADV_HUGEPAGE
  const uintptr_t big = (uintptr_t)2 << 20, end = (uintptr_t)arena + sizeof arena;
  const uintptr_t at = ((uintptr_t)arena + big - 1) & ~(big - 1);
  if (end >= at + big)
    madvise((void *)at, (end - at) & ~(big - 1), MADV_HUGEPAGE);
#endif
}

typedef struct options {
  const char *pack, *prompt, *ids, *dump, *perplexity, *kl_base, *system, *profile;
  double bandwidth_gbs;
  int32_t n_generate, ctx, chunks, threads, keep;
  int prefill, tokenize, ignore_eos, chat;
  kiln_sampler_params sampling;
} options;

static void usage(void) {
  fprintf(stderr,
          "usage: kiln-generate [--pack FILE] -p TEXT [-n N] [--temp T] [--top-k K]\n"
          "                     [--top-p P] [--repeat-penalty R] [--seed S] [--ignore-eos]\n"
          "                     [--dump-logits FILE]\n"
          "       kiln-generate [--pack FILE] --tokens ID,ID,... [-n N] [--no-prefill] [--keep N]\n"
          "       kiln-generate [--pack FILE] --perplexity TEXTFILE [--ctx N] [--chunks K]\n"
          "                     [--dump-logits FILE] [--kl-base FILE]\n"
          "       kiln-generate [--pack FILE] --tokenize -p TEXT\n"
          "       kiln-generate [--pack FILE] --chat [-sys TEXT] [-n N] [sampling options]\n"
          "  -t N           threads (at most the --threads the model was compiled with)\n"
          "  --dump-logits  float32 logits, one row of vocab floats per evaluated\n"
          "                 position (prompt positions, then generated ones)\n"
          "  --no-prefill   evaluate the prompt one decode call at a time\n"
          "  --keep N       when the context is full, keep the first N tokens, drop\n"
          "                 half of the rest (a context shift) and go on generating\n"
          "  --perplexity   perplexity over chunks of --ctx tokens, each [BOS] + ctx-1\n"
          "                 tokens of the text, all ctx predictions scored\n"
          "  --kl-base      logits dumped by a reference run of --perplexity: also\n"
          "                 print the mean KL divergence from them\n"
          "  --chat         a conversation in the model's chat template: each line of\n"
          "                 stdin is a user turn, answered with at most -n tokens\n"
          "  -sys TEXT      the system turn that opens the conversation\n"
          "  --profile FILE.html  (a KILN_PROFILE build) also write the kernel calls'\n"
          "                 times as FILE.json and a layer x kernel heatmap as FILE.html\n"
          "  --bandwidth GB/s  the host's read bandwidth, for the heatmap's fractions\n");
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what, kiln_status s) {
  fprintf(stderr, "kiln-generate: %s: %s\n", what, kiln_status_message(s));
  return 1;
}

static int parse(int argc, char **argv, options *o) {
  int i;
  memset(o, 0, sizeof *o);
  o->pack = KILN_DEFAULT_PACK;
  o->n_generate = 32;
  o->ctx = KILN_MAX_CONTEXT;
  o->prefill = 1;
  o->threads = 1;
  o->keep = -1;
  kiln_sampler_default_params(&o->sampling);
  for (i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--no-prefill")) o->prefill = 0;
    else if (!strcmp(a, "--tokenize")) o->tokenize = 1;
    else if (!strcmp(a, "--ignore-eos")) o->ignore_eos = 1;
    else if (!strcmp(a, "--chat")) o->chat = 1;
    else if (!v) return 0;
    else if (!strcmp(a, "--pack")) o->pack = v, ++i;
    else if (!strcmp(a, "-p")) o->prompt = v, ++i;
    else if (!strcmp(a, "--tokens")) o->ids = v, ++i;
    else if (!strcmp(a, "-n")) o->n_generate = atoi(v), ++i;
    else if (!strcmp(a, "-t")) o->threads = atoi(v), ++i;
    else if (!strcmp(a, "--keep")) o->keep = atoi(v), ++i;
    else if (!strcmp(a, "--dump-logits")) o->dump = v, ++i;
    else if (!strcmp(a, "--perplexity")) o->perplexity = v, ++i;
    else if (!strcmp(a, "--ctx")) o->ctx = atoi(v), ++i;
    else if (!strcmp(a, "--chunks")) o->chunks = atoi(v), ++i;
    else if (!strcmp(a, "--kl-base")) o->kl_base = v, ++i;
    else if (!strcmp(a, "--profile")) o->profile = v, ++i;
    else if (!strcmp(a, "--bandwidth")) o->bandwidth_gbs = atof(v), ++i;
    else if (!strcmp(a, "-sys") || !strcmp(a, "--system")) o->system = v, ++i;
    else if (!strcmp(a, "--temp")) o->sampling.temperature = (float)atof(v), ++i;
    else if (!strcmp(a, "--top-k")) o->sampling.top_k = atoi(v), ++i;
    else if (!strcmp(a, "--top-p")) o->sampling.top_p = (float)atof(v), ++i;
    else if (!strcmp(a, "--repeat-penalty")) o->sampling.repeat_penalty = (float)atof(v), ++i;
    else if (!strcmp(a, "--seed")) o->sampling.seed = strtoull(v, NULL, 10), ++i;
    else return 0;
  }
  return (o->prompt || o->ids || o->perplexity || o->chat) && o->n_generate >= 0 &&
         o->threads >= 1 && (!o->system || o->chat) && o->keep >= -1 &&
         o->keep < KILN_MAX_CONTEXT;
}

/* Tokenizes `len` bytes into `out` (at most `cap` ids). */
static kiln_status encode(const kiln_tokenizer *t, const char *text, size_t len, int special,
                          int32_t *out, int32_t cap, int32_t *n) {
  size_t work_bytes = kiln_tokenize_work_bytes(t, len);
  void *work = malloc(work_bytes ? work_bytes : 1);
  kiln_status s = work ? kiln_tokenize(t, text, len, special, out, cap, n, work, work_bytes)
                       : KILN_ERR_ARGUMENT;
  free(work);
  return s;
}

static int32_t parse_ids(const char *ids) {
  int32_t n = 0;
  while (*ids && n < KILN_MAX_CONTEXT) {
    char *end;
    tokens[n++] = (int32_t)strtol(ids, &end, 10);
    if (end == ids)
      return -1;
    ids = *end == ',' ? end + 1 : end;
  }
  return n;
}

static int dump_rows(FILE *out, const float *rows, int32_t n) {
  return out && fwrite(rows, sizeof(float) * KILN_VOCAB, (size_t)n, out) != (size_t)n;
}

/* Evaluates the prompt (chunks or one decode at a time), dumping every row;
 * leaves the last row's logits at the start of `logits`. */
static kiln_status run_prompt(const kiln_model_api *api, int32_t n_prompt, int prefill,
                              FILE *dump) {
  int32_t i, n;
  kiln_status s;
  if (prefill && !dump)
    return api->prefill_last(&model, tokens, n_prompt, logits); /* no unread logits */
  for (i = 0; i < n_prompt; i += n) {
    n = prefill ? n_prompt - i : 1;
    if (n > KILN_PREFILL_CHUNK)
      n = KILN_PREFILL_CHUNK;
    s = prefill ? api->prefill(&model, tokens + i, n, logits)
                : api->decode(&model, tokens[i], logits);
    if (s != KILN_OK)
      return s;
    if (dump_rows(dump, logits, n))
      return KILN_ERR_IO;
    memmove(logits, logits + (size_t)(n - 1) * KILN_VOCAB, sizeof(float) * KILN_VOCAB);
  }
  return KILN_OK;
}

static void print_piece(const kiln_tokenizer *t, int32_t id, int is_first) {
  char piece[4096];
  size_t n = 0;
  if (kiln_token_piece(t, id, is_first, piece, sizeof piece, &n) == KILN_OK)
    fwrite(piece, 1, n, stdout);
  else
    fprintf(stderr, "kiln-generate: token %d has a %lu-byte piece; not printed\n", (int)id,
            (unsigned long)n);
  fflush(stdout);
}

#ifdef KILN_PROFILE
static uint64_t clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The kernel calls that took longest, from the model's per-call times. */
static void print_profile(void) {
  static int shown[KILN_PROFILE_SITES];
  uint64_t total = 0;
  int i, k;
  for (i = 0; i < KILN_PROFILE_SITES; ++i)
    total += model.site_time[i];
  fprintf(stderr, "profile: %.3f ms in %d kernel calls of the schedule; the longest:\n",
          (double)total * 1e-6, KILN_PROFILE_SITES);
  for (k = 0; k < 12 && k < KILN_PROFILE_SITES; ++k) {
    int best = -1;
    for (i = 0; i < KILN_PROFILE_SITES; ++i)
      if (!shown[i] && (best < 0 || model.site_time[i] > model.site_time[best]))
        best = i;
    shown[best] = 1;
    fprintf(stderr, "  %8.3f ms %5.1f%%  %s\n", (double)model.site_time[best] * 1e-6,
            total ? 100.0 * (double)model.site_time[best] / (double)total : 0.0,
            KILN_PROFILE_NAMES[best]);
  }
  /* Totals by function and kind of kernel: the label's first word and the
   * kernel name up to its first '_'. */
  fprintf(stderr, "by kind:\n");
  for (i = 0; i < KILN_PROFILE_SITES; ++i)
    shown[i] = 0;
  for (i = 0; i < KILN_PROFILE_SITES; ++i) {
    const char *a = KILN_PROFILE_NAMES[i], *ka = strrchr(a, ' ') + 1;
    uint64_t sum = 0;
    int calls = 0;
    if (shown[i])
      continue;
    for (k = i; k < KILN_PROFILE_SITES; ++k) {
      const char *b = KILN_PROFILE_NAMES[k], *kb = strrchr(b, ' ') + 1;
      if (strcspn(a, " ") == strcspn(b, " ") && !strncmp(a, b, strcspn(a, " ")) &&
          strcspn(ka, "_") == strcspn(kb, "_") && !strncmp(ka, kb, strcspn(ka, "_"))) {
        shown[k] = 1;
        sum += model.site_time[k];
        ++calls;
      }
    }
    fprintf(stderr, "  %8.3f ms %5.1f%%  %.*s %.*s (%d calls)\n", (double)sum * 1e-6,
            total ? 100.0 * (double)sum / (double)total : 0.0, (int)strcspn(a, " "), a,
            (int)strcspn(ka, "_"), ka, calls);
  }
}
#endif

#ifdef KILN_PROFILE
/* The layer of a profile site ("blk.N." in its label), or -1. */
static int site_layer(const char *label) {
  const char *b = strstr(label, "blk.");
  return b ? atoi(b + 4) : -1;
}

/* A site's function (its label's first word) and kind (its kernel's name up
 * to the first '_'), as lengths into the label. */
static const char *site_kind(const char *label, int *n) {
  const char *k = strrchr(label, ' ') + 1;
  *n = (int)strcspn(k, "_");
  return k;
}

static int same_word(const char *a, int na, const char *b, int nb) {
  return na == nb && !strncmp(a, b, (size_t)na);
}

/* Whether site i is of function fn (length fnl), of `layer` (any when below
 * -1) and of the kind k (length nk; any when NULL). */
static int site_is(int i, const char *fn, int fnl, int layer, const char *k, int nk) {
  const char *l = KILN_PROFILE_NAMES[i];
  int n;
  const char *kind = site_kind(l, &n);
  return same_word(l, (int)strcspn(l, " "), fn, fnl) && (layer < -1 || site_layer(l) == layer) &&
         (!k || same_word(kind, n, k, nk));
}

/* FILE.json beside FILE.html. */
static void json_path(const char *html, char *out, size_t cap) {
  size_t n = strlen(html);
  if (n > 5 && !strcmp(html + n - 5, ".html"))
    n -= 5;
  snprintf(out, cap, "%.*s.json", (int)n, html);
}

static int write_profile_json(const char *path, double bandwidth_gbs) {
  FILE *f = fopen(path, "w");
  int i;
  if (!f)
    return 0;
  fprintf(f, "{\"bandwidth_gbs\": %g, \"sites\": [\n", bandwidth_gbs);
  for (i = 0; i < KILN_PROFILE_SITES; ++i) {
    const char *l = KILN_PROFILE_NAMES[i];
    int nk;
    const char *k = site_kind(l, &nk);
    fprintf(f,
            "  {\"function\": \"%.*s\", \"layer\": %d, \"kernel\": \"%s\", \"kind\": \"%.*s\", "
            "\"label\": \"%s\", \"calls\": %llu, \"ns\": %llu, \"weight_bytes\": %llu}%s\n",
            (int)strcspn(l, " "), l, site_layer(l), k, nk, k, l,
            (unsigned long long)model.site_calls[i], (unsigned long long)model.site_time[i],
            (unsigned long long)KILN_PROFILE_WEIGHT_BYTES[i], i + 1 < KILN_PROFILE_SITES ? "," : "");
  }
  fprintf(f, "]}\n");
  return fclose(f) == 0;
}

/* One function's layer x kind heatmap (cells: ms, shaded by their share of
 * the hottest), then its kinds: calls, time, share, weight bytes read and the
 * bandwidth that achieved (and its fraction of the host's when given). */
static void profile_function_html(FILE *f, const char *fn, double bandwidth_gbs) {
  const char *kinds[KILN_PROFILE_SITES];
  int kind_n[KILN_PROFILE_SITES], nkinds = 0, i, k, layer, max_layer = -1;
  const int fnl = (int)strlen(fn);
  double total = 0.0, hottest = 0.0;
  for (i = 0; i < KILN_PROFILE_SITES; ++i) {
    const char *l = KILN_PROFILE_NAMES[i];
    int nk;
    const char *kd = site_kind(l, &nk);
    if (!site_is(i, fn, fnl, -2, NULL, 0))
      continue;
    total += (double)model.site_time[i];
    max_layer = site_layer(l) > max_layer ? site_layer(l) : max_layer;
    for (k = 0; k < nkinds && !same_word(kinds[k], kind_n[k], kd, nk); ++k)
      ;
    if (k == nkinds)
      kinds[nkinds] = kd, kind_n[nkinds++] = nk;
  }
  /* cell totals, to shade them */
  for (layer = -1; layer <= max_layer; ++layer)
    for (k = 0; k < nkinds; ++k) {
      double cell = 0.0;
      for (i = 0; i < KILN_PROFILE_SITES; ++i)
        if (site_is(i, fn, fnl, layer, kinds[k], kind_n[k]))
          cell += (double)model.site_time[i];
      hottest = cell > hottest ? cell : hottest;
    }
  fprintf(f, "<h2>%s: %.3f ms</h2>\n<table class=\"heatmap\" id=\"heatmap-%s\"><thead><tr><th>layer</th>",
          fn, total * 1e-6, fn);
  for (k = 0; k < nkinds; ++k)
    fprintf(f, "<th>%.*s</th>", kind_n[k], kinds[k]);
  fprintf(f, "</tr></thead><tbody>\n");
  for (layer = 0; layer <= max_layer + 1; ++layer) {
    const int l0 = layer <= max_layer ? layer : -1; /* the calls outside the layers last */
    if (l0 < 0)
      fprintf(f, "<tr><td>other</td>");
    else
      fprintf(f, "<tr><td>%d</td>", l0);
    for (k = 0; k < nkinds; ++k) {
      double cell = 0.0;
      int any = 0;
      for (i = 0; i < KILN_PROFILE_SITES; ++i)
        if (site_is(i, fn, fnl, l0, kinds[k], kind_n[k]))
          cell += (double)model.site_time[i], any = 1;
      if (any)
        fprintf(f, "<td style=\"background:rgba(225,87,89,%.3f)\">%.3f</td>",
                hottest > 0 ? cell / hottest : 0.0, cell * 1e-6);
      else
        fprintf(f, "<td></td>");
    }
    fprintf(f, "</tr>\n");
  }
  fprintf(f, "</tbody></table>\n<table class=\"kinds\" id=\"kinds-%s\"><thead><tr><th>kernel</th>"
             "<th>calls</th><th>ms</th><th>share</th><th>weight bytes read</th><th>GB/s</th>"
             "<th>of the host's</th></tr></thead><tbody>\n", fn);
  for (k = 0; k < nkinds; ++k) {
    double t = 0.0, bytes = 0.0;
    unsigned long long calls = 0;
    for (i = 0; i < KILN_PROFILE_SITES; ++i) {
      if (site_is(i, fn, fnl, -2, kinds[k], kind_n[k])) {
        t += (double)model.site_time[i];
        bytes += (double)KILN_PROFILE_WEIGHT_BYTES[i] * (double)model.site_calls[i];
        calls += model.site_calls[i];
      }
    }
    fprintf(f, "<tr><td>%.*s</td><td>%llu</td><td>%.3f</td><td>%.1f%%</td><td>%.0f</td>",
            kind_n[k], kinds[k], calls, t * 1e-6, total > 0 ? 100.0 * t / total : 0.0, bytes);
    if (bytes > 0 && t > 0)
      fprintf(f, "<td>%.2f</td><td>%s%.2f</td></tr>\n", bytes / t,
              bandwidth_gbs > 0 ? "" : "-", bandwidth_gbs > 0 ? bytes / t / bandwidth_gbs : 0.0);
    else
      fprintf(f, "<td></td><td></td></tr>\n");
  }
  fprintf(f, "</tbody></table>\n");
}

/* A decode step's calls in schedule order, each as wide as its time per step:
 * they run one after another (a split kernel's shares end at a barrier), so
 * this is the step's critical path. */
static void profile_path_svg(FILE *f) {
  double step = 0.0, x = 0.0;
  int i;
  for (i = 0; i < KILN_PROFILE_SITES; ++i)
    if (!strncmp(KILN_PROFILE_NAMES[i], "decode ", 7) && model.site_calls[i])
      step += (double)model.site_time[i] / (double)model.site_calls[i];
  fprintf(f, "<h2>A decode step's critical path: %.1f us</h2>\n<svg id=\"critical-path\" width=\"900\" "
             "height=\"40\" role=\"img\">\n", step * 1e-3);
  for (i = 0; i < KILN_PROFILE_SITES; ++i) {
    double t;
    int nk;
    const char *kd = site_kind(KILN_PROFILE_NAMES[i], &nk);
    if (strncmp(KILN_PROFILE_NAMES[i], "decode ", 7) || !model.site_calls[i])
      continue;
    t = (double)model.site_time[i] / (double)model.site_calls[i];
    fprintf(f, "<rect class=\"call\" x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"40\" "
               "fill=\"hsl(%d,55%%,55%%)\" stroke=\"#fff\" stroke-width=\"0.5\"><title>%s: %.1f us "
               "(%.*s)</title></rect>\n",
            step > 0 ? 900.0 * x / step : 0.0, step > 0 ? 900.0 * t / step : 0.0,
            (int)(kd[0] * 37 + kd[1] * 11) % 360, KILN_PROFILE_NAMES[i], t * 1e-3, nk, kd);
    x += t;
  }
  fprintf(f, "</svg>\n");
}

/* FILE.json and FILE.html of --profile. */
static int write_profile(const char *html, double bandwidth_gbs) {
  char json[4096];
  FILE *f;
  json_path(html, json, sizeof json);
  if (!write_profile_json(json, bandwidth_gbs) || !(f = fopen(html, "w"))) {
    fprintf(stderr, "kiln-generate: %s: cannot write the profile\n", html);
    return 0;
  }
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             "<title>Kiln profile</title>\n<style>body{font-family:sans-serif;margin:24px}"
             "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;"
             "padding:2px 8px;text-align:right}th{background:#eee}</style></head><body>\n"
             "<h1>Kernel time by layer and kernel</h1>\n<p>Milliseconds over the run, each cell "
             "shaded by its share of the hottest; per kernel the weight bytes its calls read "
             "and the bandwidth that achieved%s.</p>\n",
          bandwidth_gbs > 0 ? ", as a fraction of the host's read bandwidth" : "");
  profile_function_html(f, "prefill", bandwidth_gbs);
  profile_function_html(f, "decode", bandwidth_gbs);
  profile_path_svg(f);
  fprintf(f, "</body></html>\n");
  if (fclose(f) != 0) {
    fprintf(stderr, "kiln-generate: %s: cannot write the profile\n", html);
    return 0;
  }
  return 1;
}
#endif

static long peak_rss_kib(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

static int generate(const kiln_model_api *api, const kiln_tokenizer *t, const options *o) {
  static uint8_t sampler_work[4 * KILN_VOCAB + 64];
  kiln_sampler sampler;
  int32_t n_prompt, i, next, generated = 0, decoded = 0, shifts = 0;
  double t0, t1, t2;
  kiln_status s;
  FILE *dump = NULL;

  if (o->ids) {
    n_prompt = parse_ids(o->ids);
  } else {
    s = encode(t, o->prompt, strlen(o->prompt), 1, tokens, KILN_MAX_CONTEXT, &n_prompt);
    if (s != KILN_OK)
      return fail("prompt does not fit the context", s);
  }
  if (n_prompt <= 0) {
    usage();
    return 2;
  }
  if (o->tokenize) {
    for (i = 0; i < n_prompt; ++i)
      printf("%s%d", i ? "," : "ids: ", (int)tokens[i]);
    printf("\n");
    return 0;
  }
  s = kiln_sampler_init(&sampler, &o->sampling);
  if (s != KILN_OK)
    return fail("sampling options", s);
  if (o->dump && !(dump = fopen(o->dump, "wb"))) {
    perror(o->dump);
    return 1;
  }
  if (o->prompt)
    fputs(o->prompt, stdout);

  t0 = now();
  s = run_prompt(api, n_prompt, o->prefill, dump);
  if (s != KILN_OK)
    return fail("prompt", s);
  t1 = now();
  for (i = 0; i < o->n_generate; ++i) {
    s = kiln_sampler_sample(&sampler, logits, KILN_VOCAB, tokens, api->position(&model),
                            sampler_work, sizeof sampler_work, &next);
    if (s != KILN_OK)
      return fail("sample", s);
    if (!o->ids && kiln_tokenizer_is_eog(t, next) && !o->ignore_eos)
      break;
    ++generated;
    if (o->ids)
      printf("%s%d", i ? "," : "ids: ", (int)next);
    else
      print_piece(t, next, 0);
    if (i + 1 == o->n_generate)
      break;
    if (api->position(&model) == KILN_MAX_CONTEXT && o->keep >= 0) {
      /* full: keep the first tokens, drop half of the others, as llama.cpp's
       * --keep does */
      int32_t pos = KILN_MAX_CONTEXT, drop = (pos - o->keep) / 2 > 0 ? (pos - o->keep) / 2 : 1;
      s = api->shift(&model, o->keep, drop);
      if (s != KILN_OK)
        return fail("context shift", s);
      memmove(tokens + o->keep, tokens + o->keep + drop,
              (size_t)(pos - o->keep - drop) * sizeof tokens[0]);
      ++shifts;
    }
    if (api->position(&model) < KILN_MAX_CONTEXT)
      tokens[api->position(&model)] = next;
    s = api->decode(&model, next, logits);
    if (s != KILN_OK)
      return fail("decode", s);
    ++decoded;
    if (dump_rows(dump, logits, 1))
      return fail(o->dump, KILN_ERR_IO);
  }
  t2 = now();
  printf("\n");
  fflush(stdout);
  if (dump)
    fclose(dump);
  fprintf(stderr,
          "prefill: %d tokens, %.1f tokens/s; time to first token %.2f ms\n"
          "generated %d tokens; decode: %.1f tokens/s; context shifts: %d\n"
          "arena: %lu bytes; pack: %llu bytes; peak RSS: %ld KiB\n",
          (int)n_prompt, n_prompt / (t1 - t0), (t1 - t0) * 1e3, (int)generated,
          decoded > 0 ? decoded / (t2 - t1) : 0.0, (int)shifts, (unsigned long)api->arena_bytes,
          (unsigned long long)api->pack_bytes, peak_rss_kib());
  return 0;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  long size;
  if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (text = malloc((size_t)size + 1)) && fread(text, 1, (size_t)size, f) == (size_t)size) {
    *len = (size_t)size;
  } else {
    free(text);
    text = NULL;
  }
  if (f)
    fclose(f);
  return text;
}

/* log of the sum of exp(row), in double, shifted by the row's maximum. */
static double log_sum_exp(const float *row) {
  double mx = row[0], sum = 0.0;
  int32_t i;
  for (i = 1; i < KILN_VOCAB; ++i)
    if (row[i] > mx)
      mx = row[i];
  for (i = 0; i < KILN_VOCAB; ++i)
    sum += exp((double)row[i] - mx);
  return mx + log(sum);
}

/* KL(base || row) of the two softmax distributions. */
static double kl_divergence(const float *base, const float *row) {
  double lb = log_sum_exp(base), lr = log_sum_exp(row), kl = 0.0;
  int32_t i;
  for (i = 0; i < KILN_VOCAB; ++i) {
    double pb = (double)base[i] - lb;
    kl += exp(pb) * (pb - ((double)row[i] - lr));
  }
  return kl;
}

static int perplexity(const kiln_model_api *api, const kiln_tokenizer *t, const options *o) {
  static float base[KILN_VOCAB];
  size_t len;
  char *text = read_file(o->perplexity, &len);
  int32_t *ids, n_ids = 0, chunks, c, j, done;
  double total = 0.0, kl = 0.0, t0;
  FILE *dump = NULL, *kl_base = NULL;
  kiln_status s;

  if (!text) {
    perror(o->perplexity);
    return 1;
  }
  if (o->ctx < 2 || o->ctx > KILN_MAX_CONTEXT) {
    fprintf(stderr, "kiln-generate: --ctx must be in [2, %d]\n", KILN_MAX_CONTEXT);
    return 2;
  }
  if ((o->dump && !(dump = fopen(o->dump, "wb"))) ||
      (o->kl_base && !(kl_base = fopen(o->kl_base, "rb")))) {
    perror(o->dump && !dump ? o->dump : o->kl_base);
    return 1;
  }
  ids = malloc(sizeof(int32_t) * (3 * len + 5));
  s = ids ? encode(t, text, len, 0, ids, (int32_t)(3 * len + 5), &n_ids) : KILN_ERR_ARGUMENT;
  free(text);
  if (s != KILN_OK)
    return fail(o->perplexity, s);
  chunks = n_ids / o->ctx;
  if (o->chunks > 0 && o->chunks < chunks)
    chunks = o->chunks;
  if (chunks == 0) {
    fprintf(stderr, "kiln-generate: %s: fewer than %d tokens\n", o->perplexity, o->ctx);
    return 1;
  }
  t0 = now();
  for (c = 0; c < chunks; ++c) {
    const int32_t *chunk = ids + (size_t)c * o->ctx;
    api->reset(&model);
    tokens[0] = api->bos;
    memcpy(tokens + 1, chunk, sizeof(int32_t) * (size_t)(o->ctx - 1));
    /* Logits at position j predict chunk[j]: every token of the chunk is scored. */
    for (done = 0; done < o->ctx; done += j) {
      int32_t n = o->ctx - done < KILN_PREFILL_CHUNK ? o->ctx - done : KILN_PREFILL_CHUNK;
      s = api->prefill(&model, tokens + done, n, logits);
      if (s != KILN_OK)
        return fail("perplexity", s);
      if (dump_rows(dump, logits, n))
        return fail(o->dump, KILN_ERR_IO);
      for (j = 0; j < n; ++j) {
        const float *row = logits + (size_t)j * KILN_VOCAB;
        total += log_sum_exp(row) - (double)row[chunk[done + j]];
        if (kl_base) {
          if (fread(base, sizeof base, 1, kl_base) != 1) {
            fprintf(stderr, "kiln-generate: %s: fewer rows than evaluated\n", o->kl_base);
            return 1;
          }
          kl += kl_divergence(base, row);
        }
      }
    }
  }
  printf("perplexity: %.6f (mean NLL %.6f nats over %d tokens, %d chunks of %d)\n",
         exp(total / ((double)chunks * o->ctx)), total / ((double)chunks * o->ctx),
         (int)(chunks * o->ctx), (int)chunks, (int)o->ctx);
  if (kl_base) {
    printf("mean KL divergence from %s: %.6g nats\n", o->kl_base,
           kl / ((double)chunks * o->ctx));
    fclose(kl_base);
  }
  if (dump)
    fclose(dump);
  fprintf(stderr, "evaluated %.1f tokens/s\n", chunks * o->ctx / (now() - t0));
  free(ids);
  return 0;
}

/* Samples and prints a reply from the logits of the prompt just evaluated,
 * until an end-of-generation token or n tokens; the tokens are decoded into the
 * cache but for the last one (an end of turn is left to the next prompt). */
static kiln_status reply(const kiln_model_api *api, const kiln_tokenizer *t, kiln_sampler *sampler,
                         int32_t n) {
  static uint8_t sampler_work[4 * KILN_VOCAB + 64];
  int32_t i, next;
  kiln_status s;
  for (i = 0; i < n; ++i) {
    s = kiln_sampler_sample(sampler, logits, KILN_VOCAB, tokens, api->position(&model),
                            sampler_work, sizeof sampler_work, &next);
    if (s != KILN_OK || kiln_tokenizer_is_eog(t, next))
      return s;
    print_piece(t, next, 0);
    if (api->position(&model) >= KILN_MAX_CONTEXT)
      return KILN_ERR_CONTEXT_FULL;
    tokens[api->position(&model)] = next;
    s = api->decode(&model, next, logits);
    if (s != KILN_OK)
      return s;
  }
  return KILN_OK;
}

/* --chat: each line of stdin is a user turn, formatted with the model's
 * template and answered; the KV cache keeps the whole conversation. */
static int chat(const kiln_model_api *api, const kiln_tokenizer *t, const options *o) {
  static char line[16384];
  kiln_sampler sampler;
  kiln_status s;
  int first = 1;
  uint32_t template_ = kiln_tokenizer_chat(t);

  if (template_ == KILN_CHAT_NONE) {
    fprintf(stderr, "kiln-generate: --chat: the model has no chat template Kiln knows "
                    "(tokenizer.chat_template; known: llama3, chatml, gemma, phi3)\n");
    return 1;
  }
  s = kiln_sampler_init(&sampler, &o->sampling);
  if (s != KILN_OK)
    return fail("sampling options", s);
  while (fgets(line, sizeof line, stdin)) {
    size_t len = strcspn(line, "\r\n"), n = 0;
    int32_t pos = api->position(&model), n_ids = 0;
    char *text;
    line[len] = 0;
    if (len == 0)
      continue;
    kiln_chat_prompt(template_, first, first ? o->system : NULL, line, NULL, 0, &n);
    text = malloc(n + 1);
    if (!text || kiln_chat_prompt(template_, first, first ? o->system : NULL, line, text, n, &n) !=
                     KILN_OK)
      return fail("chat prompt", KILN_ERR_ARGUMENT);
    s = encode(t, text, n, KILN_TOKENIZE_PARSE_SPECIAL | (first ? KILN_TOKENIZE_ADD_SPECIAL : 0),
               tokens + pos, KILN_MAX_CONTEXT - pos, &n_ids);
    free(text);
    if (s != KILN_OK)
      return fail("the conversation no longer fits the context", s);
    s = api->prefill_last(&model, tokens + pos, n_ids, logits);
    if (s == KILN_OK)
      s = reply(api, t, &sampler, o->n_generate);
    printf("\n");
    fflush(stdout);
    if (s != KILN_OK)
      return fail("reply", s);
    first = 0;
  }
  return 0;
}

#if KILN_THREADS > 1
static kiln_pool pool;
#endif

/* Gives the model o->threads workers; 0 when that many cannot be had. */
static int start_threads(const options *o) {
  if (o->threads > KILN_MODEL_API.threads) {
    fprintf(stderr, "kiln-generate: -t %d: the model was compiled for at most %d thread%s "
            "(kiln-compile --threads)\n", (int)o->threads, (int)KILN_MODEL_API.threads,
            KILN_MODEL_API.threads == 1 ? "" : "s");
    return 0;
  }
#if KILN_THREADS > 1
  {
    kiln_workers w;
    kiln_status s = kiln_pool_start(&pool, o->threads);
    if (s != KILN_OK) {
      fail("starting threads", s);
      return 0;
    }
    w = kiln_pool_workers(&pool);
    KILN_MODEL_API.set_workers(&model, &w);
  }
#endif
  return 1;
}

int main(int argc, char **argv) {
  const kiln_model_api *api = &KILN_MODEL_API;
  kiln_pack_source src;
  kiln_tokenizer tok;
  kiln_status s;
  options o;
  int rc;

  if (!parse(argc, argv, &o)) {
    usage();
    return 2;
  }
  s = kiln_pack_source_open_file(&src, o.pack);
  if (s != KILN_OK)
    return fail(o.pack, s);
  arena_large_pages();
  s = api->open(&model, &src, arena, sizeof arena);
  if (s != KILN_OK)
    return fail(o.pack, s);
  s = api->tokenizer(&model, &tok);
  if (s != KILN_OK)
    return fail(o.pack, s);
#ifdef KILN_PROFILE
  model.clock = clock_ns;
#endif
  if (!start_threads(&o))
    return 1;
  rc = o.perplexity ? perplexity(api, &tok, &o) : o.chat ? chat(api, &tok, &o)
                                                         : generate(api, &tok, &o);
#ifdef KILN_PROFILE
  print_profile();
  if (o.profile && !write_profile(o.profile, o.bandwidth_gbs))
    rc = 1;
#else
  if (o.profile) {
    fprintf(stderr, "kiln-generate: --profile needs a build with -DKILN_PROFILE=ON\n");
    rc = 1;
  }
#endif
  api->close(&model);
#if KILN_THREADS > 1
  kiln_pool_stop(&pool);
#endif
  kiln_pack_source_close(&src);
  return rc;
}
