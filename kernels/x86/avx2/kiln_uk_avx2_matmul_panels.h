/* x86-avx2 and x86-avxvnni: panel kernels over 8-row weight panels
 * (kernels/c99/kiln_uk_pack.h describes the layout), the 256-bit
 * counterpart of the AVX-512 ones: one ymm register holds one value for each of
 * a panel's 8 output rows, so a matmul never sums across lanes. Int8 dot
 * products take AVX-VNNI's vpdpbusd where the compiler may use it (x86-avxvnni),
 * else vpmaddubsw + vpmaddwd. */
#ifndef KILN_UK_AVX2_MATMUL_PANELS_H
#define KILN_UK_AVX2_MATMUL_PANELS_H

#include "kernels/x86/avx2/kiln_uk_avx2_base.h"
#include "kernels/x86/avx2/kiln_uk_avx2_quantize.h"

#define KILN_UK_NR 8

/* 32-bit lanes of v shifted left by `left` bits (right for a negative one). */
static inline __m256i kiln_uk_panel_shift32(__m256i v, int32_t left) {
  return left >= 0 ? _mm256_sll_epi32(v, _mm_cvtsi32_si128(left))
                   : _mm256_srl_epi32(v, _mm_cvtsi32_si128(-left));
}

#if !KILN_UK_VNNI
/* Without VNNI the k-quant tiles sum vpmaddubsw's pairs of small codes in
 * int16 lanes and scale them by one vpmaddwd a sub-block, the scale an int16
 * in both halves of a lane: byte j of each 32-bit lane of the scale words,
 * moved by this vpshufb control into the low bytes of both halves (high = 0),
 * or into the high bytes (high = 1, for an arithmetic shift down). */
static inline __m256i kiln_uk_lane_byte_twice(int32_t j, int32_t high) {
  const uint32_t twice = (uint32_t)j * 0x10001u, zeros = 0x80008000u; /* bit 7 set: a zero byte */
  const __m256i lane = _mm256_setr_epi32(0, 0x04040404, 0x08080808, 0x0c0c0c0c, 0, 0x04040404, 0x08080808,
                                         0x0c0c0c0c);
  return _mm256_add_epi8(_mm256_set1_epi32((int32_t)(high ? twice << 8 | zeros >> 8 : twice | zeros)), lane);
}

/* The 16 activation sums of a super-block as 8 int16 pairs (sub-blocks 4q and
 * 4q + 2 at pairs[kiln_uk_pair_at(q)], 4q + 1 and 4q + 3 after them), the
 * other operand of the scale pairs a scale word's even and odd bytes make. */
static inline void kiln_uk_sum_pairs(const int32_t *sums, int32_t *pairs) {
  const __m256i lo = _mm256_shuffle_epi32(_mm256_loadu_si256((const __m256i *)(const void *)sums), 0xd8);
  const __m256i hi = _mm256_shuffle_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(sums + 8)), 0xd8);
  _mm256_storeu_si256((__m256i *)(void *)pairs, _mm256_packs_epi32(lo, hi));
}

static inline int32_t kiln_uk_pair_at(int32_t q) { return q == 1 ? 4 : q == 2 ? 2 : q == 3 ? 6 : 0; }

/* is[r] plus row r's products of a sub-block's four code vectors with its
 * 16 activations (row r's at x + r * stride), summed in int16 lanes, times
 * the scale pair sc. */
static inline void kiln_uk_sub_block_rows(__m256i *is, const __m256i *code, __m256i sc, const uint8_t *x,
                                          size_t stride, int32_t mr) {
  int32_t r, t;
  for (r = 0; r < mr; ++r) {
    const int8_t *xr = (const int8_t *)(const void *)(x + (size_t)r * stride);
    __m256i p = _mm256_maddubs_epi16(code[0], _mm256_set1_epi32(kiln_uk_load_i32(xr)));
    for (t = 1; t < 4; ++t)
      p = _mm256_add_epi16(p, _mm256_maddubs_epi16(code[t], _mm256_set1_epi32(kiln_uk_load_i32(xr + 4 * t))));
    is[r] = _mm256_add_epi32(is[r], _mm256_madd_epi16(p, sc));
    KILN_UK_KEEP(is[r]);
  }
}

/* acc plus the scales of sub-blocks 4q..4q+3 (int16 pairs: even = 4q and
 * 4q + 2, odd = 4q + 1 and 4q + 3) against their activation sums. */
static inline __m256i kiln_uk_scaled_sums(__m256i acc, __m256i even, __m256i odd, const int32_t *pairs,
                                          int32_t q) {
  acc = _mm256_add_epi32(acc, _mm256_madd_epi16(even, _mm256_set1_epi32(pairs[kiln_uk_pair_at(q)])));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(odd, _mm256_set1_epi32(pairs[kiln_uk_pair_at(q) + 1])));
}
#endif

/* Without VNNI the k-quants' codes cost a large part of a tile to assemble
 * (q3_k, q5_k and q6_k shifts, masks and an or from two places, 5 or 6 steps
 * a vector; q4_k 1 or 2) against the rows' products (3 steps a row), and a
 * tile shares them over only its four rows. With more rows than one tile,
 * kiln_uk_matmul_panel_int unpacks KILN_UK_UNPACK_BLOCKS super-blocks of a
 * panel at a time into a kiln_uk_unpacked on its stack (8 KiB), 64 vectors a
 * super-block in the order the tile takes them, and every row tile reads them
 * from there. The VNNI tiles take NULL. */
#define KILN_UK_UNPACK_BLOCKS 4
typedef struct {
  __m256i v[KILN_UK_UNPACK_BLOCKS * 64];
} kiln_uk_unpacked;

/* Vector v of super-block b of the unpacked codes, or assembled (from the
 * panel) where there are none. */
static inline __m256i kiln_uk_unpacked_or(const kiln_uk_unpacked *codes, int32_t b, int32_t v, __m256i assembled) {
  return codes ? codes->v[64 * b + v] : assembled;
}

/* Vector c of q4_k (five = 0) or q5_k sub-block 2i + h of super-block gp:
 * the low or the high nibbles, with q5_k's fifth bit (bit 2i + h of qh). */
static inline __m256i kiln_uk_q45k_code(const uint8_t *gp, int32_t five, int32_t i, int32_t h, int32_t c) {
  const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(gp + (five ? 48 : 16) * 8 + 32 * (8 * i + c)));
  const __m256i low = _mm256_and_si256(h ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(15));
  if (!five)
    return low;
  return _mm256_or_si256(
      low, _mm256_and_si256(kiln_uk_blocks_shift16(_mm256_loadu_si256((const __m256i *)(const void *)(gp + 128 + 32 * c)),
                                                   4 - 2 * i - h),
                            _mm256_set1_epi8(0x10)));
}

