/* Offline repacking of weights from the model's row layout into the panel
 * layout that the panel kernels read. kiln-compile runs it when it writes the
 * pack (so opening a model costs nothing and the pack stays mmap-able and
 * execute-in-place), and the kernel tests run it on random weights. It keeps to
 * the common subset of C99 and C++ so both can include it.
 *
 * A panel holds nr consecutive output rows (rows past n are zero):
 *   f32, f16  k steps of nr values: value (row r, column j) at index j * nr + r,
 *             so one vector load meets nr rows at one column.
 *   i8, i4    k / g groups, each nr f16 scales (row order) then the values in
 *             quads: nr x 4 bytes, row r's 4 bytes together, so one 32-bit
 *             broadcast of 4 activations meets all nr rows in a dot-product
 *             instruction.
 *             i8: g / 4 quads of columns 4c..4c+3, each byte the value + 128
 *                 (unsigned; the kernel subtracts 128 x the activations' sum).
 *             i4: g / 8 quads; byte (r, j) of quad c is byte 4c + j of the row
 *                 layout's group, i.e. column 4c + j in the low nibble and
 *                 column g/2 + 4c + j in the high one, each + 8. */
#ifndef KILN_UK_PACK_H
#define KILN_UK_PACK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { KILN_UK_F32 = 0, KILN_UK_F16 = 1, KILN_UK_I8 = 2, KILN_UK_I4 = 3 };

/* Limits of the kernels that the compiler checks against: the largest register
 * tile of activation rows the panel kernels are instantiated for (the cases of
 * KILN_UK_TILE_SWITCH), and the largest head dimension attention takes. */
#define KILN_UK_MR_MAX 8
#define KILN_UK_MAX_HEAD_DIM 256

/* Bytes of one row of k values in the row layout (groups of g for i8 and i4). */
static inline size_t kiln_uk_row_bytes(int family, int32_t k, int32_t g) {
  switch (family) {
  case KILN_UK_F32: return (size_t)k * 4u;
  case KILN_UK_F16: return (size_t)k * 2u;
  case KILN_UK_I8: return (size_t)(k / g) * (size_t)(2 + g);
  default: return (size_t)(k / g) * (size_t)(2 + g / 2);
  }
}

/* Same bytes per row as the row layout; the last panel is padded to nr rows. */
static inline size_t kiln_uk_panel_bytes(int family, int32_t n, int32_t k, int32_t g,
                                         int32_t nr) {
  return (size_t)((n + nr - 1) / nr) * (size_t)nr * kiln_uk_row_bytes(family, k, g);
}

static inline void kiln_uk_pack_panels(int family, const uint8_t *src, uint8_t *dst,
                                       int32_t n, int32_t k, int32_t g, int32_t nr) {
  size_t rb = kiln_uk_row_bytes(family, k, g);
  int32_t row, b, j;
  memset(dst, 0, kiln_uk_panel_bytes(family, n, k, g, nr));
  for (row = 0; row < n; ++row) {
    const uint8_t *s = src + (size_t)row * rb;
    uint8_t *panel = dst + (size_t)(row / nr) * (size_t)nr * rb;
    int32_t r = row % nr;
    if (family == KILN_UK_F32 || family == KILN_UK_F16) {
      size_t es = family == KILN_UK_F32 ? 4u : 2u;
      for (j = 0; j < k; ++j)
        memcpy(panel + ((size_t)j * (size_t)nr + (size_t)r) * es, s + (size_t)j * es, es);
      continue;
    }
    {
      int32_t values = family == KILN_UK_I8 ? g : g / 2; /* bytes per group */
      size_t group_bytes = (size_t)(2 + values) * (size_t)nr;
      for (b = 0; b < k / g; ++b) {
        const uint8_t *sg = s + (size_t)b * (size_t)(2 + values);
        uint8_t *pg = panel + (size_t)b * group_bytes;
        memcpy(pg + 2 * r, sg, 2);
        for (j = 0; j < values; ++j) {
          uint8_t v = sg[2 + j];
          pg[2 * nr + (j / 4) * 4 * nr + 4 * r + j % 4] =
              family == KILN_UK_I8 ? (uint8_t)(v ^ 0x80u) : v;
        }
      }
    }
  }
}

#endif /* KILN_UK_PACK_H */
