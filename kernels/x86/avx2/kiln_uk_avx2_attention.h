/* x86-avx2: the KV cache's int8 and int4 stores and attention's inner loops
 * (scores and value updates of cache rows), 8 lanes at a time. */
#ifndef KILN_UK_AVX2_ATTENTION_H
#define KILN_UK_AVX2_ATTENTION_H

#include "kernels/x86/avx2/kiln_uk_avx2_base.h"

#define KILN_UK_HAS_KV_STORE_I8 1
/* As the portable kv_store_i8, 8 values at a time: the same f16-rounded scale
 * and rounded values, so the same bytes. */
static inline void kiln_uk_kv_store_i8(const float *x, uint8_t *row, int32_t hd) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 amax = _mm256_setzero_ps();
  float d, id;
  uint16_t h;
  int32_t i;
  for (i = 0; i < hd; i += 8)
    amax = _mm256_max_ps(amax, _mm256_and_ps(kiln_uk_load_lanes(x + i, hd - i < 8 ? hd - i : 8), absmask));
  h = kiln_f32_to_f16(kiln_uk_hmax8(amax) / 127.0f);
  memcpy(row, &h, sizeof h);
  d = kiln_f16_to_f32(h);
  id = d != 0.0f ? 1.0f / d : 0.0f;
  for (i = 0; i < hd; i += 8) {
    const int32_t n = hd - i < 8 ? hd - i : 8;
    __m256 v = kiln_uk_round_away8(_mm256_mul_ps(kiln_uk_load_lanes(x + i, n), _mm256_set1_ps(id)));
    uint8_t b[8];
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    kiln_uk_store_bytes8(b, _mm256_cvttps_epi32(v), 1);
    memcpy(row + 2 + i, b, (size_t)n);
  }
}

#define KILN_UK_HAS_KV_STORE_Q4 1
/* As the portable kv_store_q4, a block of 32 as four vectors: the same
 * f16-rounded d and m and the same codes, so the same bytes. */
static inline void kiln_uk_kv_store_q4(const float *x, uint8_t *row, int32_t hd) {
  int32_t b, j;
  for (b = 0; b < hd / 32; ++b) {
    const float *xb = x + 32 * b;
    uint8_t *blk = row + 20 * b;
    __m256 lo = _mm256_loadu_ps(xb), hi = lo, c[4];
    float d, m, id;
    for (j = 8; j < 32; j += 8) {
      lo = _mm256_min_ps(lo, _mm256_loadu_ps(xb + j));
      hi = _mm256_max_ps(hi, _mm256_loadu_ps(xb + j));
    }
    kiln_uk_kv_q4_scales(blk, kiln_uk_hmin8(lo), kiln_uk_hmax8(hi), &d, &m);
    id = d != 0.0f ? 1.0f / d : 0.0f;
    for (j = 0; j < 4; ++j) {
      __m256 v = kiln_uk_round_away8(_mm256_mul_ps(
          _mm256_sub_ps(_mm256_loadu_ps(xb + 8 * j), _mm256_set1_ps(m)), _mm256_set1_ps(id)));
      c[j] = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(15.0f));
    }
    for (j = 0; j < 2; ++j) /* byte i: value i | value i + 16 << 4 */
      kiln_uk_store_bytes8(blk + 4 + 8 * j,
                   _mm256_or_si256(_mm256_cvttps_epi32(c[j]),
                                   _mm256_slli_epi32(_mm256_cvttps_epi32(c[j + 2]), 4)),
                   0);
  }
}

/* KV cache rows of one head (attention's inner loops), 8 lanes at a time. */
static inline __m256 kiln_uk_kv_load8(int family, const uint8_t *row, int32_t i) {
  return family == KILN_UK_F32
             ? _mm256_loadu_ps((const float *)(const void *)row + i)
         : family == KILN_UK_F16
             ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(row + 2 * i)))
             : _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                   _mm_loadl_epi64((const __m128i *)(const void *)(row + 2 + i))));
}
/* q . row, unscaled for i8 rows. */
KILN_UK_INLINE float kiln_uk_kv_dot8(int family, const float *q, const uint8_t *row, int32_t hd) {
  __m256 s = _mm256_setzero_ps();
  float t;
  int32_t i;
  for (i = 0; i + 8 <= hd; i += 8)
    s = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kiln_uk_kv_load8(family, row, i), s);
  t = kiln_uk_hsum_ps(s);
  for (; i < hd; ++i)
    t += q[i] * kiln_uk_kv_value(family, row, i);
  return t;
}
KILN_UK_INLINE void kiln_uk_kv_axpy8(int family, float *acc, float e, const uint8_t *row, int32_t hd) {
  int32_t i;
  for (i = 0; i + 8 <= hd; i += 8)
    _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(_mm256_set1_ps(e), kiln_uk_kv_load8(family, row, i),
                                              _mm256_loadu_ps(acc + i)));
  for (; i < hd; ++i)
    acc[i] += e * kiln_uk_kv_value(family, row, i);
}

