/* x86-avx2 and x86-avxvnni: panel kernels over 8-row weight panels
 * (kernels/c99/kiln_uk_pack.h describes the layout), the 256-bit
 * counterpart of the AVX-512 ones: one ymm register holds one value for each of
 * a panel's 8 output rows, so a matmul never sums across lanes. Int8 dot
 * products take AVX-VNNI's vpdpbusd where the compiler may use it (x86-avxvnni),
 * else vpmaddubsw + vpmaddwd. */
#ifndef KILN_UK_AVX2_PANELS_H
#define KILN_UK_AVX2_PANELS_H

#include "kernels/x86/avx2/kiln_uk_avx2.h"

#define KILN_UK_NR 8


/* roundf of 8 lanes: truncate, then step away from zero when the fraction is
 * >= 0.5. */
static inline __m256 round_away8(__m256 v) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 up =
      _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(v, t), absmask), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_andnot_ps(absmask, v));
  return _mm256_add_ps(t, _mm256_and_ps(up, one));
}

/* The largest and the smallest of 8 lanes. */
static inline float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}
static inline float hmin8(__m256 v) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_min_ss(m, _mm_shuffle_ps(m, m, 1)));
}

#define KILN_UK_HAS_QUANTIZE_ACT_SUMS 1
/* As quantize_act (the same int8 values and scales), plus each group's sum of
 * int8 values. g is a multiple of 8. */
static inline void quantize_act_sums(const float *x, float *d, int32_t *s, int8_t *q, int32_t k,
                                     int32_t g) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  int32_t b, j, i;
  for (b = 0; b < k / g; ++b) {
    const float *xb = x + g * b;
    __m256 amax = _mm256_setzero_ps();
    float id;
    int32_t sum = 0;
    for (j = 0; j < g; j += 8)
      amax = _mm256_max_ps(amax, _mm256_and_ps(_mm256_loadu_ps(xb + j), absmask));
    d[b] = hmax8(amax) / 127.0f;
    id = d[b] != 0.0f ? 1.0f / d[b] : 0.0f;
    for (j = 0; j < g; j += 8) {
      int32_t iv[8];
      _mm256_storeu_si256((__m256i *)(void *)iv,
                          _mm256_cvttps_epi32(round_away8(
                              _mm256_mul_ps(_mm256_loadu_ps(xb + j), _mm256_set1_ps(id)))));
      for (i = 0; i < 8; ++i) {
        q[g * b + j + i] = (int8_t)iv[i];
        sum += iv[i];
      }
    }
    s[b] = sum;
  }
}

