/* riscv-rvv: panel kernels over 4-row weight panels (kernels/c99/
 * kiln_uk_pack.h describes the layout). One vector of 4 int32 or f32 lanes
 * (vl 4 at LMUL 1, so any VLEN from 128 up) holds one value for each of a
 * panel's 4 output rows. RVV 1.0 has no 4-way int8 dot product: a quad of 16
 * weight bytes is loaded once as 4 words (row r's 4 columns in lane r), each
 * column is shifted out and kept as int16, and widening multiply-adds by an
 * activation scalar (vwmacc.vx, int16 x int16 into int32) accumulate it,
 * exactly, for every row of the tile. So no dot product ends in a sum across
 * lanes, and each column costs its unpacking once per tile, not once per
 * activation row. */
#ifndef KILN_UK_RVV_MATMUL_PANELS_H
#define KILN_UK_RVV_MATMUL_PANELS_H

#include "kernels/riscv/rvv/kiln_uk_rvv_base.h"

#define KILN_UK_NR 4

/* Columns of a panel that the float tile converts at a time. */
#define KILN_UK_RVV_CHUNK 64

/* The 4 words of a quad at p (bytes, so no alignment is assumed). */
static inline vuint32m1_t kiln_uk_panel_quad(const uint8_t *p) {
  return __riscv_vreinterpret_v_u8m1_u32m1(__riscv_vle8_v_u8m1(p, 16));
}

/* Column values of 4 int32 lanes, stored as int16 at p. */
static inline void kiln_uk_panel_store_col(int16_t *p, vint32m1_t v) {
  __riscv_vse16_v_i16mf2(p, __riscv_vncvt_x_x_w_i16mf2(v, 4), 4);
}

/* Group b's columns of an int8/int4 panel (at gp) as int16, column j's 4 rows
 * at cols + 4 j: int8 bytes are the value + 128, and flipping the top bit then
 * shifting the byte to the top of the lane and back arithmetically gives the
 * value; int4 nibbles stay 0..15 (the bias is taken off later). */
static inline void kiln_uk_panel_unpack_int(int family, const uint8_t *gp, int32_t g, int16_t *cols) {
  int32_t c, j, half;
  if (family == KILN_UK_I8) {
    for (c = 0; c < g / 4; ++c) {
      const vint32m1_t w = __riscv_vreinterpret_v_u32m1_i32m1(
          __riscv_vxor_vx_u32m1(kiln_uk_panel_quad(gp + 16 * c), 0x80808080u, 4));
      for (j = 0; j < 4; ++j)
        kiln_uk_panel_store_col(cols + 4 * (4 * c + j),
                        __riscv_vsra_vx_i32m1(
                            __riscv_vsll_vx_i32m1(w, (size_t)(24 - 8 * j), 4), 24, 4));
    }
    return;
  }
  for (c = 0; c < g / 8; ++c) {
    const vuint32m1_t w = kiln_uk_panel_quad(gp + 16 * c);
    for (half = 0; half < 2; ++half) /* low nibbles: columns 4c.., high: g/2 + 4c.. */
      for (j = 0; j < 4; ++j)
        kiln_uk_panel_store_col(cols + 4 * (half * (g / 2) + 4 * c + j),
                        __riscv_vreinterpret_v_u32m1_i32m1(__riscv_vand_vx_u32m1(
                            __riscv_vsrl_vx_u32m1(w, (size_t)(8 * j + 4 * half), 4), 15, 4)));
  }
}

/* mr rows of block activations (blocks_quantize_row) against blocks b0..b1-1
 * of one panel of a GGUF block format (the x86 layouts, 4 rows): each row's
 * block decoded once for the tile into int16 columns with its integer offsets
 * and sub-block scales folded in (unpack_block: exact), then per activation
 * row a widening vwmacc.vx per column and, per 32, the float scales and the
 * mins against the activations' scaled sums, as matmul_blocks sums them. */
