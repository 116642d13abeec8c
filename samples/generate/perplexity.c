/* kiln-generate --perplexity (or --perplexity-ids, a file of token ids): the
 * perplexity of a text file over chunks of
 * --ctx tokens, and with --kl-base the mean KL divergence from a reference
 * run's logits. */
#include "kiln_generate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  long size;
  if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (text = malloc((size_t)size + 1)) && fread(text, 1, (size_t)size, f) == (size_t)size) {
    *len = (size_t)size;
  } else {
    free(text);
    text = NULL;
  }
  if (f)
    fclose(f);
  return text;
}

/* log of the sum of exp(row), in double, shifted by the row's maximum. */
static double log_sum_exp(const float *row) {
  double mx = row[0], sum = 0.0;
  int32_t i;
  for (i = 1; i < KILN_VOCAB; ++i)
    if (row[i] > mx)
      mx = row[i];
  for (i = 0; i < KILN_VOCAB; ++i)
    sum += exp((double)row[i] - mx);
  return mx + log(sum);
}

/* KL(base || row) of the two softmax distributions. */
static double kl_divergence(const float *base, const float *row) {
  double lb = log_sum_exp(base), lr = log_sum_exp(row), kl = 0.0;
  int32_t i;
  for (i = 0; i < KILN_VOCAB; ++i) {
    double pb = (double)base[i] - lb;
    kl += exp(pb) * (pb - ((double)row[i] - lr));
  }
  return kl;
}

int perplexity(const kiln_model_api *api, const kiln_tokenizer *t, const options *o) {
  static float base[KILN_VOCAB];
  size_t len;
  char *text = read_file(o->perplexity, &len);
  int32_t *ids, n_ids = 0, chunks, c, j, done;
  double total = 0.0, kl = 0.0, t0;
  FILE *dump = NULL, *kl_base = NULL;
  kiln_status s;

  if (!text) {
    perror(o->perplexity);
    return 1;
  }
  if (o->ctx < 2 || o->ctx > KILN_MAX_CONTEXT) {
    fprintf(stderr, "kiln-generate: --ctx must be in [2, %d]\n", KILN_MAX_CONTEXT);
    return 2;
  }
  if ((o->dump && !(dump = fopen(o->dump, "wb"))) ||
      (o->kl_base && !(kl_base = fopen(o->kl_base, "rb")))) {
    perror(o->dump && !dump ? o->dump : o->kl_base);
    return 1;
  }
  ids = malloc(sizeof(int32_t) * (3 * len + 5));
  if (ids && o->perplexity_ids) {
    n_ids = parse_ids(text, ids, (int32_t)(3 * len + 5));
    s = n_ids < 0 ? KILN_ERR_ARGUMENT : KILN_OK; /* not ids */
  } else {
    s = ids ? encode(t, text, len, 0, ids, (int32_t)(3 * len + 5), &n_ids) : KILN_ERR_ARGUMENT;
  }
  free(text);
  if (s != KILN_OK)
    return fail(o->perplexity, s);
  chunks = n_ids / o->ctx;
  if (o->chunks > 0 && o->chunks < chunks)
    chunks = o->chunks;
  if (chunks == 0) {
    fprintf(stderr, "kiln-generate: %s: fewer than %d tokens\n", o->perplexity, o->ctx);
    return 1;
  }
  t0 = now();
  for (c = 0; c < chunks; ++c) {
    const int32_t *chunk = ids + (size_t)c * o->ctx;
    api->reset(&model);
    tokens[0] = api->bos;
    memcpy(tokens + 1, chunk, sizeof(int32_t) * (size_t)(o->ctx - 1));
    /* Logits at position j predict chunk[j]: every token of the chunk is scored. */
    for (done = 0; done < o->ctx; done += j) {
      int32_t n = o->ctx - done < KILN_PREFILL_CHUNK ? o->ctx - done : KILN_PREFILL_CHUNK;
      s = api->prefill(&model, tokens + done, n, logits);
      if (s != KILN_OK)
        return fail("perplexity", s);
      if (dump_rows(dump, logits, n))
        return fail(o->dump, KILN_ERR_IO);
      for (j = 0; j < n; ++j) {
        const float *row = logits + (size_t)j * KILN_VOCAB;
        total += log_sum_exp(row) - (double)row[chunk[done + j]];
        if (kl_base) {
          if (fread(base, sizeof base, 1, kl_base) != 1) {
            fprintf(stderr, "kiln-generate: %s: fewer rows than evaluated\n", o->kl_base);
            return 1;
          }
          kl += kl_divergence(base, row);
        }
      }
    }
  }
  printf("perplexity: %.6f (mean NLL %.6f nats over %d tokens, %d chunks of %d)\n",
         exp(total / ((double)chunks * o->ctx)), total / ((double)chunks * o->ctx),
         (int)(chunks * o->ctx), (int)chunks, (int)o->ctx);
  if (kl_base) {
    printf("mean KL divergence from %s: %.6g nats\n", o->kl_base,
           kl / ((double)chunks * o->ctx));
    fclose(kl_base);
  }
  if (dump)
    fclose(dump);
  fprintf(stderr, "evaluated %.1f tokens/s\n", chunks * o->ctx / (now() - t0));
  free(ids);
  return 0;
}