/* 8 int32 lanes as 8 bytes at p: int8 values, or unsigned bytes 0..255. */
static inline void store_bytes8(uint8_t *p, __m256i v, int is_signed) {
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  _mm_storel_epi64((__m128i *)(void *)p,
                   is_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
}

/* Loads / stores the first `valid` of 8 lanes (a whole register when 8). */
static inline __m256 load_lanes(const float *p, int32_t valid) {
  float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (valid == 8)
    return _mm256_loadu_ps(p);
  memcpy(t, p, sizeof(float) * (size_t)valid);
  return _mm256_loadu_ps(t);
}
static inline void store_lanes(float *p, __m256 v, int32_t valid) {
  float t[8];
  if (valid == 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  _mm256_storeu_ps(t, v);
  memcpy(p, t, sizeof(float) * (size_t)valid);
}

#define KILN_UK_HAS_KV_STORE_I8 1
/* As the portable kv_store_i8, 8 values at a time: the same f16-rounded scale
 * and rounded values, so the same bytes. */
static inline void kv_store_i8(const float *x, uint8_t *row, int32_t hd) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 amax = _mm256_setzero_ps();
  float d, id;
  uint16_t h;
  int32_t i;
  for (i = 0; i < hd; i += 8)
    amax = _mm256_max_ps(amax, _mm256_and_ps(load_lanes(x + i, hd - i < 8 ? hd - i : 8), absmask));
  h = kiln_f32_to_f16(hmax8(amax) / 127.0f);
  memcpy(row, &h, sizeof h);
  d = kiln_f16_to_f32(h);
  id = d != 0.0f ? 1.0f / d : 0.0f;
  for (i = 0; i < hd; i += 8) {
    const int32_t n = hd - i < 8 ? hd - i : 8;
    __m256 v = round_away8(_mm256_mul_ps(load_lanes(x + i, n), _mm256_set1_ps(id)));
    uint8_t b[8];
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    store_bytes8(b, _mm256_cvttps_epi32(v), 1);
    memcpy(row + 2 + i, b, (size_t)n);
  }
}

#define KILN_UK_HAS_KV_STORE_Q4 1
/* As the portable kv_store_q4, a block of 32 as four vectors: the same
 * f16-rounded d and m and the same codes, so the same bytes. */
static inline void kv_store_q4(const float *x, uint8_t *row, int32_t hd) {
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
    kv_q4_scales(blk, hmin8(lo), hmax8(hi), &d, &m);
    id = d != 0.0f ? 1.0f / d : 0.0f;
    for (j = 0; j < 4; ++j) {
      __m256 v = round_away8(_mm256_mul_ps(
          _mm256_sub_ps(_mm256_loadu_ps(xb + 8 * j), _mm256_set1_ps(m)), _mm256_set1_ps(id)));
      c[j] = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(15.0f));
    }
    for (j = 0; j < 2; ++j) /* byte i: value i | value i + 16 << 4 */
      store_bytes8(blk + 4 + 8 * j,
                   _mm256_or_si256(_mm256_cvttps_epi32(c[j]),
                                   _mm256_slli_epi32(_mm256_cvttps_epi32(c[j + 2]), 4)),
                   0);
  }
}

/* 32-bit lanes of v shifted left by `left` bits (right for a negative one). */
static inline __m256i panel_shift32(__m256i v, int32_t left) {
  return left >= 0 ? _mm256_sll_epi32(v, _mm_cvtsi32_si128(left))
                   : _mm256_srl_epi32(v, _mm_cvtsi32_si128(-left));
}

/* As the AVX-512 panel_tile_q45k, 8 output rows: mr k-quant activation rows
 * against super-blocks b0..b1-1 of one q4_k (five = 0) or q5_k panel. */
