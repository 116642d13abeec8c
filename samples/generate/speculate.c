/* kiln-generate --draft-lookup D: greedy generation with prompt-lookup drafts.
 * The last few tokens of the context are looked up earlier in it; the D tokens
 * that followed there are the draft. One prefill pass scores the current token
 * and the draft together, the longest prefix of the draft that greedy choice
 * would have produced is kept with the target's own next token, and the model
 * rolls back over the rest (truncate). The text is plain greedy's, token for
 * token; a pass that accepts drafts costs about one decode. */
#include "kiln_generate.h"

#include <string.h>

/* A generated token as generate prints it: an id after --tokens, else text. */
static void emit(const kiln_tokenizer *t, const options *o, int32_t id, int32_t nth) {
  if (o->ids)
    printf("%s%d", nth ? "," : "ids: ", (int)id);
  else
    print_piece(t, id, 0);
}

/* Drafts for the context tokens[0..n): after the latest earlier occurrence of
 * its last g tokens (g from `ngram` down to 1), the up to `most` tokens that
 * followed. Returns how many it wrote to draft. */
static int32_t lookup(const int32_t *ctx, int32_t n, int32_t ngram, int32_t most,
                      int32_t *draft) {
  int32_t g, start, j, k;
  for (g = ngram < n - 1 ? ngram : n - 1; g >= 1; --g)
    for (start = n - g - 1; start >= 0; --start) {
      for (j = 0; j < g && ctx[start + j] == ctx[n - g + j]; ++j)
        ;
      if (j < g)
        continue;
      for (k = 0; k < most && start + g + k < n; ++k)
        draft[k] = ctx[start + g + k];
      if (k > 0)
        return k;
    }
  return 0;
}

int speculate(const kiln_model_api *api, const kiln_tokenizer *t, const options *o) {
  static uint8_t sampler_work[4 * KILN_VOCAB + 64];
  int32_t draft[KILN_PREFILL_CHUNK], batch[KILN_PREFILL_CHUNK];
  int32_t n_prompt, pos, next, d, m, r, generated = 0, passes = 0, drafted = 0, accepted = 0;
  kiln_sampler sampler;
  kiln_status s;
  double t0, t1, t2;

  if (o->sampling.temperature > 0.0f) {
    fprintf(stderr, "kiln-generate: --draft-lookup checks drafts greedily: drop --temp\n");
    return 2;
  }
  if (o->ids) {
    n_prompt = parse_ids(o->ids);
    s = KILN_OK;
  } else {
    s = encode(t, o->prompt, strlen(o->prompt), 1, tokens, KILN_MAX_CONTEXT, &n_prompt);
  }
  if (s != KILN_OK || n_prompt <= 0)
    return fail("prompt does not fit the context", s != KILN_OK ? s : KILN_ERR_ARGUMENT);
  s = kiln_sampler_init(&sampler, &o->sampling);
  if (s != KILN_OK)
    return fail("sampling options", s);
  if (o->prompt)
    fputs(o->prompt, stdout);
  t0 = now();
  s = api->prefill_last(&model, tokens, n_prompt, logits);
  if (s != KILN_OK)
    return fail("prompt", s);
  t1 = now();
  pos = n_prompt;
  s = kiln_sampler_sample(&sampler, logits, KILN_VOCAB, tokens, pos, sampler_work,
                          sizeof sampler_work, &next);
  while (s == KILN_OK) {
    if (!o->ids && kiln_tokenizer_is_eog(t, next) && !o->ignore_eos)
      break;
    emit(t, o, next, generated);
    if (++generated == o->n_generate || pos == KILN_MAX_CONTEXT)
      break;
    tokens[pos] = next;
    /* The draft: at most what the chunk, the context and -n leave room for. */
    d = o->draft_lookup;
    if (d > KILN_PREFILL_CHUNK - 1)
      d = KILN_PREFILL_CHUNK - 1;
    if (d > KILN_MAX_CONTEXT - pos - 1)
      d = KILN_MAX_CONTEXT - pos - 1;
    if (d > o->n_generate - generated)
      d = o->n_generate - generated;
    d = d > 0 ? lookup(tokens, pos + 1, o->draft_ngram, d, draft) : 0;
    batch[0] = next;
    memcpy(batch + 1, draft, sizeof draft[0] * (size_t)d);
    s = d ? api->prefill(&model, batch, d + 1, logits) : api->decode(&model, next, logits);
    if (s != KILN_OK)
      return fail(d ? "draft pass" : "decode", s);
    ++passes;
    drafted += d;
    /* Row r scores the token after batch[r]: keep drafts while greedy agrees. */
    for (m = 0, r = 0; r <= d; ++r) {
      s = kiln_sampler_sample(&sampler, logits + (size_t)r * KILN_VOCAB, KILN_VOCAB, tokens,
                              pos + 1 + r, sampler_work, sizeof sampler_work, &next);
      if (s != KILN_OK || r == d || next != draft[r])
        break;
      if ((!o->ids && kiln_tokenizer_is_eog(t, next) && !o->ignore_eos) ||
          generated == o->n_generate)
        break;
      emit(t, o, next, generated);
      ++generated;
      tokens[pos + 1 + r] = next;
      ++m;
    }
    if (s != KILN_OK)
      break;
    accepted += m;
    pos += 1 + m;
    if (m < d && (s = api->truncate(&model, pos)) != KILN_OK)
      return fail("roll back", s);
    if (generated == o->n_generate)
      break;
  }
  if (s != KILN_OK)
    return fail("sample", s);
  t2 = now();
  printf("\n");
  fflush(stdout);
  fprintf(stderr,
          "prefill: %d tokens, %.1f tokens/s; time to first token %.2f ms\n"
          "generated %d tokens; decode: %.1f tokens/s\n"
          "draft-lookup: %d passes, %d drafted, %d accepted (%.1f%%), %.2f tokens per pass\n",
          (int)n_prompt, n_prompt / (t1 - t0), (t1 - t0) * 1e3, (int)generated,
          generated > 1 ? (generated - 1) / (t2 - t1) : 0.0, (int)passes, (int)drafted,
          (int)accepted, drafted ? 100.0 * accepted / drafted : 0.0,
          passes ? (double)(generated - 1) / passes : 0.0);
  return 0;
}
