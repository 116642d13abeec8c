/* The KV cache and attention over it: rows of one head in f32, f16, int8 (an
 * f16 scale per head and position) or int4 (q4_1 blocks of 32, rows or tiles
 * of 16 positions); a query's score and the value update per row, and the
 * causal attention of the query heads that share a KV head. An ISA header
 * included before this one replaces a helper by defining
 * KILN_UK_HAS_<HELPER>. */
#ifndef KILN_UK_ATTENTION_H
#define KILN_UK_ATTENTION_H

#include "kernels/c99/kiln_uk_base.h"
#include "kernels/c99/kiln_uk_elementwise.h"

static inline void kiln_uk_kv_store_f32(const float *x, uint8_t *row, int32_t hd) {
  memcpy(row, x, (size_t)hd * sizeof(float));
}
/* Replaced together by an ISA header that defines KILN_UK_HAS_KV_F32. */
#ifndef KILN_UK_HAS_KV_F32
static inline float kiln_uk_kv_dot_f32(const float *q, const uint8_t *row, int32_t hd) {
  const float *k = (const float *)(const void *)row;
  float s = 0.0f;
  int32_t i;
  for (i = 0; i < hd; ++i)
    s += q[i] * k[i];
  return s;
}
static inline void kiln_uk_kv_axpy_f32(float *acc, float e, const uint8_t *row, int32_t hd) {
  const float *v = (const float *)(const void *)row;
  int32_t i;
  for (i = 0; i < hd; ++i)
    acc[i] += e * v[i];
}
#endif

static inline void kiln_uk_kv_store_f16(const float *x, uint8_t *row, int32_t hd) {
  int32_t i;
  for (i = 0; i < hd; ++i) {
    uint16_t h = kiln_f32_to_f16(x[i]);
    memcpy(row + 2 * i, &h, sizeof h);
  }
}
/* Replaced together by an ISA header that defines KILN_UK_HAS_KV_F16. */
#ifndef KILN_UK_HAS_KV_F16
static inline float kiln_uk_kv_dot_f16(const float *q, const uint8_t *row, int32_t hd) {
  float s = 0.0f;
  int32_t i;
  for (i = 0; i < hd; ++i)
    s += q[i] * kiln_uk_load_f16(row + 2 * i);
  return s;
}
static inline void kiln_uk_kv_axpy_f16(float *acc, float e, const uint8_t *row, int32_t hd) {
  int32_t i;
  for (i = 0; i < hd; ++i)
    acc[i] += e * kiln_uk_load_f16(row + 2 * i);
}
#endif

/* The int4 cache (--kv-type=q4): per 32 values a GGUF q4_1 block, an f16 scale
 * d and an f16 minimum m, then 16 bytes of codes q (value j of the block in
 * the low nibble of byte j, j + 16 in the high one), each value d q + m: the
 * asymmetric int4 of the literature, groups of 32 per head and position. The
 * codes are rounded against the stored (f16) d and m. */
#ifndef KILN_UK_HAS_KV_STORE_Q4
static inline void kiln_uk_kv_store_q4(const float *x, uint8_t *row, int32_t hd) {
  int32_t b, i;
  for (b = 0; b < hd / 32; ++b) {
    const float *xb = x + 32 * b;
    uint8_t *blk = row + 20 * b;
    float lo = xb[0], hi = xb[0], d, m, id;
    for (i = 1; i < 32; ++i) {
      lo = xb[i] < lo ? xb[i] : lo;
      hi = xb[i] > hi ? xb[i] : hi;
    }
    kiln_uk_kv_q4_scales(blk, lo, hi, &d, &m);
    id = d != 0.0f ? 1.0f / d : 0.0f;
    for (i = 0; i < 16; ++i) {
      float a = roundf((xb[i] - m) * id), c = roundf((xb[i + 16] - m) * id);
      int32_t qa = a < 0.0f ? 0 : a > 15.0f ? 15 : (int32_t)a;
      int32_t qc = c < 0.0f ? 0 : c > 15.0f ? 15 : (int32_t)c;
      blk[4 + i] = (uint8_t)(qa | qc << 4);
    }
  }
}
#endif
/* A head-major int4 cache keeps a head's positions in tiles of 16, so that a
 * kernel loads the same part of 16 rows as one vector. Per block j of 32 values
 * a tile holds 320 bytes at 320 j: the rows' code bytes 4g..4g+3 as 64 bytes
 * per g = 0..3 (row i's at 4 i), then the 16 rows' d and then their m as f16.
 * Row i of a tile is position 16 t + i of the head, its bytes are those of
 * kv_store_q4's row, rearranged. */
