/* Chat templates: the text of a user turn (and of the system turn that opens
 * a conversation) in the template kiln-compile recognized, ready for
 * kiln_tokenize with KILN_TOKENIZE_PARSE_SPECIAL. */
#include "kiln/kiln_tokenizer.h"

#include <string.h>

typedef struct appender {
  char *out;
  size_t cap, n;
} appender;

static void append(appender *a, const char *s) {
  size_t k = strlen(s);
  if (a->out != NULL && a->n + k <= a->cap)
    memcpy(a->out + a->n, s, k);
  a->n += k;
}

kiln_status kiln_chat_prompt(uint32_t chat, int first, const char *system, const char *user,
                             char *out, size_t cap, size_t *n) {
  /* Per template: end of an assistant turn, then the open and close of a turn
   * around its role, and the assistant's role name. */
  static const char *const end_turn[] = {"", "<|eot_id|>", "<|im_end|>\n", "<end_of_turn>\n",
                                         "<|end|>\n"};
  static const char *const open[] = {"", "<|start_header_id|>", "<|im_start|>",
                                     "<start_of_turn>", "<|"};
  static const char *const close[] = {"", "<|end_header_id|>\n\n", "\n", "\n", "|>\n"};
  static const char *const assistant[] = {"", "assistant", "assistant", "model", "assistant"};
  appender a;
  int pass;

  if (n != NULL)
    *n = 0;
  if (n == NULL || user == NULL || (out == NULL && cap > 0) || chat == KILN_CHAT_NONE ||
      chat > KILN_CHAT_PHI3)
    return KILN_ERR_ARGUMENT;
  /* Measure, then write when it fits. */
  for (pass = 0; pass < 2; ++pass) {
    a.out = pass ? out : NULL;
    a.cap = pass ? cap : 0;
    a.n = 0;
    if (!first)
      append(&a, end_turn[chat]);
    if (system != NULL && chat != KILN_CHAT_GEMMA) {
      append(&a, open[chat]);
      append(&a, "system");
      append(&a, close[chat]);
      append(&a, system);
      append(&a, end_turn[chat]);
    }
    append(&a, open[chat]);
    append(&a, "user");
    append(&a, close[chat]);
    if (system != NULL && chat == KILN_CHAT_GEMMA) {
      append(&a, system);
      append(&a, "\n\n");
    }
    append(&a, user);
    append(&a, end_turn[chat]);
    append(&a, open[chat]);
    append(&a, assistant[chat]);
    append(&a, close[chat]);
    *n = a.n;
    if (a.n > cap)
      return KILN_ERR_ARGUMENT;
  }
  return KILN_OK;
}