/* As the AVX-512 panel_tile_q45k, 8 output rows: mr k-quant activation rows
 * against super-blocks b0..b1-1 of one q4_k (five = 0) or q5_k panel, the
 * codes from codes where it is not NULL. */
KILN_UK_INLINE void kiln_uk_panel_tile_q45k(const uint8_t *panel, const kiln_uk_unpacked *codes, int32_t five,
                                    const uint8_t *xs, size_t stride, int32_t mr, int32_t k, int32_t b0,
                                    int32_t b1, float *y, int32_t ldy, int32_t valid) {
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256), pairs_at = xq_at + (size_t)k;
  const size_t bytes = five ? 176u * 8u : 144u * 8u;
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, i, h, c;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * bytes;
    const __m256i s0 = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 32)),
                  s1 = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 64)),
                  s2 = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 96));
    __m256i is[KILN_UK_MR_MAX], part[KILN_UK_MR_MAX], mins[4];
    __m256 d, dmin;
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (i = 0; i < 4; ++i)
      for (h = 0; h < 2; ++h) { /* sub-block 2i + h: the low or the high nibbles */
        if (!codes)
          kiln_uk_prefetch_share(gp, (int32_t)bytes, 2 * i + h, 8, mr);
#if KILN_UK_VNNI
        const __m256i sc = _mm256_and_si256(kiln_uk_panel_shift32(h ? s1 : s0, -8 * i), _mm256_set1_epi32(63));
        const int32_t run = 8;
#else
        /* vpmaddubsw's pairs summed in int16 lanes over runs of 16 products
         * (of a 4-bit code, 8 of a 5-bit one) times at most 127, then vpmaddwd
         * by the scale as an int16 pair: the same integers as a vpmulld */
        const __m256i sc = _mm256_and_si256(_mm256_shuffle_epi8(h ? s1 : s0, kiln_uk_lane_byte_twice(i, 0)),
                                            _mm256_set1_epi16(63));
        const int32_t run = five ? 4 : 8;
#endif
        int32_t c0;
        for (c0 = 0; c0 < 8; c0 += run) {
          for (r = 0; r < mr; ++r)
            part[r] = _mm256_setzero_si256();
          for (c = c0; c < c0 + run; ++c) {
            const __m256i v = kiln_uk_unpacked_or(codes, b - b0, 8 * (2 * i + h) + c, kiln_uk_q45k_code(gp, five, i, h, c));
            for (r = 0; r < mr; ++r) {
              const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at);
              const __m256i x = _mm256_set1_epi32(kiln_uk_load_i32(q + 256 * b + 64 * i + 32 * h + 4 * c));
#if KILN_UK_VNNI
              part[r] = kiln_uk_dot_u8s8(part[r], v, x);
#else
              part[r] = _mm256_add_epi16(part[r], _mm256_maddubs_epi16(v, x));
#endif
              KILN_UK_KEEP(part[r]);
            }
          }
          for (r = 0; r < mr; ++r)
#if KILN_UK_VNNI
            is[r] = _mm256_add_epi32(is[r], _mm256_mullo_epi32(part[r], sc));
#else
            is[r] = _mm256_add_epi32(is[r], _mm256_madd_epi16(part[r], sc));
#endif
        }
      }
    /* mins 2i and 2i+1 as 16-bit pairs: low nibbles from S2, top bits from S0 / S1 */
    for (i = 0; i < 4; ++i)
      mins[i] = _mm256_or_si256(
          _mm256_and_si256(kiln_uk_panel_shift32(s2, -4 * i), _mm256_set1_epi32(0x000f000f)),
          _mm256_or_si256(_mm256_and_si256(kiln_uk_panel_shift32(s0, -8 * i - 2), _mm256_set1_epi32(0x30)),
                          _mm256_and_si256(kiln_uk_panel_shift32(s1, 14 - 8 * i),
                                           _mm256_set1_epi32(0x300000))));
    d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)gp));
    dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(gp + 16)));
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      const int32_t *pairs = (const int32_t *)(const void *)(xs + r * stride + pairs_at) + 4 * b;
      __m256i m = _mm256_setzero_si256();
      for (i = 0; i < 4; ++i)
        m = kiln_uk_blocks_madd_acc(m, mins[i], _mm256_set1_epi32(pairs[i]));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[r]), _mm256_mul_ps(d, _mm256_set1_ps(xd)),
                               acc[r]);
      acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), _mm256_mul_ps(dmin, _mm256_set1_ps(xd)),
                                acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}
#define KILN_UK_HAS_PANEL_KQUANTS 1