#define KILN_UK_HAS_KV_F32 1
#define KILN_UK_HAS_KV_F16 1
#define KILN_UK_HAS_KV_I8 1
KILN_UK_KV_HELPERS(kiln_uk_kv_dot8, kiln_uk_kv_axpy8)

/* The sum of the eight int32 lanes. */
static inline int32_t kiln_uk_hsum_epi32(__m256i v) {
  __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1))));
}

/* A q4 cache block's (16 code bytes: values 0-15 in the low nibbles, 16-31
 * in the high ones) exact dot with the query's 32 values, in int32 lanes. */
static inline __m256i kiln_uk_kv_q4_dot_lanes(const uint8_t *codes, const int8_t *q) {
  const __m128i low = _mm_set1_epi8(15);
  const __m128i c = _mm_loadu_si128((const __m128i *)(const void *)codes);
  const __m256i v = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(c, 4), low), _mm_and_si128(c, low));
  /* the codes are unsigned: maddubs straight, without dot_i8x32's signs */
  return _mm256_madd_epi16(
      _mm256_maddubs_epi16(v, _mm256_loadu_si256((const __m256i *)(const void *)q)),
      _mm256_set1_epi16(1));
}

/* An int8 cache row's exact dot with the query, 32 values a step: the
 * values are within +-127 (kv_store_i8, quantize_act), as dot_i8x32 needs. */
#define KILN_UK_HAS_KV_I8_DOT 1
static inline int32_t kiln_uk_kv_i8_dot(const int8_t *k, const int8_t *q, int32_t n) {
  __m256i s = _mm256_setzero_si256();
  int32_t i, dot;
  for (i = 0; i + 32 <= n; i += 32)
    s = _mm256_add_epi32(s, kiln_uk_dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)(k + i)),
                                      _mm256_loadu_si256((const __m256i *)(const void *)(q + i))));
  dot = kiln_uk_hsum_epi32(s);
  for (; i < n; ++i)
    dot += (int32_t)q[i] * (int32_t)k[i];
  return dot;
}

/* Lane i: the sum of v[i]'s lanes. */
static inline __m256i kiln_uk_hsum8_epi32(const __m256i *v) {
  const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                          _mm256_permute2x128_si256(a, b, 0x31));
}

/* The f16 at byte o of eight rows, as floats. */
static inline __m256 kiln_uk_kv_f16_rows8(const uint8_t *const *r, size_t o) {
  uint16_t h[8];
  int32_t i;
  for (i = 0; i < 8; ++i)
    memcpy(&h[i], r[i] + o, sizeof h[i]);
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)h));
}

/* Eight int8 or int4 rows scored at once: per block of 32 the rows' exact
 * dots in int32 lanes (as kv_i8_dot and kv_q4_dot make them), reduced
 * together (three adds a row where a sum of its own took five), then the
 * portable float expression per block in the eight lanes, so the scores keep
 * the portable bits. With kv_axpy_rows, in bench/attend.c (144 heads x 2048
 * positions, flushed, medians of 5 pairs): q4 13.4 -> 9.8 and q8 8.6 -> 7.6
 * ns per (head, key); f16 rows gained nothing this way and keep kv_dot8. */
#define KILN_UK_HAS_KV_DOT_ROWS8 1
static inline int kiln_uk_kv_dot_rows8_fits(int family, int32_t hd) {
  return (family == KILN_UK_I8 || family == KILN_UK_Q4) && hd % 32 == 0;
}
KILN_UK_INLINE void kiln_uk_kv_dot_rows8(int family, const float *q, const kv_query *kq,
                                 const uint8_t *const *r, int32_t hd, float *s) {
  __m256 acc = _mm256_setzero_ps();
  int32_t i, b;
  (void)q; /* int8 and int4 rows score the quantized query */
  for (b = 0; b < hd / 32; ++b) {
    const __m256 qd = _mm256_set1_ps(kq->d[b]);
    __m256i p[8];
    __m256 dot;
    for (i = 0; i < 8; ++i)
      p[i] = family == KILN_UK_Q4
                 ? kiln_uk_kv_q4_dot_lanes(r[i] + 20 * b + 4, kq->q + 32 * b)
                 : kiln_uk_dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)(r[i] + 2 + 32 * b)),
                             _mm256_loadu_si256((const __m256i *)(const void *)(kq->q + 32 * b)));
    dot = _mm256_cvtepi32_ps(kiln_uk_hsum8_epi32(p));
    if (family == KILN_UK_Q4) /* d qd dot + m qd s, as kv_qdot_q4 */
      acc = _mm256_add_ps(
          acc, _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(kiln_uk_kv_f16_rows8(r, 20 * (size_t)b), qd), dot),
                             _mm256_mul_ps(_mm256_mul_ps(kiln_uk_kv_f16_rows8(r, 20 * (size_t)b + 2), qd),
                                           _mm256_set1_ps((float)kq->s[b]))));
    else /* qd dot, as kv_qdot_i8 */
      acc = _mm256_add_ps(acc, _mm256_mul_ps(qd, dot));
  }
  if (family == KILN_UK_I8) /* the rows' scales */
    acc = _mm256_mul_ps(acc, kiln_uk_kv_f16_rows8(r, 0));
  _mm256_storeu_ps(s, acc);
}

