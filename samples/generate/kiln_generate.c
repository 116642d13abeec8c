/* kiln-generate: talks to a generated model on a hosted system.
 *
 *   kiln-generate [--pack FILE] -p TEXT [-n N] [--temp T] [--top-k K] [--top-p P]
 *                 [--repeat-penalty R] [--seed S] [--ignore-eos] [--dump-logits FILE]
 *   kiln-generate [--pack FILE] --tokens ID,ID,... [-n N] [--no-prefill] [--dump-logits FILE]
 *   kiln-generate [--pack FILE] --perplexity TEXTFILE [--ctx N] [--chunks K]
 *   kiln-generate [--pack FILE] --tokenize -p TEXT
 *   kiln-generate [--pack FILE] --chat [-sys TEXT] [-n N] [sampling options]
 *   kiln-generate [--pack FILE] -p SHARED --session TEXT [--session TEXT ...] [-n N]
 * and with any of them -t N: N threads (a model compiled with --threads=M
 * uses at most M).
 *
 * Built by the CMakeLists.txt that kiln-compile writes next to the model; the
 * model is chosen at compile time through KILN_MODEL_* definitions. The model
 * state, the arena and the logits are static; only this program's own text
 * handling (reading a file, the tokenizer's work buffer) uses the heap.
 * --perplexity is in perplexity.c, --chat in chat.c, --session in sessions.c,
 * the profile in profile.c. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise is not in strict POSIX on glibc */

#include "kiln_generate.h"

#if KILN_THREADS > 1
#include "kiln/kiln_pool.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

KILN_MODEL_TYPE model;
static uint8_t arena[KILN_ARENA_BYTES] __attribute__((aligned(64)));
float logits[(size_t)KILN_PREFILL_CHUNK * KILN_VOCAB];
int32_t tokens[KILN_MAX_CONTEXT];

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

static void usage(void) {
  fprintf(stderr,
          "usage: kiln-generate [--pack FILE] -p TEXT [-n N] [--temp T] [--top-k K]\n"
          "                     [--top-p P] [--repeat-penalty R] [--seed S] [--ignore-eos]\n"
          "                     [--dump-logits FILE]\n"
          "       kiln-generate [--pack FILE] --tokens ID,ID,... [-n N] [--no-prefill] [--keep N]\n"
          "       kiln-generate [--pack FILE] --perplexity TEXTFILE [--ctx N] [--chunks K]\n"
          "                     [--dump-logits FILE] [--kl-base FILE]\n"
          "                     [--imatrix-out FILE] [--moments-out FILE] [--taps-out FILE]\n"
          "       kiln-generate [--pack FILE] --tokenize -p TEXT\n"
          "       kiln-generate [--pack FILE] --chat [-sys TEXT] [-n N] [sampling options]\n"
          "       kiln-generate [--pack FILE] -p TEXT --draft-lookup D [--draft-ngram G] [-n N]\n"
          "       kiln-generate [--pack FILE] -p TEXT --draft-model D [--draft-pack FILE] [-n N]\n"
          "       kiln-generate [--pack FILE] -p SHARED --session TEXT [--session TEXT ...] [-n N]\n"
          "       kiln-generate [--pack FILE] --tokens IDS --session IDS [--session IDS ...] [-n N]\n"
          "  -t N           threads (at most the --threads the model was compiled with)\n"
          "  --read-pack    read the pack into memory instead of mapping it\n"
          "  --dump-logits  float32 logits, one row of vocab floats per evaluated\n"
          "                 position (prompt positions, then generated ones)\n"
          "  --no-prefill   evaluate the prompt one decode call at a time\n"
          "  --keep N       when the context is full, keep the first N tokens, drop\n"
          "                 half of the rest (a context shift) and go on generating\n"
          "  --perplexity   perplexity over chunks of --ctx tokens, each [BOS] + ctx-1\n"
          "                 tokens of the text, all ctx predictions scored\n"
          "                 (--perplexity-ids FILE: token ids instead of a text)\n"
          "  --imatrix-out  (a KILN_TAPS build) with --perplexity: write every matmul's\n"
          "                 input mean squares per column (llama.cpp's .dat form)\n"
          "  --moments-out  (a KILN_TAPS build) with --perplexity: write every matmul's\n"
          "                 input second moments, mean x x^T (Kiln's form)\n"
          "  --taps-out     (a KILN_TAPS build) with --perplexity: write every op's result\n"
          "  --kl-base      logits dumped by a reference run of --perplexity: also\n"
          "                 print the mean KL divergence from them\n"
          "  --chat         a conversation in the model's chat template: each line of\n"
          "                 stdin is a user turn, answered with at most -n tokens\n"
          "  -sys TEXT      the system turn that opens the conversation\n"
          "  --draft-lookup D  greedy, with drafts of up to D tokens looked up in the\n"
          "                 context after its last G tokens (--draft-ngram, default 3),\n"
          "                 each checked in one pass: plain greedy's text, fewer passes\n"
          "  --draft-model D  as --draft-lookup, the drafts from the draft model compiled\n"
          "                 into the folder (kiln-compile --draft; --draft-pack FILE)\n"
          "  --session TEXT  (a model compiled with --sessions) one conversation of\n"
          "                 SHARED then TEXT; up to 16, sharing SHARED's KV pages and\n"
          "                 decoded together, one batched step a token\n"
          "  --profile FILE.html  (a KILN_PROFILE build) also write the kernel calls'\n"
          "                 times as FILE.json and a layer x kernel heatmap as FILE.html\n"
          "  --bandwidth GB/s  the host's read bandwidth, for the heatmap's fractions\n");
}

