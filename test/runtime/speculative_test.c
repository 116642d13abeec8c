/* Speculative sampling's rule (kiln_sampler_verify) keeps the target's
 * distribution: over many draws with fixed seeds on a 6-token vocabulary, the
 * tokens it gives follow p by a chi-square test (5 degrees of freedom, 0.1%
 * critical value 20.52), for drafts drawn from another distribution q and for
 * a deterministic draft; its acceptance rate is sum(min(p, q)) (resp. p of the
 * draft) within 4 standard deviations. kiln_sampler_probs is checked the same
 * way against kiln_sampler_sample's own draws. */
#include "kiln/kiln_sampler.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define V 6
#define DRAWS 200000

static int failed;
static unsigned char work[4 * V + 64];

static void check(int ok, const char *what, double value) {
  printf("%s %s: %.4g\n", ok ? "PASS" : "FAIL", what, value);
  failed |= !ok;
}

static double chi_square(const long *counts, const float *p) {
  double x = 0.0;
  int i;
  for (i = 0; i < V; ++i) {
    double want = (double)DRAWS * p[i];
    if (want > 0.0)
      x += (counts[i] - want) * (counts[i] - want) / want;
    else if (counts[i] > 0)
      return INFINITY;
  }
  return x;
}

static void sampler(kiln_sampler *s, float temperature, int32_t top_k, uint64_t seed) {
  kiln_sampler_params p;
  kiln_sampler_default_params(&p);
  p.temperature = temperature;
  p.top_k = top_k;
  p.seed = seed;
  kiln_sampler_init(s, &p);
}

static void probs_of(const kiln_sampler *s, const float *logits, float *p) {
  float l[V];
  memcpy(l, logits, sizeof l);
  kiln_sampler_probs(s, l, V, NULL, 0, work, sizeof work, p);
}

int main(void) {
  static const float target_logits[V] = {1.0f, 2.5f, 0.3f, 2.0f, -1.0f, 1.7f};
  static const float draft_logits[V] = {2.0f, 1.0f, 0.5f, 2.4f, 0.0f, 0.2f};
  kiln_sampler a, b;
  float p[V], q[V], l[V];
  long counts[V];
  double accepted, want;
  int32_t i, n, x, token;
  int ok;

  /* kiln_sampler_probs is the distribution of kiln_sampler_sample. */
  sampler(&a, 0.8f, 4, 7);
  probs_of(&a, target_logits, p);
  memset(counts, 0, sizeof counts);
  for (n = 0; n < DRAWS; ++n) {
    memcpy(l, target_logits, sizeof l);
    kiln_sampler_sample(&a, l, V, NULL, 0, work, sizeof work, &token);
    ++counts[token];
  }
  check(chi_square(counts, p) < 20.52, "probs: sample's own draws, chi-square", chi_square(counts, p));

  /* Drafts from q, verified against p. */
  sampler(&a, 0.9f, 0, 11);
  sampler(&b, 1.1f, 0, 13);
  probs_of(&a, target_logits, p);
  probs_of(&b, draft_logits, q);
  memset(counts, 0, sizeof counts);
  accepted = 0.0;
  for (n = 0; n < DRAWS; ++n) {
    kiln_sampler_draw(&b, q, V, &x);
    kiln_sampler_verify(&a, p, q, V, x, &token, &ok);
    accepted += ok;
    ++counts[token];
  }
  check(chi_square(counts, p) < 20.52, "drafts from q: the tokens follow p, chi-square",
        chi_square(counts, p));
  for (want = 0.0, i = 0; i < V; ++i)
    want += p[i] < q[i] ? p[i] : q[i];
  check(fabs(accepted / DRAWS - want) < 4.0 * sqrt(want * (1.0 - want) / DRAWS),
        "drafts from q: acceptance sum(min(p, q))", accepted / DRAWS - want);

  /* A deterministic draft (prompt lookup): token 3 every time. */
  memset(counts, 0, sizeof counts);
  accepted = 0.0;
  for (n = 0; n < DRAWS; ++n) {
    kiln_sampler_verify(&a, p, NULL, V, 3, &token, &ok);
    accepted += ok;
    ++counts[token];
  }
  check(chi_square(counts, p) < 20.52, "a deterministic draft: the tokens follow p, chi-square",
        chi_square(counts, p));
  check(fabs(accepted / DRAWS - p[3]) < 4.0 * sqrt(p[3] * (1.0 - p[3]) / DRAWS),
        "a deterministic draft: acceptance p(draft)", accepted / DRAWS - p[3]);

  /* Greedy: one-hot at the argmax; a bad draft id is refused. */
  sampler(&a, 0.0f, 0, 1);
  probs_of(&a, target_logits, p);
  check(p[1] == 1.0f && p[0] == 0.0f, "greedy probs: one-hot at the argmax", p[1]);
  check(kiln_sampler_verify(&a, p, NULL, V, V, &token, &ok) == KILN_ERR_ARGUMENT,
        "a draft outside the vocabulary is refused", 0);
  return failed;
}