/* As the AVX-512 q6k_codes, 8 rows. */
static inline __m256i kiln_uk_q6k_codes(const uint8_t *gp, int32_t s, int32_t t) {
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

#if !KILN_UK_VNNI
#define KILN_UK_HAS_PANEL_UNPACK 1

static inline int kiln_uk_panel_unpacks(int family) {
  return family == KILN_UK_Q3_K || family == KILN_UK_Q4_K || family == KILN_UK_Q5_K || family == KILN_UK_Q6_K;
}

/* Without VNNI, 8 output rows: two vpmaddubsw of 6-bit codes against int8
 * activations sum in int16 lanes (4 products of at most 63 x 127), and
 * vpmaddwd multiplies those by the sub-block's scale as an int16 pair: 6
 * multiplies per row and 16 columns where a dot product a step took 8 and a
 * vpmulld. The codes' offset of 32 meets the activations' sums once per
 * super-block: the scales and the sums as int16 pairs, 8 vpmaddwd a row. The
 * same integers as the VNNI form. */
KILN_UK_INLINE void kiln_uk_panel_tile_q6k(const uint8_t *panel, const kiln_uk_unpacked *codes, const uint8_t *xs,
                                   size_t stride, int32_t mr, int32_t k, int32_t b0, int32_t b1,
                                   float *y, int32_t ldy, int32_t valid) {
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256);
  const size_t sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t, q;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 210u * 8u;
    __m256i is[KILN_UK_MR_MAX];
    int32_t pairs[KILN_UK_MR_MAX][8];
    __m256 d;
    for (r = 0; r < mr; ++r) {
      kiln_uk_sum_pairs((const int32_t *)(const void *)(xs + r * stride + sums_at) + 16 * b, pairs[r]);
      is[r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 4
    for (q = 0; q < 4; ++q) { /* scale words: sub-blocks 4q..4q+3, a byte each */
      const __m256i words = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 32 * (48 + q)));
      const __m256i even = _mm256_srai_epi16(_mm256_slli_epi16(words, 8), 8);
      const __m256i odd = _mm256_srai_epi16(words, 8);
      for (r = 0; r < mr; ++r)
        is[r] = kiln_uk_scaled_sums(is[r], even, odd, pairs[r], q);
    }
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(is[r], 5));
#pragma GCC unroll 16
    for (s = 0; s < 16; ++s) {
      if (!codes)
        kiln_uk_prefetch_share(gp, 210 * 8, s, 16, mr);
      const __m256i sc = _mm256_srai_epi16( /* signed: in the high bytes, shifted down */
          _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(gp + 32 * (48 + s / 4))),
                              kiln_uk_lane_byte_twice(s % 4, 1)),
          8);
      const int32_t col = 128 * (s / 8) + 32 * ((s % 8) / 2) + 16 * (s % 2);
      for (t = 0; t < 4; t += 2) {
        const __m256i v0 = kiln_uk_unpacked_or(codes, b - b0, 4 * s + t, kiln_uk_q6k_codes(gp, s, t));
        const __m256i v1 = kiln_uk_unpacked_or(codes, b - b0, 4 * s + t + 1, kiln_uk_q6k_codes(gp, s, t + 1));
        for (r = 0; r < mr; ++r) {
          const int8_t *x = (const int8_t *)(const void *)(xs + r * stride + xq_at) + 256 * b + col + 4 * t;
          const __m256i p = _mm256_add_epi16(
              _mm256_maddubs_epi16(v0, _mm256_set1_epi32(kiln_uk_load_i32(x))),
              _mm256_maddubs_epi16(v1, _mm256_set1_epi32(kiln_uk_load_i32(x + 4))));
          is[r] = _mm256_add_epi32(is[r], _mm256_madd_epi16(p, sc));
          KILN_UK_KEEP(is[r]);
        }
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
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}
#else
/* As the AVX-512 panel_tile_q6k, 8 output rows. */
KILN_UK_INLINE void kiln_uk_panel_tile_q6k(const uint8_t *panel, const uint8_t *xs, size_t stride,
                                   int32_t mr, int32_t k, int32_t b0, int32_t b1, float *y,
                                   int32_t ldy, int32_t valid) {
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256);
  const size_t sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 210u * 8u;
    __m256i is[KILN_UK_MR_MAX], part[KILN_UK_MR_MAX];
    __m256 d;
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_setzero_si256();
#pragma GCC unroll 16
    for (s = 0; s < 16; ++s) {
      kiln_uk_prefetch_share(gp, 210 * 8, s, 16, mr);
      const __m256i words = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 32 * (48 + s / 4)));
      const __m256i sc = _mm256_srai_epi32(kiln_uk_panel_shift32(words, 24 - 8 * (s % 4)), 24);
      const int32_t col = 128 * (s / 8) + 32 * ((s % 8) / 2) + 16 * (s % 2);
      for (r = 0; r < mr; ++r)
        part[r] = _mm256_setzero_si256();
      for (t = 0; t < 4; ++t) {
        const __m256i v = kiln_uk_q6k_codes(gp, s, t);
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at);
          part[r] = kiln_uk_dot_u8s8(part[r], v, _mm256_set1_epi32(kiln_uk_load_i32(q + 256 * b + col + 4 * t)));
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
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}
#endif

/* acc plus the dots of int4 codes lo and hi with activations xl and xh: int32
 * lanes with VNNI; without it vpmaddubsw's int16 pairs, summed in int16 lanes
 * and widened once per run of 32 columns by q4_widen, not once per pair (a
 * q4_0 5632 x 2048 GEMV from DRAM 1.24x). */
static inline __m256i kiln_uk_q4_pairs(__m256i acc, __m256i lo, __m256i xl, __m256i hi, __m256i xh) {
#if KILN_UK_VNNI
  return kiln_uk_dot_u8s8(kiln_uk_dot_u8s8(acc, lo, xl), hi, xh);
#else
  return _mm256_add_epi16(acc, _mm256_add_epi16(_mm256_maddubs_epi16(lo, xl),
                                                _mm256_maddubs_epi16(hi, xh)));
#endif
}

static inline __m256i kiln_uk_q4_widen(__m256i acc) {
#if KILN_UK_VNNI
  return acc;
#else
  return _mm256_madd_epi16(acc, _mm256_set1_epi16(1));
#endif
}

/* As the AVX-512 panel_tile_b32, 8 output rows: mr block activation rows
 * against blocks b0..b1-1 of one q4_1, q5_0, q5_1 or iq4_nl panel. iq4_nl's
 * values (vpshufb from the codebook) go in as magnitudes, their signs moved
 * onto the activations, so that vpmaddubsw's int16 pairs cannot saturate
 * without VNNI. */
