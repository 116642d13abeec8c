/* kiln-generate --draft-lookup D / --draft-model D: generation with drafts of
 * D tokens. Lookup drafts: the last few tokens of the context looked
 * up earlier in it, and the tokens that followed there. Model drafts: the
 * greedy continuation by the draft model compiled into the folder (kiln-compile
 * --draft). One prefill pass scores the current token and the draft together,
 * the longest prefix of the draft that greedy choice would have produced is
 * kept with the target's own next token, and the model rolls back over the rest
 * (truncate). Greedy, the text is plain greedy's, token for token; sampling,
 * a drafted token is kept by the standard speculative rule, which keeps the
 * target's distribution (kiln_sampler_verify), with a seeded generator. */
#include "kiln_generate.h"

#include <string.h>

#ifdef KILN_DRAFT_API
#include KILN_DRAFT_HEADER
extern const kiln_model_api KILN_DRAFT_API;

static KILN_DRAFT_TYPE draft_model;
static uint8_t draft_arena[KILN_DRAFT_ARENA_BYTES] __attribute__((aligned(64)));
static float draft_logits[KILN_VOCAB];
static kiln_pack_source draft_source;
static kiln_sampler draft_sampler;

/* The draft's pack: --draft-pack, else beside the target's pack. */
static int open_draft(const options *o) {
  static char path[4096];
  const char *pack = o->draft_pack, *slash = strrchr(o->pack, '/');
  kiln_status s;
  if (!pack) {
    size_t dir = slash ? (size_t)(slash - o->pack) + 1 : 0;
    if (dir + sizeof KILN_DRAFT_PACK > sizeof path) {
      fail(o->pack, KILN_ERR_ARGUMENT);
      return 0;
    }
    memcpy(path, o->pack, dir);
    memcpy(path + dir, KILN_DRAFT_PACK, sizeof KILN_DRAFT_PACK);
    pack = path;
  }
  s = kiln_pack_source_open_file(&draft_source, pack);
  if (s == KILN_OK)
    s = KILN_DRAFT_API.open(&draft_model, &draft_source, draft_arena, sizeof draft_arena);
  if (s == KILN_OK && KILN_DRAFT_API.vocab != KILN_VOCAB)
    s = KILN_ERR_ARGUMENT;
  if (s != KILN_OK) {
    fail(pack, s);
    return 0;
  }
  return 1;
}

/* The draft model's continuation of ctx[0..n) (ctx has room for `most`
 * more): its cache is first brought to ctx[0..n-1) (rolled back, or fed what
 * it has not seen). Greedy, or, with a sampler, each token drawn from the
 * draft's distribution, kept in q (a row of vocab floats per token). Up to
 * `most` tokens; fewer when its context is full. */
static int32_t model_drafts(int32_t *ctx, int32_t n, int32_t most, int32_t *draft,
                            kiln_sampler *sampler, float *q, void *work, size_t work_bytes) {
  const kiln_model_api *api = &KILN_DRAFT_API;
  int32_t have = api->position(&draft_model), k, i, tok = ctx[n - 1];
  kiln_status s = KILN_OK;
  if (have > n - 1)
    s = api->truncate(&draft_model, have = n - 1);
  if (s == KILN_OK && have < n - 1)
    s = api->prefill(&draft_model, ctx + have, n - 1 - have, NULL);
  for (k = 0; s == KILN_OK && k < most; ++k) {
    s = api->decode(&draft_model, tok, draft_logits);
    if (s == KILN_OK && sampler) {
      float *row = q + (size_t)k * KILN_VOCAB;
      s = kiln_sampler_probs(sampler, draft_logits, KILN_VOCAB, ctx, n + k, work, work_bytes, row);
      if (s == KILN_OK)
        s = kiln_sampler_draw(sampler, row, KILN_VOCAB, &tok);
    } else if (s == KILN_OK) {
      for (tok = 0, i = 1; i < KILN_VOCAB; ++i)
        if (draft_logits[i] > draft_logits[tok])
          tok = i;
    }
    if (s != KILN_OK)
      break;
    draft[k] = ctx[n + k] = tok;
  }
  return k;
}
#endif

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

/* The token after row r of the target's logits (history tokens[0..n)):
 * greedy, as generate picks it; sampling, by the speculative rule against the
 * draft's distribution q (NULL: a lookup draft, deterministic), or drawn from
 * the target's distribution for the token after the last draft (draft < 0). */
