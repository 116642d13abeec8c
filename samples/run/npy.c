#include "npy.h"

#include <stdlib.h>
#include <string.h>

const char *npy_descr(kiln_element element) {
  switch (element) {
  case KILN_ELEMENT_F32:
    return "<f4";
  case KILN_ELEMENT_I64:
    return "<i8";
  case KILN_ELEMENT_I32:
    return "<i4";
  case KILN_ELEMENT_I8:
    return "|i1";
  case KILN_ELEMENT_U8:
    return "|u1";
  case KILN_ELEMENT_F16:
    return "<f2";
  case KILN_ELEMENT_F64:
    return "<f8";
  default:
    return "|b1";
  }
}

static int failed(char *error, size_t size, const char *path, const char *what) {
  snprintf(error, size, "%s: %s", path, what);
  return 0;
}

/* The text after `key` in the header dict, or NULL. */
static const char *after(const char *header, const char *key) {
  const char *at = strstr(header, key);
  return at ? at + strlen(key) : NULL;
}

static int parse_header(const char *header, npy_array *a) {
  const char *d = after(header, "'descr':"), *f = after(header, "'fortran_order':"),
             *s = after(header, "'shape':");
  size_t n = 0;
  if (!d || !f || !s)
    return 0;
  while (*d == ' ')
    ++d;
  if (*d++ != '\'')
    return 0;
  while (*d && *d != '\'' && n + 1 < sizeof a->descr)
    a->descr[n++] = *d++;
  a->descr[n] = 0;
  while (*f == ' ')
    ++f;
  if (strncmp(f, "False", 5) != 0)
    return 0; /* Fortran order */
  while (*s == ' ')
    ++s;
  if (*s++ != '(')
    return 0;
  a->rank = 0;
  for (;;) {
    char *end;
    long long v;
    while (*s == ' ' || *s == ',')
      ++s;
    if (*s == ')')
      return 1;
    v = strtoll(s, &end, 10);
    if (end == s || v < 0 || a->rank == NPY_MAX_RANK)
      return 0;
    a->shape[a->rank++] = v;
    s = end;
  }
}

int npy_read(const char *path, npy_array *a, char *error, size_t size) {
  unsigned char head[12];
  char *header;
  size_t header_bytes, prefix;
  long end;
  FILE *file = fopen(path, "rb");
  memset(a, 0, sizeof *a);
  if (!file)
    return failed(error, size, path, "cannot be opened");
  if (fread(head, 1, 10, file) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) {
    fclose(file);
    return failed(error, size, path, "is not a .npy file");
  }
  if (head[6] == 1) {
    header_bytes = (size_t)head[8] | (size_t)head[9] << 8;
    prefix = 10;
  } else if (head[6] == 2 || head[6] == 3) {
    if (fread(head + 10, 1, 2, file) != 2) {
      fclose(file);
      return failed(error, size, path, "is truncated");
    }
    header_bytes =
        (size_t)head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 | (size_t)head[11] << 24;
    prefix = 12;
  } else {
    fclose(file);
    return failed(error, size, path, "has a .npy version other than 1 to 3");
  }
  header = (char *)malloc(header_bytes + 1);
  if (!header || fread(header, 1, header_bytes, file) != header_bytes) {
    free(header);
    fclose(file);
    return failed(error, size, path, "is truncated");
  }
  header[header_bytes] = 0;
  if (!parse_header(header, a)) {
    free(header);
    fclose(file);
    return failed(error, size, path, "has a header kiln-run cannot read (or Fortran order)");
  }
  free(header);
  if (fseek(file, 0, SEEK_END) != 0 || (end = ftell(file)) < 0 ||
      fseek(file, (long)(prefix + header_bytes), SEEK_SET) != 0) {
    fclose(file);
    return failed(error, size, path, "cannot be read");
  }
  a->bytes = (size_t)end - prefix - header_bytes;
  a->data = malloc(a->bytes ? a->bytes : 1);
  if (!a->data || fread(a->data, 1, a->bytes, file) != a->bytes) {
    fclose(file);
    npy_free(a);
    return failed(error, size, path, "cannot be read");
  }
  fclose(file);
  return 1;
}

int npy_write(const char *path, const char *descr, const int64_t *shape, int32_t rank,
              const void *data, size_t bytes) {
  char header[256];
  int n, i, total;
  FILE *file;
  n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (i = 0; i < rank; ++i)
    n += snprintf(header + n, sizeof header - (size_t)n, "%lld%s", (long long)shape[i],
                  rank == 1      ? ","
                  : i + 1 < rank ? ", "
                                 : "");
  n += snprintf(header + n, sizeof header - (size_t)n, "), }");
  /* Padded with spaces to a multiple of 64 bytes with the 10-byte prefix, ending in \n. */
  total = (n + 10 + 1 + 63) / 64 * 64 - 10;
  if (total >= (int)sizeof header)
    return 0;
  memset(header + n, ' ', (size_t)(total - n - 1));
  header[total - 1] = '\n';
  file = fopen(path, "wb");
  if (!file)
    return 0;
  fwrite("\x93NUMPY\x01\x00", 1, 8, file);
  fputc(total & 0xff, file);
  fputc(total >> 8, file);
  fwrite(header, 1, (size_t)total, file);
  fwrite(data, 1, bytes, file);
  return fclose(file) == 0;
}

void npy_free(npy_array *a) {
  free(a->data);
  a->data = NULL;
}
