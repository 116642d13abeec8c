/* kiln-generate: runs a generated model on token ids with greedy decoding.
 * Built by the CMakeLists.txt that kiln-compile writes next to the model; the
 * model is chosen at compile time through KILN_MODEL_* definitions. */
#include KILN_MODEL_HEADER
#include "kiln/kiln_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const kiln_model_api KILN_MODEL_API;

/* Static storage: the model path itself never allocates. */
static KILN_MODEL_TYPE model;
static uint8_t arena[KILN_ARENA_BYTES] __attribute__((aligned(64)));
static float logits[(size_t)KILN_PREFILL_CHUNK * KILN_VOCAB];
static int32_t tokens[KILN_MAX_CONTEXT];

static void usage(void) {
  fprintf(stderr,
          "usage: kiln-generate [--pack FILE] --tokens ID,ID,... [-n N]\n"
          "                     [--dump-logits FILE] [--no-prefill]\n"
          "  --dump-logits  float32 logits, one row of vocab floats per evaluated\n"
          "                 position (prompt positions, then generated ones)\n"
          "  --no-prefill   evaluate the prompt one decode call at a time\n");
}

static int32_t argmax(const float *row) {
  int32_t best = 0, i;
  for (i = 1; i < KILN_VOCAB; ++i)
    if (row[i] > row[best])
      best = i;
  return best;
}

static int fail(const char *what, kiln_status s) {
  fprintf(stderr, "kiln-generate: %s: %s\n", what, kiln_status_message(s));
  return 1;
}

static int dump(FILE *out, const float *rows, int32_t n) {
  return out && fwrite(rows, sizeof(float) * KILN_VOCAB, (size_t)n, out) != (size_t)n;
}

int main(int argc, char **argv) {
  const kiln_model_api *api = &KILN_MODEL_API;
  const char *pack = KILN_DEFAULT_PACK, *dump_path = NULL, *ids = NULL;
  int32_t n_prompt = 0, n_generate = 0, i, next;
  int prefill = 1;
  kiln_pack_source src;
  kiln_status s;
  FILE *out = NULL;

  for (i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--pack") && i + 1 < argc) pack = argv[++i];
    else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) ids = argv[++i];
    else if (!strcmp(argv[i], "-n") && i + 1 < argc) n_generate = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dump-logits") && i + 1 < argc) dump_path = argv[++i];
    else if (!strcmp(argv[i], "--no-prefill")) prefill = 0;
    else { usage(); return 2; }
  }
  if (!ids || !*ids) { usage(); return 2; }
  for (; *ids && n_prompt < KILN_MAX_CONTEXT; ++n_prompt) {
    char *end;
    tokens[n_prompt] = (int32_t)strtol(ids, &end, 10);
    if (end == ids) { usage(); return 2; }
    ids = *end == ',' ? end + 1 : end;
  }

  s = kiln_pack_source_open_file(&src, pack);
  if (s != KILN_OK) return fail(pack, s);
  s = api->open(&model, &src, arena, sizeof arena);
  if (s != KILN_OK) return fail(pack, s);
  if (dump_path && !(out = fopen(dump_path, "wb"))) {
    perror(dump_path);
    return 1;
  }

  /* The prompt, in chunks (or one decode at a time); keep the last row. */
  for (i = 0; i < n_prompt;) {
    int32_t n = prefill ? n_prompt - i : 1;
    if (n > KILN_PREFILL_CHUNK) n = KILN_PREFILL_CHUNK;
    s = prefill ? api->prefill(&model, tokens + i, n, logits)
                : api->decode(&model, tokens[i], logits);
    if (s != KILN_OK) return fail("prompt", s);
    if (dump(out, logits, n)) return fail("dump", KILN_ERR_IO);
    memmove(logits, logits + (size_t)(n - 1) * KILN_VOCAB, sizeof(float) * KILN_VOCAB);
    i += n;
  }

  printf("ids:");
  for (i = 0; i < n_generate; ++i) {
    next = argmax(logits);
    printf("%s%d", i ? "," : " ", (int)next);
    if (i + 1 == n_generate) break;
    s = api->decode(&model, next, logits);
    if (s != KILN_OK) return fail("decode", s);
    if (dump(out, logits, 1)) return fail("dump", KILN_ERR_IO);
  }
  printf("\n");
  if (out) fclose(out);
  api->close(&model);
  kiln_pack_source_close(&src);
  return 0;
}
