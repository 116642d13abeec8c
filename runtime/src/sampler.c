/* Next-token sampler; the procedure and its float operation order are
 * specified in kiln_sampler.h and mirrored by test/runtime/sampler_reference.py,
 * so keep the two in step. Every float result is assigned to a float
 * variable before further use: C99 then rounds it even on targets that
 * evaluate in wider precision, and no statement has a multiply-add to fuse. */
#include "kiln/kiln_sampler.h"

#include <math.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define PCG32_MULT UINT64_C(6364136223846793005)
#define PCG32_INC UINT64_C(1442695040888963407)

/* PCG32 XSH-RR: output from the old state, then one LCG step. */
static uint32_t pcg32_next(uint64_t *state) {
  uint64_t old = *state;
  uint32_t xorshifted, rot;

  *state = old * PCG32_MULT + PCG32_INC;
  xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
  rot = (uint32_t)(old >> 59);
  return (xorshifted >> rot) | (xorshifted << ((0u - rot) & 31u));
}

static uint64_t pcg32_seed(uint64_t seed) {
  uint64_t state = 0;

  (void)pcg32_next(&state);
  state += seed;
  (void)pcg32_next(&state);
  return state;
}

static int params_valid(const kiln_sampler_params *p) {
  /* Written as positive tests so NaN fails each of them. */
  if (!(p->temperature <= 0.0f || (p->temperature > 0.0f && !isinf(p->temperature))))
    return 0;
  if (p->top_k < 0)
    return 0;
  if (!(p->top_p >= 0.0f))
    return 0;
  if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty))
    return 0;
  if (p->repeat_last_n < -1)
    return 0;
  return 1;
}

void kiln_sampler_default_params(kiln_sampler_params *p) {
  if (p == NULL)
    return;
  p->temperature = 0.0f;
  p->top_k = 0;
  p->top_p = 1.0f;
  p->repeat_penalty = 1.0f;
  p->repeat_last_n = 64;
  p->seed = 0;
}

kiln_status kiln_sampler_init(kiln_sampler *s, const kiln_sampler_params *p) {
  if (s == NULL || p == NULL || !params_valid(p))
    return KILN_ERR_ARGUMENT;
  s->p = *p;
  s->rng_state = pcg32_seed(p->seed);
  return KILN_OK;
}

/* The work buffer holds one int32 candidate id per token; the slack lets any
 * caller address be rounded up to int32 alignment. */
#define WORK_SLACK (sizeof(int32_t) - 1u)

size_t kiln_sampler_work_bytes(int32_t vocab) {
  if (vocab <= 0 || (uint64_t)vocab > (uint64_t)((SIZE_MAX - WORK_SLACK) / sizeof(int32_t)))
    return 0;
  return (size_t)vocab * sizeof(int32_t) + WORK_SLACK;
}

static int32_t *align_work(void *work) {
  unsigned char *p = (unsigned char *)work;
  size_t mis = (size_t)((uintptr_t)p % sizeof(int32_t));

  if (mis != 0)
    p += sizeof(int32_t) - mis;
  return (int32_t *)(void *)p;
}

/* Total order used everywhere: higher logit first, then lower id. Logits are
 * NaN-free by the time this is called, so neither < nor > means equal. */
static int better(const float *l, int32_t a, int32_t b) {
  if (l[a] > l[b])
    return 1;
  if (l[a] < l[b])
    return 0;
  return a < b;
}

/* Min-heap on `better`: the root is the worst of c[0..n). */
static void sift_down(int32_t *c, size_t n, size_t i, const float *l) {
  for (;;) {
    size_t worst = i, left, right;
    int32_t tmp;

    if (i >= n / 2)
      return; /* no children; also keeps 2i+1 from overflowing */
    left = 2 * i + 1;
    right = left + 1;
    if (better(l, c[worst], c[left]))
      worst = left;
    if (right < n && better(l, c[worst], c[right]))
      worst = right;
    if (worst == i)
      return;
    tmp = c[i];
    c[i] = c[worst];
    c[worst] = tmp;
    i = worst;
  }
}

/* Leaves the k best ids of [0, vocab) in c[0..k), best first: a bounded
 * heap keeps the k best seen, then heapsort orders them. O(V log k). */
