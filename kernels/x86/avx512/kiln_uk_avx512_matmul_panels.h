/* x86-avx512: AVX-512 F/BW/VL + VNNI micro-kernels over 16-row weight panels
 * (kernels/c99/kiln_uk_pack.h describes the layout).
 *
 * One zmm register holds one value for each of a panel's 16 output rows, so a
 * matmul never sums across lanes: int8 panels take vpdpbusd of 64 weight bytes
 * against a 32-bit broadcast of 4 activations, float panels an FMA against a
 * broadcast activation. Prefill runs MR activation rows per panel pass, so a
 * weight is loaded and unpacked once per MR rows; decode (one row) streams
 * every weight byte once. Weights that keep the row layout (a table shared by
 * embed and the output head) use the AVX2 row helpers. */
#ifndef KILN_UK_AVX512_MATMUL_PANELS_H
#define KILN_UK_AVX512_MATMUL_PANELS_H

#include "kernels/x86/avx512/kiln_uk_avx512_base.h"
#include "kernels/x86/avx512/kiln_uk_avx512_quantize.h"

/* Panel height: one zmm of f32 or int32 lanes. */
#define KILN_UK_NR 16

/* A q4_k panel's mins 2i and 2i+1 in 16-bit pairs, from its words S0, S1, S2:
 * the low nibbles from S2, the top bits from S0 and S1. */
static inline __m512i kiln_uk_q4k_mins(__m512i s0, __m512i s1, __m512i s2, int32_t i) {
  const __m512i hi1 = i < 2 ? _mm512_slli_epi32(s1, 14 - 8 * i) : _mm512_srli_epi32(s1, 8 * i - 14);
  return _mm512_or_si512(
      _mm512_and_si512(_mm512_srli_epi32(s2, 4 * i), _mm512_set1_epi32(0x000f000f)),
      _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(s0, 8 * i + 2), _mm512_set1_epi32(0x30)),
                      _mm512_and_si512(hi1, _mm512_set1_epi32(0x300000))));
}

/* An int32 lane x with |x| < 2^22 as its float, off the multiply port: x plus
 * the bits of 1.5 * 2^23 is that float plus x exactly, and the subtraction
 * takes 1.5 * 2^23 off exactly. Callers fold the addition into one they make
 * anyway; this is the subtraction. */
#define KILN_UK_MAGIC_BITS 0x4b400000
#define KILN_UK_MAGIC 12582912.0f /* 1.5 * 2^23, the float of those bits */
static inline __m512 kiln_uk_magic_float(__m512i biased) {
  return _mm512_sub_ps(_mm512_castsi512_ps(biased), _mm512_set1_ps(KILN_UK_MAGIC));
}

/* mr rows of k-quant activations (blocks_quantize_row, rows `stride` bytes
 * apart) against super-blocks b0..b1-1 of one q4_k (five = 0) or q5_k panel, as
 * panel_tile_int; q5_k's fifth bits join the codes from its qh quads.
 * Per row, a sub-block's codes times the activations in int32 (vpdpbusd), times
 * its scale (vpmulld) and summed over the super-block in integers; the mins
 * meet the int16 sums of 32 activations in vpdpwssd. Two float steps per
 * super-block: d and dmin times the activations' scale. */
KILN_UK_INLINE void kiln_uk_panel_tile_q45k(const uint8_t *panel, int32_t five, const uint8_t *xs,
                                    size_t stride, int32_t mr, int32_t k, int32_t b0, int32_t b1,
                                    float *y, int32_t ldy, int32_t rows_valid) {
  const __mmask16 valid = (__mmask16)((1u << rows_valid) - 1u);
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256), pairs_at = xq_at + (size_t)k;
  const size_t bytes = five ? 176u * 16u : 144u * 16u, codes_at = five ? 48u * 16u : 16u * 16u;
  const __m512i low = _mm512_set1_epi8(15), six = _mm512_set1_epi32(63);
  __m512 acc[KILN_UK_MR_MAX];
  int32_t r, b, i, h, c;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm512_setzero_ps()
                     : _mm512_maskz_loadu_ps(valid, y + (size_t)r * (size_t)ldy);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * bytes;
    const __m512i s0 = _mm512_loadu_si512(gp + 64), s1 = _mm512_loadu_si512(gp + 128),
                  s2 = _mm512_loadu_si512(gp + 192);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)gp));
    __m512i part[KILN_UK_MR_MAX], mins[4];
    __m512 fs[KILN_UK_MR_MAX], dmin;
    for (r = 0; r < mr; ++r)
      fs[r] = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (i = 0; i < 4; ++i)
      for (h = 0; h < 2; ++h) { /* sub-block 2i + h: the low or the high nibbles */
        kiln_uk_prefetch_share(gp, (int32_t)bytes, 2 * i + h, 8, mr);
        const __m512 dsc = _mm512_mul_ps(
            kiln_uk_magic_float(_mm512_ternarylogic_epi32(_mm512_srli_epi32(h ? s1 : s0, 8 * i), six,
                                                          _mm512_set1_epi32(KILN_UK_MAGIC_BITS), 0xea)),
            d); /* (word >> 8i) & 63 | magic */
        for (r = 0; r < mr; ++r)
          part[r] = _mm512_set1_epi32(KILN_UK_MAGIC_BITS);
        for (c = 0; c < 8; ++c) {
          __m512i v = _mm512_loadu_si512(gp + codes_at + 64 * (8 * i + c));
          v = _mm512_and_si512(h ? _mm512_srli_epi16(v, 4) : v, low);
          if (five) { /* bit 2i + h of qh: the fifth bit of sub-block 2i + h */
            const __m512i qh = _mm512_loadu_si512(gp + 256 + 64 * c);
            const int32_t left = 4 - 2 * i - h;
            v = _mm512_ternarylogic_epi32(
                v, left >= 0 ? _mm512_slli_epi16(qh, (unsigned)left) : _mm512_srli_epi16(qh, (unsigned)-left),
                _mm512_set1_epi8(0x10), 0xf8); /* v | (qh' & 0x10) */
          }
          for (r = 0; r < mr; ++r) {
            const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at);
            part[r] = _mm512_dpbusd_epi32(
                part[r], v, _mm512_set1_epi32(kiln_uk_load_i32(q + 256 * b + 64 * i + 32 * h + 4 * c)));
          }
        }
        for (r = 0; r < mr; ++r)
          fs[r] = _mm512_fmadd_ps(kiln_uk_magic_float(part[r]), dsc, fs[r]);
      }
    for (i = 0; i < 4; ++i)
      mins[i] = kiln_uk_q4k_mins(s0, s1, s2, i);
    dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(gp + 32)));
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      const int32_t *pairs = (const int32_t *)(const void *)(xs + r * stride + pairs_at) + 4 * b;
      __m512i m = _mm512_setzero_si512();
      for (i = 0; i < 4; ++i)
        m = _mm512_dpwssd_epi32(m, mins[i], _mm512_set1_epi32(pairs[i]));
      acc[r] = _mm512_fmadd_ps(fs[r], _mm512_set1_ps(xd), acc[r]);
      acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(dmin, _mm512_set1_ps(xd)),
                                acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    _mm512_mask_storeu_ps(y + (size_t)r * (size_t)ldy, valid, acc[r]);
}
#define KILN_UK_HAS_PANEL_KQUANTS 1

