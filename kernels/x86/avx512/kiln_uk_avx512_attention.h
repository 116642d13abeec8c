/* x86-avx512: the KV cache and attention over it, 16 lanes at a time: the
 * rows' stores, scores and value updates, and block-wise attention (16 scores
 * a vector, the int8 query against q8 and q4 caches by vpdpbusd, the tiled
 * int4 cache without gathers). */
#ifndef KILN_UK_AVX512_ATTENTION_H
#define KILN_UK_AVX512_ATTENTION_H

#include "kernels/x86/avx512/kiln_uk_avx512_base.h"

/* KV cache rows of one head (attention's inner loops), 16 lanes at a time. */
#define KILN_UK_HAS_KV_F32 1
static inline float kiln_uk_kv_dot_f32(const float *q, const uint8_t *row, int32_t hd) {
  const float *k = (const float *)(const void *)row;
  __m512 s = _mm512_setzero_ps();
  int32_t i;
  for (i = 0; i < hd; i += 16) {
    __mmask16 m = kiln_uk_tail_mask(hd - i);
    s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), _mm512_maskz_loadu_ps(m, k + i), s);
  }
  return _mm512_reduce_add_ps(s);
}
static inline void kiln_uk_kv_axpy_f32(float *acc, float e, const uint8_t *row, int32_t hd) {
  const float *v = (const float *)(const void *)row;
  int32_t i;
  for (i = 0; i < hd; i += 16) {
    __mmask16 m = kiln_uk_tail_mask(hd - i);
    _mm512_mask_storeu_ps(acc + i, m,
                          _mm512_fmadd_ps(_mm512_set1_ps(e), _mm512_maskz_loadu_ps(m, v + i),
                                          _mm512_maskz_loadu_ps(m, acc + i)));
  }
}

#define KILN_UK_HAS_KV_F16 1
static inline __m512 kiln_uk_kv_load_f16(const uint8_t *p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
static inline float kiln_uk_kv_dot_f16(const float *q, const uint8_t *row, int32_t hd) {
  __m512 s = _mm512_setzero_ps();
  int32_t i;
  for (i = 0; i < hd; i += 16) {
    __mmask16 m = kiln_uk_tail_mask(hd - i);
    s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), kiln_uk_kv_load_f16(row + 2 * i, m), s);
  }
  return _mm512_reduce_add_ps(s);
}
static inline void kiln_uk_kv_axpy_f16(float *acc, float e, const uint8_t *row, int32_t hd) {
  int32_t i;
  for (i = 0; i < hd; i += 16) {
    __mmask16 m = kiln_uk_tail_mask(hd - i);
    _mm512_mask_storeu_ps(acc + i, m,
                          _mm512_fmadd_ps(_mm512_set1_ps(e), kiln_uk_kv_load_f16(row + 2 * i, m),
                                          _mm512_maskz_loadu_ps(m, acc + i)));
  }
}

#define KILN_UK_HAS_KV_I8 1
static inline __m512 kiln_uk_kv_load_i8(const uint8_t *p, __mmask16 m) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
}
static inline void kiln_uk_kv_axpy_i8(float *acc, float e, const uint8_t *row, int32_t hd) {
  __m512 ed = _mm512_set1_ps(e * kiln_uk_load_f16(row));
  int32_t i;
  for (i = 0; i < hd; i += 16) {
    __mmask16 m = kiln_uk_tail_mask(hd - i);
    _mm512_mask_storeu_ps(acc + i, m,
                          _mm512_fmadd_ps(ed, kiln_uk_kv_load_i8(row + 2 + i, m),
                                          _mm512_maskz_loadu_ps(m, acc + i)));
  }
}

#define KILN_UK_HAS_KV_STORE_I8 1
/* As the portable kv_store_i8, 16 values at a time: the same scale (through
 * the same f16 rounding) and the same rounded values, so the same bytes. */
static inline void kiln_uk_kv_store_i8(const float *x, uint8_t *row, int32_t hd) {
  __m512 amax = _mm512_setzero_ps();
  float d, id;
  uint16_t h;
  int32_t i;
  for (i = 0; i < hd; i += 16)
    amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_maskz_loadu_ps(kiln_uk_tail_mask(hd - i), x + i)));
  h = kiln_f32_to_f16(_mm512_reduce_max_ps(amax) / 127.0f);
  memcpy(row, &h, sizeof h);
  d = kiln_f16_to_f32(h);
  id = d != 0.0f ? 1.0f / d : 0.0f;
  for (i = 0; i < hd; i += 16) {
    const __mmask16 m = kiln_uk_tail_mask(hd - i);
    __m512 v = kiln_uk_round_away_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_set1_ps(id)));
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    _mm_mask_storeu_epi8(row + 2 + i, m, _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(v)));
  }
}

#define KILN_UK_HAS_KV_STORE_Q4 1
/* As the portable kv_store_q4, a block of 32 as two vectors: the same d and m
 * (through the same f16 rounding) and the same codes, so the same bytes. */
static inline void kiln_uk_kv_store_q4(const float *x, uint8_t *row, int32_t hd) {
  int32_t b;
  for (b = 0; b < hd / 32; ++b) {
    const __m512 x0 = _mm512_loadu_ps(x + 32 * b), x1 = _mm512_loadu_ps(x + 32 * b + 16);
    const float lo = _mm512_reduce_min_ps(_mm512_min_ps(x0, x1));
    const float hi = _mm512_reduce_max_ps(_mm512_max_ps(x0, x1));
    uint8_t *blk = row + 20 * b;
    float d, m, id;
    __m512 c0, c1;
    kiln_uk_kv_q4_scales(blk, lo, hi, &d, &m);
    id = d != 0.0f ? 1.0f / d : 0.0f;
    c0 = kiln_uk_round_away_ps(_mm512_mul_ps(_mm512_sub_ps(x0, _mm512_set1_ps(m)), _mm512_set1_ps(id)));
    c1 = kiln_uk_round_away_ps(_mm512_mul_ps(_mm512_sub_ps(x1, _mm512_set1_ps(m)), _mm512_set1_ps(id)));
    c0 = _mm512_min_ps(_mm512_max_ps(c0, _mm512_setzero_ps()), _mm512_set1_ps(15.0f));
    c1 = _mm512_min_ps(_mm512_max_ps(c1, _mm512_setzero_ps()), _mm512_set1_ps(15.0f));
    _mm_storeu_si128((__m128i *)(void *)(blk + 4),
                     _mm512_cvtepi32_epi8(_mm512_or_si512(
                         _mm512_cvttps_epi32(c0), _mm512_slli_epi32(_mm512_cvttps_epi32(c1), 4))));
  }
}