KILN_UK_INLINE void panel_tile_q45k(const uint8_t *panel, int32_t five, const uint8_t *xs,
                                    size_t stride, int32_t mr, int32_t k, int32_t b0, int32_t b1,
                                    float *y, int32_t ldy, int32_t valid) {
  const size_t xq_at = (size_t)(k / 256 + k / 16) * 4u, pairs_at = xq_at + (size_t)k;
  const size_t bytes = five ? 176u * 8u : 144u * 8u, codes_at = five ? 48u * 8u : 16u * 8u;
  const __m256i low = _mm256_set1_epi8(15), six = _mm256_set1_epi32(63);
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, i, h, c;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * bytes;
    const __m256i s0 = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 32)),
                  s1 = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 64)),
                  s2 = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 96));
    __m256i is[KILN_UK_MR_MAX], part[KILN_UK_MR_MAX], mins[4];
    __m256 d, dmin;
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_setzero_si256();
    for (i = 0; i < 4; ++i)
      for (h = 0; h < 2; ++h) { /* sub-block 2i + h: the low or the high nibbles */
        prefetch_share(gp, (int32_t)bytes, 2 * i + h, 8);
        const __m256i sc = _mm256_and_si256(panel_shift32(h ? s1 : s0, -8 * i), six);
        for (r = 0; r < mr; ++r)
          part[r] = _mm256_setzero_si256();
        for (c = 0; c < 8; ++c) {
          __m256i v = _mm256_loadu_si256(
              (const __m256i *)(const void *)(gp + codes_at + 32 * (8 * i + c)));
          v = _mm256_and_si256(h ? _mm256_srli_epi16(v, 4) : v, low);
          if (five) /* bit 2i + h of qh: the fifth bit of sub-block 2i + h */
            v = _mm256_or_si256(
                v, _mm256_and_si256(
                       blocks_shift16(_mm256_loadu_si256(
                                          (const __m256i *)(const void *)(gp + 128 + 32 * c)),
                                      4 - 2 * i - h),
                       _mm256_set1_epi8(0x10)));
          for (r = 0; r < mr; ++r) {
            const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at);
            part[r] = dot_u8s8(part[r], v,
                               _mm256_set1_epi32(load_i32(q + 256 * b + 64 * i + 32 * h + 4 * c)));
          }
        }
        for (r = 0; r < mr; ++r) {
          __m256i t = _mm256_mullo_epi32(part[r], sc);
          is[r] = _mm256_add_epi32(is[r], t);
        }
      }
    /* mins 2i and 2i+1 as 16-bit pairs: low nibbles from S2, top bits from S0 / S1 */
    for (i = 0; i < 4; ++i)
      mins[i] = _mm256_or_si256(
          _mm256_and_si256(panel_shift32(s2, -4 * i), _mm256_set1_epi32(0x000f000f)),
          _mm256_or_si256(_mm256_and_si256(panel_shift32(s0, -8 * i - 2), _mm256_set1_epi32(0x30)),
                          _mm256_and_si256(panel_shift32(s1, 14 - 8 * i),
                                           _mm256_set1_epi32(0x300000))));
    d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)gp));
    dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(gp + 16)));
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      const int32_t *pairs = (const int32_t *)(const void *)(xs + r * stride + pairs_at) + 4 * b;
      __m256i m = _mm256_setzero_si256();
      for (i = 0; i < 4; ++i)
        m = blocks_madd_acc(m, mins[i], _mm256_set1_epi32(pairs[i]));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[r]), _mm256_mul_ps(d, _mm256_set1_ps(xd)),
                               acc[r]);
      acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), _mm256_mul_ps(dmin, _mm256_set1_ps(xd)),
                                acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}
#define KILN_UK_HAS_PANEL_KQUANTS 1

/* As the AVX-512 q6k_codes, 8 rows. */
static inline __m256i q6k_codes(const uint8_t *gp, int32_t s, int32_t t) {
  const int32_t h = s / 8, set = (s % 8) / 2, l = 16 * (s % 2) + 4 * t;
  const __m256i ql =
      _mm256_loadu_si256((const __m256i *)(const void *)(gp + 32 * ((64 * h + 32 * (set & 1) + l) / 4)));
  const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 32 * (32 + (32 * h + l) / 4)));
  const __m256i lo = set >= 2 ? _mm256_srli_epi16(ql, 4) : ql;
  const __m256i hi = set == 0 ? _mm256_slli_epi16(qh, 4)
                     : set == 1 ? _mm256_slli_epi16(qh, 2)
                     : set == 2 ? qh
                                : _mm256_srli_epi16(qh, 2);
  return _mm256_or_si256(_mm256_and_si256(lo, _mm256_set1_epi8(15)),
                         _mm256_and_si256(hi, _mm256_set1_epi8(0x30)));
}

