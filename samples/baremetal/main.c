/* A firmware-style app: the weights are constant data (placeable in flash and
 * executed in place), the arena is a static array sized by the generated header,
 * and nothing in the model path allocates, maps a file or uses stdio. The only
 * output goes through port_write(), which a board replaces with its UART. */
#include KILN_MODEL_HEADER
#include "kiln/kiln_model.h"

#include "port.h"

extern const kiln_model_api KILN_MODEL_API;

static KILN_MODEL_TYPE model;
static uint8_t arena[KILN_ARENA_BYTES] __attribute__((aligned(64)));
static float logits[(size_t)KILN_PREFILL_CHUNK * KILN_VOCAB];
static const int32_t prompt[] = {KILN_PROMPT};

static void write_int(int32_t v) {
  char digits[12];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0);
  while (n > 0)
    port_write(&digits[--n], 1);
}

static int32_t argmax(const float *row) {
  int32_t best = 0, i;
  for (i = 1; i < KILN_VOCAB; ++i)
    if (row[i] > row[best])
      best = i;
  return best;
}

static int fail(kiln_status s) {
  const char *m = kiln_status_message(s);
  size_t n = 0;
  while (m[n])
    ++n;
  port_write("error: ", 7);
  port_write(m, n);
  port_write("\n", 1);
  return 1;
}

int main(void) {
  const kiln_model_api *api = &KILN_MODEL_API;
  const int32_t n_prompt = (int32_t)(sizeof prompt / sizeof prompt[0]);
  const float *last = logits;
  kiln_pack_source src;
  kiln_status s;
  int32_t i, next;

  s = kiln_pack_source_from_memory(&src, KILN_PACK_BYTES, sizeof KILN_PACK_BYTES);
  if (s == KILN_OK)
    s = api->open(&model, &src, arena, sizeof arena);
  for (i = 0; s == KILN_OK && i < n_prompt; i += KILN_PREFILL_CHUNK) {
    int32_t n = n_prompt - i < KILN_PREFILL_CHUNK ? n_prompt - i : KILN_PREFILL_CHUNK;
    s = api->prefill(&model, prompt + i, n, logits);
    last = logits + (size_t)(n - 1) * KILN_VOCAB;
  }
  if (s != KILN_OK)
    return fail(s);

  /* Greedy continuation, printed as token ids like kiln-generate. */
  port_write("ids:", 4);
  for (i = 0; i < KILN_GENERATE; ++i) {
    next = argmax(last);
    port_write(i ? "," : " ", 1);
    write_int(next);
    if (i + 1 == KILN_GENERATE)
      break;
    s = api->decode(&model, next, logits);
    if (s != KILN_OK)
      return fail(s);
    last = logits;
  }
  port_write("\n", 1);
  return 0;
}
