/* The panel matmuls, written once for every ISA header that has panel kernels.
 * The including header defines first:
 *   KILN_UK_NR                   the panel height;
 *   kiln_uk_quantize_act_sums(x, d, s, q, k, g) with KILN_UK_HAS_QUANTIZE_ACT_SUMS, or
 *       takes the portable one: quantize_act's scales and int8 values plus
 *       each group's sum;
 *   kiln_uk_panel_tile_int(family, panel, xs, stride, mr, k, g, b0, b1, y, ldy, valid)
 *       mr quantized rows against groups b0..b1-1 of one int8/int4 panel;
 *   kiln_uk_panel_tile_float(family, panel, x, mr, k, j0, j1, y, ldy, valid)
 *       mr float rows against columns j0..j1-1 of one f32/f16 panel;
 *   kiln_uk_panel_row4_float(family, panel, panel_bytes, x, k, y)
 *       one float row against four whole panels (decode);
 * and may define kiln_uk_panel_unpack(family, panel, b0, b1, codes) and
 * kiln_uk_panel_tile_unpacked(family, panel, codes, xs, stride, mr, k, b0, b1, y, ldy, valid)
 * with KILN_UK_HAS_PANEL_UNPACK, KILN_UK_UNPACK_BLOCKS and the type kiln_uk_unpacked: for the
 * families where kiln_uk_panel_unpacks(family), a panel's codes unpacked once for
 * every row tile rather than in each, at most KILN_UK_UNPACK_BLOCKS groups at a time;
 * and may define kiln_uk_panel_row_int(family, panel, xs, k, g, y), one quantized row
 * against one whole int8/int4 panel (decode), with KILN_UK_HAS_PANEL_ROW_INT, and
 * kiln_uk_panel_tile3_float(family, panel, panel_bytes, x, mr, k, j0, j1, y, ldy), mr
 * float rows against three whole panels, with KILN_UK_HAS_PANEL_TILE3_FLOAT, or the
 * same for at most four rows, kiln_uk_panel_quad3_float with KILN_UK_HAS_PANEL_QUAD3_FLOAT
 * (this header then takes mr rows in quads);
 * where a tile adds to the `valid` first outputs of y unless it starts the K
 * range, so the K block never changes the order of the additions. */
#ifndef KILN_UK_MATMUL_PANELS_H
#define KILN_UK_MATMUL_PANELS_H

#include "kernels/c99/kiln_uk_base.h"
#include "kernels/c99/kiln_uk_elementwise.h"

/* Bytes apart of the activation rows that the panels of a family read
 * (kiln_uk_abi.h): the k-quant panels take the block formats' rows
 * (blocks_quantize_row). */
static inline size_t kiln_uk_panel_family_stride(int family, int32_t k, int32_t g) {
  return kiln_uk_act_stride(kiln_uk_act_layout(family, 1), k, g);
}

/* The tile for the rows left, as a constant for each instantiation. */
#define KILN_UK_TILE_SWITCH(rows_left, mr_max, CALL)                                     \
  switch ((rows_left) < (mr_max) ? (rows_left) : (mr_max)) {                             \
  case 8: CALL(8); break;                                                                \
  case 7: CALL(7); break;                                                                \
  case 6: CALL(6); break;                                                                \
  case 5: CALL(5); break;                                                                \
  case 4: CALL(4); break;                                                                \
  case 3: CALL(3); break;                                                                \
  case 2: CALL(2); break;                                                                \
  default: CALL(1); break;                                                               \
  }

#ifndef KILN_UK_HAS_QUANTIZE_ACT_SUMS
/* As kiln_uk_quantize_act (the same int8 values and scales), plus each group's sum of
 * int8 values, which the kernels subtract 8 times for int4 nibbles (0..15). */
static inline void kiln_uk_quantize_act_sums(const float *x, float *d, int32_t *s, int8_t *q, int32_t k,
                                     int32_t g) {
  int32_t b, j;
  kiln_uk_quantize_act(x, d, q, k, g);
  for (b = 0; b < k / g; ++b) {
    int32_t sum = 0;
    for (j = 0; j < g; ++j)
      sum += q[g * b + j];
    s[b] = sum;
  }
}
#endif

/* The activations of the int8 panel kernels: each of `rows` rows quantized
 * into scratch (KILN_UK_ACT_PANELS rows). Every panel range reads them. */
