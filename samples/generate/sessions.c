/* kiln-generate -p SHARED --session TEXT [--session TEXT ...] (or --tokens
 * and --session with ids, for models without a real vocabulary): several
 * conversations that open with the same text, on a model compiled with
 * --sessions. Each session's prompt is SHARED followed by its own TEXT; the
 * first prefill computes the shared part, the others map its full pages from
 * the pool (their time to first token shows it), then one batched decode a
 * step advances every session that has not ended. Prints each session's
 * text, the pages the pool holds against what separate caches would hold,
 * and the batched decode's tokens per second. */
#include "kiln_generate.h"

#include <string.h>

static int32_t prompt[MAX_SHOWN][KILN_MAX_CONTEXT];
static int32_t length[MAX_SHOWN], first[MAX_SHOWN];

/* The token that opens the session: sampled from its prompt's logits. */
static kiln_status sample(kiln_sampler *s, float *row, int32_t i, int32_t *next) {
  static uint8_t work[4 * KILN_VOCAB + 64];
  return kiln_sampler_sample(s, row, KILN_VOCAB, prompt[i], length[i], work, sizeof work, next);
}

int sessions(const kiln_model_api *api, const kiln_tokenizer *t, const options *o) {
  static kiln_sampler samplers[MAX_SHOWN];
  int32_t ids[MAX_SHOWN], batch[MAX_SHOWN], next[MAX_SHOWN], n = o->n_sessions, shared, i, k;
  int32_t live, steps = 0, decoded = 0, alone = 0, cap = api->sessions;
  double ttft[MAX_SHOWN], t0, t1;
  kiln_status s;
  cap = cap < MAX_SHOWN ? cap : MAX_SHOWN;
  cap = cap < KILN_PREFILL_CHUNK ? cap : KILN_PREFILL_CHUNK;
  if (!api->sessions) {
    fprintf(stderr, "kiln-generate: --session needs a model compiled with --sessions\n");
    return 1;
  }
  if (n > cap) {
    fprintf(stderr, "kiln-generate: %d sessions asked, this model shows at most %d\n", (int)n,
            (int)cap);
    return 1;
  }
  if (o->ids)
    shared = parse_ids(o->ids, prompt[0], KILN_MAX_CONTEXT);
  else if ((s = encode(t, o->prompt, strlen(o->prompt), 1, prompt[0], KILN_MAX_CONTEXT,
                       &shared)) != KILN_OK)
    return fail("shared prompt", s);
  for (i = 0; i < n; ++i) {
    int32_t own = 0;
    memcpy(prompt[i], prompt[0], (size_t)shared * sizeof(int32_t));
    if (o->ids)
      own = parse_ids(o->session_text[i], prompt[i] + shared, KILN_MAX_CONTEXT - shared);
    else if ((s = encode(t, o->session_text[i], strlen(o->session_text[i]), 0,
                         prompt[i] + shared, KILN_MAX_CONTEXT - shared, &own)) != KILN_OK)
      return fail("session prompt", s);
    if (shared < 0 || own < 0) {
      fprintf(stderr, "kiln-generate: --tokens and --session take comma-separated ids\n");
      return 2;
    }
    length[i] = first[i] = shared + own;
    alone += (length[i] + o->n_generate + api->kv_page - 1) / api->kv_page;
    ids[i] = 0;
    if (i > 0 && (s = api->session_open(&model, &ids[i])) != KILN_OK)
      return fail("session open", s);
    s = kiln_sampler_init(&samplers[i], &o->sampling);
    if (s != KILN_OK)
      return fail("sampling options", s);
  }
  /* Each prompt on its own: the later ones find the shared pages. */
  for (i = 0; i < n; ++i) {
    t0 = now();
    s = api->session_prefill_last(&model, ids[i], prompt[i], length[i], logits);
    if (s != KILN_OK)
      return fail("session prefill", s);
    ttft[i] = now() - t0;
    s = sample(&samplers[i], logits, i, &next[i]);
    if (s != KILN_OK)
      return fail("sample", s);
  }
  t0 = now();
  for (live = n; live > 0 && steps < o->n_generate; ++steps) {
    /* Sessions that reached an end of generation or the context stop. */
    for (i = 0, live = 0; i < n; ++i) {
      if (length[i] < 0)
        continue;
      if ((!o->ignore_eos && kiln_tokenizer_is_eog(t, next[i])) || length[i] >= KILN_MAX_CONTEXT) {
        length[i] = -length[i];
        continue;
      }
      prompt[i][length[i]++] = next[i];
      batch[live] = ids[i];
      next[live] = next[i];
      ++live;
    }
    if (live == 0 || steps + 1 == o->n_generate)
      break;
    s = api->decode_batch(&model, batch, next, live, logits);
    if (s != KILN_OK)
      return fail("batched decode", s);
    decoded += live;
    for (i = 0, k = 0; i < n; ++i)
      if (length[i] > 0 && (s = sample(&samplers[i], logits + (size_t)k++ * KILN_VOCAB, i,
                                       &next[i])) != KILN_OK)
        return fail("sample", s);
  }
  t1 = now();
  for (i = 0; i < n; ++i) {
    int32_t end = length[i] < 0 ? -length[i] : length[i];
    if (o->ids)
      printf("[session %d] %s,%s ids:", (int)ids[i], o->ids, o->session_text[i]);
    else
      printf("[session %d] %s%s", (int)ids[i], o->prompt, o->session_text[i]);
    for (k = first[i]; k < end; ++k)
      if (o->ids)
        printf("%s%d", k > first[i] ? "," : " ", (int)prompt[i][k]);
      else
        print_piece(t, prompt[i][k], 0);
    printf("\n");
  }
  fflush(stdout);
  for (i = 0; i < n; ++i)
    fprintf(stderr, "session %d: %d prompt tokens (%d shared), time to first token %.2f ms\n",
            (int)ids[i], (int)first[i], (int)shared, ttft[i] * 1e3);
  fprintf(stderr,
          "KV pages in use: %d of %d positions each (separate caches: %d)\n"
          "batched decode: %d sessions, %d tokens, %.1f tokens/s\n",
          (int)api->pages_used(&model), (int)api->kv_page, (int)alone, (int)n, (int)decoded,
          decoded > 0 ? decoded / (t1 - t0) : 0.0);
  return 0;
}