static inline void kiln_uk_kv_tile_put_q4(const uint8_t *row, uint8_t *tile, int32_t i, int32_t hd) {
  int32_t j, g;
  for (j = 0; j < hd / 32; ++j) {
    const uint8_t *blk = row + 20 * j;
    uint8_t *t = tile + 320 * j;
    for (g = 0; g < 4; ++g)
      memcpy(t + 64 * g + 4 * i, blk + 4 + 4 * g, 4);
    memcpy(t + 256 + 2 * i, blk, 2);
    memcpy(t + 288 + 2 * i, blk + 2, 2);
  }
}

/* Row i of a tile as kv_store_q4 wrote it. */
static inline void kiln_uk_kv_tile_get_q4(const uint8_t *tile, int32_t i, uint8_t *row, int32_t hd) {
  int32_t j, g;
  for (j = 0; j < hd / 32; ++j) {
    const uint8_t *t = tile + 320 * j;
    uint8_t *blk = row + 20 * j;
    for (g = 0; g < 4; ++g)
      memcpy(blk + 4 + 4 * g, t + 64 * g + 4 * i, 4);
    memcpy(blk, t + 256 + 2 * i, 2);
    memcpy(blk + 2, t + 288 + 2 * i, 2);
  }
}

/* kv_store_q4 into row i of a tile. */
static inline void kiln_uk_kv_store_q4t(const float *x, uint8_t *tile, int32_t i, int32_t hd) {
  uint8_t row[KILN_UK_MAX_HEAD_DIM / 32 * 20];
  kiln_uk_kv_store_q4(x, row, hd);
  kiln_uk_kv_tile_put_q4(row, tile, i, hd);
}

/* Positions from..from+n-1 of a tiled head moved to to.. (to < from), in order. */
static inline void kiln_uk_kv_move_q4t(uint8_t *head, int32_t to, int32_t from, int32_t n, int32_t hd) {
  const size_t tile = 16u * (size_t)(hd / 32) * 20u;
  uint8_t row[KILN_UK_MAX_HEAD_DIM / 32 * 20];
  int32_t i;
  for (i = 0; i < n; ++i) {
    kiln_uk_kv_tile_get_q4(head + (size_t)((from + i) / 16) * tile, (from + i) % 16, row, hd);
    kiln_uk_kv_tile_put_q4(row, head + (size_t)((to + i) / 16) * tile, (to + i) % 16, hd);
  }
}

/* a[0..31] += ed x a q4 block's codes (16 bytes: values 0-15 in the low
 * nibbles, 16-31 in the high ones) + em. Replaced by an ISA header that
 * defines KILN_UK_HAS_KV_Q4_AXPY. */
#ifndef KILN_UK_HAS_KV_Q4_AXPY
static inline void kiln_uk_kv_q4_axpy(float *a, float ed, float em, const uint8_t *codes) {
  int32_t i;
  for (i = 0; i < 16; ++i) {
    a[i] += ed * (float)(codes[i] & 15) + em;
    a[i + 16] += ed * (float)(codes[i] >> 4) + em;
  }
}
#endif

static inline void kiln_uk_kv_axpy_q4(float *acc, float e, const uint8_t *row, int32_t hd) {
  int32_t b;
  for (b = 0; b < hd / 32; ++b) {
    const uint8_t *blk = row + 20 * b;
    kiln_uk_kv_q4_axpy(acc + 32 * b, e * kiln_uk_load_f16(blk), e * kiln_uk_load_f16(blk + 2), blk + 4);
  }
}

/* One f16 scale per head and position, then hd int8. The values are rounded
 * against the stored (f16) scale so dequantization uses the same one. */
#ifndef KILN_UK_HAS_KV_STORE_I8
static inline void kiln_uk_kv_store_i8(const float *x, uint8_t *row, int32_t hd) {
  int8_t *q = (int8_t *)(void *)(row + 2);
  float amax = 0.0f, d, id;
  uint16_t h;
  int32_t i;
  for (i = 0; i < hd; ++i)
    amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
  h = kiln_f32_to_f16(amax / 127.0f);
  memcpy(row, &h, sizeof h);
  d = kiln_f16_to_f32(h);
  id = d != 0.0f ? 1.0f / d : 0.0f;
  for (i = 0; i < hd; ++i) {
    float v = roundf(x[i] * id);
    q[i] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
  }
}
#endif
/* Replaced by an ISA header that defines KILN_UK_HAS_KV_I8. */
#ifndef KILN_UK_HAS_KV_I8
static inline void kiln_uk_kv_axpy_i8(float *acc, float e, const uint8_t *row, int32_t hd) {
  const int8_t *v = (const int8_t *)(const void *)(row + 2);
  float ed = e * kiln_uk_load_f16(row);
  int32_t i;
  for (i = 0; i < hd; ++i)
    acc[i] += ed * (float)v[i];
}
#endif