KILN_UK_INLINE void kiln_uk_panel_quantize_rows(const float *x, void *scratch, int32_t rows, int32_t k,
                                        int32_t g) {
  const size_t stride = kiln_uk_act_stride(KILN_UK_ACT_PANELS, k, g);
  int32_t r;
  for (r = 0; r < rows; ++r) {
    float *d = (float *)(void *)((uint8_t *)scratch + (size_t)r * stride);
    int32_t *sum = (int32_t *)(void *)(d + k / g);
    kiln_uk_quantize_act_sums(x + (size_t)r * (size_t)k, d, sum, (int8_t *)(void *)(sum + k / g), k, g);
  }
}

/* As panel_quantize_rows, each row first through rms_norm_row with gamma and
 * eps (norm_scratch_row has where). */
KILN_UK_INLINE void kiln_uk_panel_norm_quantize_rows(const float *x, const float *gamma, void *scratch,
                                             int32_t rows, int32_t k, int32_t g, int32_t floats,
                                             float eps) {
  const size_t stride = kiln_uk_act_stride(KILN_UK_ACT_PANELS, k, g);
  float *t = kiln_uk_norm_scratch_row(scratch, rows, stride, floats);
  int32_t r;
  for (r = 0; r < rows; ++r) {
    float *d = (float *)(void *)((uint8_t *)scratch + (size_t)r * stride);
    int32_t *sum = (int32_t *)(void *)(d + k / g);
    kiln_uk_rms_norm_row(x + (size_t)r * (size_t)k, gamma, t, k, eps);
    kiln_uk_quantize_act_sums(t, d, sum, (int8_t *)(void *)(sum + k / g), k, g);
  }
}

/* Columns [p0 * NR, p1 * NR) of y (rows x n) = the quantized rows in scratch
 * times the transpose of int8/int4 panels p0..p1-1, in register tiles of
 * mr_max rows and K blocks of kc columns (whole groups). Each output is
 * computed the same way whatever the panel range. */
KILN_UK_INLINE void kiln_uk_matmul_panel_int(int family, const uint8_t *w, float *y, const void *scratch,
                                     int32_t rows, int32_t n, int32_t k, int32_t g,
                                     int32_t mr_max, int32_t kc, int32_t p0, int32_t p1) {
  const size_t stride = kiln_uk_panel_family_stride(family, k, g);
  const size_t panel_bytes = (size_t)KILN_UK_NR * kiln_uk_row_bytes(family, k, g);
  const uint8_t *s = (const uint8_t *)scratch;
  int32_t r, p, b0, step = kc / g; /* groups a K block */
#ifdef KILN_UK_HAS_PANEL_ROW_INT
  if (rows == 1) { /* decode: whole panels in order, one stream; a ragged last one as a tile */
    const int32_t whole = n / KILN_UK_NR < p1 ? n / KILN_UK_NR : p1;
    for (p = p0; p < whole; ++p)
      kiln_uk_panel_row_int(family, w + (size_t)p * panel_bytes, s, k, g, y + p * KILN_UK_NR);
    for (; p < p1; ++p)
      kiln_uk_panel_tile_int(family, w + (size_t)p * panel_bytes, s, stride, 1, k, g, 0, k / g,
                     y + p * KILN_UK_NR, n, n - p * KILN_UK_NR);
    return;
  }
#endif
#ifdef KILN_UK_HAS_PANEL_UNPACK
  kiln_uk_unpacked codes;
  const int unpack = rows > mr_max && kiln_uk_panel_unpacks(family);
  if (unpack)
    step = KILN_UK_UNPACK_BLOCKS;
#endif
  for (b0 = 0; b0 < k / g; b0 += step) {
    int32_t b1 = b0 + step < k / g ? b0 + step : k / g;
    for (p = p0; p < p1; ++p) {
      const uint8_t *panel = w + (size_t)p * panel_bytes;
      int32_t valid = n - p * KILN_UK_NR < KILN_UK_NR ? n - p * KILN_UK_NR : KILN_UK_NR;
#ifdef KILN_UK_HAS_PANEL_UNPACK
      if (unpack)
        kiln_uk_panel_unpack(family, panel, b0, b1, &codes);
#endif
      for (r = 0; r < rows; r += mr_max) {
        const uint8_t *xs = s + (size_t)r * stride;
        float *yr = y + p * KILN_UK_NR + (size_t)r * (size_t)n;
#define KILN_UK_INT_TILE(m) kiln_uk_panel_tile_int(family, panel, xs, stride, m, k, g, b0, b1, yr, n, valid)
#ifdef KILN_UK_HAS_PANEL_UNPACK
#define KILN_UK_UNPACKED_TILE(m) \
  kiln_uk_panel_tile_unpacked(family, panel, &codes, xs, stride, m, k, b0, b1, yr, n, valid)
        if (unpack) {
          KILN_UK_TILE_SWITCH(rows - r, mr_max, KILN_UK_UNPACKED_TILE)
          continue;
        }
#undef KILN_UK_UNPACKED_TILE
#endif
        KILN_UK_TILE_SWITCH(rows - r, mr_max, KILN_UK_INT_TILE)
#undef KILN_UK_INT_TILE
      }
    }
  }
}