/* Dims 16j.. of an f32, f16 or i8 cache row of one head (i8: unscaled). */
static inline __m512 kiln_uk_kv_load(int family, const uint8_t *row, int32_t j, __mmask16 m) {
  return family == KILN_UK_F32   ? _mm512_maskz_loadu_ps(m, (const float *)(const void *)row + 16 * j)
         : family == KILN_UK_F16 ? kiln_uk_kv_load_f16(row + 32 * j, m)
                                 : kiln_uk_kv_load_i8(row + 2 + 16 * j, m);
}

/* Sums of the lanes of each 128-bit quarter of p0..p3: quarter L of the result
 * holds [p0, p1, p2, p3]'s sums over their quarter L. */
static inline __m512 kiln_uk_attend_sum4(__m512 p0, __m512 p1, __m512 p2, __m512 p3) {
  __m512 a = _mm512_add_ps(_mm512_unpacklo_ps(p0, p1), _mm512_unpackhi_ps(p0, p1));
  __m512 b = _mm512_add_ps(_mm512_unpacklo_ps(p2, p3), _mm512_unpackhi_ps(p2, p3));
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* From four attend_sum4 results (keys 4m..4m+3 in c[m]), lane i = the whole
 * sum of key i's vector. */
static inline __m512 kiln_uk_attend_sum16(const __m512 *c) {
  __m512 d01 = _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
  __m512 d23 = _mm512_add_ps(_mm512_shuffle_f32x4(c[2], c[3], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(c[2], c[3], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(d01, d23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(d01, d23, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* One query head as attend's scores read it: the floats (f32 and f16 rows),
 * or for int8 and int4 rows the kv_query in vectors, per 64 dims j: its int8
 * values, and for i8 rows the scale of each lane's group and the correction
 * 128 x the lane's values (the rows' bytes go in biased to unsigned); for q4
 * rows per block of 32 its scale, and its scale times its sum, and per 64
 * dims the values of each block's low nibbles and of its high ones, twice. */
typedef struct attend_query {
  const float *f;
  __m512i q8[KILN_UK_MAX_HEAD_DIM / 64];
  __m512i corr[KILN_UK_MAX_HEAD_DIM / 64];
  __m512 qd[KILN_UK_MAX_HEAD_DIM / 64];
  __m512i q4lo[KILN_UK_MAX_HEAD_DIM / 64], q4hi[KILN_UK_MAX_HEAD_DIM / 64];
  float bd[KILN_UK_MAX_HEAD_DIM / 32];
  float bs[KILN_UK_MAX_HEAD_DIM / 32];
} attend_query;

static inline __mmask64 kiln_uk_byte_mask(int32_t left) {
  return left >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << left) - 1);
}

KILN_UK_INLINE void kiln_uk_attend_query_set(int family, attend_query *aq, const float *q, int32_t hd) {
  kv_query kq;
  const int32_t g = kiln_uk_kv_query_group(hd);
  int32_t j, l;
  aq->f = q;
  if (family != KILN_UK_I8 && family != KILN_UK_Q4)
    return;
  kiln_uk_kv_query_set(&kq, q, hd);
  for (j = 0; j < (hd + 63) / 64; ++j)
    aq->q8[j] = _mm512_maskz_loadu_epi8(kiln_uk_byte_mask(hd - 64 * j), kq.q + 64 * j);
  if (family == KILN_UK_Q4) {
    for (j = 0; j < (hd + 63) / 64; ++j) { /* per block of 32: its low then its high 16 */
      aq->q4lo[j] = _mm512_shuffle_i32x4(aq->q8[j], aq->q8[j], _MM_SHUFFLE(2, 0, 2, 0));
      aq->q4hi[j] = _mm512_shuffle_i32x4(aq->q8[j], aq->q8[j], _MM_SHUFFLE(3, 1, 3, 1));
    }
    for (j = 0; j < hd / g; ++j) {
      aq->bd[j] = kq.d[j];
      aq->bs[j] = kq.d[j] * (float)kq.s[j];
    }
    return;
  }
  for (j = 0; j < (hd + 63) / 64; ++j) {
    float qd[16];
    aq->corr[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)0x80),
                                      aq->q8[j]);
    for (l = 0; l < 16; ++l) {
      const int32_t dim = 64 * j + 4 * l;
      qd[l] = dim < hd ? kq.d[dim / g] : 0.0f;
    }
    aq->qd[j] = _mm512_loadu_ps(qd);
  }
}

/* The query against one cache row: its products summed over the row's
 * vectors, lanes not yet reduced; a row past the block's end gives zeros.
 * int8 rows: (k + 128) x q in vpdpbusd less the correction, exact per lane,
 * times the query's scales (the row's own scale comes later). */
KILN_UK_INLINE __m512 kiln_uk_attend_dot(int family, const attend_query *aq, const uint8_t *row,
                                 int32_t live, int32_t hd) {
  __m512 d = _mm512_setzero_ps();
  int32_t j;
  if (!live)
    return d;
  if (family == KILN_UK_I8) {
    for (j = 0; j < (hd + 63) / 64; ++j) {
      __m512i k = _mm512_maskz_loadu_epi8(kiln_uk_byte_mask(hd - 64 * j), row + 2 + 64 * j);
      __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(),
                                      _mm512_xor_si512(k, _mm512_set1_epi8((char)0x80)),
                                      aq->q8[j]);
      d = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(s, aq->corr[j])), aq->qd[j], d);
    }
    return d;
  }
  for (j = 0; j < (hd + 15) / 16; ++j) {
    __mmask16 m = kiln_uk_tail_mask(hd - 16 * j);
    d = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, aq->f + 16 * j), kiln_uk_kv_load(family, row, j, m), d);
  }
  return d;
}

/* attend_sum4 of the query against the rows at keys + off[0..3] (of which `nb`
 * are live). */
