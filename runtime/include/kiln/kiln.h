/* Kiln runtime: the C99 API shared by all generated models.
 *
 * The runtime never allocates and keeps no mutable state: the caller owns the
 * pack bytes and the arena, and every function reports a kiln_status.
 *
 * Hosted only: kiln_pack_source_open_file, kiln_pack_source_close and
 * kiln_pack_source_prefetch live in pack_file.c (POSIX open/mmap/madvise).
 * Bare-metal builds leave that file out and use kiln_pack_source_from_memory
 * with a pack placed in flash or RAM; nothing else depends on it. */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <stddef.h>
#include <stdint.h>

#include "kiln_half.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_status {
  KILN_OK = 0,
  KILN_ERR_ARGUMENT,     /* NULL pointer, token or index outside its table, bad count */
  KILN_ERR_IO,           /* pack file could not be opened, sized or mapped */
  KILN_ERR_TRUNCATED,    /* fewer bytes than the header says or the code expects */
  KILN_ERR_MAGIC,        /* not a Kiln pack (magic or table identifier) */
  KILN_ERR_VERSION,      /* pack format version not supported */
  KILN_ERR_MODEL_HASH,   /* the pack was written for another model or compile */
  KILN_ERR_BOUNDS,       /* header ranges inconsistent, or disagree with the generated code */
  KILN_ERR_ALIGNMENT,    /* data not 64-byte aligned in memory, or data_offset not page aligned */
  KILN_ERR_ARENA,        /* arena smaller than the generated <NAME>_ARENA_BYTES */
  KILN_ERR_CONTEXT_FULL, /* the position would pass the KV cache capacity */
  KILN_ERR_CPU,          /* the CPU lacks instructions the model was generated for */
  KILN_ERR_CORRUPT,      /* a layer's weights fail their checksum (kiln-compile --pack-checksum) */
  KILN_ERR_SESSION,      /* no such open session, or no session free (kiln_kv_pages.h) */
  KILN_ERR_POOL_FULL     /* the KV page pool has no free page (kiln_kv_pages.h) */
} kiln_status;

/* One-line English message for each status; "unknown status" otherwise. */
const char *kiln_status_message(kiln_status s);

/* Where the pack bytes live. mapping/mapping_size are set only when the bytes
 * were mapped from a file, so close knows what to unmap. */
typedef struct kiln_pack_source {
  const uint8_t *bytes;
  size_t size;
  void *mapping;
  size_t mapping_size;
} kiln_pack_source;

/* Wraps caller-owned bytes (flash, RAM, an embedded array); never copies. */
kiln_status kiln_pack_source_from_memory(kiln_pack_source *src, const void *bytes, size_t size);

/* Hosted only. Maps the file read-only; an empty file gives a valid source of
 * size 0 (verify then reports KILN_ERR_TRUNCATED). On failure *src is zeroed. */
kiln_status kiln_pack_source_open_file(kiln_pack_source *src, const char *path);

/* Hosted only. Reads the whole file into the caller's buffer (at least the
 * file's size; 64-byte aligned, as verify wants) and wraps it: for a device
 * that must not fault on a file that changes under a mapping. Short and
 * interrupted reads are retried; a file that ends before the size it had at
 * open (truncated meanwhile) is KILN_ERR_TRUNCATED, a read error or a file
 * that cannot be opened or sized KILN_ERR_IO, a buffer smaller than the file
 * KILN_ERR_ARENA. On failure *src is zeroed. Nothing to close. */
kiln_status kiln_pack_source_read_file(kiln_pack_source *src, const char *path, void *buffer,
                                       size_t buffer_bytes);

/* Hosted only. Unmaps a mapped source and zeroes *src; safe on a zeroed or
 * memory source and on NULL. */
void kiln_pack_source_close(kiln_pack_source *src);

/* Hosted only. Asks the kernel to read [offset, offset + size) of a mapped
 * source ahead of use (MADV_WILLNEED), clamped to the mapping; a no-op for
 * memory sources. Purely a hint: it cannot fail. */
void kiln_pack_source_prefetch(const kiln_pack_source *src, uint64_t offset, uint64_t size);

#define KILN_PACK_VERSION 1u
#define KILN_PACK_HEADER_BYTES 64u
#define KILN_PACK_PAGE 4096u
#define KILN_ALIGN 64u

/* Pack layout, little-endian, header at offset 0:
 *    0  magic "KILNPACK"        8  u32 version       12  u32 flags
 *   16  u64 model_hash         24  u64 table_offset  32  u64 table_size
 *   40  u64 data_offset        48  u64 data_size     56  u64 file_size
 * The table is a FlatBuffers buffer with file identifier "KLNP"; data starts
 * on a KILN_PACK_PAGE boundary so a mapped pack keeps tensors aligned. */
typedef struct kiln_pack_header {
  uint32_t version;
  uint32_t flags;
  uint64_t model_hash;
  uint64_t table_offset;
  uint64_t table_size;
  uint64_t data_offset;
  uint64_t data_size;
  uint64_t file_size;
} kiln_pack_header;

/* Parses and checks the header of the `size` bytes at `bytes`; *out is
 * written only on success. */
kiln_status kiln_pack_read_header(const uint8_t *bytes, size_t size, kiln_pack_header *out);

/* The constants the generated code was compiled against. */
typedef struct kiln_pack_expect {
  uint64_t model_hash;
  uint64_t pack_bytes;
  uint64_t data_offset;
  uint64_t data_size;
} kiln_pack_expect;

/* Checks the header and that it agrees with the constants of the generated
 * code; on success *data points at the data section, otherwise it is NULL. */
kiln_status kiln_pack_verify(const kiln_pack_source *src, const kiln_pack_expect *expect,
                             const uint8_t **data);

/* Multi-core models (kiln-compile --threads=N) split large kernels into N
 * shares fixed at compile time. A task computes shares [s0, s1). */
typedef void (*kiln_task_fn)(void *ctx, int32_t s0, int32_t s1);

/* The port hook for multi-core builds: parallel_for(pool, fn, ctx, shares)
 * calls fn over disjoint ranges that together cover [0, shares), at the same
 * time on as many cores as it has (one range per core), and returns when all
 * have finished. The result does not depend on how it divides the shares, so
 * even a loop on one core is correct. Hosted builds have kiln_pool.h; an RTOS
 * or a bare-metal multi-core firmware provides its own. */
typedef struct kiln_workers {
  void (*parallel_for)(void *pool, kiln_task_fn fn, void *ctx, int32_t shares);
  void *pool;
} kiln_workers;

/* Checks a caller's arena: non-NULL (KILN_ERR_ARGUMENT), KILN_ALIGN-byte
 * aligned (KILN_ERR_ALIGNMENT), at least `need` bytes (KILN_ERR_ARENA). */
kiln_status kiln_arena_check(const void *arena, size_t size, size_t need);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_H */
