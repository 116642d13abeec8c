/* A generated model seen through one table of functions, so that programs such
 * as kiln-generate work with any model. Each model defines `<name>_api`. */
#ifndef KILN_KILN_MODEL_H
#define KILN_KILN_MODEL_H

#include "kiln.h"
#include "kiln_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_model_api {
  const char *name;
  size_t model_bytes;   /* sizeof the model's state struct */
  size_t arena_bytes;   /* exact arena size from plan-memory */
  uint64_t pack_bytes;
  int32_t vocab;
  int32_t max_context;
  int32_t prefill_chunk;
  int32_t bos, eos;
  int32_t threads;      /* shares of each split kernel (kiln-compile --threads) */
  kiln_status (*open)(void *model, const kiln_pack_source *src, void *arena,
                      size_t arena_bytes);
  /* n tokens at the current position; logits (may be NULL) gets n rows of vocab. */
  kiln_status (*prefill)(void *model, const int32_t *tokens, int32_t n, float *logits);
  /* As prefill, but logits gets only the last token's vocab floats: the output
   * head runs on that token alone. */
  kiln_status (*prefill_last)(void *model, const int32_t *tokens, int32_t n, float *logits);
  /* One token; logits (may be NULL) gets vocab floats. */
  kiln_status (*decode)(void *model, int32_t token, float *logits);
  int32_t (*position)(const void *model);
  /* The tokenizer over the vocabulary stored in the pack of an open model. */
  kiln_status (*tokenizer)(const void *model, kiln_tokenizer *t);
  void (*reset)(void *model);
  /* Context shift: keep the first `keep` tokens, drop the next `drop`. */
  kiln_status (*shift)(void *model, int32_t keep, int32_t drop);
  /* Rolls back to position n (n <= position): rejected speculative drafts. */
  kiln_status (*truncate)(void *model, int32_t n);
  /* The workers for split kernels; ignored by a model compiled for one thread. */
  void (*set_workers)(void *model, const kiln_workers *workers);
  void (*close)(void *model);
  /* kiln-compile --sessions: sessions over one pool of KV pages of kv_page
   * positions; 0, and NULL calls, for a model with one cache. The calls
   * above are session 0's. */
  int32_t sessions, kv_page;
  kiln_status (*session_open)(void *model, int32_t *session);
  kiln_status (*session_close)(void *model, int32_t session);
  kiln_status (*session_prefill_last)(void *model, int32_t session, const int32_t *tokens,
                                      int32_t n, float *logits);
  /* One token each for n distinct sessions; n rows of vocab logits. */
  kiln_status (*decode_batch)(void *model, const int32_t *sessions, const int32_t *tokens,
                              int32_t n, float *logits);
  /* Pages of the pool that some session maps. */
  int32_t (*pages_used)(const void *model);
} kiln_model_api;

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_MODEL_H */