/* The exact dot of n int8 cache values with the query's n. Replaced by an
 * ISA header that defines KILN_UK_HAS_KV_I8_DOT. */
#ifndef KILN_UK_HAS_KV_I8_DOT
static inline int32_t kiln_uk_kv_i8_dot(const int8_t *k, const int8_t *q, int32_t n) {
  int32_t dot = 0, i;
  for (i = 0; i < n; ++i)
    dot += (int32_t)q[i] * (int32_t)k[i];
  return dot;
}
#endif

/* The int8 row (f16 scale, then hd values) against a quantized query. */
static inline float kiln_uk_kv_qdot_i8(const kv_query *kq, const uint8_t *row, int32_t hd) {
  const int8_t *k = (const int8_t *)(const void *)(row + 2);
  const int32_t g = kiln_uk_kv_query_group(hd);
  float s = 0.0f;
  int32_t b;
  for (b = 0; b < hd / g; ++b)
    s += kq->d[b] * (float)kiln_uk_kv_i8_dot(k + g * b, kq->q + g * b, g);
  return s * kiln_uk_load_f16(row);
}

/* The exact dot of a q4 block's codes with its 32 query values. Replaced by
 * an ISA header that defines KILN_UK_HAS_KV_Q4_DOT. */
#ifndef KILN_UK_HAS_KV_Q4_DOT
static inline int32_t kiln_uk_kv_q4_dot(const uint8_t *codes, const int8_t *q) {
  int32_t dot = 0, i;
  for (i = 0; i < 16; ++i)
    dot += (int32_t)q[i] * (codes[i] & 15) + (int32_t)q[i + 16] * (codes[i] >> 4);
  return dot;
}
#endif

/* The int4 row (q4_1 blocks: d, m, 16 bytes of codes per 32) against a
 * quantized query: per block d x the codes' dot plus m x the query's sum. */
static inline float kiln_uk_kv_qdot_q4(const kv_query *kq, const uint8_t *row, int32_t hd) {
  float s = 0.0f;
  int32_t b;
  for (b = 0; b < hd / 32; ++b) {
    const uint8_t *blk = row + 20 * b;
    const float dot = (float)kiln_uk_kv_q4_dot(blk + 4, kq->q + 32 * b);
    s += kiln_uk_load_f16(blk) * kq->d[b] * dot + kiln_uk_load_f16(blk + 2) * kq->d[b] * (float)kq->s[b];
  }
  return s;
}

/* One head's cache row as floats (i8 rows: times their scale). */
static inline void kiln_uk_kv_load_row(int family, const uint8_t *row, float *x, int32_t hd) {
  const float d = family == KILN_UK_I8 ? kiln_uk_load_f16(row) : 1.0f;
  int32_t i;
  if (family == KILN_UK_Q4) {
    for (i = 0; i < hd; ++i) {
      const uint8_t *blk = row + 20 * (i / 32);
      const int32_t j = i % 32, c = j < 16 ? blk[4 + j] & 15 : blk[4 + j - 16] >> 4;
      x[i] = kiln_uk_load_f16(blk) * (float)c + kiln_uk_load_f16(blk + 2);
    }
    return;
  }
  for (i = 0; i < hd; ++i)
    x[i] = d * kiln_uk_kv_value(family, row, i);
}

/* Row i of a tile of a tiled int4 cache as floats. */
static inline void kiln_uk_kv_load_q4t(const uint8_t *tile, int32_t i, float *x, int32_t hd) {
  uint8_t row[KILN_UK_MAX_HEAD_DIM / 32 * 20];
  kiln_uk_kv_tile_get_q4(tile, i, row, hd);
  kiln_uk_kv_load_row(KILN_UK_Q4, row, x, hd);
}

/* A score: the float query against an f32 or f16 row, the quantized one
 * against an int8 or int4 row. */