KILN_UK_INLINE __m512 kiln_uk_attend_dot4(int family, const attend_query *aq, const uint8_t *keys,
                                  const size_t *off, int32_t nb, int32_t hd) {
  return kiln_uk_attend_sum4(kiln_uk_attend_dot(family, aq, keys + off[0], nb > 0, hd),
                     kiln_uk_attend_dot(family, aq, keys + off[1], nb > 1, hd),
                     kiln_uk_attend_dot(family, aq, keys + off[2], nb > 2, hd),
                     kiln_uk_attend_dot(family, aq, keys + off[3], nb > 3, hd));
}

/* The query's int8 values against dims 64j.. of q4 rows a and b (two blocks
 * of 20 bytes each): the rows' 16 code bytes per block in the quarters of one
 * vector, [a's block 2j, its 2j+1, b's 2j, its 2j+1], low nibbles against the
 * block's values 0-15 and high ones against 16-31 in vpdpbusd; quarter L holds
 * four partial sums of its block, exact. The code words come from two masked
 * loads and one permute (not a load and three inserts), and no byte past
 * either row's blocks is read. */
KILN_UK_INLINE __m512i kiln_uk_attend_dot2_q4(const attend_query *aq, const uint8_t *a, const uint8_t *b,
                                      int32_t j, int32_t hd) {
  /* words 1-4 and 6-9 of each: a block is its d and m word, then four of codes */
  const __m512i codes = _mm512_setr_epi32(1, 2, 3, 4, 6, 7, 8, 9, 17, 18, 19, 20, 22, 23, 24, 25);
  const __mmask16 m = hd - 64 * j >= 64 ? 0x3de : 0x1e;
  const __m512i w = _mm512_permutex2var_epi32(_mm512_maskz_loadu_epi32(m, a + 40 * j), codes,
                                              _mm512_maskz_loadu_epi32(m, b + 40 * j));
  return _mm512_dpbusd_epi32(
      _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(w, _mm512_set1_epi8(15)),
                          aq->q4lo[j]),
      _mm512_and_si512(_mm512_srli_epi16(w, 4), _mm512_set1_epi8(15)), aq->q4hi[j]);
}

/* The scores of 16 q4 rows (keys + off[i]), unscaled: per block b the rows'
 * exact sums as one vector (two rows a vector, attend_sum4 of four such, then
 * the rows put in order), times kd[b] (the rows' d) x the query's scale, plus
 * km[b] (the rows' m) x the query's scale times its sum. Rows past the block's
 * end give values that attend masks. */
KILN_UK_INLINE __m512 kiln_uk_attend_scores_q4(const attend_query *aq, const uint8_t *keys,
                                       const size_t *off, const __m512 *kd, const __m512 *km,
                                       int32_t hd) {
  /* lane r: row r's sum in the attend_sum4 of rows 0-7 (r < 8) or 8-15 */
  const __m512i order =
      _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 16, 24, 17, 25, 18, 26, 19, 27);
  __m512 s = _mm512_setzero_ps();
  int32_t j, m;
  for (j = 0; j < hd / 32; ++j)
    s = _mm512_fmadd_ps(km[j], _mm512_set1_ps(aq->bs[j]), s);
  for (j = 0; j < (hd + 63) / 64; ++j) {
    __m512 p[8], r0, r1;
    for (m = 0; m < 8; ++m)
      p[m] = _mm512_cvtepi32_ps(
          kiln_uk_attend_dot2_q4(aq, keys + off[2 * m], keys + off[2 * m + 1], j, hd));
    r0 = kiln_uk_attend_sum4(p[0], p[1], p[2], p[3]);
    r1 = kiln_uk_attend_sum4(p[4], p[5], p[6], p[7]);
    s = _mm512_fmadd_ps(_mm512_permutex2var_ps(r0, order, r1),
                        _mm512_mul_ps(kd[2 * j], _mm512_set1_ps(aq->bd[2 * j])), s);
    if (2 * j + 1 < hd / 32)
      s = _mm512_fmadd_ps(
          _mm512_permutex2var_ps(r0, _mm512_add_epi32(order, _mm512_set1_epi32(4)), r1),
          _mm512_mul_ps(kd[2 * j + 1], _mm512_set1_ps(aq->bd[2 * j + 1])), s);
  }
  return s;
}

/* a (the accumulators of one value row's dims, 16 a vector) += e x the row:
 * f32, f16 and i8 rows (e already times an i8 row's scale) as vectors of
 * their values; q4 rows per block j as ed[es j] (e times the block's d) x the
 * codes: the low nibbles (values 0-15) through a table of the floats 0..15 into
 * a[2j], the whole bytes 16 h + l into a[2j + 1], which attend turns into the
 * high nibbles' (values 16-31) sums as (a[2j + 1] - a[2j]) / 16 at the end
 * (one convert instead of a shift and a permute; the block's e m goes to
 * attend's per-block sums). */