/* The codes 0..63 of q6_k sub-block s (of 16) for columns 4t..4t+3 of it, in
 * a panel's super-block gp of nr rows: a nibble of an ql quad, two bits of a
 * qh quad. Shifts of 16-bit lanes are exact here: the masks drop the bits that
 * cross a byte. */
static inline __m512i kiln_uk_q6k_codes(const uint8_t *gp, int32_t s, int32_t t) {
  const int32_t h = s / 8, set = (s % 8) / 2, l = 16 * (s % 2) + 4 * t;
  const __m512i ql = _mm512_loadu_si512(gp + 64 * ((64 * h + 32 * (set & 1) + l) / 4));
  const __m512i qh = _mm512_loadu_si512(gp + 64 * (32 + (32 * h + l) / 4));
  const __m512i lo = set >= 2 ? _mm512_srli_epi16(ql, 4) : ql;
  const __m512i hi = set == 0 ? _mm512_slli_epi16(qh, 4)
                     : set == 1 ? _mm512_slli_epi16(qh, 2)
                     : set == 2 ? qh
                                : _mm512_srli_epi16(qh, 2);
  return _mm512_or_si512(_mm512_and_si512(lo, _mm512_set1_epi8(15)),
                         _mm512_and_si512(hi, _mm512_set1_epi8(0x30)));
}

/* a + m x sum i of an activation row's int32 sums of 16 (at `sums`), in one
 * vpdpwssd, which a chain of vpdpbusd can then start from: the sum (at most
 * 16 x 127) in the low half of a broadcast, m in the low half of each lane and
 * 0 in the high half, which meets the sum's sign bits. A scalar multiply and a
 * broadcast from a general register cost four instructions a row. */
static inline __m512i kiln_uk_plus_sum16(__m512i a, int32_t m, const uint8_t *sums, int32_t i) {
  return _mm512_dpwssd_epi32(a, _mm512_set1_epi32((int32_t)(uint16_t)m),
                             _mm512_set1_epi32(((const int32_t *)(const void *)sums)[i]));
}

/* Values a kernel stored to broadcast later are read from memory: without
 * this, compilers keep them in a register and permute each out, on the
 * shuffle port the kernels need. */
static inline void kiln_uk_reload_barrier(void) { __asm__ __volatile__("" : : : "memory"); }

/* kiln_uk_lane_byte128 in every 128 bits. */
static inline __m512i kiln_uk_lane_byte(int32_t j) { return _mm512_broadcast_i32x4(kiln_uk_lane_byte128(j)); }

/* q6_k sub-block s's int8 scales as floats times d: a vpshufb moves byte s % 4
 * of each lane's scale word to its low byte, the xor flips its sign bit and
 * lays it in a float's mantissa, so no shift or convert reaches the multiply
 * port, which the rows' vpdpbusd keep busy. */
static inline __m512 kiln_uk_q6k_scale(__m512i words, int32_t s, __m512 d) {
  const __m512i f = _mm512_xor_si512(_mm512_shuffle_epi8(words, kiln_uk_lane_byte(s % 4)),
                                     _mm512_set1_epi32(KILN_UK_MAGIC_BITS + 128));
  return _mm512_mul_ps(_mm512_sub_ps(_mm512_castsi512_ps(f), _mm512_set1_ps(KILN_UK_MAGIC + 128.0f)), d);
}

/* As panel_tile_q45k for a q6_k panel: per sub-block of 16, the codes times the
 * activations (vpdpbusd, from the bits of 1.5 x 2^23 as kiln_uk_magic_float
 * takes them: at most 63 x 127 x 16 in magnitude), as a float less 1.5 x 2^23
 * and 32 times the activations' sum in one subtraction (every term an integer
 * below 2^24, so exact), times d times the int8 scale; the super-block's sum
 * times the activations' scale. The subtrahends of a super-block are made per
 * row in three vector steps and broadcast from memory into the vsubps (a
 * load, not the multiply port the vpdpbusd keep busy: 1.1-1.2x as fast as a
 * vpdpwssd per sub-block and row, on 8 rows and on one). */
KILN_UK_INLINE void kiln_uk_panel_tile_q6k(const uint8_t *panel, const uint8_t *xs, size_t stride,
                                   int32_t mr, int32_t k, int32_t b0, int32_t b1, float *y,
                                   int32_t ldy, int32_t rows_valid) {
  const __mmask16 valid = (__mmask16)((1u << rows_valid) - 1u);
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256);
  const size_t sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  __m512 acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm512_setzero_ps()
                     : _mm512_maskz_loadu_ps(valid, y + (size_t)r * (size_t)ldy);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 210u * 16u;
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(gp + 208 * 16)));
    __m512i part[KILN_UK_MR_MAX];
    __m512 fs[KILN_UK_MR_MAX];
    float base[KILN_UK_MR_MAX][16];
    for (r = 0; r < mr; ++r) {
      const __m512i sums = _mm512_loadu_si512(xs + r * stride + sums_at + 64 * (size_t)b);
      _mm512_storeu_ps(base[r], _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_set1_ps(32.0f),
                                                _mm512_set1_ps(KILN_UK_MAGIC)));
      fs[r] = _mm512_setzero_ps();
    }
    kiln_uk_reload_barrier();
#pragma GCC unroll 16
    for (s = 0; s < 16; ++s) {
      const __m512 dsc = kiln_uk_q6k_scale(_mm512_loadu_si512(gp + 64 * (48 + s / 4)), s, d);
      const int32_t col = 128 * (s / 8) + 32 * ((s % 8) / 2) + 16 * (s % 2);
      kiln_uk_prefetch_share(gp, 210 * 16, s, 16, mr);
      for (r = 0; r < mr; ++r)
        part[r] = _mm512_set1_epi32(KILN_UK_MAGIC_BITS);
      for (t = 0; t < 4; ++t) {
        const __m512i v = kiln_uk_q6k_codes(gp, s, t);
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at);
          part[r] = _mm512_dpbusd_epi32(part[r], v,
                                        _mm512_set1_epi32(kiln_uk_load_i32(q + 256 * b + col + 4 * t)));
        }
      }
      for (r = 0; r < mr; ++r)
        fs[r] = _mm512_fmadd_ps(_mm512_sub_ps(_mm512_castsi512_ps(part[r]), _mm512_set1_ps(base[r][s])),
                                dsc, fs[r]);
    }
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      acc[r] = _mm512_fmadd_ps(fs[r], _mm512_set1_ps(xd), acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    _mm512_mask_storeu_ps(y + (size_t)r * (size_t)ldy, valid, acc[r]);
}