static void select_sorted(int32_t *c, int32_t k, int32_t vocab, const float *l) {
  size_t n = (size_t)k, i, end;
  int32_t id, tmp;

  for (i = 0; i < n; i++)
    c[i] = (int32_t)i;
  for (i = n / 2; i-- > 0;)
    sift_down(c, n, i, l);
  for (id = k; id < vocab; id++) {
    if (better(l, id, c[0])) {
      c[0] = id;
      sift_down(c, n, 0, l);
    }
  }
  /* Moving the root to the back repeatedly puts the worst last. */
  for (end = n; end-- > 1;) {
    tmp = c[0];
    c[0] = c[end];
    c[end] = tmp;
    sift_down(c, end, 0, l);
  }
}

/* Validates the tokens in the penalty window; 0 on a token outside the
 * vocabulary. Nothing is modified here, so errors leave logits intact. */
static int window_valid(const int32_t *w, int32_t n, int32_t vocab) {
  int32_t i;

  for (i = 0; i < n; i++)
    if (w[i] < 0 || w[i] >= vocab)
      return 0;
  return 1;
}

/* Each distinct token once: a bitmap in the work buffer marks those done. */
static void apply_penalty(float *logits, int32_t vocab, const int32_t *w, int32_t n, float penalty,
                          unsigned char *seen) {
  int32_t i;

  memset(seen, 0, ((size_t)vocab + 7u) / 8u);
  for (i = 0; i < n; i++) {
    int32_t t = w[i];
    unsigned char bit = (unsigned char)(1u << (t & 7));
    float v;

    if (seen[t >> 3] & bit)
      continue;
    seen[t >> 3] |= bit;
    v = logits[t];
    if (v > 0.0f)
      v = v / penalty;
    else
      v = v * penalty;
    logits[t] = v;
  }
}

/* First index of the maximum, i.e. the best under `better`. The running
 * maximum is kept in a local so each step does not wait on reloading it. */
static int32_t argmax(const float *logits, int32_t vocab) {
  int32_t best = 0, i;
  float best_value = logits[0];

  for (i = 1; i < vocab; i++) {
    if (logits[i] > best_value) {
      best = i;
      best_value = logits[i];
    }
  }
  return best;
}

/* e = expf((l - lmax) / T), one rounding per step. */
static float weight(float l, float lmax, float temperature) {
  float x = l - lmax;
  float e;

  x = x / temperature;
  e = expf(x);
  return e;
}

/* Step 6: draws from the probabilities pr[id] of ids c[0..n) (ids 0..n when
 * c is NULL), whose running sum in that order is total. */
static int32_t draw_from(const float *pr, const int32_t *c, int32_t n, float total, uint32_t r) {
  float u = (float)(r >> 8);
  float target, cum = 0.0f;
  int32_t i, last_positive = c != NULL ? c[0] : 0;

  u = u * (1.0f / 16777216.0f);
  target = u * total;
  for (i = 0; i < n; i++) {
    int32_t id = c != NULL ? c[i] : i;
    float pi = pr[id];

    cum = cum + pi;
    if (pi > 0.0f)
      last_positive = id;
    if (target < cum)
      return id;
  }
  return last_positive;
}

/* Steps 3-5's result: the kept candidates c[0..n) (ids 0..n when c is NULL),
 * their p_i stored at l[id], summing to total in that order; or only >= 0
 * when an infinite logit leaves one token. */
typedef struct kept_set {
  const int32_t *c;
  int32_t n;
  float total;
  int32_t only;
} kept_set;

static kept_set kept_one(int32_t id) {
  kept_set k;
  k.c = NULL;
  k.n = 0;
  k.total = 0.0f;
  k.only = id;
  return k;
}

static kept_set kept_of(const int32_t *c, int32_t n, float total) {
  kept_set k;
  k.c = c;
  k.n = n;
  k.total = total;
  k.only = -1;
  return k;
}

/* top_k truncates: steps 4-5 over the k best, all in sorted order. */
static kept_set keep_top_k(const kiln_sampler_params *p, float *l, int32_t vocab, int32_t *c) {
  int32_t n = p->top_k, kept, i;
  float lmax, sum = 0.0f, cum = 0.0f;

  select_sorted(c, n, vocab, l);
  lmax = l[c[0]];
  if (isinf(lmax))
    return kept_one(c[0]); /* softmax is undefined; its limit picks the best */
  for (i = 0; i < n; i++) {
    float e = weight(l[c[i]], lmax, p->temperature);
    l[c[i]] = e;
    sum = sum + e;
  }
  for (i = 0; i < n; i++)
    l[c[i]] = l[c[i]] / sum;
  kept = n;
  for (i = 0; i < n; i++) {
    cum = cum + l[c[i]];
    if (p->top_p < 1.0f && cum >= p->top_p) {
      kept = i + 1;
      break;
    }
  }
  return kept_of(c, kept, cum);
}