KILN_UK_INLINE void kiln_uk_attend_axpy(int family, __m512 *a, float e, const float *ed, int32_t es,
                                const uint8_t *row, int32_t hd) {
  const __m512 ev = _mm512_set1_ps(e);
  int32_t j;
  if (family == KILN_UK_Q4) {
    const __m512 codes = _mm512_set_ps(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    for (j = 0; j < hd / 32; ++j) {
      const __m512i x = _mm512_cvtepu8_epi32(
          _mm_loadu_si128((const __m128i *)(const void *)(row + 20 * j + 4)));
      const __m512 edv = _mm512_set1_ps(ed[es * j]);
      a[2 * j] = _mm512_fmadd_ps(edv, _mm512_permutexvar_ps(x, codes), a[2 * j]);
      a[2 * j + 1] = _mm512_fmadd_ps(edv, _mm512_cvtepi32_ps(x), a[2 * j + 1]);
    }
    return;
  }
  for (j = 0; j < (hd + 15) / 16; ++j)
    a[j] = _mm512_fmadd_ps(ev, kiln_uk_kv_load(family, row, j, kiln_uk_tail_mask(hd - 16 * j)), a[j]);
}

/* The 32-bit words at byte `at` of 16 cache rows (base + off[i]). */
static inline __m512i kiln_uk_attend_words(const uint8_t *base, const size_t *off, size_t at) {
  const __m256i lo = _mm512_i64gather_epi32(_mm512_loadu_si512(off), base + at, 1);
  const __m256i hi = _mm512_i64gather_epi32(_mm512_loadu_si512(off + 8), base + at, 1);
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/* The words of q4 blocks 0..nbk-1 (their d and m) of 16 rows that follow
 * each other from p, nbk = 1, 2 or 4, without a gather: w[j] lane i is block j
 * of row i. A row is 5 nbk words, block j at word 5 j, so the words wanted
 * are every fifth: per 80 words, three permutes of the five vectors put them
 * in order, and per block one or two more pick its lanes. */
KILN_UK_INLINE void kiln_uk_attend_q4_words(const uint8_t *p, int32_t nbk, __m512i *w) {
  const __m512i fifth = _mm512_setr_epi32(0, 5, 10, 15, 20, 25, 30, 3, 8, 13, 18, 23, 28, 1, 6, 11);
  __m512i u[4];
  int32_t k, j;
  for (k = 0; k < nbk; ++k) {
    const int32_t *z = (const int32_t *)(const void *)p + 80 * k;
    __m512i r = _mm512_permutex2var_epi32(_mm512_loadu_si512(z), fifth, _mm512_loadu_si512(z + 16));
    r = _mm512_mask_mov_epi32(
        r, 0x1f80,
        _mm512_permutex2var_epi32(_mm512_loadu_si512(z + 32), fifth, _mm512_loadu_si512(z + 48)));
    u[k] = _mm512_mask_permutexvar_epi32(r, 0xe000, fifth, _mm512_loadu_si512(z + 64));
  }
  for (j = 0; j < nbk; ++j) {
    /* lane i: word nbk i + j of the u in order (a two-vector permute takes
     * it mod 32: u[0..1] for lanes 0-7 and u[2..3] for 8-15 when nbk = 4) */
    const __m512i pick = _mm512_add_epi32(
        _mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32(nbk)),
        _mm512_set1_epi32(j));
    w[j] = nbk == 1   ? u[0]
           : nbk == 2 ? _mm512_permutex2var_epi32(u[0], pick, u[1])
                      : _mm512_mask_blend_epi32(0xff00, _mm512_permutex2var_epi32(u[0], pick, u[1]),
                                                _mm512_permutex2var_epi32(u[2], pick, u[3]));
  }
}

/* The low (high = 0) or high halves of 16 words as f16 to floats, 0 where
 * not `live`. */
static inline __m512 kiln_uk_attend_halves(__m512i w, int32_t high, __mmask16 live) {
  return _mm512_maskz_cvtph_ps(live, _mm512_cvtepi32_epi16(high ? _mm512_srli_epi32(w, 16) : w));
}

/* Query heads whose state attend keeps at once; a larger group runs in parts. */
#define KILN_UK_ATTEND_HEADS 8
/* Blocks of 16 cache rows whose scores attend computes before one softmax
 * step: the blocks' scores are independent, so their loads and dot products
 * overlap, where one block per step made every block wait for the last one's
 * maximum and exp. */
#ifndef KILN_UK_ATTEND_CHUNK
#define KILN_UK_ATTEND_CHUNK 8
#endif
/* Blocks ahead whose cache rows attend asks for, into L2: a head's rows are
 * one short stream (2048 positions of a q8 head are 135 KB) that the hardware
 * prefetchers pick up late. M q8_0 decode after 2048 tokens: 1.13x (q8 cache)
 * and 1.23x (q4), medians of 7. Into L2, not L1 (a block's 20 lines asked for
 * at once compete with the loads for L1's miss buffers): in bench/attend.c,
 * 144 heads x 2048 positions flushed, 1.2x (q4) and 1.45x (q8), medians of 5. */
#ifndef KILN_UK_ATTEND_AHEAD
#define KILN_UK_ATTEND_AHEAD 6
#endif

/* The scores of the 16 rows at keys + off (nb live; `flat`: all 16 follow
 * each other) for every head of the group, times ksv, into sc[h] (-inf where
 * not live); for q4 rows also the value rows' d and m per block into vd and
 * vm. */
KILN_UK_INLINE void kiln_uk_attend_block_scores(int family, const attend_query *aq, int32_t nh,
                                        const uint8_t *keys, const uint8_t *values,
                                        const size_t *off, int32_t nb, int flat, int32_t hd,
                                        __m512 ksv,
                                        float *sc, size_t scs, __m512 *vd, __m512 *vm) {
  const __mmask16 live = kiln_uk_tail_mask(nb);
  __m512 kd[KILN_UK_MAX_HEAD_DIM / 32], km[KILN_UK_MAX_HEAD_DIM / 32];
  int32_t h, j;
  if (family == KILN_UK_I8)
    ksv = _mm512_mul_ps(kiln_uk_attend_halves(kiln_uk_attend_words(keys, off, 0), 0, live), ksv);
  if (family == KILN_UK_Q4) { /* each block's d and m */
    const int32_t nbk = hd / 32;
    __m512i kw[KILN_UK_MAX_HEAD_DIM / 32], vw[KILN_UK_MAX_HEAD_DIM / 32];
    if (flat && (nbk == 1 || nbk == 2 || nbk == 4)) {
      kiln_uk_attend_q4_words(keys + off[0], nbk, kw);
      kiln_uk_attend_q4_words(values + off[0], nbk, vw);
    } else {
      for (j = 0; j < nbk; ++j) {
        kw[j] = kiln_uk_attend_words(keys, off, 20 * (size_t)j);
        vw[j] = kiln_uk_attend_words(values, off, 20 * (size_t)j);
      }
    }
    for (j = 0; j < nbk; ++j) {
      kd[j] = kiln_uk_attend_halves(kw[j], 0, live);
      km[j] = kiln_uk_attend_halves(kw[j], 1, live);
      vd[j] = kiln_uk_attend_halves(vw[j], 0, live);
      vm[j] = kiln_uk_attend_halves(vw[j], 1, live);
    }
  }
  for (h = 0; h < nh; ++h) {
    __m512 sv;
    if (family == KILN_UK_Q4) {
      sv = kiln_uk_attend_scores_q4(&aq[h], keys, off, kd, km, hd);
    } else {
      __m512 c[4];
      c[0] = kiln_uk_attend_dot4(family, &aq[h], keys, off, nb, hd);
      c[1] = kiln_uk_attend_dot4(family, &aq[h], keys, off + 4, nb - 4, hd);
      c[2] = kiln_uk_attend_dot4(family, &aq[h], keys, off + 8, nb - 8, hd);
      c[3] = kiln_uk_attend_dot4(family, &aq[h], keys, off + 12, nb - 12, hd);
      sv = kiln_uk_attend_sum16(c);
    }
    _mm512_storeu_ps(sc + (size_t)h * scs,
                     _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), live, _mm512_mul_ps(sv, ksv)));
  }
}

