/* x86 AVX2: the k-quants most files hold (q4_k, q5_k, q6_k) and the blocks of
 * 32 (q4_1, q5_0, q5_1, iq4_nl) dotted with a quantized activation row
 * straight from the file's blocks: codes stay unsigned bytes for vpmaddubsw
 * against the int8 activations, the k-quants' sub-block scales enter through
 * vpmaddwd (a super-block summed in integers, the activations' scale being
 * per 256), and the offsets and mins through the activations' scaled sums per
 * 16. One vector accumulator per row, summed once at the end. */
#ifndef KILN_UK_AVX2_MATMUL_BLOCKS_H
#define KILN_UK_AVX2_MATMUL_BLOCKS_H

#include "kernels/x86/avx2/kiln_uk_avx2_base.h"

/* kiln_uk_matmul_blocks (in the portable header) calls the qdot_isa_* below, q4_k,
 * q5_k and q6_k's with up to four activation rows per weight row. */
#define KILN_UK_HAS_QDOT_BLOCKS 1
#define KILN_UK_QDOT_ROWS 4
#include "kernels/c99/kiln_uk_matmul_blocks.h"

/* Prefetches the weight stream KILN_UK_PREFETCH_BYTES past the `bytes` at p:
 * the rows of one matrix follow each other, so this runs ahead of the next ones
 * across the 4 KiB pages the hardware prefetchers stop at. */
KILN_UK_INLINE void kiln_uk_blocks_prefetch(const uint8_t *p, int32_t bytes) {
  int32_t o;
  for (o = 0; o < bytes; o += 64)
    KILN_UK_PREFETCH(p + o);
}

/* The sums of the activations' eight pairs of 16 at xa: block i's sum. */
static inline __m256 kiln_uk_blocks_pair_sums(const float *xa) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(
      _mm256_castps_pd(_mm256_hadd_ps(_mm256_loadu_ps(xa), _mm256_loadu_ps(xa + 8))), 0xD8));
}

/* q4_k / q5_k's eight 6-bit scales (bytes 0..7) and mins (bytes 8..15) from
 * the 12 bytes at q (reads 16): scales 0..3 and mins 0..3 are the low six bits
 * of bytes 0..7; scales and mins 4..7 take the nibbles of bytes 8..11 and, as
 * bits 4..5, the top two bits of bytes 0..3 and 4..7. */
static inline __m128i kiln_uk_blocks_scale_min_k4(const uint8_t *q) {
  const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
  const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  /* (index -128 gives zero) */
  const __m128i b = _mm_shuffle_epi8(
      v, _mm_setr_epi8(-128, -128, -128, -128, 0, 1, 2, 3, -128, -128, -128, -128, 4, 5, 6, 7));
  const __m128i low = _mm_or_si128(
      _mm_and_si128(a, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0)),
      _mm_and_si128(_mm_srli_epi16(a, 4),
                    _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
  return _mm_or_si128(low, _mm_and_si128(_mm_srli_epi16(b, 2), _mm_set1_epi8(0x30)));
}

/* v's 16-bit lanes shifted left by `left` bits (right for a negative one), a
 * constant once unrolled. */
static inline __m256i kiln_uk_blocks_shift16(__m256i v, int32_t left) {
  return left >= 0 ? _mm256_sll_epi16(v, _mm_cvtsi32_si128(left))
                   : _mm256_srl_epi16(v, _mm_cvtsi32_si128(-left));
}

/* acc plus the int16 pairs p times the int16 scales s, summed in pairs:
 * vpdpwssd where the compiler may use it. */
static inline __m256i kiln_uk_blocks_madd_acc(__m256i acc, __m256i p, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpwssd_epi32(acc, p, s);
#elif defined(__AVXVNNI__)
  return _mm256_dpwssd_avx_epi32(acc, p, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, s));
#endif
}

/* From 16-bit scales (eight per 128-bit lane), scale a in the low lane's
 * words and b in the high lane's. */