/* top_p alone: the nucleus is a prefix of the full sorted order, so sort
 * only the best m tokens and grow m until the prefix reaches top_p; the
 * result equals a full sort at O(V log m) cost. sum is over all tokens in id
 * order, so it does not depend on m. */
static kept_set keep_nucleus(const kiln_sampler_params *p, float *l, int32_t vocab, int32_t *c,
                             float lmax, float sum) {
  int32_t m = vocab < 64 ? vocab : 64, kept, i;
  float cum;

  for (;;) {
    select_sorted(c, m, vocab, l);
    cum = 0.0f;
    kept = m;
    for (i = 0; i < m; i++) {
      float e = weight(l[c[i]], lmax, p->temperature);
      float pi = e / sum;
      cum = cum + pi;
      if (cum >= p->top_p) {
        kept = i + 1;
        break;
      }
    }
    if (i < m || m == vocab)
      break;
    m = m > vocab / 4 ? vocab : m * 4;
  }
  /* The logits are no longer needed as sort keys: store the kept p_i. */
  for (i = 0; i < kept; i++) {
    float e = weight(l[c[i]], lmax, p->temperature);
    l[c[i]] = e / sum;
  }
  return kept_of(c, kept, cum);
}

/* Steps 3-5 of the header's procedure. c has room for vocab ids. */
static kept_set keep_candidates(const kiln_sampler_params *p, float *l, int32_t vocab, int32_t *c) {
  int32_t best, i;
  float lmax, sum = 0.0f, cum = 0.0f;

  if (p->top_k > 0 && p->top_k < vocab)
    return keep_top_k(p, l, vocab, c);
  best = argmax(l, vocab);
  lmax = l[best];
  if (isinf(lmax))
    return kept_one(best);
  if (p->top_p < 1.0f) {
    for (i = 0; i < vocab; i++) {
      float e = weight(l[i], lmax, p->temperature);
      sum = sum + e;
    }
    return keep_nucleus(p, l, vocab, c, lmax, sum);
  }
  /* No truncation: no sort, everything in id order. */
  for (i = 0; i < vocab; i++) {
    float e = weight(l[i], lmax, p->temperature);
    l[i] = e;
    sum = sum + e;
  }
  for (i = 0; i < vocab; i++) {
    l[i] = l[i] / sum;
    cum = cum + l[i];
  }
  return kept_of(NULL, vocab, cum);
}

/* Steps 3-6. */
static int32_t sample_candidates(const kiln_sampler_params *p, uint32_t r, float *l, int32_t vocab,
                                 int32_t *c) {
  kept_set k = keep_candidates(p, l, vocab, c);
  return k.only >= 0 ? k.only : draw_from(l, k.c, k.n, k.total, r);
}

/* Checks the arguments and does step 1 (and NaN to -infinity) in place; *c
 * gets the aligned work buffer. */
static kiln_status prepare(const kiln_sampler *s, float *logits, int32_t vocab,
                           const int32_t *history, int32_t n_history, void *work,
                           size_t work_bytes, int32_t **c) {
  size_t need = kiln_sampler_work_bytes(vocab);
  const int32_t *window;
  int32_t n_window, i;
  const kiln_sampler_params *p;

  if (s == NULL || logits == NULL || work == NULL || need == 0)
    return KILN_ERR_ARGUMENT;
  if (work_bytes < need || n_history < 0 || (history == NULL && n_history > 0))
    return KILN_ERR_ARGUMENT;
  p = &s->p;
  if (!params_valid(p))
    return KILN_ERR_ARGUMENT;

  n_window = n_history;
  if (p->repeat_last_n >= 0 && p->repeat_last_n < n_window)
    n_window = p->repeat_last_n;
  window = n_window > 0 ? history + (n_history - n_window) : NULL; /* no NULL + 0 */
  if (n_window > 0 && !window_valid(window, n_window, vocab))
    return KILN_ERR_ARGUMENT;

  *c = align_work(work);
  if (n_window > 0 && p->repeat_penalty != 1.0f)
    apply_penalty(logits, vocab, window, n_window, p->repeat_penalty, (unsigned char *)*c);
  for (i = 0; i < vocab; i++)
    if (isnan(logits[i]))
      logits[i] = -INFINITY;
  return KILN_OK;
}

