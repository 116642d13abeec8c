/* The firmware: the weights are constant data (in the board's flash, read in
 * place), the arena is a static array sized by the generated header (in the
 * board's arena region), and nothing allocates, maps a file or uses stdio. It
 * prints the prompt's greedy continuation over the UART, as kiln-generate
 * prints it, then a line of figures: cycles for the prompt and per decoded
 * token, and the stack's high-water mark. */
#include KILN_MODEL_HEADER
#include "kiln/kiln_model.h"
#include "kiln/kiln_tokenizer.h"

#include "port.h"

#include <string.h>

extern const kiln_model_api KILN_MODEL_API;

static KILN_MODEL_TYPE model;
static uint8_t arena[KILN_ARENA_BYTES] __attribute__((aligned(64), section(".kiln_arena")));
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

static void put_u64(uint64_t v) {
  char digits[21];
  int n = 0;
  do {
    digits[20 - n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  port_write(digits + 21 - n, (size_t)n);
}

static void put_figure(const char *label, uint64_t v) {
  port_write(label, length(label));
  put_u64(v);
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
  uint64_t t0, t_prefill, t_decode = 0;

  s = kiln_pack_source_from_memory(&src, KILN_PACK_BYTES, sizeof KILN_PACK_BYTES);
  if (s == KILN_OK)
    s = api->open(&model, &src, arena, sizeof arena);
  if (s == KILN_OK)
    s = api->tokenizer(&model, &tok);
  if (s == KILN_OK)
    s = kiln_tokenize(&tok, prompt, length(prompt), 1, tokens, KILN_MAX_CONTEXT, &n_prompt,
                      tokenizer_work, sizeof tokenizer_work);
  t0 = port_cycles();
  if (s == KILN_OK)
    s = api->prefill_last(&model, tokens, n_prompt, logits);
  t_prefill = port_cycles() - t0;
#ifdef KILN_PRINT_LOGITS
  /* The prompt's last logits, each as the 8 hex digits of its bits: exact. */
  if (s == KILN_OK) {
    static const char hex[] = "0123456789abcdef";
    char word[9];
    uint32_t bits;
    int j;
    port_write("logits:", 7);
    for (i = 0; i < KILN_VOCAB; ++i) {
      memcpy(&bits, &logits[i], sizeof bits);
      for (j = 0; j < 8; ++j)
        word[j] = hex[(bits >> (28 - 4 * j)) & 15u];
      word[8] = i + 1 < KILN_VOCAB ? ',' : '\n';
      port_write(word, sizeof word);
    }
  }
#endif
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
    t0 = port_cycles();
    s = api->decode(&model, next, logits);
    t_decode += port_cycles() - t0;
    if (s != KILN_OK)
      return fail(s);
  }
  port_write("\n", 1);
  put_figure("kiln: prompt tokens ", (uint64_t)n_prompt);
  put_figure(" prefill cycles ", t_prefill);
  put_figure(" decode cycles/token ", KILN_GENERATE > 1 ? t_decode / (KILN_GENERATE - 1) : 0);
  put_figure(" stack bytes ", port_stack_used());
  put_figure(" of ", port_stack_bytes());
  port_write("\n", 1);
  return 0;
}