/* Asks for the key and value rows of 16 positions from row pr (< ring, as
 * kv_slot gives it) on: line by line when they are contiguous (a head-major
 * cache, no wrap), else row by row. */
KILN_UK_INLINE void kiln_uk_attend_prefetch(const uint8_t *keys, const uint8_t *values, size_t stride,
                                    size_t head_bytes, int32_t ring, int32_t pr) {
  int32_t i;
  if (stride == head_bytes && pr + 16 <= ring) {
    const size_t at = (size_t)pr * stride, end = at + 16 * stride;
    size_t c;
    for (c = at & ~(size_t)63; c < end; c += 64) {
      _mm_prefetch((const char *)(keys + c), _MM_HINT_T1);
      _mm_prefetch((const char *)(values + c), _MM_HINT_T1);
    }
    return;
  }
  for (i = 0; i < 16; ++i) {
    const size_t at = (size_t)pr * stride;
    size_t c;
    for (c = 0; c < head_bytes; c += 64) {
      _mm_prefetch((const char *)(keys + at + c), _MM_HINT_T1);
      _mm_prefetch((const char *)(values + at + c), _MM_HINT_T1);
    }
    pr = pr + 1 == ring ? 0 : pr + 1;
  }
}

/* Tiles of the tiled int4 cache (kv_tile_put_q4) whose scores attend_q4t
 * computes before one softmax step. */
#define KILN_UK_ATTEND_TILES 8

/* Loads of the lines of bytes at p, in order, for nothing but their arrival:
 * the hardware prefetcher follows such a stream (software prefetches do not
 * train it), where the value pass reads a chunk's lines out of order. */
static inline void kiln_uk_touch(const uint8_t *p, size_t bytes) {
  size_t c;
  for (c = 0; c < bytes; c += 64)
    __asm__ __volatile__("" : : "v"(_mm512_loadu_si512(p + c)));
}

/* Positions t0..t1 of tile (position) p0 that are live, as lanes. */
static inline __mmask16 kiln_uk_tile_live(int32_t p0, int32_t t0, int32_t t1) {
  const int32_t lo = t0 > p0 ? t0 - p0 : 0, hi = t1 - p0 + 1 < 16 ? t1 - p0 + 1 : 16;
  return (__mmask16)(kiln_uk_tail_mask(hi) & ~kiln_uk_tail_mask(lo));
}

/* A tile's 16 f16 (its rows' d or m) as floats, 0 where not live. */
static inline __m512 kiln_uk_tile_halves(const uint8_t *p, __mmask16 live) {
  return _mm512_maskz_cvtph_ps(live, _mm256_loadu_si256((const __m256i *)(const void *)p));
}

/* One query head as attend_q4t scores it (kv_query): per block j of 32 dims
 * its int8 values of dims 4g.. (v[j][g]) and 16 + 4g.. (v[j][4 + g]), four a
 * lane and the same in every lane; its scale d[j] and d[j] times its sum. */
typedef struct attend_q4t_query {
  __m512i v[KILN_UK_MAX_HEAD_DIM / 32][8];
  float d[KILN_UK_MAX_HEAD_DIM / 32], ds[KILN_UK_MAX_HEAD_DIM / 32];
} attend_q4t_query;

static inline void kiln_uk_attend_q4t_query_set(attend_q4t_query *aq, const float *q, int32_t hd) {
  kv_query kq;
  int32_t j, g, w;
  kiln_uk_kv_query_set(&kq, q, hd);
  for (j = 0; j < hd / 32; ++j) {
    for (g = 0; g < 8; ++g) {
      memcpy(&w, kq.q + 32 * j + 4 * (g % 4) + 16 * (g / 4), 4);
      aq->v[j][g] = _mm512_set1_epi32(w);
    }
    aq->d[j] = kq.d[j];
    aq->ds[j] = kq.d[j] * (float)kq.s[j];
  }
}

/* The scores of the 16 rows of one key tile (kt) for query heads aq[0..nh-1],
 * times scale, into sc[h] (-inf where not live). Lane i is row i: per block j
 * the code bytes of every row at once (a row's 4 bytes a lane), low and high
 * nibbles against the query's values of dims 4g.. and 16 + 4g.. in vpdpbusd,
 * exact in int32; then d x the sum x the query's scale plus m x the query's
 * scale times its sum. */
KILN_UK_INLINE void kiln_uk_attend_q4t_scores(const attend_q4t_query *aq, int32_t nh, const uint8_t *kt,
                                      int32_t hd, float scale, __mmask16 live, float *sc,
                                      size_t scs) {
  const __m512i low = _mm512_set1_epi8(15);
  __m512 s[KILN_UK_ATTEND_HEADS];
  int32_t h, j, g;
  for (h = 0; h < nh; ++h)
    s[h] = _mm512_setzero_ps();
  for (j = 0; j < hd / 32; ++j) {
    const uint8_t *b = kt + 320 * j;
    const __m512 kd = kiln_uk_tile_halves(b + 256, live), km = kiln_uk_tile_halves(b + 288, live);
    __m512i c[8];
    for (g = 0; g < 4; ++g) {
      const __m512i x = _mm512_loadu_si512(b + 64 * g);
      c[g] = _mm512_and_si512(x, low);
      c[4 + g] = _mm512_and_si512(_mm512_srli_epi16(x, 4), low);
    }
    for (h = 0; h < nh; ++h) {
      const __m512i *v = aq[h].v[j];
      __m512i x = _mm512_dpbusd_epi32(_mm512_setzero_si512(), c[0], v[0]);
      __m512i y = _mm512_dpbusd_epi32(_mm512_setzero_si512(), c[4], v[4]);
      for (g = 1; g < 4; ++g) {
        x = _mm512_dpbusd_epi32(x, c[g], v[g]);
        y = _mm512_dpbusd_epi32(y, c[4 + g], v[4 + g]);
      }
      s[h] = _mm512_fmadd_ps(km, _mm512_set1_ps(aq[h].ds[j]), s[h]);
      s[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(x, y)),
                             _mm512_mul_ps(kd, _mm512_set1_ps(aq[h].d[j])), s[h]);
    }
  }
  for (h = 0; h < nh; ++h)
    _mm512_storeu_ps(sc + (size_t)h * scs,
                     _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), live,
                                        _mm512_mul_ps(s[h], _mm512_set1_ps(scale))));
}

