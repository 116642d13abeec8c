/* Faults a device meets, injected under a generated model: mmap, fstat and
 * open of the pack failing, madvise failing (a hint: the run goes on), a pack
 * truncated before open, an arena one byte short or misaligned, and the
 * tokenizer's and sampler's work buffers too small. Each is a status, and the
 * model stays closed (prefill refused) or, after a failed open, opens and runs.
 * The system calls are replaced by this program's own definitions, which call
 * the C library's unless told to fail.
 * Usage: fault_test PACK TRUNCATED_PACK */
#define _GNU_SOURCE
#include MODEL_HEADER
#include "kiln/kiln_model.h"
#include "kiln/kiln_sampler.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

extern const kiln_model_api MODEL_API;

static int fail_mmap, fail_madvise, fail_fstat, madvise_calls;

void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) {
  void *(*real)(void *, size_t, int, int, int, off_t) =
      (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
  return fail_mmap ? MAP_FAILED : real(addr, length, prot, flags, fd, offset);
}

int madvise(void *addr, size_t length, int advice) {
  int (*real)(void *, size_t, int) = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "madvise");
  ++madvise_calls;
  return fail_madvise ? -1 : real(addr, length, advice);
}

int fstat(int fd, struct stat *st) {
  int (*real)(int, struct stat *) = (int (*)(int, struct stat *))dlsym(RTLD_NEXT, "fstat");
  return fail_fstat ? -1 : real(fd, st);
}

static MODEL_TYPE model;
static uint8_t arena[ARENA_BYTES + 64] __attribute__((aligned(64)));
static float logits[VOCAB], reference[VOCAB];
static int failed;

static void check(int ok, const char *what) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  failed |= !ok;
}

/* The model's logits after tokens 1..5 from a fresh open of `src`. */
static kiln_status run(const kiln_pack_source *src, float *out) {
  static const int32_t tokens[5] = {1, 2, 3, 4, 5};
  kiln_status s = MODEL_API.open(&model, src, arena, ARENA_BYTES);
  return s != KILN_OK ? s : MODEL_API.prefill_last(&model, tokens, 5, out);
}

int main(int argc, char **argv) {
  const kiln_model_api *api = &MODEL_API;
  kiln_pack_source src;
  kiln_tokenizer tok;
  kiln_sampler sampler;
  kiln_sampler_params params;
  int32_t ids[8], n, token, one = 1;
  uint8_t work[16];

  if (argc != 3)
    return 2;
  check(kiln_pack_source_open_file(&src, argv[1]) == KILN_OK && run(&src, reference) == KILN_OK,
        "a clean open and run");
  kiln_pack_source_close(&src);

  fail_mmap = 1;
  check(kiln_pack_source_open_file(&src, argv[1]) == KILN_ERR_IO && src.bytes == NULL,
        "mmap fails: KILN_ERR_IO, the source zeroed");
  fail_mmap = 0;
  fail_fstat = 1;
  check(kiln_pack_source_open_file(&src, argv[1]) == KILN_ERR_IO, "fstat fails: KILN_ERR_IO");
  fail_fstat = 0;
  check(kiln_pack_source_open_file(&src, "/nonexistent/pack") == KILN_ERR_IO,
        "open fails: KILN_ERR_IO");
  check(kiln_pack_source_open_file(&src, argv[2]) == KILN_OK &&
            api->open(&model, &src, arena, ARENA_BYTES) == KILN_ERR_TRUNCATED,
        "a pack truncated before open: KILN_ERR_TRUNCATED");
  kiln_pack_source_close(&src);

  check(kiln_pack_source_open_file(&src, argv[1]) == KILN_OK, "the pack again");
  check(api->open(&model, &src, arena, ARENA_BYTES - 1) == KILN_ERR_ARENA &&
            api->prefill_last(&model, &one, 1, logits) == KILN_ERR_ARGUMENT,
        "an arena one byte short: KILN_ERR_ARENA, and the model stays closed");
  check(api->open(&model, &src, arena + 1, ARENA_BYTES) == KILN_ERR_ALIGNMENT &&
            api->prefill_last(&model, &one, 1, logits) == KILN_ERR_ARGUMENT,
        "a misaligned arena: KILN_ERR_ALIGNMENT, and the model stays closed");
  fail_madvise = 1;
  madvise_calls = 0;
  check(run(&src, logits) == KILN_OK && memcmp(logits, reference, sizeof logits) == 0,
        "after those, madvise failing: it opens and runs, the same logits");
  printf("  (madvise asked %d times)\n", madvise_calls);
  fail_madvise = 0;

  check(api->tokenizer(&model, &tok) == KILN_OK &&
            kiln_tokenize(&tok, "It was", 6, 1, ids, 8, &n, work, sizeof work) ==
                KILN_ERR_ARGUMENT,
        "the tokenizer's work buffer too small: KILN_ERR_ARGUMENT");
  kiln_sampler_default_params(&params);
  params.temperature = 0.8f;
  check(kiln_sampler_init(&sampler, &params) == KILN_OK &&
            kiln_sampler_sample(&sampler, logits, VOCAB, NULL, 0, work, sizeof work, &token) ==
                KILN_ERR_ARGUMENT,
        "the sampler's work buffer too small: KILN_ERR_ARGUMENT");
  kiln_pack_source_close(&src);
  return failed;
}
