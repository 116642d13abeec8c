/* Pack header parsing and checks. Freestanding apart from <string.h>: this is
 * what bare-metal builds use to validate a pack placed in flash. */
#include "kiln/kiln.h"

#include <string.h>

/* Byte-wise loads: the header may sit at any address, and casting to a wider
 * type would be an unaligned (and aliasing-unsafe) access. */
static uint32_t load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t load_le64(const uint8_t *p) {
  return (uint64_t)load_le32(p) | (uint64_t)load_le32(p + 4) << 32;
}

/* *sum = a + b unless that wraps; the header is untrusted input. */
static int add_overflows(uint64_t a, uint64_t b, uint64_t *sum) {
  if (a > UINT64_MAX - b)
    return 1;
  *sum = a + b;
  return 0;
}

static void decode_header(const uint8_t *bytes, kiln_pack_header *h) {
  h->version = load_le32(bytes + 8);
  h->flags = load_le32(bytes + 12);
  h->model_hash = load_le64(bytes + 16);
  h->table_offset = load_le64(bytes + 24);
  h->table_size = load_le64(bytes + 32);
  h->data_offset = load_le64(bytes + 40);
  h->data_size = load_le64(bytes + 48);
  h->file_size = load_le64(bytes + 56);
}

/* The table must hold at least a FlatBuffers root offset and file identifier,
 * and end before the data section starts. */
static kiln_status check_table_range(const kiln_pack_header *h) {
  uint64_t table_end;

  if (h->table_offset < KILN_PACK_HEADER_BYTES || h->table_size < 8u)
    return KILN_ERR_BOUNDS;
  if (add_overflows(h->table_offset, h->table_size, &table_end) || table_end > h->data_offset)
    return KILN_ERR_BOUNDS;
  return KILN_OK;
}

static kiln_status check_layout(const kiln_pack_header *h, size_t size) {
  uint64_t end;
  kiln_status s = check_table_range(h);

  if (s != KILN_OK)
    return s;
  if (h->data_offset % KILN_PACK_PAGE != 0u)
    return KILN_ERR_ALIGNMENT;
  if (add_overflows(h->data_offset, h->data_size, &end) || end != h->file_size)
    return KILN_ERR_BOUNDS;
  if (h->file_size > (uint64_t)size)
    return KILN_ERR_TRUNCATED;
  return KILN_OK;
}

kiln_status kiln_pack_read_header(const uint8_t *bytes, size_t size, kiln_pack_header *out) {
  kiln_pack_header h;
  kiln_status s;

  if (bytes == NULL || out == NULL)
    return KILN_ERR_ARGUMENT;
  if (size < KILN_PACK_HEADER_BYTES)
    return KILN_ERR_TRUNCATED;
  if (memcmp(bytes, "KILNPACK", 8) != 0)
    return KILN_ERR_MAGIC;
  decode_header(bytes, &h);
  if (h.version != KILN_PACK_VERSION)
    return KILN_ERR_VERSION;
  s = check_layout(&h, size);
  if (s != KILN_OK)
    return s;
  /* In bounds: table_offset + 8 <= data_offset <= file_size <= size. */
  if (memcmp(bytes + (size_t)h.table_offset + 4u, "KLNP", 4) != 0)
    return KILN_ERR_MAGIC;
  *out = h;
  return KILN_OK;
}

kiln_status kiln_pack_verify(const kiln_pack_source *src, const kiln_pack_expect *expect,
                             const uint8_t **data) {
  kiln_pack_header h;
  kiln_status s;
  const uint8_t *section;

  if (data != NULL)
    *data = NULL;
  if (src == NULL || expect == NULL || data == NULL)
    return KILN_ERR_ARGUMENT;
  s = kiln_pack_read_header(src->bytes, src->size, &h);
  if (s != KILN_OK)
    return s;
  if (h.model_hash != expect->model_hash)
    return KILN_ERR_MODEL_HASH;
  if (h.file_size != expect->pack_bytes || h.data_offset != expect->data_offset ||
      h.data_size != expect->data_size)
    return KILN_ERR_BOUNDS;
  section = src->bytes + (size_t)h.data_offset;
  /* Kernels use aligned vector loads on weights; a pack copied to an odd
   * address would fault or silently slow down, so refuse it here. */
  if ((uintptr_t)section % KILN_ALIGN != 0u)
    return KILN_ERR_ALIGNMENT;
  *data = section;
  return KILN_OK;
}

kiln_status kiln_pack_source_from_memory(kiln_pack_source *src, const void *bytes, size_t size) {
  if (src == NULL)
    return KILN_ERR_ARGUMENT;
  src->bytes = NULL;
  src->size = 0;
  src->mapping = NULL;
  src->mapping_size = 0;
  if (bytes == NULL)
    return KILN_ERR_ARGUMENT;
  src->bytes = (const uint8_t *)bytes;
  src->size = size;
  return KILN_OK;
}

kiln_status kiln_arena_check(const void *arena, size_t size, size_t need) {
  if (arena == NULL)
    return KILN_ERR_ARGUMENT;
  if ((uintptr_t)arena % KILN_ALIGN != 0u)
    return KILN_ERR_ALIGNMENT;
  if (size < need)
    return KILN_ERR_ARENA;
  return KILN_OK;
}
