/* kiln-generate in a KILN_PROFILE build: the kernel calls' times as the model
 * counted them, printed as a summary and written as FILE.json and a layer x
 * kernel heatmap FILE.html (--profile). Empty in other builds. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "kiln_generate.h"

#ifdef KILN_PROFILE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const char *const KILN_PROFILE_NAMES[KILN_PROFILE_SITES];
extern const uint64_t KILN_PROFILE_WEIGHT_BYTES[KILN_PROFILE_SITES];

uint64_t clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The kernel calls that took longest, from the model's per-call times. */
void print_profile(void) {
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
int write_profile(const char *html, double bandwidth_gbs) {
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
