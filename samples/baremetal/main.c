/* A firmware-style app: the weights are constant data (placeable in flash and
 * executed in place), the arena is a static array sized by the generated header,
 * and nothing in the model path allocates, maps a file or uses stdio. The only
 * output goes through port_write(), which a board replaces with its UART. */
#include KILN_MODEL_HEADER
#include "kiln/kiln_model.h"
#include "kiln/kiln_tokenizer.h"

#include "port.h"

extern const kiln_model_api KILN_MODEL_API;

static KILN_MODEL_TYPE model;
static uint8_t arena[KILN_ARENA_BYTES] __attribute__((aligned(64)));
static float logits[KILN_VOCAB];
static int32_t tokens[KILN_MAX_CONTEXT];
static const char prompt[] = KILN_PROMPT;
/* Tokenizer work space: kiln_tokenize_work_bytes() is about 27 bytes per byte
 * of text; the prompt is known at build time, so a static buffer does. */
static uint8_t tokenizer_work[64 * sizeof prompt + 256];

static size_t length(const char *s) {
  size_t n = 0;
  while (s[n])
    ++n;
  return n;
}

static int fail(kiln_status s) {
  const char *m = kiln_status_message(s);
  port_write("error: ", 7);
  port_write(m, length(m));
  port_write("\n", 1);
  return 1;
}

static int32_t argmax(const float *row) {
  int32_t best = 0, i;
  for (i = 1; i < KILN_VOCAB; ++i)
    if (row[i] > row[best])
      best = i;
  return best;
}

int main(void) {
  const kiln_model_api *api = &KILN_MODEL_API;
  kiln_pack_source src;
  kiln_tokenizer tok;
  kiln_status s;
  int32_t n_prompt = 0, i, next;
  char piece[256];
  size_t n_piece;

  s = kiln_pack_source_from_memory(&src, KILN_PACK_BYTES, sizeof KILN_PACK_BYTES);
  if (s == KILN_OK)
    s = api->open(&model, &src, arena, sizeof arena);
  if (s == KILN_OK)
    s = api->tokenizer(&model, &tok);
  if (s == KILN_OK)
    s = kiln_tokenize(&tok, prompt, length(prompt), 1, tokens, KILN_MAX_CONTEXT, &n_prompt,
                      tokenizer_work, sizeof tokenizer_work);
  if (s == KILN_OK)
    s = api->prefill_last(&model, tokens, n_prompt, logits);
  if (s != KILN_OK)
    return fail(s);

  /* The prompt, then its greedy continuation, as kiln-generate prints them. */
  port_write(prompt, length(prompt));
  for (i = 0; i < KILN_GENERATE; ++i) {
    next = argmax(logits);
    if (kiln_token_piece(&tok, next, 0, piece, sizeof piece, &n_piece) == KILN_OK)
      port_write(piece, n_piece);
    if (i + 1 == KILN_GENERATE)
      break;
    s = api->decode(&model, next, logits);
    if (s != KILN_OK)
      return fail(s);
  }
  port_write("\n", 1);
  return 0;
}