/* As the AVX-512 panel_tile_q6k, 8 output rows. */
KILN_UK_INLINE void panel_tile_q6k(const uint8_t *panel, const uint8_t *xs, size_t stride,
                                   int32_t mr, int32_t k, int32_t b0, int32_t b1, float *y,
                                   int32_t ldy, int32_t valid) {
  const size_t xq_at = (size_t)(k / 256 + k / 16) * 4u;
  const size_t sums_at = xq_at + (size_t)k + (size_t)(k + 63) / 64u * 4u;
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 210u * 8u;
    __m256i is[KILN_UK_MR_MAX], part[KILN_UK_MR_MAX];
    __m256 d;
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_setzero_si256();
    for (s = 0; s < 16; ++s) {
      prefetch_share(gp, 210 * 8, s, 16);
      const __m256i words = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 32 * (48 + s / 4)));
      const __m256i sc = _mm256_srai_epi32(panel_shift32(words, 24 - 8 * (s % 4)), 24);
      const int32_t col = 128 * (s / 8) + 32 * ((s % 8) / 2) + 16 * (s % 2);
      for (r = 0; r < mr; ++r)
        part[r] = _mm256_setzero_si256();
      for (t = 0; t < 4; ++t) {
        const __m256i v = q6k_codes(gp, s, t);
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at);
          part[r] = dot_u8s8(part[r], v, _mm256_set1_epi32(load_i32(q + 256 * b + col + 4 * t)));
        }
      }
      for (r = 0; r < mr; ++r) {
        const int32_t *sums = (const int32_t *)(const void *)(xs + r * stride + sums_at);
        const __m256i exact = _mm256_sub_epi32(part[r], _mm256_set1_epi32(32 * sums[16 * b + s]));
        is[r] = _mm256_add_epi32(is[r], _mm256_mullo_epi32(exact, sc));
      }
    }
    d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(gp + 208 * 8)));
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[r]), _mm256_mul_ps(d, _mm256_set1_ps(xd)),
                               acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

/* acc plus the dots of int4 codes lo and hi with activations xl and xh: int32
 * lanes with VNNI; without it vpmaddubsw's int16 pairs, summed in int16 lanes
 * and widened once per run of 32 columns by q4_widen, not once per pair (a
 * q4_0 5632 x 2048 GEMV from DRAM 1.24x). */
static inline __m256i q4_pairs(__m256i acc, __m256i lo, __m256i xl, __m256i hi, __m256i xh) {
#if KILN_UK_VNNI
  return dot_u8s8(dot_u8s8(acc, lo, xl), hi, xh);
#else
  return _mm256_add_epi16(acc, _mm256_add_epi16(_mm256_maddubs_epi16(lo, xl),
                                                _mm256_maddubs_epi16(hi, xh)));
#endif
}

static inline __m256i q4_widen(__m256i acc) {
#if KILN_UK_VNNI
  return acc;
#else
  return _mm256_madd_epi16(acc, _mm256_set1_epi16(1));
#endif
}

/* As the AVX-512 panel_tile_int: mr quantized activation rows against groups
 * b0..b1-1 of one panel, added to y unless b0 is 0. */
