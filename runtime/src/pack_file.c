/* Hosted pack sources: map a pack file read-only so weights are paged in on
 * demand instead of copied. Bare-metal builds omit this file. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* madvise is not in strict POSIX on glibc */
#endif

#include "kiln/kiln.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* An empty file cannot be mapped (mmap of length 0 fails), but it is a valid
 * source that verify reports as truncated; point it at something non-NULL. */
static const uint8_t empty_file[1] = {0};

static void zero_source(kiln_pack_source *src) {
  src->bytes = NULL;
  src->size = 0;
  src->mapping = NULL;
  src->mapping_size = 0;
}

/* Opens `path` read-only and gives its size: KILN_ERR_IO when it cannot be
 * opened or is not a regular file that fits in memory (then nothing is open). */
static kiln_status open_sized(const char *path, int *fd, size_t *size) {
  struct stat st;

  *fd = open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0)
    return KILN_ERR_IO;
  if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
      (uintmax_t)st.st_size > (uintmax_t)SIZE_MAX) {
    close(*fd);
    return KILN_ERR_IO;
  }
  *size = (size_t)st.st_size;
  return KILN_OK;
}

kiln_status kiln_pack_source_open_file(kiln_pack_source *src, const char *path) {
  int fd;
  size_t size;
  void *map;
  kiln_status s;

  if (src == NULL)
    return KILN_ERR_ARGUMENT;
  zero_source(src);
  if (path == NULL)
    return KILN_ERR_ARGUMENT;
  s = open_sized(path, &fd, &size);
  if (s != KILN_OK)
    return s;
  if (size == 0) {
    close(fd);
    src->bytes = empty_file;
    return KILN_OK;
  }
  /* No MADV_SEQUENTIAL: every token walks all weights again, and that hint lets
   * the kernel drop pages right after use. */
  map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd); /* the mapping keeps the file referenced */
  if (map == MAP_FAILED)
    return KILN_ERR_IO;
#ifdef MADV_HUGEPAGE
  /* Large pages where the system maps files with them: a decode step streams
   * every weight, and with 4 KiB pages a TLB miss every 4 KiB of each stream
   * cost L q4_0 decode about a quarter of its speed here. Only a hint. */
  madvise(map, size, MADV_HUGEPAGE);
#endif
  src->bytes = (const uint8_t *)map;
  src->size = size;
  src->mapping = map;
  src->mapping_size = size;
  return KILN_OK;
}

kiln_status kiln_pack_source_read_file(kiln_pack_source *src, const char *path, void *buffer,
                                       size_t buffer_bytes) {
  uint8_t *to = (uint8_t *)buffer;
  size_t size, done = 0;
  kiln_status s = KILN_OK;
  int fd;

  if (src == NULL)
    return KILN_ERR_ARGUMENT;
  zero_source(src);
  if (path == NULL || (buffer == NULL && buffer_bytes > 0))
    return KILN_ERR_ARGUMENT;
  s = open_sized(path, &fd, &size);
  if (s != KILN_OK)
    return s;
  if (size > buffer_bytes) {
    close(fd);
    return KILN_ERR_ARENA;
  }
  while (done < size && s == KILN_OK) {
    ssize_t got = read(fd, to + done, size - done);
    if (got > 0)
      done += (size_t)got;
    else if (got == 0)
      s = KILN_ERR_TRUNCATED; /* the file shrank since fstat */
    else if (errno != EINTR)
      s = KILN_ERR_IO;
  }
  close(fd);
  if (s != KILN_OK)
    return s;
  src->bytes = size > 0 ? to : empty_file;
  src->size = size;
  return KILN_OK;
}

void kiln_pack_source_close(kiln_pack_source *src) {
  if (src == NULL)
    return;
  if (src->mapping != NULL)
    munmap(src->mapping, src->mapping_size);
  zero_source(src);
}

void kiln_pack_source_prefetch(const kiln_pack_source *src, uint64_t offset, uint64_t size) {
  long page_size;
  uint64_t page, start, end;

  if (src == NULL || src->mapping == NULL || size == 0u ||
      offset >= (uint64_t)src->mapping_size)
    return;
  end = (uint64_t)src->mapping_size;
  if (size < end - offset)
    end = offset + size;
  /* madvise wants a page-aligned address; the mapping itself starts on one. */
  page_size = sysconf(_SC_PAGESIZE);
  page = page_size > 0 ? (uint64_t)page_size : KILN_PACK_PAGE;
  start = offset - offset % page;
  if (end <= start)
    return;
  /* The kernel rounds the length up to whole pages within the mapping. */
  madvise((uint8_t *)src->mapping + (size_t)start, (size_t)(end - start), MADV_WILLNEED);
}