static inline __m256i kiln_uk_blocks_scale_pair(__m256i scales, int32_t a, int32_t b) {
  const __m128i lo = _mm_set1_epi16((short)(2 * a | (2 * a + 1) << 8));
  const __m128i hi = _mm_set1_epi16((short)(2 * b | (2 * b + 1) << 8));
  return _mm256_shuffle_epi8(scales, _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
}

/* The k-quant activations of row r at s (blocks_quantize_row with g 256). */
static inline const float *kiln_uk_blocks_k_scales(const uint8_t *s, size_t stride, int32_t r) {
  return (const float *)(const void *)(s + (size_t)r * stride);
}

/* q4_k and q5_k (five: the fifth bits in qh) against nr <= KILN_UK_QDOT_ROWS
 * activation rows at s, stride bytes apart, into y[r * ldy]. Each super-block
 * is unpacked once for all rows: its codes (0..31) and the sub-blocks' 6-bit
 * scales as 16-bit words; per row, the codes times the activations in 16-bit
 * pairs, times the scales into int32, the super-block summed in integers then
 * d times the activations' scale once; the mins meet the activations' sums as
 * floats. A row's arithmetic is the same whatever nr. */
KILN_UK_INLINE void kiln_uk_qdot_isa_q45k(const uint8_t *s, size_t stride, int32_t nr, const uint8_t *w,
                                  int32_t k, int32_t five, float *y, size_t ldy) {
  const __m256i m4 = _mm256_set1_epi8(15), bit4 = _mm256_set1_epi8(16);
  const size_t xa_at = (size_t)(k / 256), xq_at = xa_at + (size_t)(k / 16);
  __m256 acc[KILN_UK_QDOT_ROWS], mins[KILN_UK_QDOT_ROWS];
  int32_t sb, c, r;
  for (r = 0; r < nr; ++r)
    acc[r] = mins[r] = _mm256_setzero_ps();
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + (five ? 176 : 144) * sb;
    const uint8_t *qs = blk + (five ? 48 : 16);
    kiln_uk_blocks_prefetch(blk, five ? 176 : 144);
    const __m256i hbits = five ? _mm256_loadu_si256((const __m256i *)(const void *)(blk + 16))
                               : _mm256_setzero_si256();
    const __m128i scm = kiln_uk_blocks_scale_min_k4(blk + 4);
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scm));
    const __m256 m = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(scm, 8))),
                                   _mm256_set1_ps(kiln_uk_load_f16(blk + 2)));
    const float d = kiln_uk_load_f16(blk);
    __m256i codes[8], sc[8];
    for (c = 0; c < 4; ++c) {
      const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * c));
      __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
      if (five) {
        /* qh's bits 2c and 2c + 1 moved to bit 4 (an and-or each) */
        lo = _mm256_or_si256(lo, _mm256_and_si256(kiln_uk_blocks_shift16(hbits, 4 - 2 * c), bit4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(kiln_uk_blocks_shift16(hbits, 3 - 2 * c), bit4));
      }
      codes[2 * c] = lo;
      codes[2 * c + 1] = hi;
      sc[2 * c] = kiln_uk_blocks_scale_pair(scales, 2 * c, 2 * c);
      sc[2 * c + 1] = kiln_uk_blocks_scale_pair(scales, 2 * c + 1, 2 * c + 1);
    }
    for (r = 0; r < nr; ++r) {
      const float *xd = kiln_uk_blocks_k_scales(s, stride, r);
      const int8_t *x = (const int8_t *)(const void *)(xd + xq_at) + 256 * sb;
      /* two chains of integer sums */
      __m256i sum = _mm256_setzero_si256(), sum1 = _mm256_setzero_si256();
      for (c = 0; c < 8; c += 2) {
        sum = kiln_uk_blocks_madd_acc(
            sum, _mm256_maddubs_epi16(codes[c], _mm256_loadu_si256((const __m256i *)(const void *)(x + 32 * c))),
            sc[c]);
        sum1 = kiln_uk_blocks_madd_acc(
            sum1,
            _mm256_maddubs_epi16(codes[c + 1],
                                 _mm256_loadu_si256((const __m256i *)(const void *)(x + 32 * c + 32))),
            sc[c + 1]);
      }
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(sum, sum1)),
                               _mm256_set1_ps(d * xd[sb]), acc[r]);
      mins[r] = _mm256_fmadd_ps(m, kiln_uk_blocks_pair_sums(xd + xa_at + 16 * sb), mins[r]);
    }
  }
  for (r = 0; r < nr; ++r)
    y[(size_t)r * ldy] = kiln_uk_hsum_ps(acc[r]) - kiln_uk_hsum_ps(mins[r]);
}

