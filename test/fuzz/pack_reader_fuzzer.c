/* libFuzzer target: the pack reader must reject any byte string with a
 * status, never read out of bounds, and accept only headers that keep every
 * promise the generated code relies on.
 *
 * Input: a 32-byte kiln_pack_expect (model_hash, pack_bytes, data_offset,
 * data_size, little-endian u64s) followed by the pack, so mutations can reach
 * the hash, size and success paths. Inputs under 32 bytes are all pack. */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */

#include "kiln/kiln.h"

#include <stdlib.h>
#include <string.h>

enum { EXPECT_BYTES = 32 };

static uint64_t load_le64(const uint8_t *p) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* The invariants kiln_pack_read_header promises on success. */
static void check_header(const kiln_pack_header *h, size_t size) {
  if (h->version != KILN_PACK_VERSION || h->table_offset < KILN_PACK_HEADER_BYTES ||
      h->table_size < 8u || h->table_size > h->data_offset ||
      h->table_offset > h->data_offset - h->table_size || h->data_offset % KILN_PACK_PAGE != 0u ||
      h->data_size > h->file_size || h->file_size - h->data_size != h->data_offset ||
      h->file_size > size)
    abort();
}

/* Reads every data byte so ASan sees any section that overruns the input. */
static unsigned touch(const uint8_t *p, uint64_t n) {
  unsigned sum = 0;
  uint64_t i;
  for (i = 0; i < n; i++)
    sum += p[i];
  return sum;
}

static unsigned verify(const uint8_t *bytes, size_t size, const kiln_pack_expect *expect) {
  kiln_pack_source src;
  kiln_pack_header h;
  const uint8_t *data = NULL;
  kiln_status s;

  if (kiln_pack_source_from_memory(&src, bytes, size) != KILN_OK)
    return 0;
  s = kiln_pack_verify(&src, expect, &data);
  if (s != KILN_OK) {
    if (data != NULL)
      abort();
    return 0;
  }
  if (kiln_pack_read_header(bytes, size, &h) != KILN_OK || h.model_hash != expect->model_hash ||
      h.file_size != expect->pack_bytes || data != bytes + h.data_offset ||
      (uintptr_t)data % KILN_ALIGN != 0u)
    abort();
  return touch(data, h.data_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
  kiln_pack_expect expect = {0, 0, 0, 0};
  const uint8_t *pack = input;
  size_t pack_size = size;
  kiln_pack_header h;
  void *copy = NULL;
  unsigned sum = 0;
  volatile unsigned sink; /* keeps the reads in touch() from being optimised away */

  if (size >= EXPECT_BYTES) {
    expect.model_hash = load_le64(input);
    expect.pack_bytes = load_le64(input + 8);
    expect.data_offset = load_le64(input + 16);
    expect.data_size = load_le64(input + 24);
    pack += EXPECT_BYTES;
    pack_size -= EXPECT_BYTES;
  }

  /* As given: at whatever alignment libFuzzer chose. */
  if (pack_size > 0 && kiln_pack_read_header(pack, pack_size, &h) == KILN_OK) {
    check_header(&h, pack_size);
    sum += touch(pack + h.table_offset, h.table_size);
  }
  sum += verify(pack, pack_size, &expect);

  /* Copied to a 64-byte aligned block of exactly pack_size bytes, so the
   * success path is reachable and ASan still catches a one-byte overrun. */
  if (pack_size > 0 && posix_memalign(&copy, KILN_ALIGN, pack_size) == 0) {
    memcpy(copy, pack, pack_size);
    sum += verify((const uint8_t *)copy, pack_size, &expect);
    free(copy);
  }
  sink = sum;
  (void)sink;
  return 0;
}