static inline float kiln_uk_kv_dot(int family, const float *q, const kv_query *kq, const uint8_t *row,
                           int32_t hd) {
  return family == KILN_UK_F32   ? kiln_uk_kv_dot_f32(q, row, hd)
         : family == KILN_UK_F16 ? kiln_uk_kv_dot_f16(q, row, hd)
         : family == KILN_UK_Q4  ? kiln_uk_kv_qdot_q4(kq, row, hd)
                                 : kiln_uk_kv_qdot_i8(kq, row, hd);
}

static inline void kiln_uk_kv_axpy(int family, float *acc, float e, const uint8_t *row, int32_t hd) {
  if (family == KILN_UK_F32)
    kiln_uk_kv_axpy_f32(acc, e, row, hd);
  else if (family == KILN_UK_F16)
    kiln_uk_kv_axpy_f16(acc, e, row, hd);
  else if (family == KILN_UK_Q4)
    kiln_uk_kv_axpy_q4(acc, e, row, hd);
  else
    kiln_uk_kv_axpy_i8(acc, e, row, hd);
}

/* The scores of rows r[0..n-1] of one KV head against a query (unscaled).
 * An ISA header that defines KILN_UK_HAS_KV_DOT_ROWS8 scores eight rows at
 * once where kv_dot_rows8_fits says it can (r[n..] repeat the last row, up to
 * a whole eight, and s has room for them). */
static inline void kiln_uk_kv_dot_rows(int family, const float *q, const kv_query *kq,
                               const uint8_t *const *r, int32_t n, int32_t hd, float *s) {
  int32_t i;
#ifdef KILN_UK_HAS_KV_DOT_ROWS8
  if (kiln_uk_kv_dot_rows8_fits(family, hd)) {
    for (i = 0; i < n; i += 8)
      kiln_uk_kv_dot_rows8(family, q, kq, r + i, hd, s + i);
    return;
  }
#endif
  for (i = 0; i < n; ++i)
    s[i] = kiln_uk_kv_dot(family, q, kq, r[i], hd);
}

/* acc += e[i] x row r[i] for i = 0..n-1, in that order per element. Replaced
 * by an ISA header that defines KILN_UK_HAS_KV_AXPY_ROWS (which keeps acc in
 * registers across the rows). */
#ifndef KILN_UK_HAS_KV_AXPY_ROWS
static inline void kiln_uk_kv_axpy_rows(int family, float *acc, const float *e, const uint8_t *const *r,
                                int32_t n, int32_t hd) {
  int32_t i;
  for (i = 0; i < n; ++i)
    kiln_uk_kv_axpy(family, acc, e[i], r[i], hd);
}
#endif

#ifndef KILN_UK_HAS_ATTEND
/* Query heads whose state attend keeps at once (on the stack: 5.4 KiB at the
 * largest head dimension); a larger group runs in parts. */
#define KILN_UK_ATTEND_HEADS 4

/* Causal attention of nq query heads (q: nq x hd, contiguous) that share one KV
 * head, over positions t0..t1 of a cache of `ring` rows (`stride` bytes apart;
 * position t in row t % ring, so a cache shorter than the context is a ring
 * buffer) in `family` (KILN_UK_F32, F16, I8, Q4 or Q4T, rows of `stride` bytes
 * in tiles of 16; the last three score the query quantized, kv_query): an
 * online softmax over blocks of 16 positions (the scores of a block, one
 * rescale of the accumulator if its maximum grew, then the block's
 * exponentials at once), no scores
 * buffer. Every head of the group takes each block in turn, so the block's
 * rows are read from memory once for the group; each head's arithmetic is the
 * same whatever the group. */