/* mr rows of block activations (blocks_quantize_row, g = 32) against blocks
 * b0..b1-1 of one q4_1, q5_0, q5_1 or iq4_nl panel, as panel_tile_int. The
 * codes become unsigned bytes (a nibble, the fifth bit beside it, or
 * iq4_nl's value + 128 from a vpshufb table) for vpdpbusd; the offset (16,
 * 128) meets the activations' integer sum, the min their scaled sum. Decode
 * and batches of a few rows (KILN_UK_STREAM_ROWS) prefetch as a stream
 * (KILN_UK_STREAM_L2_BYTES), the tiles as the other tiles. As panel_tile_int,
 * the sums leave through 1.5 x 2^23 with the offset in the subtrahend, and per
 * 16 blocks each row's subtrahends and (q4_1, q5_1) its scaled sums are made
 * in vectors and read back as broadcasts: 1.09-1.17x on 8-row tiles against a
 * scalar convert and multiply per block and row. */
KILN_UK_INLINE void kiln_uk_panel_tile_b32(int family, const uint8_t *panel, const uint8_t *xs,
                                   size_t stride, int32_t mr, int32_t k, int32_t b0, int32_t b1,
                                   float *y, int32_t ldy, int32_t rows_valid) {
  const __mmask16 valid = (__mmask16)((1u << rows_valid) - 1u);
  const int32_t mins = family == KILN_UK_Q4_1 || family == KILN_UK_Q5_1;
  const int32_t five = family == KILN_UK_Q5_0 || family == KILN_UK_Q5_1;
  const int32_t head = kiln_uk_b32_head(family), bytes = 16 * (head + 16);
  const int32_t bias = family == KILN_UK_Q5_0 ? 16 : family == KILN_UK_IQ4_NL ? 128 : 0;
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 32);
  const size_t sums_at = kiln_uk_act_blocks_sums_at(k, 32);
  const __m512i low = _mm512_set1_epi8(15), bit4 = _mm512_set1_epi8(0x10);
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odds = _mm512_add_epi32(evens, _mm512_set1_epi32(1));
  __m512i table = _mm512_setzero_si512();
  __m512 acc[KILN_UK_MR_MAX];
  int32_t r, b, c, j0;
  if (family == KILN_UK_IQ4_NL) {
    uint8_t t[16];
    for (c = 0; c < 16; ++c)
      t[c] = (uint8_t)(kiln_uk_iq4nl_values[c] + 128);
    table = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)t));
  }
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm512_setzero_ps()
                     : _mm512_maskz_loadu_ps(valid, y + (size_t)r * (size_t)ldy);
  for (j0 = b0; j0 < b1; j0 += 16) {
    const int32_t nb = b1 - j0 < 16 ? b1 - j0 : 16;
    const uint32_t halves = nb == 16 ? 0xffffffffu : (1u << (2 * nb)) - 1u;
    const __mmask16 blocks = (__mmask16)((1u << nb) - 1u);
    float base[KILN_UK_MR_MAX][16], scaled[KILN_UK_MR_MAX][16];
    for (r = 0; r < mr; ++r) {
      const int32_t *sums = (const int32_t *)(const void *)(xs + r * stride + sums_at) + 2 * j0;
      const __m512i s0 = _mm512_maskz_loadu_epi32((__mmask16)(halves & 0xffffu), sums);
      const __m512i s1 = _mm512_maskz_loadu_epi32((__mmask16)(halves >> 16), sums + 16);
      const __m512 isum = _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_permutex2var_epi32(s0, evens, s1),
                                                              _mm512_permutex2var_epi32(s0, odds, s1)));
      const float *xd = (const float *)(const void *)(xs + r * stride) + j0;
      _mm512_storeu_ps(base[r],
                       _mm512_fmadd_ps(isum, _mm512_set1_ps((float)bias), _mm512_set1_ps(KILN_UK_MAGIC)));
      if (mins)
        _mm512_storeu_ps(scaled[r], _mm512_mul_ps(_mm512_maskz_loadu_ps(blocks, xd), isum));
    }
    kiln_uk_reload_barrier();
    for (b = j0; b < j0 + nb; ++b) {
      const uint8_t *gp = panel + (size_t)b * (size_t)bytes;
      const __m512i qh = five ? _mm512_loadu_si512(gp + 32 * (1 + mins)) : _mm512_setzero_si512();
      __m512i is[KILN_UK_MR_MAX];
      __m512 d, m;
      kiln_uk_prefetch_share(gp, bytes, 0, 1, mr);
      for (r = 0; r < mr; ++r)
        is[r] = _mm512_set1_epi32(KILN_UK_MAGIC_BITS);
      for (c = 0; c < 4; ++c) {
        const __m512i v = _mm512_loadu_si512(gp + 16 * head + 64 * c);
        __m512i lo = _mm512_and_si512(v, low), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        if (five) { /* lo | (qh << (4 - c)) & 0x10, hi | (qh >> c) & 0x10 */
          lo = _mm512_ternarylogic_epi32(lo, _mm512_slli_epi32(qh, (unsigned)(4 - c)), bit4, 0xf8);
          hi = _mm512_ternarylogic_epi32(hi, _mm512_srli_epi32(qh, (unsigned)c), bit4, 0xf8);
        }
        if (family == KILN_UK_IQ4_NL) {
          lo = _mm512_shuffle_epi8(table, lo);
          hi = _mm512_shuffle_epi8(table, hi);
        }
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at) + 32 * b + 4 * c;
          is[r] = _mm512_dpbusd_epi32(is[r], lo, _mm512_set1_epi32(kiln_uk_load_i32(q)));
          is[r] = _mm512_dpbusd_epi32(is[r], hi, _mm512_set1_epi32(kiln_uk_load_i32(q + 16)));
        }
      }
      d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)gp));
      m = mins ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(gp + 32))) : d;
      for (r = 0; r < mr; ++r) {
        const float xd = ((const float *)(const void *)(xs + r * stride))[b];
        const __m512 exact = _mm512_sub_ps(_mm512_castsi512_ps(is[r]), _mm512_set1_ps(base[r][b - j0]));
        acc[r] = _mm512_fmadd_ps(exact, _mm512_mul_ps(d, _mm512_set1_ps(xd)), acc[r]);
        if (mins)
          acc[r] = _mm512_fmadd_ps(m, _mm512_set1_ps(scaled[r][b - j0]), acc[r]);
      }
    }
  }
  for (r = 0; r < mr; ++r)
    _mm512_mask_storeu_ps(y + (size_t)r * (size_t)ldy, valid, acc[r]);
}