double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int fail(const char *what, kiln_status s) {
  fprintf(stderr, "kiln-generate: %s: %s\n", what, kiln_status_message(s));
  if (s == KILN_ERR_CORRUPT)
    fprintf(stderr, "kiln-generate: the corrupt layer is %d\n", (int)model.corrupt_layer);
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
  o->draft_ngram = 3;
  kiln_sampler_default_params(&o->sampling);
  for (i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--no-prefill")) o->prefill = 0;
    else if (!strcmp(a, "--tokenize")) o->tokenize = 1;
    else if (!strcmp(a, "--ignore-eos")) o->ignore_eos = 1;
    else if (!strcmp(a, "--chat")) o->chat = 1;
    else if (!strcmp(a, "--read-pack")) o->read_pack = 1;
    else if (!v) return 0;
    else if (!strcmp(a, "--pack")) o->pack = v, ++i;
    else if (!strcmp(a, "-p")) o->prompt = v, ++i;
    else if (!strcmp(a, "--session") && o->n_sessions < MAX_SHOWN)
      o->session_text[o->n_sessions++] = v, ++i;
    else if (!strcmp(a, "--tokens")) o->ids = v, ++i;
    else if (!strcmp(a, "-n")) o->n_generate = atoi(v), ++i;
    else if (!strcmp(a, "-t")) o->threads = atoi(v), ++i;
    else if (!strcmp(a, "--keep")) o->keep = atoi(v), ++i;
    else if (!strcmp(a, "--draft-lookup")) o->draft = atoi(v), o->draft_model = 0, ++i;
    else if (!strcmp(a, "--draft-model")) o->draft = atoi(v), o->draft_model = 1, ++i;
    else if (!strcmp(a, "--draft-pack")) o->draft_pack = v, ++i;
    else if (!strcmp(a, "--draft-ngram")) o->draft_ngram = atoi(v), ++i;
    else if (!strcmp(a, "--dump-logits")) o->dump = v, ++i;
    else if (!strcmp(a, "--perplexity")) o->perplexity = v, ++i;
    else if (!strcmp(a, "--perplexity-ids")) o->perplexity = v, o->perplexity_ids = 1, ++i;
    else if (!strcmp(a, "--ctx")) o->ctx = atoi(v), ++i;
    else if (!strcmp(a, "--chunks")) o->chunks = atoi(v), ++i;
    else if (!strcmp(a, "--kl-base")) o->kl_base = v, ++i;
    else if (!strcmp(a, "--imatrix-out")) o->imatrix_out = v, ++i;
    else if (!strcmp(a, "--taps-out")) o->taps_out = v, ++i;
    else if (!strcmp(a, "--moments-out")) o->moments_out = v, ++i;
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
         o->keep < KILN_MAX_CONTEXT && o->draft >= 0 && o->draft_ngram >= 1 &&
         (!o->draft || (!o->chat && !o->perplexity && !o->tokenize)) &&
         (!o->n_sessions || ((o->prompt || o->ids) && !o->draft && !o->chat && !o->perplexity &&
                             !o->tokenize));
}

/* Tokenizes `len` bytes into `out` (at most `cap` ids). */
kiln_status encode(const kiln_tokenizer *t, const char *text, size_t len, int special,
                   int32_t *out, int32_t cap, int32_t *n) {
  size_t work_bytes = kiln_tokenize_work_bytes(t, len);
  void *work = malloc(work_bytes ? work_bytes : 1);
  kiln_status s = work ? kiln_tokenize(t, text, len, special, out, cap, n, work, work_bytes)
                       : KILN_ERR_ARGUMENT;
  free(work);
  return s;
}

int32_t parse_ids(const char *ids, int32_t *out, int32_t cap) {
  int32_t n = 0;
  for (;;) {
    char *end;
    long id;
    while (*ids == ',' || *ids == ' ' || *ids == '\t' || *ids == '\n' || *ids == '\r')
      ++ids;
    if (!*ids || n == cap)
      return n;
    id = strtol(ids, &end, 10);
    if (end == ids)
      return -1;
    out[n++] = (int32_t)id;
    ids = end;
  }
}

int dump_rows(FILE *out, const float *rows, int32_t n) {
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

kiln_status prompt_tokens(const kiln_tokenizer *t, const options *o, int32_t *n) {
  if (o->ids) {
    *n = parse_ids(o->ids, tokens, KILN_MAX_CONTEXT);
    return KILN_OK;
  }
  return encode(t, o->prompt, strlen(o->prompt), 1, tokens, KILN_MAX_CONTEXT, n);
}

void print_piece(const kiln_tokenizer *t, int32_t id, int is_first) {
  char piece[4096];
  size_t n = 0;
  if (kiln_token_piece(t, id, is_first, piece, sizeof piece, &n) == KILN_OK)
    fwrite(piece, 1, n, stdout);
  else
    fprintf(stderr, "kiln-generate: token %d has a %lu-byte piece; not printed\n", (int)id,
            (unsigned long)n);
  fflush(stdout);
}

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

  s = prompt_tokens(t, o, &n_prompt);
  if (s != KILN_OK)
    return fail("prompt does not fit the context", s);
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
    /* One CPU each where there are enough; else the system places them. */
    if (o->threads > 1)
      (void)kiln_pool_pin(&pool);
    w = kiln_pool_workers(&pool);
    KILN_MODEL_API.set_workers(&model, &w);
  }
#endif
  return 1;
}

/* The pack's bytes with --read-pack. */
static void *pack_buffer;

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
  if (o.read_pack) {
    /* As a device that must not fault on a file changed under a mapping. */
    if (posix_memalign(&pack_buffer, 64, (size_t)api->pack_bytes) != 0) {
      fprintf(stderr, "kiln-generate: no memory for the pack\n");
      return 1;
    }
    s = kiln_pack_source_read_file(&src, o.pack, pack_buffer, (size_t)api->pack_bytes);
  } else {
    s = kiln_pack_source_open_file(&src, o.pack);
  }
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
  if (!start_threads(&o) || !taps_attach(&o))
    return 1;
  rc = o.perplexity     ? perplexity(api, &tok, &o)
       : o.chat         ? chat(api, &tok, &o)
       : o.draft        ? speculate(api, &tok, &o)
       : o.n_sessions   ? sessions(api, &tok, &o)
                        : generate(api, &tok, &o);
  if (!taps_finish(&o, rc == 0))
    rc = rc ? rc : 1;
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
  free(pack_buffer);
  return rc;
}