KILN_UK_INLINE void kiln_uk_attend(int family, const float *q, int32_t nq, const uint8_t *keys,
                           const uint8_t *values, size_t stride, int32_t ring,
                           const int32_t *pages, int32_t page, int32_t t0, int32_t t1,
                           int32_t hd, float scale, float *y) {
  int32_t h0;
  for (h0 = 0; h0 < nq; h0 += KILN_UK_ATTEND_HEADS) {
    const int32_t nh = nq - h0 < KILN_UK_ATTEND_HEADS ? nq - h0 : KILN_UK_ATTEND_HEADS;
    float acc[KILN_UK_ATTEND_HEADS][KILN_UK_MAX_HEAD_DIM];
    float mx[KILN_UK_ATTEND_HEADS], sum[KILN_UK_ATTEND_HEADS];
    kv_query kq[KILN_UK_ATTEND_HEADS];
    int32_t h, t, i;
    for (h = 0; h < nh; ++h) {
      for (i = 0; i < hd; ++i)
        acc[h][i] = 0.0f;
      mx[h] = -INFINITY;
      sum[h] = 0.0f;
      if (family == KILN_UK_I8 || family == KILN_UK_Q4 || family == KILN_UK_Q4T)
        kiln_uk_kv_query_set(&kq[h], q + (size_t)(h0 + h) * (size_t)hd, hd);
    }
    for (t = t0; t <= t1; t += 16) {
      const int32_t nb = t1 - t + 1 < 16 ? t1 - t + 1 : 16;
      const uint8_t *kr[16], *vr[16];
      uint8_t kt[16][KILN_UK_MAX_HEAD_DIM / 32 * 20], vt[16][KILN_UK_MAX_HEAD_DIM / 32 * 20];
      for (i = 0; i < 16; ++i) { /* rows past the block's end repeat its last */
        const int32_t slot = kiln_uk_kv_slot(t + (i < nb ? i : nb - 1), ring, pages, page);
        if (family == KILN_UK_Q4T) { /* tiled: the rows as kv_store_q4 wrote them */
          const size_t tile = (size_t)(slot / 16) * 16u * stride;
          kiln_uk_kv_tile_get_q4(keys + tile, slot % 16, kt[i], hd);
          kiln_uk_kv_tile_get_q4(values + tile, slot % 16, vt[i], hd);
          kr[i] = kt[i];
          vr[i] = vt[i];
        } else {
          kr[i] = keys + (size_t)slot * stride;
          vr[i] = values + (size_t)slot * stride;
        }
      }
      for (h = 0; h < nh; ++h) {
        const int32_t rf = family == KILN_UK_Q4T ? KILN_UK_Q4 : family; /* the rows' family */
        const float *qh = q + (size_t)(h0 + h) * (size_t)hd;
        float sc[16], ev[16], bm = -INFINITY;
        kiln_uk_kv_dot_rows(rf, qh, &kq[h], kr, nb, hd, sc);
        for (i = 0; i < nb; ++i) {
          sc[i] *= scale;
          bm = sc[i] > bm ? sc[i] : bm;
        }
        if (bm > mx[h]) {
          float c = expf(mx[h] - bm);
          for (i = 0; i < hd; ++i)
            acc[h][i] *= c;
          sum[h] *= c;
          mx[h] = bm;
        }
        kiln_uk_exp_block(sc, mx[h], ev, nb);
        for (i = 0; i < nb; ++i)
          sum[h] += ev[i];
        kiln_uk_kv_axpy_rows(rf, acc[h], ev, vr, nb, hd);
      }
    }
    for (h = 0; h < nh; ++h)
      for (i = 0; i < hd; ++i)
        y[(size_t)(h0 + h) * (size_t)hd + i] = acc[h][i] / sum[h];
  }
}
#endif

/* --- the cache's layout, writes, attention and shifts ------------------- */

/* Where a KV cache keeps (position slot, head) of `heads` heads in `cap` rows:
 * pos-major rows of every head ([slot][head]), head-major ([head][slot]: a
 * head's positions contiguous), or head-major int4 in tiles of 16 positions
 * (kv_tile_put_q4 has the bytes; a tile's offset for any of its slots). */
enum { KILN_UK_KV_POS_MAJOR, KILN_UK_KV_HEAD_MAJOR, KILN_UK_KV_TILED };

static inline size_t kiln_uk_kv_at(int layout, int32_t slot, int32_t head, int32_t cap, int32_t heads,
                           size_t head_bytes) {
  switch (layout) {
  case KILN_UK_KV_TILED:
    return ((size_t)head * (size_t)cap + (size_t)(slot & ~15)) * head_bytes;
  case KILN_UK_KV_HEAD_MAJOR: return ((size_t)head * (size_t)cap + (size_t)slot) * head_bytes;
  default: return (size_t)slot * (size_t)heads * head_bytes + (size_t)head * head_bytes;
  }
}

/* The hd floats x as (slot, head) of a cache of `family`, and back. */
KILN_UK_INLINE void kiln_uk_kv_store_at(int family, int layout, const float *x, uint8_t *cache,
                                int32_t slot, int32_t head, int32_t cap, int32_t heads,
                                int32_t hd) {
  uint8_t *p = cache + kiln_uk_kv_at(layout, slot, head, cap, heads, kiln_uk_kv_head_bytes(family, hd));
  if (layout == KILN_UK_KV_TILED)
    kiln_uk_kv_store_q4t(x, p, slot % 16, hd);
  else if (family == KILN_UK_F32)
    kiln_uk_kv_store_f32(x, p, hd);
  else if (family == KILN_UK_F16)
    kiln_uk_kv_store_f16(x, p, hd);
  else if (family == KILN_UK_I8)
    kiln_uk_kv_store_i8(x, p, hd);
  else
    kiln_uk_kv_store_q4(x, p, hd);
}