/* q2_k's scale x code tables of super-block gp, one per sub-block, and its
 * scale words (the mins in their high nibbles). */
static inline void kiln_uk_q2k_tables(const uint8_t *gp, __m512i *table, __m512i *w) {
  int32_t s;
  for (s = 0; s < 4; ++s)
    w[s] = _mm512_loadu_si512(gp + 64 + 64 * s);
  for (s = 0; s < 16; ++s)
    table[s] = _mm512_mullo_epi32(
        _mm512_and_si512(_mm512_srli_epi32(w[s / 4], (unsigned)(8 * (s % 4))), _mm512_set1_epi32(15)),
        _mm512_set1_epi32(0x03020100));
}

/* The sum over q2_k's 16 sub-blocks of min x the activations' sum of 16, per
 * lane, from the scale words w and the row's sums of 16 at x16. A word's
 * high nibbles are two mins: masked in place they are 16 x the even one (a
 * byte's top nibble), shifted down 12 the odd one, which meets 16 x its sum
 * (at most 16 x 2048 in magnitude, an int16), so every product is 16 x the
 * true one and one exact shift ends it. */
static inline __m512i kiln_uk_q2k_mins(const __m512i *w, const int32_t *x16) {
  const __m512i even = _mm512_set1_epi32(0x00f000f0);
  __m512i m = _mm512_setzero_si512();
  int32_t s;
  for (s = 0; s < 4; ++s) { /* mins 4s, 4s + 2 and 4s + 1, 4s + 3 as 16-bit pairs */
    const int32_t *x = x16 + 4 * s;
    m = _mm512_dpwssd_epi32(m, _mm512_and_si512(w[s], even),
                            _mm512_set1_epi32((int32_t)((uint32_t)(uint16_t)x[0] | (uint32_t)x[2] << 16)));
    m = _mm512_dpwssd_epi32(
        m, _mm512_srli_epi16(w[s], 12),
        _mm512_set1_epi32((int32_t)((uint32_t)(uint16_t)(16 * x[1]) | (uint32_t)(16 * x[3]) << 16)));
  }
  return _mm512_srai_epi32(m, 4);
}

/* Byte i of each 128-bit lane: 4 (i / 4), where its row's table entries start. */
static inline __m512i kiln_uk_q2k_rows(void) {
  return _mm512_set_epi64(0x0c0c0c0c08080808LL, 0x0404040400000000LL, 0x0c0c0c0c08080808LL,
                          0x0404040400000000LL, 0x0c0c0c0c08080808LL, 0x0404040400000000LL,
                          0x0c0c0c0c08080808LL, 0x0404040400000000LL);
}

/* One row of k-quant activations against super-blocks b0..b1-1 of one q2_k
 * panel (decode). A code quad holds sub-blocks 2j + half for j = 0..3 at bits
 * 2j: masked in place, not shifted, each is 4^j x its codes (at most 192, a
 * u8), so a sub-block costs one mask and one vpdpbusd per four columns; its
 * sum, shifted back down (exact), is at most 6144 in magnitude and meets its
 * 4-bit scale in one vpdpwssd. The integers are those of panel_tile_q2k. */
KILN_UK_INLINE void kiln_uk_panel_row_q2k(const uint8_t *panel, const uint8_t *xs, int32_t k,
                                  int32_t b0, int32_t b1, float *y, int32_t rows_valid) {
  const __mmask16 valid = (__mmask16)((1u << rows_valid) - 1u);
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256);
  const int32_t *x16 = (const int32_t *)(const void *)(xs + kiln_uk_act_blocks_sums_at(k, 256));
  const int8_t *q = (const int8_t *)(const void *)(xs + xq_at);
  const float *xd = (const float *)(const void *)xs;
  const __m512i nib = _mm512_set1_epi32(15);
  __m512 acc = b0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(valid, y);
  int32_t b, h, half, t, j, c;
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 84u * 16u;
    __m512i w[4], is[2];
    __m512 dx;
    kiln_uk_prefetch_stream(gp, 84 * 16);
    for (c = 0; c < 4; ++c)
      w[c] = _mm512_loadu_si512(gp + 64 + 64 * c);
    is[0] = is[1] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (h = 0; h < 2; ++h)
#pragma GCC unroll 2
      for (half = 0; half < 2; ++half) {
        __m512i part[4];
        for (j = 0; j < 4; ++j)
          part[j] = _mm512_setzero_si512();
        for (t = 0; t < 4; ++t) {
          const __m512i v = _mm512_loadu_si512(gp + 20 * 16 + 64 * (8 * h + 4 * half + t));
          for (j = 0; j < 4; ++j)
            part[j] = _mm512_dpbusd_epi32(
                part[j], _mm512_and_si512(v, _mm512_set1_epi8((char)(3 << (2 * j)))),
                _mm512_set1_epi32(kiln_uk_load_i32(q + 256 * b + 128 * h + 32 * j + 16 * half + 4 * t)));
        }
        for (j = 0; j < 4; ++j) { /* sub-block s = 8h + 2j + half, its scale byte s % 4 of word s / 4 */
          const int32_t s = 8 * h + 2 * j + half;
          is[half] = _mm512_dpwssd_epi32(is[half], _mm512_srai_epi32(part[j], (unsigned)(2 * j)),
                                         _mm512_and_si512(_mm512_srli_epi32(w[s / 4], (unsigned)(8 * (s % 4))), nib));
        }
      }
    dx = _mm512_set1_ps(xd[b]);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(is[0], is[1])),
                          _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)gp)), dx),
                          acc);
    acc = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(kiln_uk_q2k_mins(w, x16 + 16 * b)),
                           _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(gp + 32))), dx),
                           acc);
  }
  _mm512_mask_storeu_ps(y, valid, acc);
}

/* mr rows of k-quant activations against super-blocks b0..b1-1 of one q2_k
 * panel, as panel_tile_q45k. A sub-block's scale times its 2-bit codes (at
 * most 45) comes from a vpshufb table made once per sub-block, each lane's
 * four bytes sc x (0, 1, 2, 3), so a sub-block costs one vpdpbusd per four
 * columns and row and no multiply; the mins meet the activations' sums of 16
 * in vpdpwssd pairs. */