KILN_UK_INLINE void kiln_uk_panel_tile_b32(int family, const uint8_t *panel, const uint8_t *xs,
                                   size_t stride, int32_t mr, int32_t k, int32_t b0, int32_t b1,
                                   float *y, int32_t ldy, int32_t valid) {
  const int32_t mins = family == KILN_UK_Q4_1 || family == KILN_UK_Q5_1;
  const int32_t five = family == KILN_UK_Q5_0 || family == KILN_UK_Q5_1;
  const int32_t nl = family == KILN_UK_IQ4_NL;
  const int32_t head = kiln_uk_b32_head(family), bytes = 8 * (head + 16);
  const int32_t bias = family == KILN_UK_Q5_0 ? 16 : 0;
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 32);
  const size_t sums_at = kiln_uk_act_blocks_sums_at(k, 32);
  const __m256i low = _mm256_set1_epi8(15), bit4 = _mm256_set1_epi8(0x10);
  const __m256i table = _mm256_broadcastsi128_si256(
      _mm_loadu_si128((const __m128i *)(const void *)kiln_uk_iq4nl_values));
  /* Without VNNI, q4_pairs' int16 lanes sum 16 products of a 4-bit code,
   * 8 of a 5-bit one, before they widen (iq4_nl's signed values: at once) */
  const int32_t run = KILN_UK_VNNI || nl || !five ? 4 : 2;
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, c, c0;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * (size_t)bytes;
    const __m256i qh = five ? _mm256_loadu_si256((const __m256i *)(const void *)(gp + 16 * (1 + mins)))
                            : _mm256_setzero_si256();
    __m256i is[KILN_UK_MR_MAX], part[KILN_UK_MR_MAX];
    __m256 d, m;
    kiln_uk_prefetch_share(gp, bytes, 0, 1, mr);
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_setzero_si256();
    for (c0 = 0; c0 < 4; c0 += run) {
      for (r = 0; r < mr; ++r)
        part[r] = _mm256_setzero_si256();
      for (c = c0; c < c0 + run; ++c) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 8 * head + 32 * c));
        __m256i lo = _mm256_and_si256(v, low), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
        if (five) {
          lo = _mm256_or_si256(lo, _mm256_and_si256(kiln_uk_panel_shift32(qh, 4 - c), bit4));
          hi = _mm256_or_si256(hi, _mm256_and_si256(kiln_uk_panel_shift32(qh, -c), bit4));
        }
        __m256i slo = lo, shi = hi;
        if (nl) { /* the values' magnitudes (once for all rows) meet x with their signs */
          slo = _mm256_shuffle_epi8(table, lo);
          shi = _mm256_shuffle_epi8(table, hi);
          lo = _mm256_abs_epi8(slo);
          hi = _mm256_abs_epi8(shi);
        }
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at) + 32 * b + 4 * c;
          const __m256i x0 = _mm256_set1_epi32(kiln_uk_load_i32(q)), x1 = _mm256_set1_epi32(kiln_uk_load_i32(q + 16));
          if (nl) {
            part[r] = kiln_uk_dot_u8s8(part[r], lo, _mm256_sign_epi8(x0, slo));
            part[r] = kiln_uk_dot_u8s8(part[r], hi, _mm256_sign_epi8(x1, shi));
          } else {
            part[r] = kiln_uk_q4_pairs(part[r], lo, x0, hi, x1);
          }
          KILN_UK_KEEP(part[r]);
        }
      }
      for (r = 0; r < mr; ++r)
        is[r] = _mm256_add_epi32(is[r], nl ? part[r] : kiln_uk_q4_widen(part[r]));
    }
    d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)gp));
    m = mins ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(gp + 16))) : d;
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      const int32_t *sums = (const int32_t *)(const void *)(xs + r * stride + sums_at) + 2 * b;
      const int32_t isum = sums[0] + sums[1];
      const __m256i exact = _mm256_sub_epi32(is[r], _mm256_set1_epi32(bias * isum));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), _mm256_mul_ps(d, _mm256_set1_ps(xd)),
                               acc[r]);
      if (mins)
        acc[r] = _mm256_fmadd_ps(m, _mm256_set1_ps(xd * (float)isum), acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

/* As the AVX-512 helpers of its q2_k kernels, 8 rows: the scale x code
 * tables and scale words of super-block gp, the mins against the sums of 16,
 * and where a lane's table entries start. */
static inline void kiln_uk_q2k_tables(const uint8_t *gp, __m256i *table, __m256i *w) {
  int32_t s;
  for (s = 0; s < 4; ++s)
    w[s] = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 32 + 32 * s));
  for (s = 0; s < 16; ++s)
    table[s] = _mm256_mullo_epi32(_mm256_and_si256(kiln_uk_panel_shift32(w[s / 4], -8 * (s % 4)), _mm256_set1_epi32(15)),
                                  _mm256_set1_epi32(0x03020100));
}

static inline __m256i kiln_uk_q2k_mins(const __m256i *w, const int32_t *x16) {
  const __m256i even = _mm256_set1_epi32(0x00f000f0);
  __m256i m = _mm256_setzero_si256();
  int32_t s;
  for (s = 0; s < 4; ++s) { /* mins 4s, 4s + 2 (x 16) and 4s + 1, 4s + 3 as 16-bit pairs */
    const int32_t *x = x16 + 4 * s;
    m = kiln_uk_blocks_madd_acc(m, _mm256_and_si256(w[s], even),
                                _mm256_set1_epi32((int32_t)((uint32_t)(uint16_t)x[0] | (uint32_t)x[2] << 16)));
    m = kiln_uk_blocks_madd_acc(
        m, _mm256_srli_epi16(w[s], 12),
        _mm256_set1_epi32((int32_t)((uint32_t)(uint16_t)(16 * x[1]) | (uint32_t)(16 * x[3]) << 16)));
  }
  return _mm256_srai_epi32(m, 4);
}

static inline __m256i kiln_uk_q2k_rows(void) {
  return _mm256_set_epi64x(0x0c0c0c0c08080808LL, 0x0404040400000000LL, 0x0c0c0c0c08080808LL,
                           0x0404040400000000LL);
}

/* q3_k's scale bytes of super-block gp: byte i of a lane of bytes[g] is
 * scale 4g + i plus 32, as the AVX-512 scale bytes. */
static inline void kiln_uk_q3k_scale_bytes(const uint8_t *gp, __m256i *bytes) {
  const __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 16)),
                w1 = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 48)),
                w2 = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 80));
  const __m256i low = _mm256_set1_epi8(15), high = _mm256_set1_epi8(0x30);
  bytes[0] = _mm256_or_si256(_mm256_and_si256(w0, low), _mm256_and_si256(_mm256_slli_epi16(w2, 4), high));
  bytes[1] = _mm256_or_si256(_mm256_and_si256(w1, low), _mm256_and_si256(_mm256_slli_epi16(w2, 2), high));
  bytes[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(w0, 4), low), _mm256_and_si256(w2, high));
  bytes[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(w1, 4), low),
                             _mm256_and_si256(_mm256_srli_epi16(w2, 2), high));
}

/* q3_k's 16 scales of super-block gp in every lane, signed 6 bits in the low
 * half of each and 0 in the high half: vpmaddwd's (vpdpwssd's) other operand. */
static inline void kiln_uk_q3k_scales(const uint8_t *gp, __m256i *sc) {
  __m256i bytes[4];
  int32_t s;
  kiln_uk_q3k_scale_bytes(gp, bytes);
  for (s = 0; s < 16; ++s)
    sc[s] = _mm256_sub_epi16(_mm256_shuffle_epi8(bytes[s / 4], _mm256_broadcastsi128_si256(kiln_uk_lane_byte128(s % 4))),
                             _mm256_set1_epi32(32));
}

/* Sub-block j's 2-bit codes of code bytes v, at kiln_uk_code_at(j). */
static inline __m256i kiln_uk_low2_codes(__m256i v, int32_t j) {
  return j < 3 ? _mm256_and_si256(v, _mm256_set1_epi8((char)(3 << (2 * j))))
               : _mm256_and_si256(_mm256_srli_epi16(v, 2), _mm256_set1_epi8(0x30));
}

#if !KILN_UK_VNNI
/* Without VNNI, 8 output rows: the 2-bit codes of a sub-block against int8
 * activations, four vpmaddubsw summed in int16 lanes (16 products of at most
 * 3 x 127), then one vpmaddwd by the sub-block's scale as an int16 pair,
 * where the table form multiplied scale x code bytes in three instructions
 * a step. The same integers. */