/* q6_k against nr rows, as qdot_isa_q45k: codes 0..63 as bytes, each sub-block
 * of 16's int8 scale on its eight pair sums, a super-block summed in integers,
 * and 32 x scale x the activations' sum for the offset. */
KILN_UK_INLINE void kiln_uk_qdot_isa_q6k(const uint8_t *s, size_t stride, int32_t nr, const uint8_t *w,
                                 int32_t k, float *y, size_t ldy) {
  const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  const size_t xa_at = (size_t)(k / 256), xq_at = xa_at + (size_t)(k / 16);
  __m256 acc[KILN_UK_QDOT_ROWS], offsets[KILN_UK_QDOT_ROWS];
  int32_t sb, h, i, r;
  for (r = 0; r < nr; ++r)
    acc[r] = offsets[r] = _mm256_setzero_ps();
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + 210 * sb;
    const __m128i sc8 = _mm_loadu_si128((const __m128i *)(const void *)(blk + 192));
    const float d = kiln_uk_load_f16(blk + 208);
    const __m256 d32 = _mm256_set1_ps(32.0f * d);
    const __m256 off0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)), d32);
    const __m256 off1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc8, 8))), d32);
    __m256i codes[8], sc[8];
    kiln_uk_blocks_prefetch(blk, 210);
    for (h = 0; h < 2; ++h) {
      const __m256i la = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 64 * h));
      const __m256i lb = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 64 * h + 32));
      const __m256i hq = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 128 + 32 * h));
      /* this half's eight scales as words in both lanes */
      const __m256i scales = _mm256_broadcastsi128_si256(
          _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(blk + 192 + 8 * h))));
      for (i = 0; i < 4; ++i) {
        const __m256i src = (i & 1) ? lb : la;
        const __m256i low = i < 2 ? _mm256_and_si256(src, m4)
                                  : _mm256_and_si256(_mm256_srli_epi16(src, 4), m4);
        /* qh's bits 2i, 2i + 1 moved to bits 4, 5 (an and-or: one vpternlog with AVX-512VL) */
        codes[4 * h + i] = _mm256_or_si256(low, _mm256_and_si256(kiln_uk_blocks_shift16(hq, 4 - 2 * i), m30));
        sc[4 * h + i] = kiln_uk_blocks_scale_pair(scales, 2 * i, 2 * i + 1);
      }
    }
    for (r = 0; r < nr; ++r) {
      const float *xd = kiln_uk_blocks_k_scales(s, stride, r);
      const int8_t *x = (const int8_t *)(const void *)(xd + xq_at) + 256 * sb;
      __m256i sum = _mm256_setzero_si256(), sum1 = _mm256_setzero_si256();
      for (i = 0; i < 8; i += 2) {
        sum = kiln_uk_blocks_madd_acc(
            sum, _mm256_maddubs_epi16(codes[i], _mm256_loadu_si256((const __m256i *)(const void *)(x + 32 * i))),
            sc[i]);
        sum1 = kiln_uk_blocks_madd_acc(
            sum1,
            _mm256_maddubs_epi16(codes[i + 1],
                                 _mm256_loadu_si256((const __m256i *)(const void *)(x + 32 * i + 32))),
            sc[i + 1]);
      }
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(sum, sum1)),
                               _mm256_set1_ps(d * xd[sb]), acc[r]);
      offsets[r] = _mm256_fmadd_ps(off0, _mm256_loadu_ps(xd + xa_at + 16 * sb), offsets[r]);
      offsets[r] = _mm256_fmadd_ps(off1, _mm256_loadu_ps(xd + xa_at + 16 * sb + 8), offsets[r]);
    }
  }
  for (r = 0; r < nr; ++r)
    y[(size_t)r * ldy] = kiln_uk_hsum_ps(acc[r]) - kiln_uk_hsum_ps(offsets[r]);
}

/* q2_k (three = 0) or q3_k: codes 0..3 from two bits of qs (q3_k: 0..7 with
 * hmask's bit as 4, its offset of 4 taken off through the activations' sums),
 * each sub-block of 16's integer scale on its eight pair sums, a super-block
 * summed in integers. */