KILN_UK_INLINE void kiln_uk_panel_tile_q2k(const uint8_t *panel, const uint8_t *xs, size_t stride,
                                   int32_t mr, int32_t k, int32_t b0, int32_t b1, float *y,
                                   int32_t ldy, int32_t rows_valid) {
  const __mmask16 valid = (__mmask16)((1u << rows_valid) - 1u);
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256);
  const size_t sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  const __m512i three = _mm512_set1_epi8(3), rows = kiln_uk_q2k_rows();
  __m512 acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t;
  if (mr == 1) {
    kiln_uk_panel_row_q2k(panel, xs, k, b0, b1, y, rows_valid);
    return;
  }
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm512_setzero_ps()
                     : _mm512_maskz_loadu_ps(valid, y + (size_t)r * (size_t)ldy);
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 84u * 16u;
    __m512i is[KILN_UK_MR_MAX], w[4], table[16];
    __m512 d, dmin;
    kiln_uk_q2k_tables(gp, table, w);
    for (r = 0; r < mr; ++r)
      is[r] = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (s = 0; s < 16; ++s) {
      const int32_t h = s / 8, j = (s % 8) / 2, half = s % 2;
      kiln_uk_prefetch_share(gp, 84 * 16, s, 16, mr);
      for (t = 0; t < 4; ++t) {
        const __m512i v = _mm512_loadu_si512(gp + 20 * 16 + 64 * (8 * h + 4 * half + t));
        const __m512i code = _mm512_and_si512(_mm512_srli_epi16(v, (unsigned)(2 * j)), three);
        const __m512i prod = _mm512_shuffle_epi8(table[s], _mm512_or_si512(code, rows));
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at);
          is[r] = _mm512_dpbusd_epi32(
              is[r], prod, _mm512_set1_epi32(kiln_uk_load_i32(q + 256 * b + 128 * h + 32 * j + 16 * half + 4 * t)));
        }
      }
    }
    d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)gp));
    dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(gp + 32)));
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      const int32_t *x16 = (const int32_t *)(const void *)(xs + r * stride + sums_at) + 16 * b;
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[r]), _mm512_mul_ps(d, _mm512_set1_ps(xd)), acc[r]);
      acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(kiln_uk_q2k_mins(w, x16)),
                                _mm512_mul_ps(dmin, _mm512_set1_ps(xd)), acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    _mm512_mask_storeu_ps(y + (size_t)r * (size_t)ldy, valid, acc[r]);
}
#define KILN_UK_HAS_PANEL_Q2K 1

/* q3_k's 16 scales of super-block gp plus 32 (0..63) as bytes: byte i of a
 * lane of sc[g] is scale 4g + i of that lane's row. Whole-register shifts
 * and masks, four of each for all 16 (the bits a shift brings across a byte
 * are masked off). */
static inline void kiln_uk_q3k_scale_bytes(const uint8_t *gp, __m512i *sc) {
  const __m512i w0 = _mm512_loadu_si512(gp + 32), w1 = _mm512_loadu_si512(gp + 96),
                w2 = _mm512_loadu_si512(gp + 160);
  const __m512i low = _mm512_set1_epi8(15), high = _mm512_set1_epi8(0x30);
  sc[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(w0, low), _mm512_slli_epi16(w2, 4), high, 0xf8);
  sc[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(w1, low), _mm512_slli_epi16(w2, 2), high, 0xf8);
  sc[2] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(w0, 4), low), w2, high, 0xf8);
  sc[3] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(w1, 4), low), _mm512_srli_epi16(w2, 2),
                                    high, 0xf8);
}

/* Scale s of kiln_uk_q3k_scale_bytes as a signed int16 in the low half of
 * each lane and 0 in the high half, vpdpwssd's other operand. */
static inline __m512i kiln_uk_q3k_scale16(const __m512i *sc, int32_t s) {
  return _mm512_sub_epi16(_mm512_shuffle_epi8(sc[s / 4], kiln_uk_lane_byte(s % 4)), _mm512_set1_epi32(32));
}

/* One row of k-quant activations against super-blocks b0..b1-1 of one q3_k
 * panel (decode), as panel_tile_q3k with each code quad loaded once for the
 * four sub-blocks whose codes it holds, and each code kept at
 * kiln_uk_code_at (at most 7 x 16, a u8): one mask, one shift of hmask
 * (shared by j = 1 and 3) and one vpternlogd a code, no shift of the codes
 * but for j = 3; the sum, shifted back down (exact), is that of the tile. */
KILN_UK_INLINE void kiln_uk_panel_row_q3k(const uint8_t *panel, const uint8_t *xs, int32_t k,
                                  int32_t b0, int32_t b1, float *y, int32_t rows_valid) {
  const __mmask16 valid = (__mmask16)((1u << rows_valid) - 1u);
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256);
  const uint8_t *sums = xs + kiln_uk_act_blocks_sums_at(k, 256);
  const int8_t *q = (const int8_t *)(const void *)(xs + xq_at);
  const float *xd = (const float *)(const void *)xs;
  __m512 acc = b0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(valid, y);
  int32_t b, h, half, t, j;
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 110u * 16u;
    __m512i sc[4], is[2];
    kiln_uk_prefetch_stream(gp, 110 * 16);
    kiln_uk_q3k_scale_bytes(gp, sc);
    is[0] = is[1] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (h = 0; h < 2; ++h)
#pragma GCC unroll 2
      for (half = 0; half < 2; ++half) {
        __m512i part[4];
        for (j = 0; j < 4; ++j) /* -4 x the sum at the code's place: the codes' offset */
          part[j] = kiln_uk_plus_sum16(_mm512_setzero_si512(), -(4 << kiln_uk_code_at(j)), sums,
                                       16 * b + 8 * h + 2 * j + half);
        for (t = 0; t < 4; ++t) {
          const __m512i v = _mm512_loadu_si512(gp + 46 * 16 + 64 * (8 * h + 4 * half + t));
          const __m512i hm = _mm512_loadu_si512(gp + 14 * 16 + 64 * (4 * half + t));
          for (j = 0; j < 4; ++j) {
            const int32_t at = kiln_uk_code_at(j), move = 4 * h + j - (at + 2); /* hmask bit 4h + j */
            const __m512i low = j < 3 ? _mm512_and_si512(v, _mm512_set1_epi8((char)(3 << at)))
                                      : _mm512_and_si512(_mm512_srli_epi16(v, 2), _mm512_set1_epi8(0x30));
            const __m512i hb = move > 0 ? _mm512_srli_epi16(hm, (unsigned)move)
                               : move < 0 ? _mm512_slli_epi16(hm, (unsigned)-move) : hm;
            part[j] = _mm512_dpbusd_epi32(
                part[j], _mm512_ternarylogic_epi32(low, hb, _mm512_set1_epi8((char)(4 << at)), 0xf8),
                _mm512_set1_epi32(kiln_uk_load_i32(q + 256 * b + 128 * h + 32 * j + 16 * half + 4 * t)));
          }
        }
        for (j = 0; j < 4; ++j)
          is[half] = _mm512_dpwssd_epi32(is[half], _mm512_srai_epi32(part[j], (unsigned)kiln_uk_code_at(j)),
                                         kiln_uk_q3k_scale16(sc, 8 * h + 2 * j + half));
      }
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(is[0], is[1])),
                          _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)gp)),
                                        _mm512_set1_ps(xd[b])),
                          acc);
  }
  _mm512_mask_storeu_ps(y, valid, acc);
}

