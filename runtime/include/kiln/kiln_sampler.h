/* Kiln runtime: next-token sampler.
 *
 * Pure C99 with libm only: no heap, no globals, no I/O. The caller owns the
 * sampler struct and a work buffer (arena or static storage) sized by
 * kiln_sampler_work_bytes.
 *
 * The procedure is fully specified so that a seed gives the same tokens on
 * every IEEE-754 target (float arithmetic without fast-math; the only libm
 * call is expf, so targets whose expf rounds differently may differ in rare
 * boundary cases). One call to kiln_sampler_sample does, in order:
 *
 *  1. Repetition penalty: each distinct token among the last repeat_last_n
 *     entries of history (all of it when repeat_last_n is -1) has its logit
 *     divided by repeat_penalty when positive, multiplied when not. Skipped
 *     when repeat_penalty is 1 or the window is empty. NaN logits then count
 *     as -infinity.
 *  2. temperature <= 0: greedy argmax, ties to the lowest id; no random draw.
 *  3. Otherwise candidates: the top_k best by (logit desc, id asc), or all
 *     tokens when top_k is 0 or >= vocab. Candidate order is that sorted
 *     order when top_k or top_p truncates, and id order otherwise.
 *  4. Softmax with temperature: e_i = expf((l_i - l_max) / T); sum = the e_i
 *     added one by one, in candidate order under top_k truncation and in id
 *     order otherwise; p_i = e_i / sum.
 *  5. top_p < 1: keep the shortest prefix (in candidate order) whose running
 *     sum of p_i is >= top_p; at least one candidate.
 *  6. Draw: u = (pcg32() >> 8) * 2^-24 in [0,1); target = u * W, where W is
 *     the running sum of the kept p_i in candidate order; the token is the
 *     first kept candidate whose running sum exceeds target (the last one
 *     with p_i > 0 if rounding leaves none). When l_max is infinite the best
 *     candidate is taken, but the draw is still made: every non-greedy call
 *     consumes exactly one pcg32 output.
 *
 * The generator is PCG32 (XSH-RR, 64-bit LCG with multiplier
 * 6364136223846793005 and fixed increment 1442695040888963407), seeded as
 * the reference pcg32_srandom_r: state = 0, step, state += seed, step.
 *
 * Note: temperature is applied before top-p (the nucleus is taken from the
 * tempered distribution), as in Hugging Face; llama.cpp's default chain
 * applies temperature after top-p. */
#ifndef KILN_KILN_SAMPLER_H
#define KILN_KILN_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_sampler_params {
  float temperature;     /* <= 0: greedy; must not be NaN */
  int32_t top_k;         /* 0: off; must be >= 0 */
  float top_p;           /* >= 1: off; must be >= 0 */
  float repeat_penalty;  /* 1: off; must be finite and > 0 */
  int32_t repeat_last_n; /* history window; 0: off, -1: all of it */
  uint64_t seed;
} kiln_sampler_params;

typedef struct kiln_sampler {
  kiln_sampler_params p; /* may change between calls (checked on each); seed is read by init only */
  uint64_t rng_state;    /* PCG32 state */
} kiln_sampler;

/* Greedy, no truncation, no penalty (repeat_last_n 64 for when it is
 * enabled), seed 0. */
void kiln_sampler_default_params(kiln_sampler_params *p);

/* Copies *p and seeds the generator from p->seed. KILN_ERR_ARGUMENT on NULL
 * or out-of-range parameters (then *s is untouched). */
kiln_status kiln_sampler_init(kiln_sampler *s, const kiln_sampler_params *p);

/* Work buffer size for a vocabulary: an int32 per token plus alignment
 * slack, so any address will do. 0 when vocab <= 0 or too large. */
size_t kiln_sampler_work_bytes(int32_t vocab);

/* Picks the next token from logits[vocab] and stores it in *token. history
 * holds the n_history tokens so far (may be NULL when n_history is 0); those
 * in the penalty window must lie in [0, vocab). logits is overwritten with
 * intermediate values. KILN_ERR_ARGUMENT on NULL pointers, bad counts or
 * parameters, a window token outside the vocabulary, or work_bytes below
 * kiln_sampler_work_bytes(vocab); then logits, the generator and *token are
 * untouched. */
kiln_status kiln_sampler_sample(kiln_sampler *s, float *logits, int32_t vocab,
                                const int32_t *history, int32_t n_history, void *work,
                                size_t work_bytes, int32_t *token);

/* Speculative sampling: the distribution kiln_sampler_sample draws from.
 * kiln_sampler_probs does steps 1-5 and writes probs[vocab]: each kept
 * candidate's p_i over the kept total, 0 elsewhere (greedy, or an infinite
 * logit: 1 on the token step 2 or 3 picks). It draws nothing. */
kiln_status kiln_sampler_probs(const kiln_sampler *s, float *logits, int32_t vocab,
                               const int32_t *history, int32_t n_history, void *work,
                               size_t work_bytes, float *probs);

/* One token from probs[vocab] (not necessarily summing to 1), as step 6:
 * one pcg32 output. */
kiln_status kiln_sampler_draw(kiln_sampler *s, const float *probs, int32_t vocab, int32_t *token);

/* The standard speculative rule for a drafted token drawn from q (NULL: a
 * deterministic draft, q one-hot at `draft`): accepted (*accepted = 1, *token =
 * draft) when u * q[draft] < p[draft] for one uniform draw; else *token is
 * drawn from the residual max(0, p - q), normalized (a second draw). The
 * tokens it gives are distributed as p, whatever q. */
kiln_status kiln_sampler_verify(kiln_sampler *s, const float *p, const float *q, int32_t vocab,
                                int32_t draft, int32_t *token, int *accepted);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_SAMPLER_H */
