/* Tests for the Kiln runtime core: pack header checks, arena checks, file
 * sources, status messages and the f16 helpers. No framework: each check
 * prints on failure and main reports the totals. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, write, unlink */

#include "kiln/kiln.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tally.h"

static void check_status(tally *t, kiln_status got, kiln_status want, const char *what) {
  if (got == want) {
    t->passed++;
    return;
  }
  t->failed++;
  printf("FAIL: %s: got \"%s\", want \"%s\"\n", what, kiln_status_message(got),
         kiln_status_message(want));
}

/* ---- building packs in memory ---------------------------------------- */

enum { PACK_CAP = 8192 };

typedef struct pack_spec {
  char magic[8];
  uint32_t version, flags;
  uint64_t model_hash, table_offset, table_size, data_offset, data_size, file_size;
  char ident[4];
} pack_spec;

static pack_spec valid_spec(void) {
  pack_spec s;
  memcpy(s.magic, "KILNPACK", 8);
  s.version = KILN_PACK_VERSION;
  s.flags = 0;
  s.model_hash = 0x0123456789ABCDEFull;
  s.table_offset = KILN_PACK_HEADER_BYTES;
  s.table_size = 32;
  s.data_offset = KILN_PACK_PAGE;
  s.data_size = 256;
  s.file_size = s.data_offset + s.data_size;
  memcpy(s.ident, "KLNP", 4);
  return s;
}

static kiln_pack_expect expect_of(const pack_spec *s) {
  kiln_pack_expect e;
  e.model_hash = s->model_hash;
  e.pack_bytes = s->file_size;
  e.data_offset = s->data_offset;
  e.data_size = s->data_size;
  return e;
}