KILN_UK_INLINE void panel_tile_int(int family, const uint8_t *panel, const uint8_t *xs,
                                   size_t stride, int32_t mr, int32_t k, int32_t g, int32_t b0,
                                   int32_t b1, float *y, int32_t ldy, int32_t valid) {
  const int32_t groups = k / g;
  const size_t group_bytes = 16u + (size_t)(family == KILN_UK_I8 ? 8 * g : 4 * g);
  const __m256i low = _mm256_set1_epi8(15);
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, c;
  if (family == KILN_UK_Q4_K || family == KILN_UK_Q5_K) {
    panel_tile_q45k(panel, family == KILN_UK_Q5_K, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
  if (family == KILN_UK_Q6_K) {
    panel_tile_q6k(panel, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * group_bytes;
    __m256i is[KILN_UK_MR_MAX];
    __m256 ws;
    /* Decode (one row) reads the panels as one stream that the hardware
     * prefetchers follow; asking 16 KiB ahead there made a q4_0 GEMV from
     * DRAM 0.87x as fast. */
    if (mr > 1)
      for (c = 0; c < (int32_t)group_bytes; c += 64)
        KILN_UK_PREFETCH(gp + c);
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_setzero_si256();
    if (family == KILN_UK_I8) {
      for (c = 0; c < g / 4; ++c) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 16 + 32 * c));
#ifndef __AVXVNNI__
        /* Without VNNI, unsigned x signed pairs would saturate at 255 x 127:
         * take |x| and move x's sign onto the signed weight instead. */
        __m256i ws8 = _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80));
#endif
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + (size_t)groups * 8u);
          __m256i xq = _mm256_set1_epi32(load_i32(q + g * b + 4 * c));
#ifdef __AVXVNNI__
          is[r] = _mm256_dpbusd_avx_epi32(is[r], v, xq);
#else
          is[r] = dot_u8s8(is[r], _mm256_sign_epi8(xq, xq), _mm256_sign_epi8(ws8, xq));
#endif
        }
      }
    } else {
      /* runs of 32 columns: q4_pairs' int16 lanes (without VNNI) hold 16
       * products of at most 15 x 127 each, then widen */
      int32_t c0;
      for (c0 = 0; c0 < g / 8; c0 += 4) {
        __m256i run[KILN_UK_MR_MAX];
        for (r = 0; r < mr; ++r)
          run[r] = _mm256_setzero_si256();
        for (c = c0; c < c0 + 4 && c < g / 8; ++c) {
          __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 16 + 32 * c));
          __m256i lo = _mm256_and_si256(v, low);
          __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
          for (r = 0; r < mr; ++r) {
            const int8_t *q =
                (const int8_t *)(const void *)(xs + r * stride + (size_t)groups * 8u);
            run[r] = q4_pairs(run[r], lo, _mm256_set1_epi32(load_i32(q + g * b + 4 * c)), hi,
                              _mm256_set1_epi32(load_i32(q + g * b + g / 2 + 4 * c)));
          }
        }
        for (r = 0; r < mr; ++r)
          is[r] = _mm256_add_epi32(is[r], q4_widen(run[r]));
      }
    }
    ws = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)gp));
    for (r = 0; r < mr; ++r) {
      const float *xd = (const float *)(const void *)(xs + r * stride);
      const int32_t *xsum = (const int32_t *)(const void *)(xd + groups);
#if defined(__AVXVNNI__)
      const int32_t bias = family == KILN_UK_I8 ? 128 : 8;
#else
      const int32_t bias = family == KILN_UK_I8 ? 0 : 8; /* the int8 weights were made signed */
#endif
      __m256i exact = _mm256_sub_epi32(is[r], _mm256_set1_epi32(bias * xsum[b]));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), _mm256_mul_ps(ws, _mm256_set1_ps(xd[b])),
                               acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

static inline __m256 panel_load_f(int family, const uint8_t *p) {
  return family == KILN_UK_F32
             ? _mm256_loadu_ps((const float *)(const void *)p)
             : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}

/* As the AVX-512 panel_tile_float, 8 output rows. */
KILN_UK_INLINE void panel_tile_float(int family, const uint8_t *panel, const float *x,
                                     int32_t mr, int32_t k, int32_t j0, int32_t j1, float *y,
                                     int32_t ldy, int32_t valid) {
  const size_t es = family == KILN_UK_F32 ? 32u : 16u; /* bytes of one panel column */
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, j;
  for (r = 0; r < mr; ++r)
    acc[r] = j0 == 0 ? _mm256_setzero_ps() : load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (j = j0; j < j1; ++j) {
    __m256 wv = panel_load_f(family, panel + es * j);
    for (r = 0; r < mr; ++r)
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(x[(size_t)r * (size_t)k + j]), wv, acc[r]);
  }
  for (r = 0; r < mr; ++r)
    store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

/* One activation row against four whole panels: four FMA chains. */
KILN_UK_INLINE void panel_row4_float(int family, const uint8_t *panel, size_t panel_bytes,
                                     const float *x, int32_t k, float *y) {
  const size_t es = family == KILN_UK_F32 ? 32u : 16u;
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int32_t j;
  for (j = 0; j < k; ++j) {
    __m256 xj = _mm256_set1_ps(x[j]);
    const uint8_t *c = panel + es * j;
    if ((es * j) % 64 == 0) {
      KILN_UK_PREFETCH4(c);
      KILN_UK_PREFETCH4(c + panel_bytes);
      KILN_UK_PREFETCH4(c + 2 * panel_bytes);
      KILN_UK_PREFETCH4(c + 3 * panel_bytes);
    }
    a0 = _mm256_fmadd_ps(xj, panel_load_f(family, c), a0);
    a1 = _mm256_fmadd_ps(xj, panel_load_f(family, c + panel_bytes), a1);
    a2 = _mm256_fmadd_ps(xj, panel_load_f(family, c + 2 * panel_bytes), a2);
    a3 = _mm256_fmadd_ps(xj, panel_load_f(family, c + 3 * panel_bytes), a3);
  }
  _mm256_storeu_ps(y, a0);
  _mm256_storeu_ps(y + 8, a1);
  _mm256_storeu_ps(y + 16, a2);
  _mm256_storeu_ps(y + 24, a3);
}

