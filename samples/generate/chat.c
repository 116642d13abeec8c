/* kiln-generate --chat: a conversation in the model's chat template, one
 * user turn per line of stdin. */
#include "kiln_generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Samples and prints a reply from the logits of the prompt just evaluated,
 * until an end-of-generation token or n tokens; the tokens are decoded into the
 * cache but for the last one (an end of turn is left to the next prompt). */
static kiln_status reply(const kiln_model_api *api, const kiln_tokenizer *t, kiln_sampler *sampler,
                         int32_t n) {
  static uint8_t sampler_work[4 * KILN_VOCAB + 64];
  int32_t i, next;
  kiln_status s;
  for (i = 0; i < n; ++i) {
    s = kiln_sampler_sample(sampler, logits, KILN_VOCAB, tokens, api->position(&model),
                            sampler_work, sizeof sampler_work, &next);
    if (s != KILN_OK || kiln_tokenizer_is_eog(t, next))
      return s;
    print_piece(t, next, 0);
    if (api->position(&model) >= KILN_MAX_CONTEXT)
      return KILN_ERR_CONTEXT_FULL;
    tokens[api->position(&model)] = next;
    s = api->decode(&model, next, logits);
    if (s != KILN_OK)
      return s;
  }
  return KILN_OK;
}

/* --chat: each line of stdin is a user turn, formatted with the model's
 * template and answered; the KV cache keeps the whole conversation. */
int chat(const kiln_model_api *api, const kiln_tokenizer *t, const options *o) {
  static char line[16384];
  kiln_sampler sampler;
  kiln_status s;
  int first = 1;
  uint32_t template_ = kiln_tokenizer_chat(t);

  if (template_ == KILN_CHAT_NONE) {
    fprintf(stderr, "kiln-generate: --chat: the model has no chat template Kiln knows "
                    "(tokenizer.chat_template; known: llama3, chatml, gemma, phi3)\n");
    return 1;
  }
  s = kiln_sampler_init(&sampler, &o->sampling);
  if (s != KILN_OK)
    return fail("sampling options", s);
  while (fgets(line, sizeof line, stdin)) {
    size_t len = strcspn(line, "\r\n"), n = 0;
    int32_t pos = api->position(&model), n_ids = 0;
    char *text;
    line[len] = 0;
    if (len == 0)
      continue;
    kiln_chat_prompt(template_, first, first ? o->system : NULL, line, NULL, 0, &n);
    text = malloc(n + 1);
    if (!text || kiln_chat_prompt(template_, first, first ? o->system : NULL, line, text, n, &n) !=
                     KILN_OK)
      return fail("chat prompt", KILN_ERR_ARGUMENT);
    s = encode(t, text, n, KILN_TOKENIZE_PARSE_SPECIAL | (first ? KILN_TOKENIZE_ADD_SPECIAL : 0),
               tokens + pos, KILN_MAX_CONTEXT - pos, &n_ids);
    free(text);
    if (s != KILN_OK)
      return fail("the conversation no longer fits the context", s);
    s = api->prefill_last(&model, tokens + pos, n_ids, logits);
    if (s == KILN_OK)
      s = reply(api, t, &sampler, o->n_generate);
    printf("\n");
    fflush(stdout);
    if (s != KILN_OK)
      return fail("reply", s);
    first = 0;
  }
  return 0;
}