/* mr rows of k-quant activations against super-blocks b0..b1-1 of one q3_k
 * panel: per sub-block of 16, the 3-bit codes (0..7, two bits of qs and one of
 * hmask) times the activations (vpdpbusd), less 4 x their sum (the codes'
 * offset; the chain starts from it, kiln_uk_plus_sum16), at most 8128 in
 * magnitude, so an int16, times the signed 6-bit scale in one vpdpwssd
 * (kiln_uk_q3k_scale16). */
KILN_UK_INLINE void kiln_uk_panel_tile_q3k(const uint8_t *panel, const uint8_t *xs, size_t stride,
                                   int32_t mr, int32_t k, int32_t b0, int32_t b1, float *y,
                                   int32_t ldy, int32_t rows_valid) {
  const __mmask16 valid = (__mmask16)((1u << rows_valid) - 1u);
  const size_t xq_at = kiln_uk_act_blocks_q_at(k, 256);
  const size_t sums_at = kiln_uk_act_blocks_sums_at(k, 256);
  const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
  __m512 acc[KILN_UK_MR_MAX];
  int32_t r, b, s, t;
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm512_setzero_ps()
                     : _mm512_maskz_loadu_ps(valid, y + (size_t)r * (size_t)ldy);
  if (mr == 1) {
    kiln_uk_panel_row_q3k(panel, xs, k, b0, b1, y, rows_valid);
    return;
  }
  for (b = b0; b < b1; ++b) {
    const uint8_t *gp = panel + (size_t)b * 110u * 16u;
    __m512i is[KILN_UK_MR_MAX], part[KILN_UK_MR_MAX], sc[4];
    __m512 d;
    kiln_uk_q3k_scale_bytes(gp, sc);
    for (r = 0; r < mr; ++r)
      is[r] = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (s = 0; s < 16; ++s) {
      const int32_t h = s / 8, j = (s % 8) / 2, half = s % 2;
      const int32_t bit = 4 * h + j; /* hmask's bit of this sub-block */
      kiln_uk_prefetch_share(gp, 110 * 16, s, 16, mr);
      for (r = 0; r < mr; ++r) /* -4 x the sum, from the int32 in one 16-bit product */
        part[r] = kiln_uk_plus_sum16(_mm512_setzero_si512(), -4, xs + r * stride + sums_at, 16 * b + s);
      for (t = 0; t < 4; ++t) {
        const __m512i v = _mm512_loadu_si512(gp + 46 * 16 + 64 * (8 * h + 4 * half + t));
        const __m512i hm = _mm512_loadu_si512(gp + 14 * 16 + 64 * (4 * half + t));
        const __m512i hb = bit >= 2 ? _mm512_srli_epi16(hm, (unsigned)(bit - 2))
                                    : _mm512_slli_epi16(hm, (unsigned)(2 - bit));
        const __m512i code = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, (unsigned)(2 * j)), three),
                                             _mm512_and_si512(hb, four));
        for (r = 0; r < mr; ++r) {
          const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + xq_at);
          part[r] = _mm512_dpbusd_epi32(
              part[r], code, _mm512_set1_epi32(kiln_uk_load_i32(q + 256 * b + 128 * h + 32 * j + 16 * half + 4 * t)));
        }
      }
      for (r = 0; r < mr; ++r)
        is[r] = _mm512_dpwssd_epi32(is[r], part[r], kiln_uk_q3k_scale16(sc, s));
    }
    d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)gp));
    for (r = 0; r < mr; ++r) {
      const float xd = ((const float *)(const void *)(xs + r * stride))[b];
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[r]), _mm512_mul_ps(d, _mm512_set1_ps(xd)), acc[r]);
    }
  }
  for (r = 0; r < mr; ++r)
    _mm512_mask_storeu_ps(y + (size_t)r * (size_t)ldy, valid, acc[r]);
}
#define KILN_UK_HAS_PANEL_Q3K 1

#define KILN_UK_HAS_PANEL_B32 1

/* mr rows of quantized activations (scratch rows `stride` bytes apart, k/g
 * groups each) against groups b0..b1-1 of one int8 or int4 panel; row r's 16
 * results go to y + r * ldy (the first rows_valid lanes), added to what is there unless
 * b0 is 0. Carrying the sums through y keeps the order of the additions, so the
 * K block does not change the result. A group's integer sum starts from the
 * bits of 1.5 x 2^23 and leaves as a float in one subtraction of 1.5 x 2^23
 * plus the activations' offset (bias times their sum; every term an integer
 * below 2^24, so exact, as kiln_uk_magic_float): no convert and no broadcast
 * from a general register on the ports the vpdpbusd need. The subtrahends of
 * 16 groups are made per row in three vector steps and read back as
 * broadcasts. With 7 or 8 rows, int4's high nibbles are shifted down once for
 * all rows and each row keeps one chain (1.06-1.08x on those tiles; fewer rows
 * lose more to the extra shift than they gain). */