#include "kernels/c99/kiln_uk_panels.h"

/* e^x, 8 lanes: 2^n e^r with n = round(x log2 e), |r| <= ln2 / 2, a degree-6
 * Taylor polynomial for e^r (relative error about 1e-7), and 2^n built in the
 * exponent bits; x is clamped to [-87, 88] so n stays a normal exponent. */
static inline __m256 exp256_ps(__m256 x) {
  __m256 n, r, p;
  __m256i e;
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  p = _mm256_set1_ps(1.0f / 720.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

#define KILN_UK_HAS_EXP_BLOCK 1
static inline void exp_block(const float *x, float m, float *e, int32_t n) {
  int32_t i;
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(e + i, exp256_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(m))));
  for (; i < n; ++i)
    e[i] = expf(x[i] - m);
}

#define KILN_UK_HAS_RMS_NORM_ROW 1
/* As the portable rms_norm_row: the sum of squares in double lanes, then the
 * scaling 8 floats at a time (each element rounded as the portable one). */
static inline void rms_norm_row(const float *x, const float *g, float *y, int32_t d, float eps) {
  __m256d s0 = _mm256_setzero_pd(), s1 = s0;
  double lanes[4], ss;
  float scale;
  int32_t i;
  for (i = 0; i + 8 <= d; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    s0 = _mm256_fmadd_pd(lo, lo, s0);
    s1 = _mm256_fmadd_pd(hi, hi, s1);
  }
  _mm256_storeu_pd(lanes, _mm256_add_pd(s0, s1));
  ss = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < d; ++i)
    ss += (double)x[i] * (double)x[i];
  scale = (float)(1.0 / sqrt(ss / d + (double)eps));
  for (i = 0; i + 8 <= d; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i),
                                                        _mm256_set1_ps(scale)),
                                          _mm256_loadu_ps(g + i)));
  for (; i < d; ++i)
    y[i] = x[i] * scale * g[i];
}

#define KILN_UK_HAS_ROPE_HEAD 1
/* As the portable rope_head, 8 values at a time: the products and their sum
 * as separate instructions, so the bits are the reference's. */
static inline void rope_head(const float *x, float *y, const float *cc, const float *ss,
                             int32_t rd, int32_t hd, int neox) {
  const int32_t h = rd / 2;
  int32_t j;
  if (neox) {
    for (j = 0; j < h; j += 8) {
      const int32_t n = h - j < 8 ? h - j : 8;
      const __m256 a = load_lanes(x + j, n), b = load_lanes(x + j + h, n);
      store_lanes(y + j,
                  _mm256_add_ps(_mm256_mul_ps(a, load_lanes(cc + j, n)),
                                _mm256_mul_ps(b, load_lanes(ss + j, n))), n);
      store_lanes(y + j + h,
                  _mm256_add_ps(_mm256_mul_ps(b, load_lanes(cc + j + h, n)),
                                _mm256_mul_ps(a, load_lanes(ss + j + h, n))), n);
    }
  } else {
    for (j = 0; j < rd; j += 8) {
      const int32_t n = rd - j < 8 ? rd - j : 8;
      const __m256 a = load_lanes(x + j, n);
      store_lanes(y + j,
                  _mm256_add_ps(_mm256_mul_ps(a, load_lanes(cc + j, n)),
                                _mm256_mul_ps(_mm256_permute_ps(a, 0xb1), load_lanes(ss + j, n))),
                  n);
    }
  }
  for (j = rd; j < hd; ++j)
    y[j] = x[j];
}

