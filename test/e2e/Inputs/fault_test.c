/* Faults a device meets, injected under a generated model: mmap, fstat and
 * open of the pack failing, madvise failing (a hint: the run goes on), a pack
 * truncated before open, an arena one byte short or misaligned, and the
 * tokenizer's and sampler's work buffers too small; for a pack read into
 * memory (kiln_pack_source_read_file), reads a byte at a time and reads
 * interrupted (the same logits), a file that ends early (truncated after
 * open), a read error and a buffer one byte short. Each is a status, and the
 * model stays closed (prefill refused) or, after a failed open, opens and runs.
 * The system calls are replaced by this program's own definitions, which call
 * the C library's unless told to fail.
 * Usage: fault_test PACK TRUNCATED_PACK */
#define _GNU_SOURCE
#include MODEL_HEADER
#include "kiln/kiln_model.h"
#include "kiln/kiln_sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

extern const kiln_model_api MODEL_API;

static int fail_mmap, fail_madvise, fail_fstat, madvise_calls;

static uint8_t pack_buffer[PACK_BYTES] __attribute__((aligned(64)));

/* read(): 0 as the C library's; else a fault of this kind. */
enum { READ_PLAIN, READ_BYTES, READ_EINTR, READ_ENDS_EARLY, READ_EIO };
static int read_fault, read_calls;
static size_t read_total;

ssize_t read(int fd, void *buf, size_t count) {
  ssize_t (*real)(int, void *, size_t) = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
  ssize_t got;
  ++read_calls;
  switch (read_fault) {
  case READ_BYTES:
    count = count > 0 ? 1 : 0;
    break;
  case READ_EINTR:
    if (read_calls % 2) {
      errno = EINTR;
      return -1;
    }
    break;
  case READ_ENDS_EARLY: /* as if the file were cut to 4096 bytes after fstat */
    if (read_total >= 4096)
      return 0;
    if (count > 4096 - read_total)
      count = 4096 - read_total;
    break;
  case READ_EIO:
    errno = EIO;
    return -1;
  }
  got = real(fd, buf, count);
  if (got > 0)
    read_total += (size_t)got;
  return got;
}

/* A pack read into `buffer` under read fault `fault`. */
static kiln_status read_pack(kiln_pack_source *src, const char *path, int fault, size_t bytes) {
  kiln_status s;
  read_fault = fault;
  read_calls = 0;
  read_total = 0;
  s = kiln_pack_source_read_file(src, path, pack_buffer, bytes);
  read_fault = READ_PLAIN;
  return s;
}

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

  kiln_pack_source_close(&src);

  /* The pack read into memory instead of mapped. */
  check(read_pack(&src, argv[1], READ_BYTES, PACK_BYTES) == KILN_OK && read_calls > 1000 &&
            run(&src, logits) == KILN_OK && memcmp(logits, reference, sizeof logits) == 0,
        "read a byte at a time: the pack whole, the same logits");
  check(read_pack(&src, argv[1], READ_EINTR, PACK_BYTES) == KILN_OK &&
            run(&src, logits) == KILN_OK && memcmp(logits, reference, sizeof logits) == 0,
        "every other read interrupted (EINTR): retried, the same logits");
  check(read_pack(&src, argv[1], READ_ENDS_EARLY, PACK_BYTES) == KILN_ERR_TRUNCATED &&
            src.bytes == NULL,
        "the file ends early (truncated after open): KILN_ERR_TRUNCATED, the source zeroed");
  check(read_pack(&src, argv[1], READ_EIO, PACK_BYTES) == KILN_ERR_IO && src.bytes == NULL,
        "a read error: KILN_ERR_IO, the source zeroed");
  check(read_pack(&src, argv[1], READ_PLAIN, PACK_BYTES - 1) == KILN_ERR_ARENA &&
            src.bytes == NULL,
        "a buffer one byte short of the file: KILN_ERR_ARENA");
  check(read_pack(&src, argv[2], READ_PLAIN, PACK_BYTES) == KILN_OK &&
            api->open(&model, &src, arena, ARENA_BYTES) == KILN_ERR_TRUNCATED,
        "a truncated pack read into memory: open says KILN_ERR_TRUNCATED");
  check(read_pack(&src, argv[1], READ_PLAIN, PACK_BYTES) == KILN_OK &&
            run(&src, logits) == KILN_OK,
        "and read whole again: it runs");

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