KILN_UK_INLINE void kiln_uk_panel_tile_q2k(const uint8_t *panel, const uint8_t *xs, size_t stride,
                                   int32_t mr, int32_t k, int32_t b0, int32_t b1, float *y,
                                   int32_t ldy, int32_t valid) {
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256);
  const size_t sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  const __m256i three = _mm256_set1_epi8(3), nib = _mm256_set1_epi16(15);
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 84u * 8u;
    __m256i is[KILN_UK_MR_MAX], w[4];
    __m256 d, dmin;
    for (s = 0; s < 4; ++s)
      w[s] = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 32 + 32 * s));
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_setzero_si256();
#pragma GCC unroll 16
    for (s = 0; s < 16; ++s) {
      const int32_t h = s / 8, j = (s % 8) / 2, half = s % 2;
      const __m256i sc = _mm256_and_si256(_mm256_shuffle_epi8(w[s / 4], kiln_uk_lane_byte_twice(s % 4, 0)), nib);
      __m256i code[4];
      kiln_uk_prefetch_share(gp, 84 * 8, s, 16, mr);
      for (t = 0; t < 4; ++t)
        code[t] = _mm256_and_si256(
            _mm256_srl_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(gp + 20 * 8 + 32 * (8 * h + 4 * half + t))),
                             _mm_cvtsi32_si128(2 * j)),
            three);
      kiln_uk_sub_block_rows(is, code, sc, xs + xq_at + 256 * b + 128 * h + 32 * j + 16 * half, stride, mr);
    }
    d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)gp));
    dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(gp + 16)));
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      const int32_t *x16 = (const int32_t *)(const void *)(xs + r * stride + sums_at) + 16 * b;
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[r]), _mm256_mul_ps(d, _mm256_set1_ps(xd)), acc[r]);
      acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(kiln_uk_q2k_mins(w, x16)), _mm256_mul_ps(dmin, _mm256_set1_ps(xd)), acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}
#else
/* As the AVX-512 panel_row_q2k, 8 output rows, the codes at kiln_uk_code_at:
 * decode's one row with VNNI (without it the tile's int16 sums are faster at
 * one row too). */
KILN_UK_INLINE void kiln_uk_panel_row_q2k(const uint8_t *panel, const uint8_t *xs, int32_t k,
                                  int32_t b0, int32_t b1, float *y, int32_t valid) {
  const int8_t *q = (const int8_t *)(const void *)(xs + kiln_uk_act_blocks_q_at(k, 256));
  const int32_t *x16 = (const int32_t *)(const void *)(xs + kiln_uk_act_blocks_sums_at(k, 256));
  const float *xd = (const float *)(const void *)xs;
  const __m256i nib = _mm256_set1_epi32(15);
  __m256 acc = b0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y, valid);
  int32_t b, h, half, t, j, c;
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 84u * 8u;
    __m256i w[4], is[2];
    __m256 dx = _mm256_set1_ps(xd[b]);
    kiln_uk_prefetch_stream(gp, 84 * 8);
    for (c = 0; c < 4; ++c)
      w[c] = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 32 + 32 * c));
    is[0] = is[1] = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (h = 0; h < 2; ++h)
#pragma GCC unroll 2
      for (half = 0; half < 2; ++half) {
        __m256i part[4];
        for (j = 0; j < 4; ++j)
          part[j] = _mm256_setzero_si256();
        for (t = 0; t < 4; ++t) {
          const __m256i v =
              _mm256_loadu_si256((const __m256i *)(const void *)(gp + 20 * 8 + 32 * (8 * h + 4 * half + t)));
          for (j = 0; j < 4; ++j) {
            part[j] = kiln_uk_dot_u8s8(
                part[j], kiln_uk_low2_codes(v, j), _mm256_set1_epi32(kiln_uk_load_i32(q + 256 * b + 128 * h + 32 * j + 16 * half + 4 * t)));
          }
        }
        for (j = 0; j < 4; ++j) { /* sub-block s = 8h + 2j + half, its scale byte s % 4 of word s / 4 */
          const int32_t s = 8 * h + 2 * j + half;
          is[half] = kiln_uk_blocks_madd_acc(
              is[half], _mm256_srai_epi32(part[j], kiln_uk_code_at(j)),
              _mm256_and_si256(kiln_uk_panel_shift32(w[s / 4], -8 * (s % 4)), nib));
        }
      }
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(is[0], is[1])),
                          _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)gp)), dx), acc);
    acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(kiln_uk_q2k_mins(w, x16 + 16 * b)),
                           _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(gp + 16))), dx),
                           acc);
  }
  kiln_uk_store_lanes(y, acc, valid);
}

/* As the AVX-512 panel_tile_q2k, 8 output rows. */
KILN_UK_INLINE void kiln_uk_panel_tile_q2k(const uint8_t *panel, const uint8_t *xs, size_t stride,
                                   int32_t mr, int32_t k, int32_t b0, int32_t b1, float *y,
                                   int32_t ldy, int32_t valid) {
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256);
  const size_t sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  const __m256i three = _mm256_set1_epi8(3), rows = kiln_uk_q2k_rows();
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t;
  if (mr == 1) {
    kiln_uk_panel_row_q2k(panel, xs, k, b0, b1, y, valid);
    return;
  }
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 84u * 8u;
    __m256i is[KILN_UK_MR_MAX], w[4], table[16];
    __m256 d, dmin;
    kiln_uk_q2k_tables(gp, table, w);
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_setzero_si256();
#pragma GCC unroll 16
    for (s = 0; s < 16; ++s) {
      const int32_t h = s / 8, j = (s % 8) / 2, half = s % 2;
      kiln_uk_prefetch_share(gp, 84 * 8, s, 16, mr);
      for (t = 0; t < 4; ++t) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 20 * 8 + 32 * (8 * h + 4 * half + t)));
        const __m256i code = _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * j)), three);
        const __m256i prod = _mm256_shuffle_epi8(table[s], _mm256_or_si256(code, rows));
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at);
          is[r] = kiln_uk_dot_u8s8(is[r], prod,
                                   _mm256_set1_epi32(kiln_uk_load_i32(q + 256 * b + 128 * h + 32 * j + 16 * half + 4 * t)));
        }
      }
    }
    d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)gp));
    dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(gp + 16)));
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      const int32_t *x16 = (const int32_t *)(const void *)(xs + r * stride + sums_at) + 16 * b;
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[r]), _mm256_mul_ps(d, _mm256_set1_ps(xd)), acc[r]);
      acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(kiln_uk_q2k_mins(w, x16)), _mm256_mul_ps(dmin, _mm256_set1_ps(xd)), acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}