static void store_le32(uint8_t *p, uint32_t v) {
  int i;
  for (i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void store_le64(uint8_t *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint8_t data_byte(uint64_t i) { return (uint8_t)(i * 7u + 3u); }

/* Writes header, table (root offset + identifier) and a data pattern into
 * buf[0, PACK_CAP), skipping whatever a broken spec places outside it. */
static void write_pack(uint8_t *buf, const pack_spec *s) {
  uint64_t i;

  memset(buf, 0, PACK_CAP);
  memcpy(buf, s->magic, 8);
  store_le32(buf + 8, s->version);
  store_le32(buf + 12, s->flags);
  store_le64(buf + 16, s->model_hash);
  store_le64(buf + 24, s->table_offset);
  store_le64(buf + 32, s->table_size);
  store_le64(buf + 40, s->data_offset);
  store_le64(buf + 48, s->data_size);
  store_le64(buf + 56, s->file_size);
  if (s->table_offset <= PACK_CAP - 8u) {
    store_le32(buf + s->table_offset, 8u);
    memcpy(buf + s->table_offset + 4u, s->ident, 4);
  }
  for (i = s->data_offset; i < s->file_size && i < PACK_CAP; i++)
    buf[i] = data_byte(i - s->data_offset);
}

static uint8_t *align_up(uint8_t *p) {
  uintptr_t a = (uintptr_t)p;
  return p + (KILN_ALIGN - a % KILN_ALIGN) % KILN_ALIGN;
}

/* Verifies `s` written at `buf` with `size` bytes visible and expectation `e`. */
static kiln_status verify_at(uint8_t *buf, size_t size, const pack_spec *s,
                             const kiln_pack_expect *e) {
  kiln_pack_source src;
  const uint8_t *data = buf;
  kiln_status st;

  write_pack(buf, s);
  if (kiln_pack_source_from_memory(&src, buf, size) != KILN_OK)
    return KILN_ERR_ARGUMENT;
  st = kiln_pack_verify(&src, e, &data);
  /* A failed verify must never hand out a data pointer; report that as a
   * status no check expects. */
  if (st != KILN_OK && data != NULL)
    return (kiln_status)-1;
  return st;
}

static kiln_status verify_spec(uint8_t *buf, const pack_spec *s) {
  kiln_pack_expect e = expect_of(s);
  return verify_at(buf, PACK_CAP, s, &e);
}

/* ---- pack header and verify ------------------------------------------ */

static void test_valid_pack(tally *t, uint8_t *buf) {
  pack_spec s = valid_spec();
  kiln_pack_expect e = expect_of(&s);
  kiln_pack_source src;
  kiln_pack_header h;
  const uint8_t *data = NULL;
  uint64_t i;
  int same = 1;

  write_pack(buf, &s);
  check_status(t, kiln_pack_read_header(buf, (size_t)s.file_size, &h), KILN_OK, "read valid header");
  check(t, h.version == 1u && h.flags == 0u && h.model_hash == s.model_hash &&
               h.table_offset == 64u && h.table_size == 32u && h.data_offset == 4096u &&
               h.data_size == 256u && h.file_size == 4352u,
        "header fields decoded");
  check_status(t, kiln_pack_source_from_memory(&src, buf, (size_t)s.file_size), KILN_OK,
               "memory source");
  check(t, src.bytes == buf && src.size == s.file_size && src.mapping == NULL &&
               src.mapping_size == 0u,
        "memory source fields");
  check_status(t, kiln_pack_verify(&src, &e, &data), KILN_OK, "valid pack verifies");
  check(t, data == buf + 4096, "data points at the data section");
  for (i = 0; data != NULL && i < s.data_size; i++)
    same &= data[i] == data_byte(i);
  check(t, same, "data section contents");

  /* Trailing bytes past file_size are allowed (e.g. a pack inside a larger image). */
  check_status(t, verify_at(buf, PACK_CAP, &s, &e), KILN_OK, "pack with trailing bytes");
  /* 64-byte alignment is all the data needs in memory, not page alignment. */
  check_status(t, verify_at(buf + KILN_ALIGN, (size_t)s.file_size, &s, &e), KILN_OK,
               "pack at a 64-byte (not page) aligned address");
}

static void test_arguments(tally *t, uint8_t *buf) {
  pack_spec s = valid_spec();
  kiln_pack_expect e = expect_of(&s);
  kiln_pack_source src;
  kiln_pack_header h;
  const uint8_t *data = buf;

  write_pack(buf, &s);
  check_status(t, kiln_pack_read_header(NULL, 4352, &h), KILN_ERR_ARGUMENT, "read_header NULL bytes");
  check_status(t, kiln_pack_read_header(buf, 4352, NULL), KILN_ERR_ARGUMENT, "read_header NULL out");
  check_status(t, kiln_pack_source_from_memory(NULL, buf, 1), KILN_ERR_ARGUMENT, "from_memory NULL src");
  check_status(t, kiln_pack_source_from_memory(&src, NULL, 1), KILN_ERR_ARGUMENT,
               "from_memory NULL bytes");
  check(t, src.bytes == NULL && src.size == 0u, "from_memory failure zeroes the source");
  check_status(t, kiln_pack_verify(&src, &e, &data), KILN_ERR_ARGUMENT, "verify zeroed source");
  check(t, data == NULL, "failed verify clears *data");
  kiln_pack_source_from_memory(&src, buf, 4352);
  check_status(t, kiln_pack_verify(NULL, &e, &data), KILN_ERR_ARGUMENT, "verify NULL src");
  check_status(t, kiln_pack_verify(&src, NULL, &data), KILN_ERR_ARGUMENT, "verify NULL expect");
  check_status(t, kiln_pack_verify(&src, &e, NULL), KILN_ERR_ARGUMENT, "verify NULL data");
}

static void test_header_failures(tally *t, uint8_t *buf) {
  pack_spec s;
  kiln_pack_expect e;

  s = valid_spec();
  e = expect_of(&s);
  check_status(t, verify_at(buf, 0, &s, &e), KILN_ERR_TRUNCATED, "size 0");
  check_status(t, verify_at(buf, 40, &s, &e), KILN_ERR_TRUNCATED, "truncated inside header");
  check_status(t, verify_at(buf, 63, &s, &e), KILN_ERR_TRUNCATED, "one byte short of a header");
  check_status(t, verify_at(buf, (size_t)s.file_size - 1u, &s, &e), KILN_ERR_TRUNCATED,
               "file shorter than file_size");
  check_status(t, verify_at(buf, 4096 + 8, &s, &e), KILN_ERR_TRUNCATED,
               "file ends inside the data");

  s = valid_spec();
  memcpy(s.magic, "KILNPACX", 8);
  check_status(t, verify_spec(buf, &s), KILN_ERR_MAGIC, "bad magic");
  s.version = 2; /* magic is checked first */
  check_status(t, verify_spec(buf, &s), KILN_ERR_MAGIC, "bad magic before bad version");

  s = valid_spec();
  s.version = 2;
  check_status(t, verify_spec(buf, &s), KILN_ERR_VERSION, "version 2");
  s.version = 0;
  check_status(t, verify_spec(buf, &s), KILN_ERR_VERSION, "version 0");
  s.table_offset = 8; /* version is checked before ranges */
  check_status(t, verify_spec(buf, &s), KILN_ERR_VERSION, "bad version before bad range");

  s = valid_spec();
  memcpy(s.ident, "KLNQ", 4);
  check_status(t, verify_spec(buf, &s), KILN_ERR_MAGIC, "bad table identifier");
}

static void test_range_failures(tally *t, uint8_t *buf) {
  pack_spec s;

  s = valid_spec();
  s.table_offset = 32;
  check_status(t, verify_spec(buf, &s), KILN_ERR_BOUNDS, "table inside the header");
  s = valid_spec();
  s.table_size = 7;
  check_status(t, verify_spec(buf, &s), KILN_ERR_BOUNDS, "table too small for an identifier");
  s = valid_spec();
  s.table_size = s.data_offset - s.table_offset + 1u;
  check_status(t, verify_spec(buf, &s), KILN_ERR_BOUNDS, "table overlapping data");
  s.table_size = s.data_offset - s.table_offset;
  check_status(t, verify_spec(buf, &s), KILN_OK, "table ending exactly at data");
  s = valid_spec();
  s.table_offset = UINT64_MAX - 3u;
  s.table_size = 8;
  check_status(t, verify_spec(buf, &s), KILN_ERR_BOUNDS, "table range overflowing u64");
  s = valid_spec();
  s.table_offset = 4000;
  s.table_size = UINT64_MAX;
  check_status(t, verify_spec(buf, &s), KILN_ERR_BOUNDS, "table size overflowing u64");

  s = valid_spec();
  s.data_offset = KILN_PACK_PAGE + KILN_ALIGN;
  s.data_size = 128;
  s.file_size = s.data_offset + s.data_size;
  check_status(t, verify_spec(buf, &s), KILN_ERR_ALIGNMENT, "data_offset not page aligned");
  s.file_size = 1; /* alignment is checked before file_size */
  check_status(t, verify_spec(buf, &s), KILN_ERR_ALIGNMENT, "alignment before file_size");

  s = valid_spec();
  s.file_size = s.data_offset + s.data_size + 1u;
  check_status(t, verify_spec(buf, &s), KILN_ERR_BOUNDS, "file_size above data end");
  s.file_size = s.data_offset + s.data_size - 1u;
  check_status(t, verify_spec(buf, &s), KILN_ERR_BOUNDS, "file_size below data end");
  s = valid_spec();
  s.data_size = UINT64_MAX - 100u;
  s.file_size = 100;
  check_status(t, verify_spec(buf, &s), KILN_ERR_BOUNDS, "data range overflowing u64");
  s = valid_spec();
  s.data_size = 1u << 20;
  s.file_size = s.data_offset + s.data_size;
  check_status(t, verify_spec(buf, &s), KILN_ERR_TRUNCATED, "consistent header, file too short");
}

static void test_expect_failures(tally *t, uint8_t *buf) {
  pack_spec s = valid_spec();
  kiln_pack_expect e;

  e = expect_of(&s);
  e.model_hash ^= 1u;
  check_status(t, verify_at(buf, PACK_CAP, &s, &e), KILN_ERR_MODEL_HASH, "wrong model hash");
  e.pack_bytes += 64u; /* hash is checked first */
  check_status(t, verify_at(buf, PACK_CAP, &s, &e), KILN_ERR_MODEL_HASH, "hash before sizes");
  e = expect_of(&s);
  e.pack_bytes += 64u;
  check_status(t, verify_at(buf, PACK_CAP, &s, &e), KILN_ERR_BOUNDS, "pack_bytes mismatch");
  e = expect_of(&s);
  e.data_offset = 8192;
  check_status(t, verify_at(buf, PACK_CAP, &s, &e), KILN_ERR_BOUNDS, "data_offset mismatch");
  e = expect_of(&s);
  e.data_size -= 1u;
  check_status(t, verify_at(buf, PACK_CAP, &s, &e), KILN_ERR_BOUNDS, "data_size mismatch");

  e = expect_of(&s);
  check_status(t, verify_at(buf + 1, (size_t)s.file_size, &s, &e), KILN_ERR_ALIGNMENT,
               "data misaligned in memory (odd offset)");
  check_status(t, verify_at(buf + 32, (size_t)s.file_size, &s, &e), KILN_ERR_ALIGNMENT,
               "data misaligned in memory (32-byte offset)");
}

/* ---- arena ------------------------------------------------------------ */

static void test_arena(tally *t, uint8_t *buf) {
  check_status(t, kiln_arena_check(buf, 1024, 1024), KILN_OK, "arena of exactly the size");
  check_status(t, kiln_arena_check(buf, 1024, 0), KILN_OK, "arena needing nothing");
  check_status(t, kiln_arena_check(buf, 1023, 1024), KILN_ERR_ARENA, "arena one byte short");
  check_status(t, kiln_arena_check(NULL, 1024, 16), KILN_ERR_ARGUMENT, "NULL arena");
  check_status(t, kiln_arena_check(buf + 8, 1024, 16), KILN_ERR_ALIGNMENT, "misaligned arena");
  check_status(t, kiln_arena_check(buf + 1, 4, 16), KILN_ERR_ALIGNMENT,
               "misaligned is reported before too small");
  check_status(t, kiln_arena_check(buf + 64, 1024, 16), KILN_OK, "arena at a 64-byte offset");
}

/* ---- file sources ----------------------------------------------------- */

static int write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Writes n bytes to a new temporary file; its name goes to path. */
static int make_temp_file(char *path, size_t cap, const uint8_t *bytes, size_t n) {
  const char *dir = getenv("TMPDIR");
  int fd;

  if (dir == NULL || dir[0] == '\0')
    dir = "/tmp";
  if (snprintf(path, cap, "%s/kiln_pack_test_XXXXXX", dir) >= (int)cap)
    return -1;
  fd = mkstemp(path);
  if (fd < 0)
    return -1;
  if (write_all(fd, bytes, n) != 0) {
    close(fd);
    unlink(path);
    return -1;
  }
  return close(fd);
}

static int source_is_zero(const kiln_pack_source *src) {
  return src->bytes == NULL && src->size == 0u && src->mapping == NULL && src->mapping_size == 0u;
}

static void test_file_source(tally *t, uint8_t *buf) {
  pack_spec s = valid_spec();
  kiln_pack_expect e = expect_of(&s);
  kiln_pack_source src;
  const uint8_t *data = NULL;
  char path[512];

  write_pack(buf, &s);
  if (make_temp_file(path, sizeof path, buf, (size_t)s.file_size) != 0) {
    check(t, 0, "create temporary pack file");
    return;
  }
  check_status(t, kiln_pack_source_open_file(&src, path), KILN_OK, "open pack file");
  check(t, src.mapping != NULL && src.bytes == src.mapping && src.size == s.file_size &&
               src.mapping_size == s.file_size,
        "mapped source fields");
  check_status(t, kiln_pack_verify(&src, &e, &data), KILN_OK, "mapped pack verifies");
  check(t, data != NULL && data == src.bytes + 4096 && data[0] == data_byte(0) &&
               data[255] == data_byte(255),
        "mapped data section");
  /* Prefetch is a hint; these must simply not crash or touch memory. */
  kiln_pack_source_prefetch(&src, 0, s.file_size);
  kiln_pack_source_prefetch(&src, 4096 + 17, UINT64_MAX);
  kiln_pack_source_prefetch(&src, 100, 0);
  kiln_pack_source_prefetch(&src, s.file_size, 1);
  kiln_pack_source_prefetch(&src, UINT64_MAX, UINT64_MAX);
  kiln_pack_source_prefetch(NULL, 0, 1);
  kiln_pack_source_close(&src);
  check(t, source_is_zero(&src), "close zeroes the source");
  kiln_pack_source_close(&src);
  kiln_pack_source_close(NULL);
  check(t, 1, "close is idempotent and NULL-safe");
  unlink(path);

  check_status(t, kiln_pack_source_open_file(&src, path), KILN_ERR_IO, "nonexistent path");
  check(t, source_is_zero(&src), "failed open zeroes the source");
  check_status(t, kiln_pack_source_open_file(&src, NULL), KILN_ERR_ARGUMENT, "NULL path");
  check_status(t, kiln_pack_source_open_file(NULL, "x"), KILN_ERR_ARGUMENT, "NULL source");
  check_status(t, kiln_pack_source_open_file(&src, "/"), KILN_ERR_IO, "directory is not a pack");

  if (make_temp_file(path, sizeof path, buf, 0) != 0) {
    check(t, 0, "create empty file");
    return;
  }
  check_status(t, kiln_pack_source_open_file(&src, path), KILN_OK, "open empty file");
  check(t, src.bytes != NULL && src.size == 0u && src.mapping == NULL, "empty file source");
  check_status(t, kiln_pack_verify(&src, &e, &data), KILN_ERR_TRUNCATED, "empty file verifies as truncated");
  kiln_pack_source_prefetch(&src, 0, 1);
  kiln_pack_source_close(&src);
  check(t, source_is_zero(&src), "close empty file source");
  unlink(path);

  /* Memory sources: prefetch and close are no-ops that leave the bytes alone. */
  kiln_pack_source_from_memory(&src, buf, 64);
  kiln_pack_source_prefetch(&src, 0, 64);
  kiln_pack_source_close(&src);
  check(t, source_is_zero(&src) && buf[0] == 'K', "close of a memory source");
}

/* ---- status messages -------------------------------------------------- */

static void test_status_messages(tally *t) {
  int i, j, ok = 1;
  const char *unknown = kiln_status_message((kiln_status)999);

  for (i = KILN_OK; i <= KILN_ERR_POOL_FULL; i++) {
    const char *m = kiln_status_message((kiln_status)i);
    if (m == NULL || m[0] == '\0' || strcmp(m, unknown) == 0 || strchr(m, '\n') != NULL) {
      printf("  status %d has no proper message\n", i);
      ok = 0;
      continue;
    }
    for (j = KILN_OK; j < i; j++)
      if (strcmp(m, kiln_status_message((kiln_status)j)) == 0) {
        printf("  statuses %d and %d share a message\n", j, i);
        ok = 0;
      }
  }
  check(t, ok, "every status has a distinct one-line message");
  check(t, strcmp(unknown, "unknown status") == 0, "unknown status message");
  check(t, strcmp(kiln_status_message((kiln_status)(KILN_ERR_POOL_FULL + 1)), "unknown status") == 0,
        "status past the last is unknown");
}

/* ---- f16 -------------------------------------------------------------- */

static int half_is_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0u; }

/* Exact value of a finite half, computed independently in double. */
static double half_reference(uint16_t h) {
  int exp = (h >> 10) & 0x1F;
  double v = (double)(h & 0x3FFu);
  int e;

  if (exp != 0)
    v += 1024.0;
  else
    exp = 1;
  for (e = exp - 25; e > 0; e--)
    v *= 2.0;
  for (e = exp - 25; e < 0; e++)
    v /= 2.0;
  return (h & 0x8000u) != 0u ? -v : v;
}

static void test_half_exhaustive(tally *t) {
  uint32_t i;
  int bad_trip = 0, bad_value = 0;

  for (i = 0; i <= 0xFFFFu; i++) {
    uint16_t h = (uint16_t)i;
    float f = kiln_f16_to_f32(h);
    uint16_t back = kiln_f32_to_f16(f);
    int trip_ok = half_is_nan(h) ? (f != f && half_is_nan(back) && back == h) : back == h;
    int value_ok;

    if ((h & 0x7C00u) == 0x7C00u)
      value_ok = half_is_nan(h) ? f != f
                                : kiln_f32_to_bits(f) == ((h & 0x8000u) != 0u ? 0xFF800000u : 0x7F800000u);
    else
      value_ok = (double)f == half_reference(h) &&
                 (kiln_f32_to_bits(f) >> 31) == (uint32_t)(h >> 15); /* keeps -0 */
    if (!trip_ok && bad_trip++ < 5)
      printf("  round trip 0x%04X -> 0x%04X\n", (unsigned)h, (unsigned)back);
    if (!value_ok && bad_value++ < 5)
      printf("  f16 0x%04X -> %.9g\n", (unsigned)h, (double)f);
  }
  check(t, bad_trip == 0, "all 65536 halves round trip through f32");
  check(t, bad_value == 0, "all 65536 halves convert to their exact value");
}

/* Between adjacent halves: the exact midpoint ties to even, one float ulp
 * either side goes to the nearer half. Covers every rounding boundary. */
static void test_half_midpoints(tally *t) {
  uint32_t h;
  int bad = 0;

  for (h = 0; h < 0x7BFFu; h++) {
    float lo = kiln_f16_to_f32((uint16_t)h), hi = kiln_f16_to_f32((uint16_t)(h + 1u));
    uint32_t mid = kiln_f32_to_bits((lo + hi) * 0.5f);
    uint16_t even = (uint16_t)((h & 1u) != 0u ? h + 1u : h);
    int ok = kiln_f32_to_f16(kiln_bits_to_f32(mid)) == even &&
             kiln_f32_to_f16(kiln_bits_to_f32(mid - 1u)) == h &&
             kiln_f32_to_f16(kiln_bits_to_f32(mid + 1u)) == h + 1u &&
             kiln_f32_to_f16(kiln_bits_to_f32(mid | 0x80000000u)) == (even | 0x8000u);
    if (!ok && bad++ < 5)
      printf("  rounding between 0x%04X and 0x%04X\n", (unsigned)h, (unsigned)(h + 1u));
  }
  check(t, bad == 0, "f32->f16 rounds to nearest even at every boundary");
}

static void check_to_half(tally *t, float f, uint16_t want, const char *what) {
  uint16_t got = kiln_f32_to_f16(f);
  if (got != want)
    printf("  %s: got 0x%04X, want 0x%04X\n", what, (unsigned)got, (unsigned)want);
  check(t, got == want, what);
}

static void test_half_values(tally *t) {
  const float two_m25 = 2.98023223876953125e-8f; /* 2^-25, half the smallest subnormal */

  check_to_half(t, 1.0f, 0x3C00u, "1.0");
  check_to_half(t, -2.0f, 0xC000u, "-2.0");
  check_to_half(t, 65504.0f, 0x7BFFu, "65504 (max half)");
  check_to_half(t, 65519.0f, 0x7BFFu, "65519 rounds down to max");
  check_to_half(t, 65520.0f, 0x7C00u, "65520 overflows to inf");
  check_to_half(t, -1e10f, 0xFC00u, "-1e10 overflows to -inf");
  check_to_half(t, kiln_bits_to_f32(0x7F800000u), 0x7C00u, "inf");
  check_to_half(t, kiln_bits_to_f32(0xFF800000u), 0xFC00u, "-inf");
  check_to_half(t, 1e-8f, 0x0000u, "1e-8 underflows to 0");
  check_to_half(t, -1e-8f, 0x8000u, "-1e-8 underflows to -0");
  check_to_half(t, kiln_bits_to_f32(0x80000000u), 0x8000u, "-0");
  check_to_half(t, 5.96046448e-8f, 0x0001u, "2^-24 (min subnormal)");
  check_to_half(t, two_m25, 0x0000u, "2^-25 ties to even 0");
  check_to_half(t, two_m25 * 1.5f, 0x0001u, "1.5 * 2^-25");
  check_to_half(t, two_m25 * 3.0f, 0x0002u, "3 * 2^-25 ties to even 2");
  check_to_half(t, 6.1035156e-5f, 0x0400u, "2^-14 (min normal)");
  check_to_half(t, 6.1035156e-5f - two_m25, 0x0400u, "largest subnormal tie rounds to min normal");
  check_to_half(t, 0.333333f, 0x3555u, "0.333333");
  check_to_half(t, 1.00048828125f, 0x3C00u, "1 + 2^-11 ties to even 1");
  check_to_half(t, 1.00146484375f, 0x3C02u, "1 + 3*2^-11 ties to even");
  check_to_half(t, 1.000489234924316f, 0x3C01u, "just above a tie rounds up");
  check(t, half_is_nan(kiln_f32_to_f16(kiln_bits_to_f32(0x7FC00000u))), "quiet NaN stays NaN");
  check(t, half_is_nan(kiln_f32_to_f16(kiln_bits_to_f32(0x7F800001u))),
        "NaN with only low payload bits stays NaN");
  check(t, kiln_f32_to_f16(kiln_bits_to_f32(0xFFC00000u)) == 0xFE00u, "negative NaN keeps its sign");
  check(t, kiln_f16_to_f32(0x3C00u) == 1.0f && kiln_f16_to_f32(0x0001u) == 5.96046448e-8f &&
               kiln_f16_to_f32(0x7BFFu) == 65504.0f && kiln_f16_to_f32(0x3555u) == 0.333251953125f,
        "f16->f32 spot values");
}

int main(void) {
  tally t = {0, 0};
  /* Room to align the start and then place a pack up to KILN_ALIGN further. */
  uint8_t storage[PACK_CAP + 3 * KILN_ALIGN];
  uint8_t *buf = align_up(storage);

  test_valid_pack(&t, buf);
  test_arguments(&t, buf);
  test_header_failures(&t, buf);
  test_range_failures(&t, buf);
  test_expect_failures(&t, buf);
  test_arena(&t, buf);
  test_file_source(&t, buf);
  test_status_messages(&t);
  test_half_exhaustive(&t);
  test_half_midpoints(&t);
  test_half_values(&t);

  printf("%d passed, %d failed\n", t.passed, t.failed);
  return t.failed == 0 ? 0 : 1;
}