kiln_status kiln_sampler_sample(kiln_sampler *s, float *logits, int32_t vocab,
                                const int32_t *history, int32_t n_history, void *work,
                                size_t work_bytes, int32_t *token) {
  int32_t *c;
  kiln_status st;

  if (token == NULL)
    return KILN_ERR_ARGUMENT;
  st = prepare(s, logits, vocab, history, n_history, work, work_bytes, &c);
  if (st != KILN_OK)
    return st;
  if (s->p.temperature <= 0.0f) {
    *token = argmax(logits, vocab);
    return KILN_OK;
  }
  *token = sample_candidates(&s->p, pcg32_next(&s->rng_state), logits, vocab, c);
  return KILN_OK;
}

kiln_status kiln_sampler_probs(const kiln_sampler *s, float *logits, int32_t vocab,
                               const int32_t *history, int32_t n_history, void *work,
                               size_t work_bytes, float *probs) {
  int32_t *c, i;
  kept_set k;
  kiln_status st;

  if (probs == NULL)
    return KILN_ERR_ARGUMENT;
  st = prepare(s, logits, vocab, history, n_history, work, work_bytes, &c);
  if (st != KILN_OK)
    return st;
  k = s->p.temperature <= 0.0f ? kept_one(argmax(logits, vocab))
                               : keep_candidates(&s->p, logits, vocab, c);
  for (i = 0; i < vocab; i++)
    probs[i] = 0.0f;
  if (k.only >= 0) {
    probs[k.only] = 1.0f;
    return KILN_OK;
  }
  for (i = 0; i < k.n; i++) {
    int32_t id = k.c != NULL ? k.c[i] : i;
    probs[id] = logits[id] / k.total;
  }
  return KILN_OK;
}

/* u in [0,1) from one pcg32 output, as step 6. */
static float uniform(uint64_t *state) {
  return (float)(pcg32_next(state) >> 8) * (1.0f / 16777216.0f);
}

kiln_status kiln_sampler_draw(kiln_sampler *s, const float *probs, int32_t vocab,
                              int32_t *token) {
  float total = 0.0f;
  int32_t i;
  if (s == NULL || probs == NULL || token == NULL || vocab <= 0)
    return KILN_ERR_ARGUMENT;
  for (i = 0; i < vocab; i++)
    total = total + probs[i];
  if (!(total > 0.0f))
    return KILN_ERR_ARGUMENT;
  *token = draw_from(probs, NULL, vocab, total, pcg32_next(&s->rng_state));
  return KILN_OK;
}

/* The residual max(0, p_i - q_i), with q one-hot at `draft` when q is NULL. */
static float residual(const float *p, const float *q, int32_t i, int32_t draft) {
  float d = p[i] - (q != NULL ? q[i] : i == draft ? 1.0f : 0.0f);
  return d > 0.0f ? d : 0.0f;
}

kiln_status kiln_sampler_verify(kiln_sampler *s, const float *p, const float *q, int32_t vocab,
                                int32_t draft, int32_t *token, int *accepted) {
  float px, qx, total = 0.0f, target, cum = 0.0f;
  int32_t i, last = draft;
  if (s == NULL || p == NULL || token == NULL || accepted == NULL || draft < 0 || draft >= vocab)
    return KILN_ERR_ARGUMENT;
  px = p[draft];
  qx = q != NULL ? q[draft] : 1.0f;
  if (qx > 0.0f && uniform(&s->rng_state) * qx < px) {
    *token = draft;
    *accepted = 1;
    return KILN_OK;
  }
  *accepted = 0;
  for (i = 0; i < vocab; i++)
    total = total + residual(p, q, i, draft);
  if (!(total > 0.0f)) /* p equals q: any draw from p is right */
    return kiln_sampler_draw(s, p, vocab, token);
  target = uniform(&s->rng_state) * total;
  for (i = 0; i < vocab; i++) {
    float r = residual(p, q, i, draft);
    cum = cum + r;
    if (r > 0.0f)
      last = i;
    if (target < cum) {
      *token = i;
      return KILN_OK;
    }
  }
  *token = last;
  return KILN_OK;
}
