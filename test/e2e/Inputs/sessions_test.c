/* Sessions over a pool of KV pages (kiln-compile --sessions=4 --kv-page=16
 * --kv-pages=40, model `ses`) against the same weights compiled with one plain
 * cache (model `ref`), every logit compared bit for bit:
 *  - four sessions whose prompts share a 200-token prefix give the logits of
 *    four runs of `ref` alone, and hold 12 pages of that prefix once (20 pages
 *    in use, not 4 x 14);
 *  - one batched decode of the four sessions gives each its own single
 *    decode's logits; later single and smaller batched decodes too;
 *  - a session that rolls back into the shared prefix and writes copies the
 *    page: the others' logits do not change;
 *  - a context shift of a session with shared pages gives `ref`'s shift;
 *  - misuse (bad, closed or repeated session ids, tokens outside the
 *    vocabulary, a full pool in a prefill or a batch) is a status that
 *    changes nothing, and the other sessions go on as before.
 * (`ref` may be one session over pages of the same size: a target whose int4
 * attention sums its chunks to page ends then gives the same bits.)
 * Usage: sessions_test REF_PACK SES_PACK */
#include "ref.h"
#include "ses.h"

#include <stdio.h>
#include <string.h>

#define PREFIX 200
#define SUFFIX 20
#define PROMPT (PREFIX + SUFFIX)
#define DECODES 4

static ref_model ref;
static ses_model ses;
static uint8_t ref_arena[REF_ARENA_BYTES] __attribute__((aligned(64)));
static uint8_t ses_arena[SES_ARENA_BYTES] __attribute__((aligned(64)));
static float want[SES_SESSIONS][DECODES + 1][SES_VOCAB];
static float got[SES_SESSIONS][SES_VOCAB], one[SES_VOCAB];
static int32_t prompts[SES_SESSIONS][PROMPT + DECODES], longer[3][240];
static int failed;

static void check(int ok, const char *what) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  failed |= !ok;
}

static int same(const float *a, const float *b) { return memcmp(a, b, sizeof(float) * SES_VOCAB) == 0; }

/* A token id from a fixed sequence: s selects the sequence, i the place. */
static int32_t token(uint32_t s, uint32_t i) {
  uint32_t x = (s + 1) * 2654435761u ^ (i + 7) * 40503u;
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  return (int32_t)((x ^ (x >> 15)) % SES_VOCAB);
}

/* `ref` from empty: tokens[0..n) prefilled, logits of the last. */
static kiln_status ref_run(const int32_t *tokens, int32_t n, float *logits) {
  ref_reset(&ref);
  return ref_prefill_last(&ref, tokens, n, logits);
}