KILN_UK_INLINE void kiln_uk_panel_tile_int(int family, const uint8_t *panel, const uint8_t *xs,
                                   size_t stride, int32_t mr, int32_t k, int32_t g, int32_t b0,
                                   int32_t b1, float *y, int32_t ldy, int32_t rows_valid) {
  const __mmask16 valid = (__mmask16)((1u << rows_valid) - 1u);
  const int32_t groups = k / g;
  const size_t group_bytes = 32u + (size_t)(family == KILN_UK_I8 ? 16 * g : 8 * g);
  const int32_t bias = family == KILN_UK_I8 ? 128 : 8;
  const int wide = family == KILN_UK_I8 && g > 128; /* a group's sum may pass 2^22 */
  const __m512i low = _mm512_set1_epi8(15);
  __m512 acc[KILN_UK_MR_MAX];
  int32_t r, b, c;
  if (family == KILN_UK_Q4_K || family == KILN_UK_Q5_K) {
    kiln_uk_panel_tile_q45k(panel, family == KILN_UK_Q5_K, xs, stride, mr, k, b0, b1, y, ldy, rows_valid);
    return;
  }
  if (family == KILN_UK_Q6_K) {
    kiln_uk_panel_tile_q6k(panel, xs, stride, mr, k, b0, b1, y, ldy, rows_valid);
    return;
  }
  if (kiln_uk_is_b32_family(family)) {
    kiln_uk_panel_tile_b32(family, panel, xs, stride, mr, k, b0, b1, y, ldy, rows_valid);
    return;
  }
  if (family == KILN_UK_Q2_K) {
    kiln_uk_panel_tile_q2k(panel, xs, stride, mr, k, b0, b1, y, ldy, rows_valid);
    return;
  }
  if (family == KILN_UK_Q3_K) {
    kiln_uk_panel_tile_q3k(panel, xs, stride, mr, k, b0, b1, y, ldy, rows_valid);
    return;
  }
  for (r = 0; r < mr; ++r)
    acc[r] = b0 == 0 ? _mm512_setzero_ps()
                     : _mm512_maskz_loadu_ps(valid, y + (size_t)r * (size_t)ldy);
  for (b = b0; b < b1; b += 16) {
    const int32_t nb = b1 - b < 16 ? b1 - b : 16;
    float base[KILN_UK_MR_MAX][16];
    int32_t j;
    for (r = 0; r < mr; ++r) {
      const int32_t *xsum = (const int32_t *)(const void *)(xs + r * stride) + groups;
      const __m512i sums = _mm512_maskz_loadu_epi32((__mmask16)((1u << nb) - 1u), xsum + b);
      _mm512_storeu_ps(base[r], _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_set1_ps((float)bias),
                                                _mm512_set1_ps(KILN_UK_MAGIC)));
    }
    kiln_uk_reload_barrier();
    for (j = 0; j < nb; ++j) {
      const uint8_t *gp = panel + (size_t)(b + j) * group_bytes;
      __m512i is[KILN_UK_MR_MAX];
      __m512 ws;
      kiln_uk_prefetch_share(gp, (int32_t)group_bytes, 0, 1, mr);
      for (r = 0; r < mr; ++r)
        is[r] = _mm512_set1_epi32(KILN_UK_MAGIC_BITS);
      if (family == KILN_UK_I8) {
        for (c = 0; c < g / 4; ++c) {
          __m512i v = _mm512_loadu_si512(gp + 32 + 64 * c);
          for (r = 0; r < mr; ++r) {
            const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + (size_t)groups * 8u);
            is[r] = _mm512_dpbusd_epi32(is[r], v,
                                        _mm512_set1_epi32(kiln_uk_load_i32(q + g * (b + j) + 4 * c)));
          }
        }
      } else {
        /* 7-8 rows: the high nibbles shifted down once for all rows, one chain a
         * row; fewer: kept in place (16 times the code) in a chain of their own. */
        const int one_chain = mr > 6;
        __m512i js[KILN_UK_MR_MAX];
        for (r = 0; r < mr; ++r)
          js[r] = _mm512_setzero_si512();
        for (c = 0; c < g / 8; ++c) {
          const __m512i v = _mm512_loadu_si512(gp + 32 + 64 * c);
          const __m512i lo = _mm512_and_si512(v, low);
          const __m512i hi =
              one_chain ? _mm512_and_si512(_mm512_srli_epi16(v, 4), low) : _mm512_andnot_si512(low, v);
          for (r = 0; r < mr; ++r) {
            const int8_t *q = (const int8_t *)(const void *)(xs + r * stride + (size_t)groups * 8u);
            const __m512i a_hi = _mm512_set1_epi32(kiln_uk_load_i32(q + g * (b + j) + g / 2 + 4 * c));
            is[r] = _mm512_dpbusd_epi32(is[r], lo,
                                        _mm512_set1_epi32(kiln_uk_load_i32(q + g * (b + j) + 4 * c)));
            if (one_chain)
              is[r] = _mm512_dpbusd_epi32(is[r], hi, a_hi);
            else
              js[r] = _mm512_dpbusd_epi32(js[r], hi, a_hi);
          }
        }
        if (!one_chain)
          for (r = 0; r < mr; ++r)
            is[r] = _mm512_add_epi32(is[r], _mm512_srai_epi32(js[r], 4));
      }
      ws = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)gp));
      for (r = 0; r < mr; ++r) {
        const float *xd = (const float *)(const void *)(xs + r * stride);
        const __m512i sum = wide ? _mm512_sub_epi32(is[r], _mm512_set1_epi32(KILN_UK_MAGIC_BITS)) : is[r];
        const __m512 exact =
            wide ? _mm512_sub_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(base[r][j] - KILN_UK_MAGIC))
                 : _mm512_sub_ps(_mm512_castsi512_ps(sum), _mm512_set1_ps(base[r][j]));
        acc[r] = _mm512_fmadd_ps(exact, _mm512_mul_ps(ws, _mm512_set1_ps(xd[b + j])), acc[r]);
      }
    }
  }
  for (r = 0; r < mr; ++r)
    _mm512_mask_storeu_ps(y + (size_t)r * (size_t)ldy, valid, acc[r]);
}

/* One quantized activation row against one whole int8/int4 panel (decode).
 * Panel after panel, a matrix's weights are one sequential stream, which this
 * core's prefetchers follow at the full read bandwidth; four panels at once
 * (four streams a panel apart) read 0.79x as fast on a 5632 x 2048 q4_0 GEMV
 * from DRAM (q8_0: 0.73x), software prefetch or not. Per lane the same integer
 * sums as panel_tile_int, so the same results. Int4 keeps the high nibbles in
 * place (v & ~15, 16 times the code) in a chain of their own, shifted back
 * exactly at the group's end: two logic ops per 64 bytes instead of three.
 * Each group's lines are prefetched KILN_UK_PREFETCH_ROW_BYTES ahead. */
KILN_UK_INLINE void kiln_uk_panel_row_int(int family, const uint8_t *panel, const uint8_t *xs, int32_t k,
                                  int32_t g, float *y) {
  const int32_t groups = k / g;
  const size_t group_bytes = 32u + (size_t)(family == KILN_UK_I8 ? 16 * g : 8 * g);
  const int32_t bias = family == KILN_UK_I8 ? 128 : 8;
  const __m512i low = _mm512_set1_epi8(15);
  const float *xd = (const float *)(const void *)xs;
  const int32_t *xsum = (const int32_t *)(const void *)(xd + groups);
  const int8_t *q = (const int8_t *)(const void *)(xsum + groups);
  __m512 acc = _mm512_setzero_ps();
  int32_t b, c;
  if (kiln_uk_is_block_family(family)) { /* the tile's one-row instance */
    kiln_uk_panel_tile_int(family, panel, xs, 0, 1, k, g, 0, k / kiln_uk_block_elements(family), y, 0, 16);
    return;
  }
  for (b = 0; b < groups; ++b) {
    const uint8_t *gp = panel + (size_t)b * group_bytes;
    __m512i is = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
    __m512 ws;
    kiln_uk_prefetch_row(gp, (int32_t)group_bytes);
    if (family == KILN_UK_I8) {
      for (c = 0; c < g / 4; ++c)
        is = _mm512_dpbusd_epi32(is, _mm512_loadu_si512(gp + 32 + 64 * c),
                                 _mm512_set1_epi32(kiln_uk_load_i32(q + g * b + 4 * c)));
    } else {
      for (c = 0; c < g / 8; ++c) {
        __m512i v = _mm512_loadu_si512(gp + 32 + 64 * c);
        is = _mm512_dpbusd_epi32(is, _mm512_and_si512(v, low),
                                 _mm512_set1_epi32(kiln_uk_load_i32(q + g * b + 4 * c)));
        hi = _mm512_dpbusd_epi32(hi, _mm512_andnot_si512(low, v),
                                 _mm512_set1_epi32(kiln_uk_load_i32(q + g * b + g / 2 + 4 * c)));
      }
      is = _mm512_add_epi32(is, _mm512_srai_epi32(hi, 4));
    }
    ws = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)gp));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(is, _mm512_set1_epi32(bias * xsum[b]))),
                          _mm512_mul_ps(ws, _mm512_set1_ps(xd[b])), acc);
  }
  _mm512_storeu_ps(y, acc);
}
#define KILN_UK_HAS_PANEL_ROW_INT 1