static kiln_status choose(kiln_sampler *sampler, float *row, int32_t n, int32_t draft,
                          const float *q, int32_t *next) {
  static uint8_t work[4 * KILN_VOCAB + 64];
  static float p[KILN_VOCAB];
  kiln_status s;
  int ok;
  if (sampler->p.temperature <= 0.0f)
    return kiln_sampler_sample(sampler, row, KILN_VOCAB, tokens, n, work, sizeof work, next);
  s = kiln_sampler_probs(sampler, row, KILN_VOCAB, tokens, n, work, sizeof work, p);
  if (s != KILN_OK)
    return s;
  if (draft < 0)
    return kiln_sampler_draw(sampler, p, KILN_VOCAB, next);
  return kiln_sampler_verify(sampler, p, q, KILN_VOCAB, draft, next, &ok);
}

int speculate(const kiln_model_api *api, const kiln_tokenizer *t, const options *o) {
  static uint8_t sampler_work[4 * KILN_VOCAB + 64];
  static float q[(size_t)KILN_PREFILL_CHUNK * KILN_VOCAB];
  int32_t draft[KILN_PREFILL_CHUNK], batch[KILN_PREFILL_CHUNK];
  int32_t n_prompt, pos, next, d, m, r, generated = 0, passes = 0, drafted = 0, accepted = 0;
  kiln_sampler sampler;
  kiln_sampler_params draft_params = o->sampling;
  kiln_status s;
  double t0, t1, t2;

#ifdef KILN_DRAFT_API
  if (o->draft_model && !open_draft(o))
    return 1;
#else
  if (o->draft_model) {
    fprintf(stderr, "kiln-generate: --draft-model: no draft model in this folder "
                    "(kiln-compile --draft)\n");
    return 2;
  }
#endif
  s = prompt_tokens(t, o, &n_prompt);
  if (s != KILN_OK || n_prompt <= 0)
    return fail("prompt does not fit the context", s != KILN_OK ? s : KILN_ERR_ARGUMENT);
  s = kiln_sampler_init(&sampler, &o->sampling);
#ifdef KILN_DRAFT_API
  draft_params.seed = o->sampling.seed ^ 0x9e3779b97f4a7c15ull; /* its own stream */
  if (s == KILN_OK)
    s = kiln_sampler_init(&draft_sampler, &draft_params);
#else
  (void)draft_params;
#endif
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
    d = o->draft;
    if (d > KILN_PREFILL_CHUNK - 1)
      d = KILN_PREFILL_CHUNK - 1;
    if (d > KILN_MAX_CONTEXT - pos - 1)
      d = KILN_MAX_CONTEXT - pos - 1;
    if (d > o->n_generate - generated)
      d = o->n_generate - generated;
#ifdef KILN_DRAFT_API
    if (o->draft_model)
      d = d > 0 ? model_drafts(tokens, pos + 1, d, draft,
                               o->sampling.temperature > 0.0f ? &draft_sampler : NULL, q,
                               sampler_work, sizeof sampler_work)
                : 0;
    else
#endif
      d = d > 0 ? lookup(tokens, pos + 1, o->draft_ngram, d, draft) : 0;
    batch[0] = next;
    memcpy(batch + 1, draft, sizeof draft[0] * (size_t)d);
    s = d ? api->prefill(&model, batch, d + 1, logits) : api->decode(&model, next, logits);
    if (s != KILN_OK)
      return fail(d ? "draft pass" : "decode", s);
    ++passes;
    drafted += d;
    /* Row r scores the token after batch[r]: keep drafts while the target's
     * choice (greedy, or the speculative rule) agrees. */
    for (m = 0, r = 0; r <= d; ++r) {
      s = choose(&sampler, logits + (size_t)r * KILN_VOCAB, pos + 1 + r, r < d ? draft[r] : -1,
                 o->draft_model ? q + (size_t)r * KILN_VOCAB : NULL, &next);
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
          "draft-%s: %d passes, %d drafted, %d accepted (%.1f%%), %.2f tokens per pass\n",
          (int)n_prompt, n_prompt / (t1 - t0), (t1 - t0) * 1e3, (int)generated,
          generated > 1 ? (generated - 1) / (t2 - t1) : 0.0,
          o->draft_model ? "model" : "lookup", (int)passes, (int)drafted,
          (int)accepted, drafted ? 100.0 * accepted / drafted : 0.0,
          passes ? (double)(generated - 1) / passes : 0.0);
  return 0;
}