int main(int argc, char **argv) {
  kiln_pack_source rs, ss;
  int32_t ids[SES_SESSIONS], extra, i, k, pos, used, ok;
  int32_t batch[SES_SESSIONS], next[SES_SESSIONS];
  int32_t again[PREFIX + 30];
  if (argc != 3 || kiln_pack_source_open_file(&rs, argv[1]) != KILN_OK ||
      kiln_pack_source_open_file(&ss, argv[2]) != KILN_OK ||
      ref_open(&ref, &rs, ref_arena, sizeof ref_arena) != KILN_OK ||
      ses_open(&ses, &ss, ses_arena, sizeof ses_arena) != KILN_OK)
    return 2;

  /* The prompts: one prefix, four suffixes, then the tokens each decodes. */
  for (i = 0; i < SES_SESSIONS; ++i)
    for (k = 0; k < PROMPT + DECODES; ++k)
      prompts[i][k] = token(k < PREFIX ? 99u : (uint32_t)i, (uint32_t)k);
  ok = 1;
  for (i = 0; i < SES_SESSIONS; ++i) {
    ok &= ref_run(prompts[i], PROMPT, want[i][0]) == KILN_OK;
    for (k = 0; k < DECODES; ++k)
      ok &= ref_decode(&ref, prompts[i][PROMPT + k], want[i][k + 1]) == KILN_OK;
  }
  check(ok, "ref: four prompts and their decodes");

  /* Session 0 is open; three more, then no fifth. */
  ids[0] = 0;
  ok = ses_session_position(&ses, 0) == 0;
  for (i = 1; i < SES_SESSIONS; ++i)
    ok &= ses_session_open(&ses, &ids[i]) == KILN_OK && ids[i] == i;
  check(ok && ses_session_open(&ses, &extra) == KILN_ERR_SESSION,
        "sessions 1-3 open, a fifth is refused");

  ok = 1;
  for (i = 0; i < SES_SESSIONS; ++i) {
    ok &= ses_session_prefill_last(&ses, ids[i], prompts[i], PROMPT, got[i]) == KILN_OK &&
          same(got[i], want[i][0]);
    if (i == 0)
      check(ses_pages_used(&ses) == 14, "session 0 holds its 220 tokens in 14 pages");
  }
  check(ok, "four sessions sharing a 200-token prefix: ref's logits, bit for bit");
  used = ses_pages_used(&ses);
  printf("pages in use: %d (independent sessions: %d)\n", (int)used, 4 * 14);
  check(used == 14 + 3 * 2, "the prefix's 12 full pages are held once: 20 pages in use");

  /* One batched decode of all four, in another order than the ids. */
  for (i = 0; i < SES_SESSIONS; ++i) {
    batch[i] = ids[SES_SESSIONS - 1 - i];
    next[i] = prompts[batch[i]][PROMPT];
  }
  ok = ses_decode_batch(&ses, batch, next, SES_SESSIONS, got[0]) == KILN_OK;
  for (i = 0; i < SES_SESSIONS; ++i)
    ok &= same(got[i], want[batch[i]][1]);
  check(ok, "a batch of four decodes: each session's single decode, bit for bit");
  ok = 1;
  for (i = 0; i < SES_SESSIONS; ++i)
    ok &= ses_session_decode(&ses, ids[i], prompts[i][PROMPT + 1], one) == KILN_OK &&
          same(one, want[i][2]);
  check(ok, "then single decodes of each");
  batch[0] = 3, batch[1] = 1;
  next[0] = prompts[3][PROMPT + 2], next[1] = prompts[1][PROMPT + 2];
  ok = ses_decode_batch(&ses, batch, next, 2, got[0]) == KILN_OK && same(got[0], want[3][3]) &&
       same(got[1], want[1][3]);
  check(ok, "a batch of two: sessions 3 and 1");

  /* Misuse: a status, nothing changed. */
  pos = ses_session_position(&ses, 1);
  batch[0] = 1, batch[1] = 1;
  check(ses_decode_batch(&ses, batch, next, 2, got[0]) == KILN_ERR_ARGUMENT &&
            ses_session_position(&ses, 1) == pos,
        "a batch naming a session twice is refused");
  batch[0] = 0, batch[1] = 9;
  check(ses_decode_batch(&ses, batch, next, 2, got[0]) == KILN_ERR_SESSION &&
            ses_session_decode(&ses, -1, 1, one) == KILN_ERR_SESSION &&
            ses_session_decode(&ses, SES_SESSIONS, 1, one) == KILN_ERR_SESSION &&
            ses_session_prefill(&ses, 7, next, 1, NULL) == KILN_ERR_SESSION &&
            ses_session_shift(&ses, 99, 0, 1) == KILN_ERR_SESSION,
        "session ids outside 0..3 are refused");
  extra = SES_VOCAB;
  check(ses_session_decode(&ses, 2, extra, one) == KILN_ERR_ARGUMENT &&
            ses_session_prefill_last(&ses, 2, &extra, 1, one) == KILN_ERR_ARGUMENT &&
            ses_session_position(&ses, 2) == PROMPT + 2,
        "a token outside the vocabulary is refused");

  /* Session 1 rolls back into the shared prefix and writes: the page is
   * copied; session 0, which shares it, goes on as ref does. */
  memcpy(again, prompts[1], 100 * sizeof(int32_t));
  for (k = 100; k < PREFIX + 30; ++k)
    again[k] = token(50u, (uint32_t)k);
  used = ses_pages_used(&ses);
  ok = ses_session_truncate(&ses, 1, 100) == KILN_OK &&
       ses_session_prefill_last(&ses, 1, again + 100, PREFIX + 30 - 100, got[1]) == KILN_OK &&
       ref_run(again, PREFIX + 30, one) == KILN_OK && same(got[1], one);
  check(ok, "session 1 rolled back to 100 and written anew: ref's logits");
  printf("pages in use: %d before, %d after\n", (int)used, (int)ses_pages_used(&ses));
  ok = ses_session_decode(&ses, 0, prompts[0][PROMPT + 2], one) == KILN_OK &&
       same(one, want[0][3]);
  check(ok, "session 0, which shares the page session 1 wrote, keeps ref's logits");

  /* A context shift of session 2 (its first 12 pages shared with 0 and 3). */
  ok = ses_session_shift(&ses, 2, 4, 50) == KILN_OK &&
       ses_session_position(&ses, 2) == PROMPT + 2 - 50 &&
       ses_session_decode(&ses, 2, prompts[2][PROMPT + 2], got[2]) == KILN_OK;
  ok &= ref_run(prompts[2], PROMPT + 2, NULL) == KILN_OK && ref_shift(&ref, 4, 50) == KILN_OK &&
        ref_decode(&ref, prompts[2][PROMPT + 2], one) == KILN_OK && same(got[2], one);
  check(ok, "session 2 shifted (keep 4, drop 50): ref's shift, bit for bit");
  ok = ses_session_decode(&ses, 3, prompts[3][PROMPT + 3], one) == KILN_OK &&
       same(one, want[3][4]);
  check(ok, "session 3, which shared those pages, keeps ref's logits");

  /* A closed session is refused; its pages go back to the pool. */
  used = ses_pages_used(&ses);
  check(ses_session_close(&ses, 3) == KILN_OK &&
            ses_session_decode(&ses, 3, 1, one) == KILN_ERR_SESSION &&
            ses_session_close(&ses, 3) == KILN_ERR_SESSION && ses_pages_used(&ses) < used,
        "a closed session is refused and its own pages are free");

  /* A full pool: every session emptied, two 240-token prompts take 30 of 40
   * pages, a third is refused whole; a batch that needs pages the pool has
   * not is refused whole. */
  ok = ses_session_reset(&ses, 0) == KILN_OK && ses_session_reset(&ses, 1) == KILN_OK &&
       ses_session_reset(&ses, 2) == KILN_OK && ses_pages_used(&ses) == 0;
  check(ok, "reset empties every session: no page in use");
  for (i = 0; i < 3; ++i)
    for (k = 0; k < 240; ++k)
      longer[i][k] = token(20u + (uint32_t)i, (uint32_t)k);
  ok = ses_session_prefill(&ses, 0, longer[0], 240, NULL) == KILN_OK &&
       ses_session_prefill(&ses, 1, longer[1], 240, NULL) == KILN_OK &&
       ses_pages_used(&ses) == 30;
  check(ok, "two sessions of 240 tokens: 30 pages");
  check(ses_session_prefill(&ses, 2, longer[2], 240, NULL) == KILN_ERR_POOL_FULL &&
            ses_session_position(&ses, 2) == 0 && ses_pages_used(&ses) == 30,
        "a third 240-token prompt: KILN_ERR_POOL_FULL, nothing held");
  ok = ses_session_prefill(&ses, 2, longer[2], 160, NULL) == KILN_OK &&
       ses_pages_used(&ses) == 40;
  batch[0] = 0, batch[1] = 1, next[0] = 5, next[1] = 6;
  ok &= ses_decode_batch(&ses, batch, next, 2, got[0]) == KILN_ERR_POOL_FULL &&
        ses_session_position(&ses, 0) == 240 && ses_session_position(&ses, 1) == 240 &&
        ses_pages_used(&ses) == 40;
  check(ok, "a batch needing two pages of a full pool: refused whole, positions kept");
  ok = ses_session_decode(&ses, 0, 5, got[0]) == KILN_ERR_POOL_FULL &&
       ses_session_close(&ses, 2) == KILN_OK && ses_session_decode(&ses, 0, 5, got[0]) == KILN_OK;
  ok &= ref_run(longer[0], 240, NULL) == KILN_OK && ref_decode(&ref, 5, one) == KILN_OK &&
        same(got[0], one);
  check(ok, "session 0 decodes as ref once a session's pages are freed");
  return failed;
}