#define KILN_UK_HAS_SILU 1
static inline __m256 silu8(__m256 v) {
  __m256 d = _mm256_add_ps(_mm256_set1_ps(1.0f), exp256_ps(_mm256_sub_ps(_mm256_setzero_ps(), v)));
  return _mm256_div_ps(v, d);
}

/* The tail goes through the vector code too, so every element gets the same
 * bits wherever a call's range starts (threads split the rows). */
static inline void silu(const float *x, float *y, int32_t n) {
  float t[8] = {0};
  int32_t i, j;
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, silu8(_mm256_loadu_ps(x + i)));
  if (i == n)
    return;
  for (j = 0; i + j < n; ++j)
    t[j] = x[i + j];
  _mm256_storeu_ps(t, silu8(_mm256_loadu_ps(t)));
  for (j = 0; i + j < n; ++j)
    y[i + j] = t[j];
}

/* KV cache rows of one head (attention's inner loops), 8 lanes at a time. */
static inline __m256 kv_load8(int family, const uint8_t *row, int32_t i) {
  return family == KILN_UK_F32
             ? _mm256_loadu_ps((const float *)(const void *)row + i)
         : family == KILN_UK_F16
             ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(row + 2 * i)))
             : _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                   _mm_loadl_epi64((const __m128i *)(const void *)(row + 2 + i))));
}
/* q . row, unscaled for i8 rows. */
KILN_UK_INLINE float kv_dot8(int family, const float *q, const uint8_t *row, int32_t hd) {
  __m256 s = _mm256_setzero_ps();
  float t;
  int32_t i;
  for (i = 0; i + 8 <= hd; i += 8)
    s = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kv_load8(family, row, i), s);
  t = hsum_ps(s);
  for (; i < hd; ++i)
    t += q[i] * kv_value(family, row, i);
  return t;
}
KILN_UK_INLINE void kv_axpy8(int family, float *acc, float e, const uint8_t *row, int32_t hd) {
  int32_t i;
  for (i = 0; i + 8 <= hd; i += 8)
    _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(_mm256_set1_ps(e), kv_load8(family, row, i),
                                              _mm256_loadu_ps(acc + i)));
  for (; i < hd; ++i)
    acc[i] += e * kv_value(family, row, i);
}

#define KILN_UK_HAS_KV_F32 1
#define KILN_UK_HAS_KV_F16 1
#define KILN_UK_HAS_KV_I8 1
KILN_UK_KV_HELPERS(kv_dot8, kv_axpy8)

/* The sum of the eight int32 lanes. */
static inline int32_t hsum_epi32(__m256i v) {
  __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1))));
}

/* A q4 cache block's (16 code bytes: values 0-15 in the low nibbles, 16-31
 * in the high ones) exact dot with the query's 32 values, in int32 lanes. */
static inline __m256i kv_q4_dot_lanes(const uint8_t *codes, const int8_t *q) {
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
static inline int32_t kv_i8_dot(const int8_t *k, const int8_t *q, int32_t n) {
  __m256i s = _mm256_setzero_si256();
  int32_t i, dot;
  for (i = 0; i + 32 <= n; i += 32)
    s = _mm256_add_epi32(s, dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)(k + i)),
                                      _mm256_loadu_si256((const __m256i *)(const void *)(q + i))));
  dot = hsum_epi32(s);
  for (; i < n; ++i)
    dot += (int32_t)q[i] * (int32_t)k[i];
  return dot;
}

/* Lane i: the sum of v[i]'s lanes. */
static inline __m256i hsum8_epi32(const __m256i *v) {
  const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                          _mm256_permute2x128_si256(a, b, 0x31));
}