KILN_UK_INLINE void kiln_uk_panel_tile_blocks(int family, const uint8_t *panel, const uint8_t *xs,
                                      size_t stride, int32_t mr, int32_t k, int32_t b0, int32_t b1,
                                      float *y, int32_t ldy, int32_t valid) {
  const int32_t e = kiln_uk_block_elements(family), bb = kiln_uk_block_bytes(family);
  int16_t cols[4 * 256], v[256];
  uint8_t blk[256];
  float ws[4 * 8], wm[4 * 16], s8[8], m16[16], acc[KILN_UK_MR_MAX * 4] = {0};
  int32_t r, b, j, g, h;
  for (r = 0; r < mr && b0 != 0; ++r)
    memcpy(acc + 4 * r, y + (size_t)r * (size_t)ldy, sizeof(float) * (size_t)valid);
  for (b = b0; b < b1; ++b) {
    for (r = 0; r < 4; ++r) { /* the panel's rows decoded, column j's 4 rows at cols + 4 j */
      kiln_uk_panel_block_row(family, panel + (size_t)b * (size_t)bb * 4u, r, 4, blk);
      kiln_uk_unpack_block(family, blk, v, s8, m16);
      for (j = 0; j < e; ++j)
        cols[4 * j + r] = v[j];
      for (g = 0; g < e / 32; ++g)
        ws[4 * g + r] = s8[g];
      for (h = 0; h < e / 16; ++h)
        wm[4 * h + r] = m16[h];
    }
    for (r = 0; r < mr; ++r) {
      const float *xd = (const float *)(const void *)(xs + (size_t)r * stride);
      const float *xa = xd + k / e + b * (e / 16);
      const int8_t *q = (const int8_t *)(const void *)(xs + (size_t)r * stride + kiln_uk_act_blocks_q_at(k, e)) + e * b;
      vfloat32m1_t a = __riscv_vle32_v_f32m1(acc + 4 * r, 4);
      for (g = 0; g < e / 32; ++g) {
        vint32m1_t is = __riscv_vmv_v_x_i32m1(0, 4);
        for (j = 32 * g; j < 32 * g + 32; ++j)
          is = __riscv_vwmacc_vx_i32m1(is, (int16_t)q[j], __riscv_vle16_v_i16mf2(cols + 4 * j, 4), 4);
        a = __riscv_vfmacc_vv_f32m1(a, __riscv_vfcvt_f_x_v_f32m1(is, 4),
                                    __riscv_vfmul_vf_f32m1(__riscv_vle32_v_f32m1(ws + 4 * g, 4), xd[b], 4), 4);
        a = __riscv_vfmacc_vf_f32m1(a, xa[2 * g], __riscv_vle32_v_f32m1(wm + 8 * g, 4), 4);
        a = __riscv_vfmacc_vf_f32m1(a, xa[2 * g + 1], __riscv_vle32_v_f32m1(wm + 8 * g + 4, 4), 4);
      }
      __riscv_vse32_v_f32m1(acc + 4 * r, a, 4);
    }
  }
  for (r = 0; r < mr; ++r)
    memcpy(y + (size_t)r * (size_t)ldy, acc + 4 * r, sizeof(float) * (size_t)valid);
}
#define KILN_UK_HAS_PANEL_KQUANTS 1
#define KILN_UK_HAS_PANEL_B32 1
#define KILN_UK_HAS_PANEL_Q2K 1
#define KILN_UK_HAS_PANEL_Q3K 1

/* mr quantized activation rows against groups b0..b1-1 of one int8/int4 panel,
 * added to y unless b0 is 0 (the order of the additions does not depend on the
 * K block). Each group is unpacked once for the tile (int16 columns); a row's
 * sum is then one widening vwmacc.vx per column, exact in int32. RVV's
 * vector types have no size, so the tile's accumulators live in memory
 * between groups. */