#endif
#define KILN_UK_HAS_PANEL_Q2K 1

#if !KILN_UK_VNNI
/* Vector t of sub-block s of q3_k super-block gp: its 3-bit codes plus 4. */
static inline __m256i kiln_uk_q3k_code(const uint8_t *gp, int32_t s, int32_t t) {
  const int32_t h = s / 8, j = (s % 8) / 2, half = s % 2;
  const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 46 * 8 + 32 * (8 * h + 4 * half + t)));
  const __m256i hm = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 14 * 8 + 32 * (4 * half + t)));
  return _mm256_or_si256(_mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * j)), _mm256_set1_epi8(3)),
                         _mm256_and_si256(kiln_uk_blocks_shift16(hm, 2 - 4 * h - j), _mm256_set1_epi8(4)));
}

/* Without VNNI, 8 output rows, as panel_tile_q2k: the 3-bit codes (the code
 * plus 4) in int16 lanes over a sub-block, one vpmaddwd by its scale as an
 * int16 pair; the offset of 4 meets the activations' sums once per
 * super-block (kiln_uk_scaled_sums). The same integers. */
KILN_UK_INLINE void kiln_uk_panel_tile_q3k(const uint8_t *panel, const kiln_uk_unpacked *codes, const uint8_t *xs,
                                   size_t stride, int32_t mr, int32_t k, int32_t b0, int32_t b1,
                                   float *y, int32_t ldy, int32_t valid) {
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256);
  const size_t sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  const __m256i bias = _mm256_set1_epi16(32);
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t, q;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 110u * 8u;
    __m256i is[KILN_UK_MR_MAX], bytes[4];
    int32_t pairs[KILN_UK_MR_MAX][8];
    __m256 d;
    kiln_uk_q3k_scale_bytes(gp, bytes);
    for (r = 0; r < mr; ++r) {
      kiln_uk_sum_pairs((const int32_t *)(const void *)(xs + r * stride + sums_at) + 16 * b, pairs[r]);
      is[r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 4
    for (q = 0; q < 4; ++q) {
      const __m256i even = _mm256_sub_epi16(_mm256_and_si256(bytes[q], _mm256_set1_epi16(0xff)), bias);
      const __m256i odd = _mm256_sub_epi16(_mm256_srli_epi16(bytes[q], 8), bias);
      for (r = 0; r < mr; ++r)
        is[r] = kiln_uk_scaled_sums(is[r], even, odd, pairs[r], q);
    }
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(is[r], 2));
#pragma GCC unroll 16
    for (s = 0; s < 16; ++s) {
      const int32_t h = s / 8, j = (s % 8) / 2, half = s % 2;
      const __m256i sc = _mm256_sub_epi16(_mm256_shuffle_epi8(bytes[s / 4], kiln_uk_lane_byte_twice(s % 4, 0)), bias);
      __m256i code[4];
      if (!codes)
        kiln_uk_prefetch_share(gp, 110 * 8, s, 16, mr);
      for (t = 0; t < 4; ++t)
        code[t] = kiln_uk_unpacked_or(codes, b - b0, 4 * s + t, kiln_uk_q3k_code(gp, s, t));
      kiln_uk_sub_block_rows(is, code, sc, xs + xq_at + 256 * b + 128 * h + 32 * j + 16 * half, stride, mr);
    }
    d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)gp));
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[r]), _mm256_mul_ps(d, _mm256_set1_ps(xd)), acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

/* mr rows against super-blocks b0..b1-1 of a panel kiln_uk_panel_unpacks
 * names, the codes read from codes, unpacked by panel_unpack (or assembled
 * where it is NULL). */
KILN_UK_INLINE void kiln_uk_panel_tile_unpacked(int family, const uint8_t *panel, const kiln_uk_unpacked *codes,
                                        const uint8_t *xs, size_t stride, int32_t mr, int32_t k,
                                        int32_t b0, int32_t b1, float *y, int32_t ldy, int32_t valid) {
  if (family == KILN_UK_Q3_K)
    kiln_uk_panel_tile_q3k(panel, codes, xs, stride, mr, k, b0, b1, y, ldy, valid);
  else if (family == KILN_UK_Q4_K || family == KILN_UK_Q5_K)
    kiln_uk_panel_tile_q45k(panel, codes, family == KILN_UK_Q5_K, xs, stride, mr, k, b0, b1, y, ldy, valid);
  else
    kiln_uk_panel_tile_q6k(panel, codes, xs, stride, mr, k, b0, b1, y, ldy, valid);
}

/* Vector v of super-block gp's codes in a panel of the family, as its tile
 * assembles them. */
static inline __m256i kiln_uk_panel_code(int family, const uint8_t *gp, int32_t v) {
  switch (family) {
  case KILN_UK_Q3_K:
    return kiln_uk_q3k_code(gp, v / 4, v % 4);
  case KILN_UK_Q4_K:
  case KILN_UK_Q5_K:
    return kiln_uk_q45k_code(gp, family == KILN_UK_Q5_K, v / 16, v / 8 % 2, v % 8);
  default:
    return kiln_uk_q6k_codes(gp, v / 4, v % 4);
  }
}

/* The codes of super-blocks b0..b1-1 (at most KILN_UK_UNPACK_BLOCKS) of a
 * panel kiln_uk_panel_unpacks names. */
KILN_UK_INLINE void kiln_uk_panel_unpack(int family, const uint8_t *panel, int32_t b0, int32_t b1,
                                 kiln_uk_unpacked *codes) {
  const size_t bytes = (size_t)kiln_uk_block_bytes(family) * KILN_UK_NR;
  int32_t b, v;
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * bytes;
#pragma GCC unroll 64
    for (v = 0; v < 64; ++v)
      codes->v[64 * (b - b0) + v] = kiln_uk_panel_code(family, gp, v);
  }
}
#else
/* As the AVX-512 panel_row_q3k, 8 output rows, the codes at kiln_uk_code_at:
 * decode's one row with VNNI, as panel_row_q2k. */
KILN_UK_INLINE void kiln_uk_panel_row_q3k(const uint8_t *panel, const uint8_t *xs, int32_t k,
                                  int32_t b0, int32_t b1, float *y, int32_t valid) {
  const int8_t *q = (const int8_t *)(const void *)(xs + kiln_uk_act_blocks_q_at(k, 256));
  const int32_t *x16 = (const int32_t *)(const void *)(xs + kiln_uk_act_blocks_sums_at(k, 256));
  const float *xd = (const float *)(const void *)xs;
  __m256 acc = b0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y, valid);
  int32_t b, h, half, t, j;
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 110u * 8u;
    __m256i sc[16], is[2];
    kiln_uk_prefetch_stream(gp, 110 * 8);
    kiln_uk_q3k_scales(gp, sc);
    is[0] = is[1] = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (h = 0; h < 2; ++h)