/* One head's weighted sum of a chunk of value tiles (vt, tile bytes apart)
 * into its accumulators a (eight a block j of 32 dims). The weights w (e x d of
 * row i of tile u at w[u][j][i], d from the value tile) go in as bytes, 255
 * the chunk's largest per block: per tile and block, the bytes of rows
 * 4i..4i+3 repeated in quarter i. The codes of a tile (a row's 4 bytes a lane)
 * get each quarter's 4 x 4 bytes turned, so lane u of quarter i holds byte
 * 4g + u of rows 4i..4i+3, and go against the weights in vpdpbusd, low and
 * high nibbles apart, exact in int32 over the chunk (at most 8 x 4 x 255 x 15
 * a lane). a[8j + g] gets the low nibbles' sums (dim 4g + u in lane u of every
 * quarter), a[8j + 4 + g] the high ones' (dim 16 + 4g + u); attend_sum16 adds
 * the quarters at the end. A weight is within half a step of 1/255 of the
 * chunk's largest: bytes, not 16-bit weights (two vpdpbusd a nibble), take
 * 11-15% off the step's attention at context 2048 in M, and the error stays
 * far below the int4 codes' own. */
KILN_UK_INLINE void kiln_uk_attend_q4t_values(__m512 *a, const uint8_t *vt, size_t tile, int32_t nt,
                                      const float (*w)[KILN_UK_MAX_HEAD_DIM / 32][16],
                                      int32_t hd) {
  const __m512i low = _mm512_set1_epi8(15);
  const __m512i turn = _mm512_broadcast_i32x4(
      _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  /* per quarter, the bytes of its four weights, in every lane */
  const __m512i bytes = _mm512_set1_epi32(0x0c080400);
  int32_t j, u, g;
  for (j = 0; j < hd / 32; ++j) {
    __m512 top = _mm512_setzero_ps();
    __m512i s[8];
    float most;
    __m512 up;
    for (u = 0; u < nt; ++u)
      top = _mm512_max_ps(top, _mm512_loadu_ps(w[u][j]));
    most = _mm512_reduce_max_ps(top);
    if (most <= 0.0f)
      continue;
    up = _mm512_set1_ps(255.0f / most);
    for (g = 0; g < 8; ++g)
      s[g] = _mm512_setzero_si512();
    for (u = 0; u < nt; ++u) {
      const uint8_t *b = vt + (size_t)u * tile + 320 * j;
      const __m512i wb = _mm512_shuffle_epi8(
          _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(w[u][j]), up)), bytes);
      for (g = 0; g < 4; ++g) {
        const __m512i c = _mm512_shuffle_epi8(_mm512_loadu_si512(b + 64 * g), turn);
        const __m512i h = _mm512_and_si512(_mm512_srli_epi16(c, 4), low);
        s[g] = _mm512_dpbusd_epi32(s[g], wb, _mm512_and_si512(c, low));
        s[4 + g] = _mm512_dpbusd_epi32(s[4 + g], wb, h);
      }
    }
    for (g = 0; g < 8; ++g)
      a[8 * j + g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[g]), _mm512_set1_ps(most / 255.0f),
                                     a[8 * j + g]);
  }
}

/* attend over a tiled int4 cache (KILN_UK_Q4T; never a ring: position t is
 * row t % 16 of tile t / 16, `stride` the bytes of one row's head). Per chunk of KILN_UK_ATTEND_TILES tiles: every head's
 * scores (attend_q4t_scores, the key tile read once for the group), then per
 * head one maximum, one rescale, the exponentials, and the weighted values
 * (attend_q4t_values). */
