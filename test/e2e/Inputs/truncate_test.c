/* The model API's truncate, against a second model that never saw the tokens
 * rolled back: after prefilling 10 tokens and 3 drafts, truncating to 10 and
 * decoding token 10 gives the logits, bit for bit, of prefilling the 10 tokens
 * and decoding token 10; truncating past the position, or below 0, is refused.
 * Usage: truncate_test PACK */
#include MODEL_HEADER
#include "kiln/kiln_model.h"

#include <stdio.h>
#include <string.h>

extern const kiln_model_api MODEL_API;

static MODEL_TYPE a, b;
static uint8_t arena_a[ARENA_BYTES] __attribute__((aligned(64)));
static uint8_t arena_b[ARENA_BYTES] __attribute__((aligned(64)));
static float la[VOCAB], lb[VOCAB];
static int failed;

static void check(int ok, const char *what) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  failed |= !ok;
}

int main(int argc, char **argv) {
  const kiln_model_api *api = &MODEL_API;
  kiln_pack_source sa, sb;
  int32_t tokens[11], drafts[3] = {3, 4, 5}, i;
  if (argc != 2 || kiln_pack_source_open_file(&sa, argv[1]) != KILN_OK ||
      kiln_pack_source_open_file(&sb, argv[1]) != KILN_OK ||
      api->open(&a, &sa, arena_a, sizeof arena_a) != KILN_OK ||
      api->open(&b, &sb, arena_b, sizeof arena_b) != KILN_OK)
    return 2;
  for (i = 0; i < 11; ++i)
    tokens[i] = (7 * i + 3) % VOCAB;
  check(api->prefill(&a, tokens, 10, NULL) == KILN_OK &&
            api->prefill(&a, drafts, 3, NULL) == KILN_OK && api->position(&a) == 13,
        "prefill 10 tokens and 3 drafts");
  check(api->truncate(&a, 14) == KILN_ERR_ARGUMENT && api->truncate(&a, -1) == KILN_ERR_ARGUMENT &&
            api->position(&a) == 13,
        "truncate past the position or below 0 is refused, the position kept");
  check(api->truncate(&a, 10) == KILN_OK && api->position(&a) == 10, "truncate to 10");
  check(api->decode(&a, tokens[10], la) == KILN_OK, "decode token 10 after the roll back");
  check(api->prefill(&b, tokens, 10, NULL) == KILN_OK && api->decode(&b, tokens[10], lb) == KILN_OK,
        "a second model: 10 tokens, then token 10");
  check(memcmp(la, lb, sizeof la) == 0, "the same logits, bit for bit");
  check(api->truncate(&a, 0) == KILN_OK && api->position(&a) == 0, "truncate to 0 empties");
  return failed;
}