static inline float kiln_uk_qdot_isa_q23k(const int8_t *xq, const float *xd, const float *xa,
                                  const uint8_t *w, int32_t k, int32_t three) {
  const __m256i m2 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
  __m256 acc = _mm256_setzero_ps();
  float offsets = 0.0f;
  int32_t sb, h, j;
  for (sb = 0; sb < k / 256; ++sb) {
    const uint8_t *blk = w + (three ? 110 : 84) * sb;
    const uint8_t *qs = blk + (three ? 32 : 16);
    const float d = kiln_uk_load_f16(blk + (three ? 108 : 80));
    const __m256i hm = three ? _mm256_loadu_si256((const __m256i *)(const void *)blk)
                             : _mm256_setzero_si256();
    __m256i sum = _mm256_setzero_si256();
    int32_t sc[16];
    float off[16];
    kiln_uk_blocks_prefetch(blk, three ? 110 : 84);
    kiln_uk_blocks_q23k_scales(blk, three, sc, off);
    for (h = 0; h < 2; ++h) {
      const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * h));
      for (j = 0; j < 4; ++j) {
        const int32_t b = 8 * sb + 4 * h + j, s = 8 * h + 2 * j;
        __m256i u = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * j)), m2);
        if (three)
          u = _mm256_or_si256(
              u, _mm256_slli_epi16(
                     _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(4 * h + j)), one), 2));
        sum = kiln_uk_blocks_madd_acc(
            sum, _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)(const void *)(xq + 32 * b))),
            _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)sc[s])),
                                    _mm_set1_epi16((short)sc[s + 1]), 1));
        offsets += off[s] * xa[2 * b] + off[s + 1] * xa[2 * b + 1];
      }
    }
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(xd[sb] * d), acc);
  }
  return kiln_uk_hsum_ps(acc) - offsets;
}

#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__)
/* With a VNNI dot (no 16-bit saturation), iq4_nl's levels plus 128 as unsigned
 * bytes for the u8 x s8 dot; the 128 comes off through the activations' sums. */
#define KILN_UK_IQ4NL_OFFSET 128.0f
static const uint8_t kiln_uk_iq4nl_biased[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                                 129, 141, 153, 166, 181, 197, 217, 241};
static const void *const kiln_uk_iq4nl_codes = kiln_uk_iq4nl_biased;
#else
/* Without, its signed levels and the signed dot. */
#define KILN_UK_IQ4NL_OFFSET 0.0f
static const void *const kiln_uk_iq4nl_codes = kiln_uk_iq4nl_values;
#endif

/* A block of 32's codes (blocks_codes32) dotted with 32 activations. */
static inline __m256i kiln_uk_blocks_dot32(int fmt, __m256i codes, __m256i x) {
  if (fmt == KILN_UK_IQ4_NL && KILN_UK_IQ4NL_OFFSET == 0.0f)
    return kiln_uk_dot_i8x32(codes, x);
  return kiln_uk_dot_u8s8(_mm256_setzero_si256(), codes, x);
}

/* The 32 codes of a block of 32 as bytes in the activations' order: nibbles
 * (iq4_nl: its levels, looked up), with q5_0 / q5_1's fifth bits from qh. */
KILN_UK_INLINE __m256i kiln_uk_blocks_codes32(int fmt, const uint8_t *blk) {
  const __m128i m4 = _mm_set1_epi8(15);
  const int32_t at = fmt == KILN_UK_Q4_1 ? 4 : fmt == KILN_UK_Q5_0 ? 6 : fmt == KILN_UK_Q5_1 ? 8 : 2;
  const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(blk + at));
  __m256i codes = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(q, m4)),
                                          _mm_and_si128(_mm_srli_epi16(q, 4), m4), 1);
  if (fmt == KILN_UK_Q5_0 || fmt == KILN_UK_Q5_1) {
    /* byte j gets byte j / 8 of qh, then its bit j % 8 */
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32((int)kiln_uk_load_u32le(blk + at - 4)),
        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3,
                         3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    codes = _mm256_or_si256(codes, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit),
                                                                      bit),
                                                    _mm256_set1_epi8(16)));
  }
  if (fmt == KILN_UK_IQ4_NL)
    codes = _mm256_shuffle_epi8(
        _mm256_broadcastsi128_si256(
            _mm_loadu_si128((const __m128i *)kiln_uk_iq4nl_codes)),
        codes);
  return codes;
}