/* The f16 at byte o of eight rows, as floats. */
static inline __m256 kv_f16_rows8(const uint8_t *const *r, size_t o) {
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
static inline int kv_dot_rows8_fits(int family, int32_t hd) {
  return (family == KILN_UK_I8 || family == KILN_UK_Q4) && hd % 32 == 0;
}
KILN_UK_INLINE void kv_dot_rows8(int family, const float *q, const kv_query *kq,
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
                 ? kv_q4_dot_lanes(r[i] + 20 * b + 4, kq->q + 32 * b)
                 : dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)(r[i] + 2 + 32 * b)),
                             _mm256_loadu_si256((const __m256i *)(const void *)(kq->q + 32 * b)));
    dot = _mm256_cvtepi32_ps(hsum8_epi32(p));
    if (family == KILN_UK_Q4) /* d qd dot + m qd s, as kv_qdot_q4 */
      acc = _mm256_add_ps(
          acc, _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(kv_f16_rows8(r, 20 * (size_t)b), qd), dot),
                             _mm256_mul_ps(_mm256_mul_ps(kv_f16_rows8(r, 20 * (size_t)b + 2), qd),
                                           _mm256_set1_ps((float)kq->s[b]))));
    else /* qd dot, as kv_qdot_i8 */
      acc = _mm256_add_ps(acc, _mm256_mul_ps(qd, dot));
  }
  if (family == KILN_UK_I8) /* the rows' scales */
    acc = _mm256_mul_ps(acc, kv_f16_rows8(r, 0));
  _mm256_storeu_ps(s, acc);
}

/* kv_axpy_rows of q4 rows, per block of 32 values: the rows' e d x codes
 * summed over the rows apart from their e m (one sum per block), the low
 * nibbles (values 0-15) and the whole bytes 16 h + l in vectors, the high
 * nibbles' sums (values 16-31) taken as (whole - low) / 16 at the end: per
 * row and block two widenings, two ands, four converts and four fmadds. */
KILN_UK_INLINE void kv_q4_axpy_rows(float *acc, const float *e, const uint8_t *const *r,
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
      const __m256 ed = _mm256_set1_ps(e[i] * load_f16(blk));
      em += e[i] * load_f16(blk + 2);
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
KILN_UK_INLINE void kv_axpy_rows(int family, float *acc, const float *e, const uint8_t *const *r,
                                 int32_t n, int32_t hd) {
  float w[16]; /* e, times the row's scale for i8 rows */
  int32_t i, j, k;
  if (family == KILN_UK_Q4) {
    kv_q4_axpy_rows(acc, e, r, n, hd);
    return;
  }
  for (i = 0; i < n; ++i)
    w[i] = family == KILN_UK_I8 ? e[i] * load_f16(r[i]) : e[i];
  /* 64 values at a time with a fixed count of accumulators, so they stay in
   * registers (a count that varies with the tail spills them: 1.3x slower) */
  for (j = 0; j + 64 <= hd; j += 64) {
    __m256 a[8];
    for (k = 0; k < 8; ++k)
      a[k] = _mm256_loadu_ps(acc + j + 8 * k);
    for (i = 0; i < n; ++i)
      for (k = 0; k < 8; ++k)
        a[k] = _mm256_fmadd_ps(_mm256_set1_ps(w[i]), kv_load8(family, r[i], j + 8 * k), a[k]);
    for (k = 0; k < 8; ++k)
      _mm256_storeu_ps(acc + j + 8 * k, a[k]);
  }
  for (; j + 8 <= hd; j += 8) {
    __m256 a = _mm256_loadu_ps(acc + j);
    for (i = 0; i < n; ++i)
      a = _mm256_fmadd_ps(_mm256_set1_ps(w[i]), kv_load8(family, r[i], j), a);
    _mm256_storeu_ps(acc + j, a);
  }
  for (; j < hd; ++j)
    for (i = 0; i < n; ++i)
      acc[j] += w[i] * kv_value(family, r[i], j);
}

#endif /* KILN_UK_AVX2_PANELS_H */