static inline __m512 kiln_uk_panel_load_f(int family, const uint8_t *p) {
  return family == KILN_UK_F32
             ? _mm512_loadu_ps((const float *)(const void *)p)
             : _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
}

/* mr float activation rows against columns j0..j1-1 of one f32 or f16 panel,
 * added to y unless j0 is 0. Every lane sums its products in column order, as
 * the four-panel decode tile does, so a token gives the same logits whether it
 * is decoded or prefilled in a chunk, whatever the tile. */
KILN_UK_INLINE void kiln_uk_panel_tile_float(int family, const uint8_t *panel, const float *x,
                                     int32_t mr, int32_t k, int32_t j0, int32_t j1, float *y,
                                     int32_t ldy, int32_t rows_valid) {
  const __mmask16 valid = (__mmask16)((1u << rows_valid) - 1u);
  const size_t es = family == KILN_UK_F32 ? 64u : 32u; /* bytes of one panel column */
  __m512 acc[KILN_UK_MR_MAX];
  int32_t r, j;
  for (r = 0; r < mr; ++r)
    acc[r] = j0 == 0 ? _mm512_setzero_ps()
                     : _mm512_maskz_loadu_ps(valid, y + (size_t)r * (size_t)ldy);
  for (j = j0; j < j1; ++j) {
    __m512 wv = kiln_uk_panel_load_f(family, panel + es * j);
    for (r = 0; r < mr; ++r)
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(x[(size_t)r * (size_t)k + j]), wv, acc[r]);
  }
  for (r = 0; r < mr; ++r)
    _mm512_mask_storeu_ps(y + (size_t)r * (size_t)ldy, valid, acc[r]);
}

/* As panel_tile_float over three whole panels side by side, the panels
 * panel_bytes apart: 24 accumulators take three weight loads and mr
 * broadcasts per column where three one-panel tiles take 3 + 3 mr, so the
 * tile is bound by the FMAs rather than the loads (1.2-1.4x on 128-row
 * encoder matmuls). Each lane sums in column order as the one-panel tile
 * does, so a column's outputs do not depend on its tile. */
KILN_UK_INLINE void kiln_uk_panel_tile3_float(int family, const uint8_t *panel, size_t panel_bytes,
                                      const float *x, int32_t mr, int32_t k, int32_t j0,
                                      int32_t j1, float *y, int32_t ldy) {
  const size_t es = family == KILN_UK_F32 ? 64u : 32u;
  __m512 a0[KILN_UK_MR_MAX], a1[KILN_UK_MR_MAX], a2[KILN_UK_MR_MAX];
  int32_t r, j;
  for (r = 0; r < mr; ++r) {
    float *yr = y + (size_t)r * (size_t)ldy;
    a0[r] = j0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(yr);
    a1[r] = j0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(yr + 16);
    a2[r] = j0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(yr + 32);
  }
  for (j = j0; j < j1; ++j) {
    const uint8_t *c = panel + es * j;
    __m512 w0 = kiln_uk_panel_load_f(family, c), w1 = kiln_uk_panel_load_f(family, c + panel_bytes),
           w2 = kiln_uk_panel_load_f(family, c + 2 * panel_bytes);
    for (r = 0; r < mr; ++r) {
      __m512 xv = _mm512_set1_ps(x[(size_t)r * (size_t)k + j]);
      a0[r] = _mm512_fmadd_ps(xv, w0, a0[r]);
      a1[r] = _mm512_fmadd_ps(xv, w1, a1[r]);
      a2[r] = _mm512_fmadd_ps(xv, w2, a2[r]);
    }
  }
  for (r = 0; r < mr; ++r) {
    float *yr = y + (size_t)r * (size_t)ldy;
    _mm512_storeu_ps(yr, a0[r]);
    _mm512_storeu_ps(yr + 16, a1[r]);
    _mm512_storeu_ps(yr + 32, a2[r]);
  }
}
#define KILN_UK_HAS_PANEL_TILE3_FLOAT 1

/* One activation row against four whole panels: four independent FMA chains, so
 * decode is bound by the weight stream rather than the FMA latency. Unlike
 * panel_row_int, four panels at once: one chain per panel, panel after panel,
 * read f16 from DRAM 1.04-1.18x as fast but made model A's cache-resident f16
 * decode 0.68x as fast. */
KILN_UK_INLINE void kiln_uk_panel_row4_float(int family, const uint8_t *panel, size_t panel_bytes,
                                     const float *x, int32_t k, float *y) {
  const size_t es = family == KILN_UK_F32 ? 64u : 32u;
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int32_t j;
  for (j = 0; j < k; ++j) {
    __m512 xj = _mm512_set1_ps(x[j]);
    const uint8_t *c = panel + es * j;
    if ((es * j) % 64 == 0) {
      KILN_UK_PREFETCH4(c);
      KILN_UK_PREFETCH4(c + panel_bytes);
      KILN_UK_PREFETCH4(c + 2 * panel_bytes);
      KILN_UK_PREFETCH4(c + 3 * panel_bytes);
    }
    a0 = _mm512_fmadd_ps(xj, kiln_uk_panel_load_f(family, c), a0);
    a1 = _mm512_fmadd_ps(xj, kiln_uk_panel_load_f(family, c + panel_bytes), a1);
    a2 = _mm512_fmadd_ps(xj, kiln_uk_panel_load_f(family, c + 2 * panel_bytes), a2);
    a3 = _mm512_fmadd_ps(xj, kiln_uk_panel_load_f(family, c + 3 * panel_bytes), a3);
  }
  _mm512_storeu_ps(y, a0);
  _mm512_storeu_ps(y + 16, a1);
  _mm512_storeu_ps(y + 32, a2);
  _mm512_storeu_ps(y + 48, a3);
}

#include "kernels/c99/kiln_uk_matmul_panels.h"

#endif /* KILN_UK_AVX512_MATMUL_PANELS_H */