KILN_UK_INLINE void kiln_uk_kv_load_at(int family, int layout, const uint8_t *cache, int32_t slot,
                               int32_t head, int32_t cap, int32_t heads, float *x, int32_t hd) {
  const uint8_t *p =
      cache + kiln_uk_kv_at(layout, slot, head, cap, heads, kiln_uk_kv_head_bytes(family, hd));
  if (layout == KILN_UK_KV_TILED)
    kiln_uk_kv_load_q4t(p, slot % 16, x, hd);
  else
    kiln_uk_kv_load_row(family, p, x, hd);
}

/* Rows r0..r1-1 of x (ld floats apart), heads h0..h1-1 of hd values each,
 * stored as positions pos + r of a cache of `cap` rows (position p in row
 * p mod cap: a ring when the cache is shorter than the context). With
 * `ask_next`, the cache lines position pos + r1 of those heads will take are
 * asked for (prefetch_store), so the next step's write does not wait. */
KILN_UK_INLINE void kiln_uk_kv_store_rows(int family, int layout, const float *x, int32_t ld,
                                  uint8_t *cache, int32_t r0, int32_t r1, int32_t h0, int32_t h1,
                                  int32_t pos, int32_t hd, int32_t heads, int32_t cap,
                                  int ask_next) {
  const size_t hb = kiln_uk_kv_head_bytes(family, hd);
  int32_t r, h;
  for (r = r0; r < r1; ++r)
    for (h = h0; h < h1; ++h)
      kiln_uk_kv_store_at(family, layout, x + (size_t)r * (size_t)ld + h * hd, cache, (pos + r) % cap, h,
                  cap, heads, hd);
  if (ask_next)
    for (h = h0; h < h1; ++h)
      kiln_uk_prefetch_store(cache + kiln_uk_kv_at(layout, (pos + r1) % cap, h, cap, heads, hb),
                     layout == KILN_UK_KV_TILED ? 16u * hb : hb);
}

/* As kv_store_rows into a pool of pages shared by sessions: row r at
 * position at[r] of the session whose page table is tables[r] (rows of a
 * batch belong to different sessions). */
KILN_UK_INLINE void kiln_uk_kv_store_paged(int family, int layout, const float *x, int32_t ld,
                                   uint8_t *cache, int32_t r0, int32_t r1, int32_t h0, int32_t h1,
                                   const int32_t *at, const int32_t *const *tables, int32_t page,
                                   int32_t hd, int32_t heads, int32_t cap) {
  int32_t r, h;
  for (r = r0; r < r1; ++r)
    for (h = h0; h < h1; ++h)
      kiln_uk_kv_store_at(family, layout, x + (size_t)r * (size_t)ld + h * hd, cache,
                  kiln_uk_kv_slot(at[r], cap, tables[r], page), h, cap, heads, hd);
}

/* The attention of (KV head, row) pairs u0..u1-1 (head-major) of `rows`
 * query rows: row r at position pos + r of a cache of `cap` rows, or with
 * page tables (tables not NULL) at at[r] over the pages tables[r] maps. */
KILN_UK_INLINE void kiln_uk_attention_units(int family, int layout, const float *q,
                                    const uint8_t *keys, const uint8_t *values, float *y,
                                    int32_t u0, int32_t u1, int32_t rows, int32_t pos,
                                    const int32_t *at, const int32_t *const *tables,
                                    int32_t page, int32_t nh, int32_t nkv, int32_t hd,
                                    int32_t window, int32_t cap, float scale) {
  const size_t hb = kiln_uk_kv_head_bytes(family, hd);
  const int major = layout != KILN_UK_KV_POS_MAJOR;
  const size_t pos_stride = major ? hb : (size_t)nkv * hb, head_stride = major ? (size_t)cap * hb : hb;
  const int32_t group = nh / nkv;
  int32_t u;
  for (u = u0; u < u1; ++u) {
    const int32_t g = u / rows, r = u % rows, p = tables ? at[r] : pos + r;
    const int32_t t0 = window && p - window + 1 > 0 ? p - window + 1 : 0;
    const size_t off = (size_t)r * (size_t)(nh * hd) + (size_t)(g * group * hd);
    kiln_uk_attend(layout == KILN_UK_KV_TILED ? KILN_UK_Q4T : family, q + off, group,
           keys + (size_t)g * head_stride, values + (size_t)g * head_stride, pos_stride, cap,
           tables ? tables[r] : NULL, page, t0, p, hd, scale, y + off);
  }
}