/* kv_axpy_rows of q4 rows, per block of 32 values: the rows' e d x codes
 * summed over the rows apart from their e m (one sum per block), the low
 * nibbles (values 0-15) and the whole bytes 16 h + l in vectors, the high
 * nibbles' sums (values 16-31) taken as (whole - low) / 16 at the end: per
 * row and block two widenings, two ands, four converts and four fmadds. */
KILN_UK_INLINE void kiln_uk_kv_q4_axpy_rows(float *acc, const float *e, const uint8_t *const *r,
                                    int32_t n, int32_t hd) {
  const __m256i low = _mm256_set1_epi32(15);
  int32_t i, b;
  for (b = 0; b < hd / 32; ++b) {
    __m256 lo0 = _mm256_setzero_ps(), lo1 = lo0, wh0 = lo0, wh1 = lo0;
    float em = 0.0f;
    for (i = 0; i < n; ++i) {
      const uint8_t *blk = r[i] + 20 * b;
      const __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(blk + 4));
      const __m256i x0 = _mm256_cvtepu8_epi32(c), x1 = _mm256_cvtepu8_epi32(_mm_srli_si128(c, 8));
      const __m256 ed = _mm256_set1_ps(e[i] * kiln_uk_load_f16(blk));
      em += e[i] * kiln_uk_load_f16(blk + 2);
      lo0 = _mm256_fmadd_ps(ed, _mm256_cvtepi32_ps(_mm256_and_si256(x0, low)), lo0);
      lo1 = _mm256_fmadd_ps(ed, _mm256_cvtepi32_ps(_mm256_and_si256(x1, low)), lo1);
      wh0 = _mm256_fmadd_ps(ed, _mm256_cvtepi32_ps(x0), wh0);
      wh1 = _mm256_fmadd_ps(ed, _mm256_cvtepi32_ps(x1), wh1);
    }
    {
      const __m256 sum[4] = {lo0, lo1, _mm256_mul_ps(_mm256_sub_ps(wh0, lo0), _mm256_set1_ps(0.0625f)),
                             _mm256_mul_ps(_mm256_sub_ps(wh1, lo1), _mm256_set1_ps(0.0625f))};
      for (i = 0; i < 4; ++i) {
        float *p = acc + 32 * b + 8 * i;
        _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), _mm256_add_ps(sum[i], _mm256_set1_ps(em))));
      }
    }
  }
}

/* acc += e[i] x row r[i], i = 0..n-1 (n <= 16, a block of attend), with acc
 * in registers across the rows; f32, f16 and i8 rows with the per-element
 * arithmetic of kv_axpy8. */
#define KILN_UK_HAS_KV_AXPY_ROWS 1
KILN_UK_INLINE void kiln_uk_kv_axpy_rows(int family, float *acc, const float *e, const uint8_t *const *r,
                                 int32_t n, int32_t hd) {
  float w[16]; /* e, times the row's scale for i8 rows */
  int32_t i, j, k;
  if (family == KILN_UK_Q4) {
    kiln_uk_kv_q4_axpy_rows(acc, e, r, n, hd);
    return;
  }
  for (i = 0; i < n; ++i)
    w[i] = family == KILN_UK_I8 ? e[i] * kiln_uk_load_f16(r[i]) : e[i];
  /* 64 values at a time with a fixed count of accumulators, so they stay in
   * registers (a count that varies with the tail spills them: 1.3x slower) */
  for (j = 0; j + 64 <= hd; j += 64) {
    __m256 a[8];
    for (k = 0; k < 8; ++k)
      a[k] = _mm256_loadu_ps(acc + j + 8 * k);
    for (i = 0; i < n; ++i)
      for (k = 0; k < 8; ++k)
        a[k] = _mm256_fmadd_ps(_mm256_set1_ps(w[i]), kiln_uk_kv_load8(family, r[i], j + 8 * k), a[k]);
    for (k = 0; k < 8; ++k)
      _mm256_storeu_ps(acc + j + 8 * k, a[k]);
  }
  for (; j + 8 <= hd; j += 8) {
    __m256 a = _mm256_loadu_ps(acc + j);
    for (i = 0; i < n; ++i)
      a = _mm256_fmadd_ps(_mm256_set1_ps(w[i]), kiln_uk_kv_load8(family, r[i], j), a);
    _mm256_storeu_ps(acc + j, a);
  }
  for (; j < hd; ++j)
    for (i = 0; i < n; ++i)
      acc[j] += w[i] * kiln_uk_kv_value(family, r[i], j);
}

#endif /* KILN_UK_AVX2_ATTENTION_H */