#pragma GCC unroll 2
      for (half = 0; half < 2; ++half) {
        __m256i part[4];
        for (j = 0; j < 4; ++j)
          part[j] = _mm256_setzero_si256();
        for (t = 0; t < 4; ++t) {
          const __m256i v =
              _mm256_loadu_si256((const __m256i *)(const void *)(gp + 46 * 8 + 32 * (8 * h + 4 * half + t)));
          const __m256i hm = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 14 * 8 + 32 * (4 * half + t)));
          for (j = 0; j < 4; ++j) {
            const int32_t at = kiln_uk_code_at(j);
            const __m256i code = _mm256_or_si256(
                kiln_uk_low2_codes(v, j), _mm256_and_si256(kiln_uk_blocks_shift16(hm, at + 2 - 4 * h - j), _mm256_set1_epi8((char)(4 << at))));
            part[j] = kiln_uk_dot_u8s8(
                part[j], code, _mm256_set1_epi32(kiln_uk_load_i32(q + 256 * b + 128 * h + 32 * j + 16 * half + 4 * t)));
          }
        }
        for (j = 0; j < 4; ++j) { /* less the codes' offset, back down, at most 8192: an int16 */
          const int32_t sb = 8 * h + 2 * j + half, at = kiln_uk_code_at(j);
          const __m256i exact = _mm256_sub_epi32(part[j], _mm256_set1_epi32((4 << at) * x16[16 * b + sb]));
          is[half] = kiln_uk_blocks_madd_acc(is[half], _mm256_srai_epi32(exact, at), sc[sb]);
        }
      }
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(is[0], is[1])),
                          _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)gp)),
                                        _mm256_set1_ps(xd[b])),
                          acc);
  }
  kiln_uk_store_lanes(y, acc, valid);
}

/* As the AVX-512 panel_tile_q3k, 8 output rows. */
KILN_UK_INLINE void kiln_uk_panel_tile_q3k(const uint8_t *panel, const uint8_t *xs, size_t stride,
                                   int32_t mr, int32_t k, int32_t b0, int32_t b1, float *y,
                                   int32_t ldy, int32_t valid) {
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256);
  const size_t sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t;
  if (mr == 1) {
    kiln_uk_panel_row_q3k(panel, xs, k, b0, b1, y, valid);
    return;
  }
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 110u * 8u;
    __m256i is[KILN_UK_MR_MAX], part[KILN_UK_MR_MAX], sc[16];
    __m256 d;
    kiln_uk_q3k_scales(gp, sc);
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_setzero_si256();
#pragma GCC unroll 16
    for (s = 0; s < 16; ++s) {
      const int32_t h = s / 8, j = (s % 8) / 2, half = s % 2;
      const int32_t bit = 4 * h + j;
      kiln_uk_prefetch_share(gp, 110 * 8, s, 16, mr);
      for (r = 0; r < mr; ++r)
        part[r] = _mm256_setzero_si256();
      for (t = 0; t < 4; ++t) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 46 * 8 + 32 * (8 * h + 4 * half + t)));
        const __m256i hm = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 14 * 8 + 32 * (4 * half + t)));
        const __m256i code = _mm256_or_si256(
            _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * j)), three),
            _mm256_and_si256(kiln_uk_blocks_shift16(hm, 2 - bit), four));
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at);
          part[r] = kiln_uk_dot_u8s8(part[r], code,
                                     _mm256_set1_epi32(kiln_uk_load_i32(q + 256 * b + 128 * h + 32 * j + 16 * half + 4 * t)));
        }
      }
      for (r = 0; r < mr; ++r) {
        const int32_t *x16 = (const int32_t *)(const void *)(xs + r * stride + sums_at);
        const __m256i exact = _mm256_sub_epi32(part[r], _mm256_set1_epi32(4 * x16[16 * b + s]));
        is[r] = kiln_uk_blocks_madd_acc(is[r], exact, sc[s]);
      }
    }
    d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)gp));
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[r]), _mm256_mul_ps(d, _mm256_set1_ps(xd)), acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}
#endif
#define KILN_UK_HAS_PANEL_Q3K 1

#define KILN_UK_HAS_PANEL_B32 1

/* As the AVX-512 panel_tile_int: mr quantized activation rows against groups
 * b0..b1-1 of one panel, added to y unless b0 is 0. */