/* Attention of `rows` query rows (row r at position pos + r) over a cache of
 * `cap` rows in `layout`, (KV head, row) pairs u0..u1-1 head-major: each pair
 * is the KV head's nh / nkv query heads, attending (attend) to positions
 * 0..pos + r, or to the last `window` of them. */
KILN_UK_INLINE void kiln_uk_attention_rows(int family, int layout, const float *q, const uint8_t *keys,
                                   const uint8_t *values, float *y, int32_t u0, int32_t u1,
                                   int32_t rows, int32_t pos, int32_t nh, int32_t nkv,
                                   int32_t hd, int32_t window, int32_t cap, float scale) {
  kiln_uk_attention_units(family, layout, q, keys, values, y, u0, u1, rows, pos, NULL, NULL, 0, nh,
                  nkv, hd, window, cap, scale);
}

/* As attention_rows over a pool of pages: row r at position at[r] of the
 * session whose page table is tables[r], attending to all its positions. */
KILN_UK_INLINE void kiln_uk_attention_paged(int family, int layout, const float *q,
                                    const uint8_t *keys, const uint8_t *values, float *y,
                                    int32_t u0, int32_t u1, int32_t rows, const int32_t *at,
                                    const int32_t *const *tables, int32_t page, int32_t nh,
                                    int32_t nkv, int32_t hd, int32_t cap, float scale) {
  kiln_uk_attention_units(family, layout, q, keys, values, y, u0, u1, rows, 0, at, tables, page, nh,
                  nkv, hd, 0, cap, scale);
}

/* A context shift in a pool of pages: positions from..from+n-1 of the
 * session whose page table is `pages` moved to to.. (to < from, in order),
 * every head, byte for byte (a tiled int4 head position by position). */
static inline void kiln_uk_kv_move_paged(int family, int layout, uint8_t *cache,
                                 const int32_t *pages, int32_t page, int32_t to, int32_t from,
                                 int32_t n, int32_t hd, int32_t heads, int32_t cap) {
  const size_t hb = kiln_uk_kv_head_bytes(family, hd);
  uint8_t row[KILN_UK_MAX_HEAD_DIM * 4];
  int32_t i, h;
  for (i = 0; i < n; ++i) {
    const int32_t src = kiln_uk_kv_slot(from + i, cap, pages, page);
    const int32_t dst = kiln_uk_kv_slot(to + i, cap, pages, page);
    for (h = 0; h < heads; ++h) {
      const uint8_t *a = cache + kiln_uk_kv_at(layout, src, h, cap, heads, hb);
      uint8_t *b = cache + kiln_uk_kv_at(layout, dst, h, cap, heads, hb);
      if (layout == KILN_UK_KV_TILED) {
        kiln_uk_kv_tile_get_q4(a, src % 16, row, hd);
        kiln_uk_kv_tile_put_q4(row, b, dst % 16, hd);
      } else {
        memmove(b, a, hb);
      }
    }
  }
}

/* Page `from` of a pool of pages (`page` positions each; a cache of `cap`
 * rows, `heads` heads of hb bytes a position) copied to page `to`: a shared
 * page a session is about to write. A page is a run of whole rows of each
 * head (of whole tiles when tiled: page is a multiple of 16). */
static inline void kiln_uk_kv_copy_page(int layout, uint8_t *cache, int32_t from, int32_t to,
                                int32_t page, int32_t heads, int32_t cap, size_t hb) {
  int32_t h;
  if (layout == KILN_UK_KV_POS_MAJOR) {
    memcpy(cache + (size_t)to * (size_t)page * (size_t)heads * hb,
           cache + (size_t)from * (size_t)page * (size_t)heads * hb, (size_t)page * (size_t)heads * hb);
    return;
  }
  for (h = 0; h < heads; ++h)
    memcpy(cache + kiln_uk_kv_at(layout, to * page, h, cap, heads, hb),
           cache + kiln_uk_kv_at(layout, from * page, h, cap, heads, hb), (size_t)page * hb);
}

/* Rows r0..r1-1 of a key cache of `heads` heads turned by delta positions
 * with kiln_uk_rope_rows (freq, rd, neox as the keys were roped, without mscale: they
 * carry it once already), for a context shift; f16, int8 and int4 rows are
 * stored again. */
