/* What kiln-generate's files share: the options, the model state, logits and
 * tokens (defined once, in kiln_generate.c) and the helpers more than one
 * mode uses. The KILN_MODEL_* definitions come from the generated CMakeLists. */
#ifndef KILN_GENERATE_H
#define KILN_GENERATE_H

#include KILN_MODEL_HEADER
#include "kiln/kiln_model.h"
#include "kiln/kiln_sampler.h"
#include "kiln/kiln_tokenizer.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern const kiln_model_api KILN_MODEL_API;

/* The sessions a --session run shows: at most this many, the model's
 * sessions and a prefill chunk (a batch's logits fill the logits rows). */
#define MAX_SHOWN 16

typedef struct options {
  const char *pack, *prompt, *ids, *dump, *perplexity, *kl_base, *system, *profile;
  const char *imatrix_out, *taps_out, *moments_out;
  double bandwidth_gbs;
  const char *draft_pack;
  int32_t n_generate, ctx, chunks, threads, keep, draft, draft_ngram;
  int prefill, tokenize, ignore_eos, chat, draft_model, read_pack, perplexity_ids;
  kiln_sampler_params sampling;
  const char *session_text[MAX_SHOWN];
  int32_t n_sessions;
} options;

/* kiln_generate.c: the one model, its logits (a prefill chunk of rows) and
 * the tokens of the context. */
extern KILN_MODEL_TYPE model;
extern float logits[(size_t)KILN_PREFILL_CHUNK * KILN_VOCAB];
extern int32_t tokens[KILN_MAX_CONTEXT];

double now(void);
int fail(const char *what, kiln_status s);
kiln_status encode(const kiln_tokenizer *t, const char *text, size_t len, int special,
                   int32_t *out, int32_t cap, int32_t *n);
int dump_rows(FILE *out, const float *rows, int32_t n);
void print_piece(const kiln_tokenizer *t, int32_t id, int is_first);
/* Ids separated by commas or white space into out (at most cap); -1 for text
 * that is not ids (the model refuses ids outside its vocabulary). */
int32_t parse_ids(const char *ids, int32_t *out, int32_t cap);
/* The prompt into tokens: --tokens' ids, or -p's text tokenized. */
kiln_status prompt_tokens(const kiln_tokenizer *t, const options *o, int32_t *n);

/* perplexity.c: --perplexity; chat.c: --chat; speculate.c: --draft-lookup and
 * --draft-model. */
int perplexity(const kiln_model_api *api, const kiln_tokenizer *t, const options *o);
int chat(const kiln_model_api *api, const kiln_tokenizer *t, const options *o);
int speculate(const kiln_model_api *api, const kiln_tokenizer *t, const options *o);
/* sessions.c: -p SHARED --session TEXT ... on a model compiled with --sessions. */
int sessions(const kiln_model_api *api, const kiln_tokenizer *t, const options *o);
/* taps.c: --imatrix-out, --moments-out and --taps-out; attach sets the
 * model's tap (0: an error, said on stderr), finish writes what it saw after
 * a run that `ran` to the end (0: failed, said; or the run failed). */
int taps_attach(const options *o);
int taps_finish(const options *o, int ran);

#ifdef KILN_PROFILE
/* profile.c: the model's clock, and the profile printed and written. */
uint64_t clock_ns(void);
void print_profile(void);
int write_profile(const char *html, double bandwidth_gbs);
#endif

#endif