KILN_UK_INLINE void kiln_uk_attend_q4t(const float *q, int32_t nq, const uint8_t *keys,
                               const uint8_t *values, size_t stride, const int32_t *pages,
                               int32_t page, int32_t t0, int32_t t1, int32_t hd, float scale,
                               float *y) {
  enum { CT = KILN_UK_ATTEND_TILES, HB = KILN_UK_MAX_HEAD_DIM / 32 };
  const size_t tile = 16u * stride;
  int32_t h0;
  for (h0 = 0; h0 < nq; h0 += KILN_UK_ATTEND_HEADS) {
    const int32_t nh = nq - h0 < KILN_UK_ATTEND_HEADS ? nq - h0 : KILN_UK_ATTEND_HEADS;
    __m512 acc[KILN_UK_ATTEND_HEADS][KILN_UK_MAX_HEAD_DIM / 4], sum[KILN_UK_ATTEND_HEADS];
    __m512 msum[KILN_UK_ATTEND_HEADS][HB];
    attend_q4t_query aq[KILN_UK_ATTEND_HEADS];
    float mx[KILN_UK_ATTEND_HEADS];
    int32_t h, j, u, p, step = 16 * CT;
    for (h = 0; h < nh; ++h) {
      for (j = 0; j < hd / 4; ++j)
        acc[h][j] = _mm512_setzero_ps();
      for (j = 0; j < hd / 32; ++j)
        msum[h][j] = _mm512_setzero_ps();
      sum[h] = _mm512_setzero_ps();
      mx[h] = -INFINITY;
      kiln_uk_attend_q4t_query_set(&aq[h], q + (size_t)(h0 + h) * (size_t)hd, hd);
    }
    for (p = t0 & ~15; p <= t1; p += step) {
      /* a chunk's tiles follow each other: in a pool of pages, the chunk
       * ends at its page's end */
      const int32_t most = pages && (page - p % page) / 16 < CT ? (page - p % page) / 16 : CT;
      const int32_t nt = (t1 - p) / 16 + 1 < most ? (t1 - p) / 16 + 1 : most;
      const int32_t first = pages ? kiln_uk_kv_slot(p, 0, pages, page) : p;
      const uint8_t *kt = keys + (size_t)(first / 16) * tile, *vt = values + (size_t)(first / 16) * tile;
      float sc[KILN_UK_ATTEND_HEADS][16 * CT], w[CT][HB][16];
      __mmask16 live[CT];
      step = 16 * nt;
      for (u = 0; u < nt; ++u) {
        /* the value tile the chunk's weights read next, while the keys are
         * scored: 144 heads x 2048 positions from DRAM, 1.35-2x, medians of 5
         * alternating runs, against prefetching tiles ahead into L2 */
        kiln_uk_touch(vt + (size_t)u * tile, tile);
        live[u] = kiln_uk_tile_live(p + 16 * u, t0, t1);
        kiln_uk_attend_q4t_scores(aq, nh, kt + (size_t)u * tile, hd, scale, live[u], &sc[0][16 * u],
                          16 * CT);
      }
      for (h = 0; h < nh; ++h) {
        __m512 m = _mm512_set1_ps(-INFINITY), s = sum[h];
        float bm;
        for (u = 0; u < nt; ++u)
          m = _mm512_max_ps(m, _mm512_loadu_ps(&sc[h][16 * u]));
        bm = _mm512_reduce_max_ps(m);
        if (bm > mx[h]) {
          const __m512 r = _mm512_set1_ps(mx[h] == -INFINITY ? 0.0f : expf(mx[h] - bm));
          for (j = 0; j < hd / 4; ++j)
            acc[h][j] = _mm512_mul_ps(acc[h][j], r);
          for (j = 0; j < hd / 32; ++j)
            msum[h][j] = _mm512_mul_ps(msum[h][j], r);
          s = _mm512_mul_ps(s, r);
          mx[h] = bm;
        }
        for (u = 0; u < nt; ++u) {
          const __m512 e = _mm512_maskz_mov_ps(
              live[u],
              kiln_uk_exp_ps(_mm512_sub_ps(_mm512_loadu_ps(&sc[h][16 * u]), _mm512_set1_ps(mx[h]))));
          const uint8_t *b = vt + (size_t)u * tile;
          s = _mm512_add_ps(s, e);
          for (j = 0; j < hd / 32; ++j) {
            const __m512 vd = kiln_uk_tile_halves(b + 320 * j + 256, live[u]);
            const __m512 vm = kiln_uk_tile_halves(b + 320 * j + 288, live[u]);
            _mm512_storeu_ps(w[u][j], _mm512_mul_ps(e, vd));
            msum[h][j] = _mm512_fmadd_ps(e, vm, msum[h][j]);
          }
        }
        sum[h] = s;
        kiln_uk_attend_q4t_values(acc[h], vt, tile, nt, (const float(*)[HB][16])w, hd);
      }
    }
    for (h = 0; h < nh; ++h) {
      const __m512 total = _mm512_set1_ps(_mm512_reduce_add_ps(sum[h]));
      float *yh = y + (size_t)(h0 + h) * (size_t)hd;
      for (j = 0; j < hd / 32; ++j) { /* dims 32j.. and 32j + 16.., plus the block's m */
        const __m512 m = _mm512_set1_ps(_mm512_reduce_add_ps(msum[h][j]));
        _mm512_storeu_ps(yh + 32 * j,
                         _mm512_div_ps(_mm512_add_ps(kiln_uk_attend_sum16(acc[h] + 8 * j), m), total));
        _mm512_storeu_ps(yh + 32 * j + 16,
                         _mm512_div_ps(_mm512_add_ps(kiln_uk_attend_sum16(acc[h] + 8 * j + 4), m), total));
      }
    }
  }
}

#define KILN_UK_HAS_ATTEND 1
/* As the portable attend, over chunks of KILN_UK_ATTEND_CHUNK blocks of 16
 * cache rows, with every query head of the group at each block, so a block of
 * keys and values comes from memory once for all of them. Per block and head
 * the 16 scores as one vector (products reduced across keys at once, not one
 * horizontal sum per key); per chunk and head one maximum, one rescale of the
 * accumulators and one vector exp per block; the weighted values go to `sets`
 * interleaved accumulators (row i to set i % sets), so short heads are not
 * bound by one chain of fmadds. Chunks start at t0, so each head's arithmetic
 * is the same whatever the group, the rows' place in a ring or the query's
 * row. */