KILN_UK_INLINE void kiln_uk_panel_tile_int(int family, const uint8_t *panel, const uint8_t *xs,
                                   size_t stride, int32_t mr, int32_t k, int32_t g, int32_t b0,
                                   int32_t b1, float *y, int32_t ldy, int32_t valid) {
  const int32_t groups = k / g;
  const size_t group_bytes = 16u + (size_t)(family == KILN_UK_I8 ? 8 * g : 4 * g);
  const __m256i low = _mm256_set1_epi8(15);
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, b, c;
#ifdef KILN_UK_HAS_PANEL_UNPACK
  if (kiln_uk_panel_unpacks(family)) {
    kiln_uk_panel_tile_unpacked(family, panel, NULL, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
#else
  if (family == KILN_UK_Q4_K || family == KILN_UK_Q5_K) {
    kiln_uk_panel_tile_q45k(panel, NULL, family == KILN_UK_Q5_K, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
  if (family == KILN_UK_Q6_K) {
    kiln_uk_panel_tile_q6k(panel, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
  if (family == KILN_UK_Q3_K) {
    kiln_uk_panel_tile_q3k(panel, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
#endif
  if (kiln_uk_is_b32_family(family)) {
    kiln_uk_panel_tile_b32(family, panel, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
  if (family == KILN_UK_Q2_K) {
    kiln_uk_panel_tile_q2k(panel, xs, stride, mr, k, b0, b1, y, ldy, valid);
    return;
  }
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * group_bytes;
    __m256i is[KILN_UK_MR_MAX];
    __m256 ws;
    /* Decode asks for each line as the AVX-512 decode GEMV does
     * (kiln_uk_prefetch_row): a q4_0 GEMV from DRAM kept 1.04-1.09 of a plain
     * read against 0.76-0.78 with the hardware prefetchers alone (q8_0:
     * 1.01-1.03 against 0.87-0.89; bench/gemv.c, one thread or two); 16 KiB
     * ahead, as the tiles ask, was 0.87x slower. A batch of a few rows asks
     * as a stream (kiln_uk_prefetch_share). */
    if (mr == 1)
      kiln_uk_prefetch_row(gp, (int32_t)group_bytes);
    else
      kiln_uk_prefetch_share(gp, (int32_t)group_bytes, 0, 1, mr);
    for (r = 0; r < mr; ++r)
      is[r] = _mm256_setzero_si256();
    if (family == KILN_UK_I8) {
#pragma GCC unroll 8
      for (c = 0; c < g / 4; ++c) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(gp + 16 + 32 * c));
#ifndef __AVXVNNI__
        /* Without VNNI, unsigned x signed pairs would saturate at 255 x 127:
         * the signed weight's magnitude (once for all rows) meets x with the
         * weight's sign, one vpsignb a row (|-128| is 128 as a u8: exact). */
        const __m256i ws8 = _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80));
        v = _mm256_abs_epi8(ws8);
#endif
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + (size_t)groups * 8u);
          __m256i xq = _mm256_set1_epi32(kiln_uk_load_i32(q + g * b + 4 * c));
#ifdef __AVXVNNI__
          is[r] = _mm256_dpbusd_avx_epi32(is[r], v, xq);
#else
          is[r] = kiln_uk_dot_u8s8(is[r], v, _mm256_sign_epi8(xq, ws8));
          KILN_UK_KEEP(is[r]);
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
            run[r] = kiln_uk_q4_pairs(run[r], lo, _mm256_set1_epi32(kiln_uk_load_i32(q + g * b + 4 * c)), hi,
                              _mm256_set1_epi32(kiln_uk_load_i32(q + g * b + g / 2 + 4 * c)));
            KILN_UK_KEEP(run[r]);
          }
        }
        for (r = 0; r < mr; ++r)
          is[r] = _mm256_add_epi32(is[r], kiln_uk_q4_widen(run[r]));
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
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

static inline __m256 kiln_uk_panel_load_f(int family, const uint8_t *p) {
  return family == KILN_UK_F32
             ? _mm256_loadu_ps((const float *)(const void *)p)
             : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}

/* As the AVX-512 panel_tile_float, 8 output rows. */
KILN_UK_INLINE void kiln_uk_panel_tile_float(int family, const uint8_t *panel, const float *x,
                                     int32_t mr, int32_t k, int32_t j0, int32_t j1, float *y,
                                     int32_t ldy, int32_t valid) {
  const size_t es = family == KILN_UK_F32 ? 32u : 16u; /* bytes of one panel column */
  __m256 acc[KILN_UK_MR_MAX];
  int32_t r, j;
  for (r = 0; r < mr; ++r)
    acc[r] = j0 == 0 ? _mm256_setzero_ps() : kiln_uk_load_lanes(y + (size_t)r * (size_t)ldy, valid);
  for (j = j0; j < j1; ++j) {
    __m256 wv = kiln_uk_panel_load_f(family, panel + es * j);
    for (r = 0; r < mr; ++r)
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(x[(size_t)r * (size_t)k + j]), wv, acc[r]);
  }
  for (r = 0; r < mr; ++r)
    kiln_uk_store_lanes(y + (size_t)r * (size_t)ldy, acc[r], valid);
}

/* Up to four rows of panel_tile3_float: twelve sums, three weight loads and
 * four broadcasts per column, every index a constant so that the sums stay
 * in registers. */
KILN_UK_INLINE void kiln_uk_panel_quad3_float(int family, const uint8_t *panel, size_t panel_bytes,
                                              const float *x, int32_t rows, int32_t k, int32_t j0,
                                              int32_t j1, float *y, int32_t ldy) {
  const size_t es = family == KILN_UK_F32 ? 32u : 16u;
  __m256 a0[4], a1[4], a2[4];
  int32_t r, j;
#pragma GCC unroll 4
  for (r = 0; r < 4; ++r) {
    const float *yr = y + (size_t)(r < rows ? r : 0) * (size_t)ldy;
    a0[r] = j0 == 0 || r >= rows ? _mm256_setzero_ps() : _mm256_loadu_ps(yr);
    a1[r] = j0 == 0 || r >= rows ? _mm256_setzero_ps() : _mm256_loadu_ps(yr + 8);
    a2[r] = j0 == 0 || r >= rows ? _mm256_setzero_ps() : _mm256_loadu_ps(yr + 16);
  }
  for (j = j0; j < j1; ++j) {
    const uint8_t *c = panel + es * j;
    const __m256 w0 = kiln_uk_panel_load_f(family, c),
                 w1 = kiln_uk_panel_load_f(family, c + panel_bytes),
                 w2 = kiln_uk_panel_load_f(family, c + 2 * panel_bytes);
#pragma GCC unroll 4
    for (r = 0; r < 4; ++r) {
      __m256 xv;
      if (r >= rows)
        break;
      xv = _mm256_broadcast_ss(x + (size_t)r * (size_t)k + j);
      a0[r] = _mm256_fmadd_ps(xv, w0, a0[r]);
      a1[r] = _mm256_fmadd_ps(xv, w1, a1[r]);
      a2[r] = _mm256_fmadd_ps(xv, w2, a2[r]);
    }
  }
#pragma GCC unroll 4
  for (r = 0; r < 4; ++r) {
    float *yr = y + (size_t)r * (size_t)ldy;
    if (r >= rows)
      break;
    _mm256_storeu_ps(yr, a0[r]);
    _mm256_storeu_ps(yr + 8, a1[r]);
    _mm256_storeu_ps(yr + 16, a2[r]);
  }
}

#define KILN_UK_HAS_PANEL_QUAD3_FLOAT 1

/* One activation row against four whole panels: four FMA chains. */
KILN_UK_INLINE void kiln_uk_panel_row4_float(int family, const uint8_t *panel, size_t panel_bytes,
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
    a0 = _mm256_fmadd_ps(xj, kiln_uk_panel_load_f(family, c), a0);
    a1 = _mm256_fmadd_ps(xj, kiln_uk_panel_load_f(family, c + panel_bytes), a1);
    a2 = _mm256_fmadd_ps(xj, kiln_uk_panel_load_f(family, c + 2 * panel_bytes), a2);
    a3 = _mm256_fmadd_ps(xj, kiln_uk_panel_load_f(family, c + 3 * panel_bytes), a3);
  }
  _mm256_storeu_ps(y, a0);
  _mm256_storeu_ps(y + 8, a1);
  _mm256_storeu_ps(y + 16, a2);
  _mm256_storeu_ps(y + 24, a3);
}

#include "kernels/c99/kiln_uk_matmul_panels.h"

#endif /* KILN_UK_AVX2_MATMUL_PANELS_H */