KILN_UK_INLINE void kiln_uk_kv_rerope_rows(int family, int layout, uint8_t *keys, int32_t r0, int32_t r1,
                                   int32_t delta, int32_t hd, int32_t heads, int32_t cap,
                                   const double *freq, int32_t rd, int neox) {
  float t[KILN_UK_MAX_HEAD_DIM];
  int32_t r, h;
  for (r = r0; r < r1; ++r)
    for (h = 0; h < heads; ++h) {
      kiln_uk_kv_load_at(family, layout, keys, r, h, cap, heads, t, hd);
      kiln_uk_rope_rows(t, t, hd, 1, delta, 0, 1, freq, rd, hd, neox, 1.0f);
      kiln_uk_kv_store_at(family, layout, t, keys, r, h, cap, heads, hd);
    }
}

/* Rows i..j-1 of `row` bytes at c in reverse order, in place. */
static inline void kiln_uk_kv_reverse_rows(uint8_t *c, size_t row, int32_t i, int32_t j) {
  for (--j; i < j; ++i, --j) {
    uint8_t *a = c + (size_t)i * row, *b = c + (size_t)j * row, t;
    size_t k;
    for (k = 0; k < row; ++k)
      t = a[k], a[k] = b[k], b[k] = t;
  }
}

/* n rows of `row` bytes at c turned by s rows (row i gets row i + s mod n), in
 * place: three reversals. */
static inline void kiln_uk_kv_rotate_rows(uint8_t *c, size_t row, int32_t n, int32_t s) {
  kiln_uk_kv_reverse_rows(c, row, 0, s);
  kiln_uk_kv_reverse_rows(c, row, s, n);
  kiln_uk_kv_reverse_rows(c, row, 0, n);
}

/* A context shift of one block of a layer's caches (the keys k and values v
 * of one head when head-major, of all heads when pos-major), `rows` rows of
 * row_bytes holding pos positions: keep the first `keep`, drop the next
 * `drop`, move the rest down. A ring (`ring`: fewer rows than the context)
 * that has wrapped turns whole instead, so position p stays in row p mod
 * rows. A tiled int4 head (`tiled_hd`: its head dimension, else 0) moves
 * position by position between tiles. The keys are then turned back by drop
 * positions over the rows kv_shift_heads gives. */
static inline void kiln_uk_kv_shift_block(uint8_t *k, uint8_t *v, size_t row_bytes, int32_t rows,
                                  int ring, int32_t tiled_hd, int32_t pos, int32_t keep,
                                  int32_t drop) {
  if (ring && pos > rows) {
    kiln_uk_kv_rotate_rows(k, row_bytes, rows, drop % rows);
    kiln_uk_kv_rotate_rows(v, row_bytes, rows, drop % rows);
  } else if (tiled_hd) {
    kiln_uk_kv_move_q4t(k, keep, keep + drop, pos - keep - drop, tiled_hd);
    kiln_uk_kv_move_q4t(v, keep, keep + drop, pos - keep - drop, tiled_hd);
  } else {
    memmove(k + (size_t)keep * row_bytes, k + (size_t)(keep + drop) * row_bytes,
            (size_t)(pos - keep - drop) * row_bytes);
    memmove(v + (size_t)keep * row_bytes, v + (size_t)(keep + drop) * row_bytes,
            (size_t)(pos - keep - drop) * row_bytes);
  }
}

/* A context shift of a layer's caches: `heads` blocks of block_bytes
 * (kv_shift_block each), then the rows r0..r1-1 whose keys the caller turns
 * back by drop positions: every row of a wrapped ring, else the moved ones. */
static inline void kiln_uk_kv_shift_heads(uint8_t *k, uint8_t *v, int32_t heads, size_t block_bytes,
                                  size_t row_bytes, int32_t rows, int ring, int32_t tiled_hd,
                                  int32_t pos, int32_t keep, int32_t drop, int32_t *r0,
                                  int32_t *r1) {
  const int whole = ring && pos > rows;
  int32_t h;
  for (h = 0; h < heads; ++h)
    kiln_uk_kv_shift_block(k + (size_t)h * block_bytes, v + (size_t)h * block_bytes, row_bytes, rows,
                   ring, tiled_hd, pos, keep, drop);
  *r0 = whole ? 0 : keep;
  *r1 = whole ? rows : pos - drop;
}

#endif /* KILN_UK_ATTENTION_H */