KILN_UK_INLINE void kiln_uk_panel_tile_int(int family, const uint8_t *panel, const uint8_t *xs,
                                   size_t stride, int32_t mr, int32_t k, int32_t g, int32_t b0,
                                   int32_t b1, float *y, int32_t ldy, int32_t valid) {
  const int32_t groups = k / g;
  const size_t group_bytes = 8u + (size_t)(family == KILN_UK_I8 ? 4 * g : 2 * g);
  int16_t cols[4 * 256]; /* groups are at most 256 (i8g256, i4g256) */
  float acc[KILN_UK_MR_MAX * 4] = {0};
  int32_t r, b, j;
  if (kiln_uk_is_block_family(family)) {
    kiln_uk_panel_tile_blocks(family, panel, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
  for (r = 0; r < mr && b0 != 0; ++r)
    memcpy(acc + 4 * r, y + (size_t)r * (size_t)ldy, sizeof(float) * (size_t)valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * group_bytes;
    const vfloat32m1_t ws = kiln_uk_f16_to_f32_rvv(gp, 4);
    kiln_uk_panel_unpack_int(family, gp + 8, g, cols);
    for (r = 0; r < mr; ++r) {
      const float *xd = (const float *)(const void *)(xs + (size_t)r * stride);
      const int32_t *xsum = (const int32_t *)(const void *)(xd + groups);
      const int8_t *q = (const int8_t *)(const void *)(xsum + groups) + g * b;
      vint32m1_t is = __riscv_vmv_v_x_i32m1(family == KILN_UK_I8 ? 0 : -8 * xsum[b], 4);
      for (j = 0; j < g; ++j)
        is = __riscv_vwmacc_vx_i32m1(is, (int16_t)q[j], __riscv_vle16_v_i16mf2(cols + 4 * j, 4), 4);
      __riscv_vse32_v_f32m1(acc + 4 * r,
                            __riscv_vfmacc_vv_f32m1(__riscv_vle32_v_f32m1(acc + 4 * r, 4),
                                                    __riscv_vfcvt_f_x_v_f32m1(is, 4),
                                                    __riscv_vfmul_vf_f32m1(ws, xd[b], 4), 4),
                            4);
    }
  }
  for (r = 0; r < mr; ++r)
    memcpy(y + (size_t)r * (size_t)ldy, acc + 4 * r, sizeof(float) * (size_t)valid);
}

/* Columns j0..j1-1 (at most KILN_UK_RVV_CHUNK) of an f32/f16 panel as floats,
 * column j's 4 rows at cols + 4 (j - j0). */
static inline void kiln_uk_panel_unpack_float(int family, const uint8_t *panel, int32_t j0, int32_t j1,
                                      float *cols) {
  int32_t j;
  if (family == KILN_UK_F32) {
    memcpy(cols, (const float *)(const void *)panel + 4 * j0,
           sizeof(float) * 4u * (size_t)(j1 - j0));
    return;
  }
  for (j = j0; j < j1; ++j)
    __riscv_vse32_v_f32m1(cols + 4 * (j - j0), kiln_uk_f16_to_f32_rvv(panel + 8 * j, 4), 4);
}

/* mr float activation rows against columns j0..j1-1 of one f32/f16 panel, added
 * to y unless j0 is 0; every lane sums in column order, chunk by chunk. */
KILN_UK_INLINE void kiln_uk_panel_tile_float(int family, const uint8_t *panel, const float *x,
                                     int32_t mr, int32_t k, int32_t j0, int32_t j1, float *y,
                                     int32_t ldy, int32_t valid) {
  float cols[4 * KILN_UK_RVV_CHUNK], acc[KILN_UK_MR_MAX * 4] = {0};
  int32_t r, j, c0;
  for (r = 0; r < mr && j0 != 0; ++r)
    memcpy(acc + 4 * r, y + (size_t)r * (size_t)ldy, sizeof(float) * (size_t)valid);
  for (c0 = j0; c0 < j1; c0 += KILN_UK_RVV_CHUNK) {
    const int32_t c1 = j1 - c0 < KILN_UK_RVV_CHUNK ? j1 : c0 + KILN_UK_RVV_CHUNK;
    kiln_uk_panel_unpack_float(family, panel, c0, c1, cols);
    for (r = 0; r < mr; ++r) {
      const float *xr = x + (size_t)r * (size_t)k;
      vfloat32m1_t a = __riscv_vle32_v_f32m1(acc + 4 * r, 4);
      for (j = c0; j < c1; ++j)
        a = __riscv_vfmacc_vf_f32m1(a, xr[j], __riscv_vle32_v_f32m1(cols + 4 * (j - c0), 4), 4);
      __riscv_vse32_v_f32m1(acc + 4 * r, a, 4);
    }
  }
  for (r = 0; r < mr; ++r)
    memcpy(y + (size_t)r * (size_t)ldy, acc + 4 * r, sizeof(float) * (size_t)valid);
}

/* One activation row against four whole panels, one panel after another
 * (RVV's vector types cannot be kept four in an array). */
KILN_UK_INLINE void kiln_uk_panel_row4_float(int family, const uint8_t *panel, size_t panel_bytes,
                                     const float *x, int32_t k, float *y) {
  int32_t i;
  for (i = 0; i < 4; ++i)
    kiln_uk_panel_tile_float(family, panel + (size_t)i * panel_bytes, x, 1, k, 0, k, y + 4 * i, 0, 4);
}

#include "kernels/c99/kiln_uk_matmul_panels.h"

#endif /* KILN_UK_RVV_MATMUL_PANELS_H */
