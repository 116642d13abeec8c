/* NumPy .npy files (format versions 1 to 3), as kiln-run reads a graph's
 * inputs and writes its outputs: little-endian, C order. */
#ifndef KILN_SAMPLES_RUN_NPY_H
#define KILN_SAMPLES_RUN_NPY_H

#include "kiln/kiln_graph.h"

#include <stdio.h>

#define NPY_MAX_RANK 8

typedef struct npy_array {
  char descr[16]; /* "<f4", "<i8", "|b1", ... */
  int32_t rank;
  int64_t shape[NPY_MAX_RANK];
  void *data; /* malloc'ed elements */
  size_t bytes;
} npy_array;

/* The descr of an element type ("<f4" for KILN_ELEMENT_F32). */
const char *npy_descr(kiln_element element);

/* Reads `path` into *a. On failure returns 0 and writes what is wrong (a
 * message naming the file) into error[size]. */
int npy_read(const char *path, npy_array *a, char *error, size_t size);

/* Writes `bytes` of elements of `descr` in `shape` to `path`; 0 on failure. */
int npy_write(const char *path, const char *descr, const int64_t *shape, int32_t rank,
              const void *data, size_t bytes);

void npy_free(npy_array *a);

#endif /* KILN_SAMPLES_RUN_NPY_H */