KILN_UK_INLINE void kiln_uk_attend(int family, const float *q, int32_t nq, const uint8_t *keys,
                           const uint8_t *values, size_t stride, int32_t ring,
                           const int32_t *pages, int32_t page, int32_t t0, int32_t t1,
                           int32_t hd, float scale, float *y) {
  enum { CR = 16 * KILN_UK_ATTEND_CHUNK, HB = KILN_UK_MAX_HEAD_DIM / 32 };
  const int32_t nv = (hd + 15) / 16, sets = nv <= 2 ? 4 : nv <= 4 ? 2 : 1;
  const size_t head_bytes = family == KILN_UK_F32   ? 4u * (size_t)hd
                            : family == KILN_UK_F16 ? 2u * (size_t)hd
                            : family == KILN_UK_Q4  ? (size_t)hd / 32u * 20u
                                                    : 2u + (size_t)hd;
  int32_t h0;
  if (family == KILN_UK_Q4T) {
    kiln_uk_attend_q4t(q, nq, keys, values, stride, pages, page, t0, t1, hd, scale, y);
    return;
  }
  for (h0 = 0; h0 < nq; h0 += KILN_UK_ATTEND_HEADS) {
    const int32_t nh = nq - h0 < KILN_UK_ATTEND_HEADS ? nq - h0 : KILN_UK_ATTEND_HEADS;
    __m512 acc[KILN_UK_ATTEND_HEADS][KILN_UK_MAX_HEAD_DIM / 16], sum[KILN_UK_ATTEND_HEADS];
    __m512 msum[KILN_UK_ATTEND_HEADS][HB];
    attend_query aq[KILN_UK_ATTEND_HEADS];
    float mx[KILN_UK_ATTEND_HEADS];
    int32_t h, t, i, j, row = t0 % ring;
    for (h = 0; h < nh; ++h) {
      for (j = 0; j < sets * nv; ++j)
        acc[h][j] = _mm512_setzero_ps();
      sum[h] = _mm512_setzero_ps();
      for (j = 0; j < hd / 32; ++j)
        msum[h][j] = _mm512_setzero_ps();
      mx[h] = -INFINITY;
      kiln_uk_attend_query_set(family, &aq[h], q + (size_t)(h0 + h) * (size_t)hd, hd);
    }
    /* a pool's pages: the first blocks too, which no hardware prefetcher
     * follows into (with the blocks ahead found through the page table: M
     * q4_0, four sessions batched, 1.03-1.04x; for a head's contiguous rows
     * 0.93x in bench/attend.c, so not there) */
    for (t = 16; pages && h0 == 0 && t < 16 * KILN_UK_ATTEND_AHEAD && t0 + t <= t1; t += 16)
      kiln_uk_attend_prefetch(keys, values, stride, head_bytes, ring,
                      kiln_uk_kv_slot(t0 + t, ring, pages, page));
    for (t = t0; t <= t1; t += CR) {
      const int32_t nt = t1 - t + 1 < CR ? t1 - t + 1 : CR, nblk = (nt + 15) / 16;
      size_t off[CR];
      float sc[KILN_UK_ATTEND_HEADS][CR], vs[CR], ev[CR], ed[HB][CR];
      __m512 vd[KILN_UK_ATTEND_CHUNK][HB], vm[KILN_UK_ATTEND_CHUNK][HB];
      /* no wrap: no test per row; rows that follow each other (head-major);
       * pages: each row where its page table puts it */
      const int32_t last = pages ? kiln_uk_kv_slot(t + nt - 1, ring, pages, page) : 0;
      const int nowrap = !pages && row + 16 * nblk <= ring, flat = nowrap && stride == head_bytes;
      int32_t b;
      if (pages) {
        for (i = 0; i < 16 * nblk; ++i) /* rows past the end repeat the last */
          off[i] = (size_t)(i < nt ? kiln_uk_kv_slot(t + i, ring, pages, page) : last) * stride;
      } else if (nowrap) {
        for (i = 0; i < 16 * nblk; ++i)
          off[i] = (size_t)(row + (i < nt ? i : nt)) * stride;
        row += nt;
        row = row == ring ? 0 : row;
      } else {
        for (i = 0; i < 16 * nblk; ++i) {
          off[i] = (size_t)row * stride;
          if (i < nt)
            row = row + 1 == ring ? 0 : row + 1;
        }
      }
      for (b = 0; b < nblk; ++b) {
        const int32_t nb = nt - 16 * b < 16 ? nt - 16 * b : 16;
        if (t + 16 * (b + KILN_UK_ATTEND_AHEAD) <= t1) /* the rows a few blocks on */
          kiln_uk_attend_prefetch(keys, values, stride, head_bytes, ring,
                          kiln_uk_kv_slot(t + 16 * (b + KILN_UK_ATTEND_AHEAD), ring, pages, page));
        if (family == KILN_UK_I8) /* each value row's scale */
          _mm512_storeu_ps(vs + 16 * b, kiln_uk_attend_halves(kiln_uk_attend_words(values, off + 16 * b, 0), 0,
                                                      kiln_uk_tail_mask(nb)));
        kiln_uk_attend_block_scores(family, aq, nh, keys, values, off + 16 * b, nb,
                            (flat || (pages && stride == head_bytes &&
                                      off[16 * b + 15] == off[16 * b] + 15 * stride)) && nb == 16,
                            hd,
                            _mm512_set1_ps(scale), &sc[0][16 * b], CR, vd[b], vm[b]);
      }
      for (h = 0; h < nh; ++h) {
        __m512 a[KILN_UK_MAX_HEAD_DIM / 16], m = _mm512_set1_ps(-INFINITY), s = sum[h];
        float bm;
        for (b = 0; b < nblk; ++b)
          m = _mm512_max_ps(m, _mm512_loadu_ps(&sc[h][16 * b]));
        bm = _mm512_reduce_max_ps(m);
        for (j = 0; j < sets * nv; ++j)
          a[j] = acc[h][j];
        if (bm > mx[h]) {
          __m512 r = _mm512_set1_ps(mx[h] == -INFINITY ? 0.0f : expf(mx[h] - bm));
          for (j = 0; j < sets * nv; ++j)
            a[j] = _mm512_mul_ps(a[j], r);
          s = _mm512_mul_ps(s, r);
          for (j = 0; j < hd / 32; ++j)
            msum[h][j] = _mm512_mul_ps(msum[h][j], r);
          mx[h] = bm;
        }
        for (b = 0; b < nblk; ++b) {
          const __m512 e = _mm512_maskz_mov_ps(
              kiln_uk_tail_mask(nt - 16 * b),
              kiln_uk_exp_ps(_mm512_sub_ps(_mm512_loadu_ps(&sc[h][16 * b]), _mm512_set1_ps(mx[h]))));
          s = _mm512_add_ps(s, e);
          _mm512_storeu_ps(ev + 16 * b,
                           family == KILN_UK_I8 ? _mm512_mul_ps(e, _mm512_loadu_ps(vs + 16 * b)) : e);
          for (j = 0; family == KILN_UK_Q4 && j < hd / 32; ++j) {
            _mm512_storeu_ps(&ed[j][16 * b], _mm512_mul_ps(e, vd[b][j]));
            msum[h][j] = _mm512_fmadd_ps(e, vm[b][j], msum[h][j]);
          }
        }
        sum[h] = s;
        for (i = 0; i < nt; i += sets) {
          int32_t k;
          for (k = 0; k < sets; ++k) {
            if (i + k >= nt)
              break;
            kiln_uk_attend_axpy(family, a + k * nv, ev[i + k], &ed[0][i + k], CR, values + off[i + k], hd);
          }
        }
        for (j = 0; j < sets * nv; ++j)
          acc[h][j] = a[j];
      }
    }
    for (h = 0; h < nh; ++h) {
      const __m512 total = _mm512_set1_ps(_mm512_reduce_add_ps(sum[h]));
      float *yh = y + (size_t)(h0 + h) * (size_t)hd;
      __m512 a[KILN_UK_MAX_HEAD_DIM / 16];
      for (j = 0; j < nv; ++j) {
        int32_t s;
        a[j] = acc[h][j];
        for (s = 1; s < sets; ++s)
          a[j] = _mm512_add_ps(a[j], acc[h][s * nv + j]);
      }
      for (j = 1; family == KILN_UK_Q4 && j < nv; j += 2) /* (16 h + l - l) / 16 */
        a[j] = _mm512_mul_ps(_mm512_sub_ps(a[j], a[j - 1]), _mm512_set1_ps(0.0625f));
      for (j = 0; j < nv; ++j) {
        if (family == KILN_UK_Q4) /* the block's m */
          a[j] = _mm512_add_ps(a[j], _mm512_set1_ps(_mm512_reduce_add_ps(msum[h][j / 2])));
        _mm512_mask_storeu_ps(yh + 16 * j, kiln_uk_tail_mask(hd - 16 * j), _mm512_div_ps(a[j], total));
      }
    }
  }
}

#endif /* KILN_UK_AVX512_ATTENTION_H */
