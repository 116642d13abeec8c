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
 *                 column g/2 + 4c + j in the high one, each + 8.
 *   q4_k      GGUF q4_k, g = 256. Per super-block: nr f16 d, nr f16 dmin,
 *             three arrays of nr 32-bit words S0, S1, S2 with each row's eight
 *             6-bit scales sc and mins m, then 32 quads of nr x 4 code bytes:
 *             row r's bytes 4c..4c+3 of the super-block's 128 (codes of
 *             sub-block 2(c/8) in the low nibbles, of 2(c/8)+1 in the high;
 *             columns 4(c%8)..4(c%8)+3 of each).
 *             Byte i of S0 is sc[2i] | (m[2i] >> 4) << 6, byte i of S1
 *             sc[2i+1] | (m[2i+1] >> 4) << 6, and S2 holds m[2i] & 15 at bit
 *             4i and m[2i+1] & 15 at bit 16 + 4i: a shift and a mask give a
 *             sub-block's scales in every lane, and the mins in 16-bit pairs.
 *   q5_k      GGUF q5_k, g = 256: as q4_k, with 8 quads of the fifth bits
 *             (row r's bytes 4c..4c+3 of qh) between S2 and the code quads.
 *   q6_k      GGUF q6_k, g = 256. Per super-block: 32 quads of nr x 4 bytes of
 *             the low bits (row r's bytes 4c..4c+3 of ql), 16 quads of the high
 *             bits (of qh), four arrays of nr words with the sixteen int8
 *             scales (byte t of word w: scale 4w + t), then nr f16 d. The
 *             quads keep GGUF's order within a row, so the codes of sub-block s
 *             are a nibble of ql quads and two bits of qh quads.
 *   q2_k      GGUF q2_k, g = 256. Per super-block: nr f16 d, nr f16 dmin, 4
 *             quads of the scale bytes (row r's bytes 4t..4t+3: sub-blocks
 *             4t..4t+3, scale in the low nibble, min in the high), then 16
 *             quads of the code bytes (row r's bytes 4c..4c+3 of qs).
 *   q3_k      GGUF q3_k, g = 256. Per super-block: nr f16 d, 3 quads of the
 *             packed 6-bit scales (row r's bytes 4t..4t+3 of the 12), 8 quads
 *             of hmask, then 16 quads of qs (row r's bytes 4c..4c+3 of each).
 *   q4_1, q5_0, q5_1, iq4_nl
 *             GGUF's blocks of 32 (g = 32). Per block: nr f16 d, then (q4_1,
 *             q5_1) nr f16 m, then (q5_0, q5_1) nr 32-bit words of the fifth
 *             bits, then 4 quads of nr x 4 code bytes as i4's (row r's bytes
 *             4c..4c+3 of qs: columns 4c + j in the low nibbles, 16 + 4c + j in
 *             the high). Bit c of byte j of a fifth-bit word is the fifth bit
 *             of column 4c + j, bit 4 + c that of column 16 + 4c + j, so a
 *             32-bit shift by 4 - c (left) or c (right) and a mask of 0x10 put
 *             quad c's fifth bits beside its low or high nibbles. */
#ifndef KILN_UK_PACK_H
#define KILN_UK_PACK_H

#include "kernels/kiln_uk_abi.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Same bytes per row as the row layout; the last panel is padded to nr rows. */
static inline size_t kiln_uk_panel_bytes(int family, int32_t n, int32_t k, int32_t g,
                                         int32_t nr) {
  return (size_t)((n + nr - 1) / nr) * (size_t)nr * kiln_uk_row_bytes(family, k, g);
}

static inline void kiln_uk_put_u32le(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

/* One q4_k (five = 0, 144 bytes at s) or q5_k super-block (176 bytes) as row
 * r of a panel's super-block at p. */
static inline void kiln_uk_pack_q45k_block(const uint8_t *s, uint8_t *p, int32_t r, int32_t nr,
                                           int32_t five) {
  const uint8_t *q = s + 4; /* GGUF's 12 bytes of packed scales and mins */
  uint32_t w0 = 0, w1 = 0, w2 = 0;
  int32_t j, c;
  for (j = 0; j < 8; ++j) {
    uint32_t sc = j < 4 ? (uint32_t)(q[j] & 63) : (uint32_t)((q[j + 4] & 15) | ((q[j - 4] >> 6) << 4));
    uint32_t m = j < 4 ? (uint32_t)(q[j + 4] & 63) : (uint32_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    uint32_t byte = (sc | (m >> 4) << 6) << (8 * (j / 2));
    if (j % 2 == 0)
      w0 |= byte;
    else
      w1 |= byte;
    w2 |= (m & 15u) << (4 * (j / 2) + 16 * (j % 2));
  }
  memcpy(p + 2 * r, s, 2);
  memcpy(p + 2 * nr + 2 * r, s + 2, 2);
  kiln_uk_put_u32le(p + 4 * nr + 4 * r, w0);
  kiln_uk_put_u32le(p + 8 * nr + 4 * r, w1);
  kiln_uk_put_u32le(p + 12 * nr + 4 * r, w2);
  /* q5_k's qh then the codes, as quads: 8 + 32 of them, or q4_k's 32 */
  for (c = 0; c < (five ? 40 : 32); ++c)
    memcpy(p + (size_t)(16 + 4 * c) * (size_t)nr + 4 * (size_t)r, s + 16 + 4 * c, 4);
}

/* One q6_k super-block (210 bytes at s) as row r of a panel's super-block at p. */
static inline void kiln_uk_pack_q6k_block(const uint8_t *s, uint8_t *p, int32_t r, int32_t nr) {
  int32_t c;
  for (c = 0; c < 48; ++c) /* ql's 32 quads, then qh's 16 */
    memcpy(p + (size_t)(4 * c) * (size_t)nr + 4 * (size_t)r, s + 4 * c, 4);
  for (c = 0; c < 4; ++c)
    memcpy(p + (size_t)(192 + 4 * c) * (size_t)nr + 4 * (size_t)r, s + 192 + 4 * c, 4);
  memcpy(p + 208 * (size_t)nr + 2 * (size_t)r, s + 208, 2);
}

/* Bytes per row of a block of 32 in a panel before its codes: d, then m
 * (q4_1, q5_1), then the fifth bits (q5_0, q5_1); GGUF's blocks have as many. */
static inline int32_t kiln_uk_b32_head(int family) {
  return 2 + (family == KILN_UK_Q4_1 || family == KILN_UK_Q5_1 ? 2 : 0) +
         (family == KILN_UK_Q5_0 || family == KILN_UK_Q5_1 ? 4 : 0);
}

static inline int kiln_uk_is_b32_family(int family) {
  return family == KILN_UK_Q4_1 || family == KILN_UK_Q5_0 || family == KILN_UK_Q5_1 ||
         family == KILN_UK_IQ4_NL;
}

/* One GGUF block of 32 (q4_1, q5_0, q5_1, iq4_nl at s) as row r of a panel's
 * block at p. */
static inline void kiln_uk_pack_b32_block(int family, const uint8_t *s, uint8_t *p, int32_t r,
                                          int32_t nr) {
  const int32_t mins = family == KILN_UK_Q4_1 || family == KILN_UK_Q5_1;
  const int32_t five = family == KILN_UK_Q5_0 || family == KILN_UK_Q5_1;
  const int32_t head = kiln_uk_b32_head(family); /* GGUF's block has its codes there too */
  int32_t c, j;
  memcpy(p + 2 * r, s, 2);
  if (mins)
    memcpy(p + 2 * nr + 2 * r, s + 2, 2);
  if (five) {
    const uint32_t qh = (uint32_t)s[2 + 2 * mins] | (uint32_t)s[3 + 2 * mins] << 8 |
                        (uint32_t)s[4 + 2 * mins] << 16 | (uint32_t)s[5 + 2 * mins] << 24;
    uint32_t word = 0;
    for (c = 0; c < 4; ++c)
      for (j = 0; j < 4; ++j)
        word |= ((qh >> (4 * c + j)) & 1u) << (8 * j + c) |
                ((qh >> (16 + 4 * c + j)) & 1u) << (8 * j + 4 + c);
    kiln_uk_put_u32le(p + (size_t)(2 + 2 * mins) * (size_t)nr + 4 * (size_t)r, word);
  }
  for (c = 0; c < 4; ++c)
    memcpy(p + (size_t)(head + 4 * c) * (size_t)nr + 4 * (size_t)r, s + head + 4 * c, 4);
}

/* One q2_k super-block (84 bytes at s) as row r of a panel's super-block at p. */
static inline void kiln_uk_pack_q2k_block(const uint8_t *s, uint8_t *p, int32_t r, int32_t nr) {
  int32_t c;
  memcpy(p + 2 * r, s + 80, 2);
  memcpy(p + 2 * nr + 2 * r, s + 82, 2);
  for (c = 0; c < 20; ++c) /* the scales' 4 quads, then qs's 16 */
    memcpy(p + (size_t)(4 + 4 * c) * (size_t)nr + 4 * (size_t)r, s + 4 * c, 4);
}

/* One q3_k super-block (110 bytes at s) as row r of a panel's super-block at p. */
static inline void kiln_uk_pack_q3k_block(const uint8_t *s, uint8_t *p, int32_t r, int32_t nr) {
  int32_t c;
  memcpy(p + 2 * r, s + 108, 2);
  for (c = 0; c < 3; ++c)
    memcpy(p + (size_t)(2 + 4 * c) * (size_t)nr + 4 * (size_t)r, s + 96 + 4 * c, 4);
  for (c = 0; c < 24; ++c) /* hmask's 8 quads, then qs's 16 */
    memcpy(p + (size_t)(14 + 4 * c) * (size_t)nr + 4 * (size_t)r, s + 4 * c, 4);
}

/* Row r's block of a panel's block at p (its family's layout above), back in
 * GGUF's bytes at blk: the inverse of the pack_*_block functions, for the
 * kernels that decode a panel row by row. */
static inline void kiln_uk_panel_block_row(int family, const uint8_t *p, int32_t r, int32_t nr,
                                           uint8_t *blk) {
  const size_t at = 4 * (size_t)r;
  int32_t c, j;
  if (kiln_uk_is_b32_family(family)) {
    const int32_t mins = family == KILN_UK_Q4_1 || family == KILN_UK_Q5_1;
    const int32_t five = family == KILN_UK_Q5_0 || family == KILN_UK_Q5_1;
    const int32_t head = kiln_uk_b32_head(family);
    memcpy(blk, p + 2 * r, 2);
    if (mins)
      memcpy(blk + 2, p + 2 * nr + 2 * r, 2);
    if (five) {
      const uint8_t *w = p + (size_t)(2 + 2 * mins) * (size_t)nr + at;
      uint32_t qh = 0;
      for (c = 0; c < 4; ++c)
        for (j = 0; j < 4; ++j)
          qh |= (uint32_t)((w[j] >> c) & 1u) << (4 * c + j) | (uint32_t)((w[j] >> (4 + c)) & 1u) << (16 + 4 * c + j);
      kiln_uk_put_u32le(blk + 2 + 2 * mins, qh);
    }
    for (c = 0; c < 4; ++c)
      memcpy(blk + head + 4 * c, p + (size_t)(head + 4 * c) * (size_t)nr + at, 4);
  } else if (family == KILN_UK_Q2_K) {
    memcpy(blk + 80, p + 2 * r, 2);
    memcpy(blk + 82, p + 2 * nr + 2 * r, 2);
    for (c = 0; c < 20; ++c)
      memcpy(blk + 4 * c, p + (size_t)(4 + 4 * c) * (size_t)nr + at, 4);
  } else if (family == KILN_UK_Q3_K) {
    memcpy(blk + 108, p + 2 * r, 2);
    for (c = 0; c < 3; ++c)
      memcpy(blk + 96 + 4 * c, p + (size_t)(2 + 4 * c) * (size_t)nr + at, 4);
    for (c = 0; c < 24; ++c)
      memcpy(blk + 4 * c, p + (size_t)(14 + 4 * c) * (size_t)nr + at, 4);
  } else if (family == KILN_UK_Q6_K) {
    for (c = 0; c < 52; ++c) /* ql, qh, then the scales */
      memcpy(blk + 4 * c, p + (size_t)(4 * c) * (size_t)nr + at, 4);
    memcpy(blk + 208, p + 208 * (size_t)nr + 2 * (size_t)r, 2);
  } else { /* q4_k, q5_k: the scales and mins back into GGUF's 12 bytes */
    const int32_t five = family == KILN_UK_Q5_K;
    const uint8_t *w0 = p + 4 * (size_t)nr + at, *w1 = p + 8 * (size_t)nr + at, *w2 = p + 12 * (size_t)nr + at;
    uint8_t sc[8], m[8];
    for (j = 0; j < 8; ++j) {
      const uint8_t byte = (j % 2 ? w1 : w0)[j / 2];
      const uint32_t lo = (uint32_t)w2[0] | (uint32_t)w2[1] << 8 | (uint32_t)w2[2] << 16 | (uint32_t)w2[3] << 24;
      sc[j] = byte & 63;
      m[j] = (uint8_t)(((lo >> (4 * (j / 2) + 16 * (j % 2))) & 15) | (uint32_t)(byte >> 6) << 4);
    }
    memcpy(blk, p + 2 * r, 2);
    memcpy(blk + 2, p + 2 * nr + 2 * r, 2);
    for (j = 0; j < 4; ++j) {
      blk[4 + j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
      blk[8 + j] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
      blk[12 + j] = (uint8_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
    }
    for (c = 0; c < (five ? 40 : 32); ++c)
      memcpy(blk + 16 + 4 * c, p + (size_t)(16 + 4 * c) * (size_t)nr + at, 4);
  }
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
    if (family == KILN_UK_Q2_K || family == KILN_UK_Q3_K || family == KILN_UK_Q4_K ||
        family == KILN_UK_Q5_K || family == KILN_UK_Q6_K) {
      const size_t bb = (size_t)kiln_uk_block_bytes(family);
      for (b = 0; b < k / 256; ++b) {
        if (family == KILN_UK_Q2_K)
          kiln_uk_pack_q2k_block(s + bb * (size_t)b, panel + bb * (size_t)nr * (size_t)b, r, nr);
        else if (family == KILN_UK_Q3_K)
          kiln_uk_pack_q3k_block(s + bb * (size_t)b, panel + bb * (size_t)nr * (size_t)b, r, nr);
        else if (family != KILN_UK_Q6_K)
          kiln_uk_pack_q45k_block(s + bb * (size_t)b, panel + bb * (size_t)nr * (size_t)b, r, nr,
                                  family == KILN_UK_Q5_K);
        else
          kiln_uk_pack_q6k_block(s + bb * (size_t)b, panel + bb * (size_t)nr * (size_t)b, r, nr);
      }
      continue;
    }
    if (kiln_uk_is_b32_family(family)) {
      const size_t bb = (size_t)kiln_uk_block_bytes(family);
      for (b = 0; b < k / 32; ++b)
        kiln_uk_pack_b32_block(family, s + bb * (size_t)b, panel + bb * (size_t)nr * (size_t)b, r, nr);
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