#ifdef KILN_UK_HAS_PANEL_QUAD3_FLOAT
/* Float rows against three whole panels side by side (the panels
 * panel_bytes apart), four rows at a time by the ISA's
 * kiln_uk_panel_quad3_float: three weight loads and four broadcasts per 12
 * vector FMAs, where a one-panel tile loads a weight vector per mr FMAs and a
 * broadcast per FMA. Each lane sums in column order as the one-panel tile
 * does, so a column's outputs do not depend on its tile. */
KILN_UK_INLINE void kiln_uk_panel_tile3_float(int family, const uint8_t *panel, size_t panel_bytes,
                                              const float *x, int32_t mr, int32_t k, int32_t j0,
                                              int32_t j1, float *y, int32_t ldy) {
  int32_t h;
  for (h = 0; h < mr; h += 4)
    kiln_uk_panel_quad3_float(family, panel, panel_bytes, x + (size_t)h * (size_t)k,
                              mr - h < 4 ? mr - h : 4, k, j0, j1, y + (size_t)h * (size_t)ldy, ldy);
}
#define KILN_UK_HAS_PANEL_TILE3_FLOAT 1
#endif

/* Columns [p0 * NR, p1 * NR) of y (rows x n) = x (rows x k) times the
 * transpose of f32/f16 panels p0..p1-1, in register tiles of mr_max rows and K
 * blocks of kc columns; one row takes four panels a call (panel_row4_float). */
KILN_UK_INLINE void kiln_uk_matmul_panel_float(int family, const float *x, const uint8_t *w, float *y,
                                       int32_t rows, int32_t n, int32_t k, int32_t mr_max,
                                       int32_t kc, int32_t p0, int32_t p1) {
  const size_t panel_bytes = (size_t)KILN_UK_NR * kiln_uk_row_bytes(family, k, 1);
  int32_t r, p = p0, j0;
  if (rows == 1) {
    for (; p + 4 <= p1; p += 4)
      kiln_uk_panel_row4_float(family, w + (size_t)p * panel_bytes, panel_bytes, x, k, y + p * KILN_UK_NR);
    kc = k; /* no reuse to block for */
  }
  for (j0 = 0; j0 < k; j0 += kc) {
    int32_t j1 = j0 + kc < k ? j0 + kc : k, q;
    q = p;
#ifdef KILN_UK_HAS_PANEL_TILE3_FLOAT
    for (; q + 3 <= p1 && (q + 3) * KILN_UK_NR <= n; q += 3) {
      const uint8_t *panel = w + (size_t)q * panel_bytes;
      for (r = 0; r < rows; r += mr_max) {
        const float *xr = x + (size_t)r * (size_t)k;
        float *yr = y + q * KILN_UK_NR + (size_t)r * (size_t)n;
#define KILN_UK_FLOAT_TILE3(m) kiln_uk_panel_tile3_float(family, panel, panel_bytes, xr, m, k, j0, j1, yr, n)
        KILN_UK_TILE_SWITCH(rows - r, mr_max, KILN_UK_FLOAT_TILE3)
#undef KILN_UK_FLOAT_TILE3
      }
    }
#endif
    for (; q < p1; ++q) {
      const uint8_t *panel = w + (size_t)q * panel_bytes;
      int32_t valid = n - q * KILN_UK_NR < KILN_UK_NR ? n - q * KILN_UK_NR : KILN_UK_NR;
      for (r = 0; r < rows; r += mr_max) {
        const float *xr = x + (size_t)r * (size_t)k;
        float *yr = y + q * KILN_UK_NR + (size_t)r * (size_t)n;
#define KILN_UK_FLOAT_TILE(m) kiln_uk_panel_tile_float(family, panel, xr, m, k, j0, j1, yr, n, valid)
        KILN_UK_TILE_SWITCH(rows - r, mr_max, KILN_UK_FLOAT_TILE)
#undef KILN_UK_FLOAT_TILE
      }
    }
  }
}

#endif /* KILN_UK_MATMUL_PANELS_H */