/* The f16 at byte `at` of each of eight blocks `bb` bytes apart, as floats. */
static inline __m256 kiln_uk_blocks_f16x8(const uint8_t *blk, int32_t bb, int32_t at) {
  const uint8_t *p = blk + at;
  return _mm256_cvtph_ps(_mm_setr_epi16(
      (short)(p[0] | p[1] << 8), (short)(p[bb] | p[bb + 1] << 8),
      (short)(p[2 * bb] | p[2 * bb + 1] << 8), (short)(p[3 * bb] | p[3 * bb + 1] << 8),
      (short)(p[4 * bb] | p[4 * bb + 1] << 8), (short)(p[5 * bb] | p[5 * bb + 1] << 8),
      (short)(p[6 * bb] | p[6 * bb + 1] << 8), (short)(p[7 * bb] | p[7 * bb + 1] << 8)));
}

/* Blocks of 32, eight at a time: their scales times the activations' as one
 * vector (lanes broadcast in registers), the mins (q4_1, q5_1) or offsets
 * (q5_0, iq4_nl) against the activations' sums as another; the last k/32 % 8 blocks
 * one by one. */
static inline float kiln_uk_qdot_isa_b32(int fmt, const int8_t *xq, const float *xd, const float *xa,
                                   const uint8_t *w, int32_t k) {
  const int32_t bb = kiln_uk_block_bytes(fmt), nb = k / 32;
  const int32_t mins = fmt == KILN_UK_Q4_1 || fmt == KILN_UK_Q5_1;
  /* the codes' offset taken off through the activations' sums: q5_0's 16, iq4_nl's 128 */
  const float offset = fmt == KILN_UK_Q5_0 ? 16.0f : fmt == KILN_UK_IQ4_NL ? KILN_UK_IQ4NL_OFFSET : 0.0f;
  __m256 acc = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), extra = _mm256_setzero_ps();
  const int32_t full = nb - nb % 8;
  float tail = 0.0f;
  int32_t b, i;
  for (b = 0; b < full; b += 8) {
    const uint8_t *blk = w + (size_t)bb * (size_t)b;
    const __m256 d = kiln_uk_blocks_f16x8(blk, bb, 0);
    kiln_uk_blocks_prefetch(blk, 8 * bb);
    const __m256 fs = _mm256_mul_ps(d, _mm256_loadu_ps(xd + b));
    if (mins)
      extra = _mm256_fmadd_ps(kiln_uk_blocks_f16x8(blk, bb, 2), kiln_uk_blocks_pair_sums(xa + 2 * b), extra);
    else if (offset != 0.0f)
      extra = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(-offset)),
                              kiln_uk_blocks_pair_sums(xa + 2 * b), extra);
    for (i = 0; i < 8; ++i) {
      const __m256i codes = kiln_uk_blocks_codes32(fmt, blk + bb * i);
      const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(xq + (size_t)32 * (size_t)(b + i)));
      const __m256i dot = kiln_uk_blocks_dot32(fmt, codes, x);
      const __m256 f = _mm256_permutevar8x32_ps(fs, _mm256_set1_epi32(i));
      if (i & 1)
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), f, acc1);
      else
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), f, acc);
    }
  }
  for (b = full; b < nb; ++b) {
    const uint8_t *blk = w + (size_t)bb * (size_t)b;
    const float d = kiln_uk_load_f16(blk);
    const __m256i codes = kiln_uk_blocks_codes32(fmt, blk);
    const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(xq + (size_t)32 * (size_t)b));
    const __m256i dot = kiln_uk_blocks_dot32(fmt, codes, x);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(xd[b] * d), acc);
    if (mins)
      tail += kiln_uk_load_f16(blk + 2) * (xa[2 * b] + xa[2 * b + 1]);
    else
      tail -= offset * d * (xa[2 * b] + xa[2 * b + 1]);
  }
  return kiln_uk_hsum_ps(_mm256_add_ps(acc, acc1)) + (kiln_uk_hsum_ps(extra) + tail);
}

#endif /* KILN_UK_AVX2_MATMUL_BLOCKS_H */
