/* x86-avx2: AVX2/FMA/F16C versions of the portable row-layout dot products.
 * Only the hot helpers change (same names and signatures), so every kernel
 * body is shared with c99. */
#ifndef KILN_UK_AVX2_H
#define KILN_UK_AVX2_H

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this model was generated for x86-avx2: build with -mavx2 -mfma -mf16c"
#endif
#include <immintrin.h>

#include "kernels/c99/kiln_uk_base.h"

/* Software prefetch of the weight stream, for the x86 panel kernels: the
 * hardware prefetchers stop at 4 KiB pages. A kernel reading one panel at a
 * time (prefill tiles, the k-quants) asks 16 KiB ahead: M q4_k decode was
 * 0.75x of that at 4 KiB. A build may set the distances for its SoC. */
#ifndef KILN_UK_PREFETCH_BYTES
#define KILN_UK_PREFETCH_BYTES 16384
#endif
/* Asks for the cache line KILN_UK_PREFETCH_BYTES past p. */
#define KILN_UK_PREFETCH(p) _mm_prefetch((const char *)(p) + KILN_UK_PREFETCH_BYTES, _MM_HINT_T0)
/* The float decode kernels stream four panels at once (one FMA chain per panel
 * would bind before the memory, or before the cache for a model that fits
 * there) and ask 2 KiB ahead in each: at 16 KiB, 64 KiB would be in flight,
 * more than L1 holds (48 KiB here). They ask for L2, not L1: a line asked for
 * L1 holds one of L1's few miss buffers until it arrives. */
#ifndef KILN_UK_PREFETCH4_BYTES
#define KILN_UK_PREFETCH4_BYTES 2048
#endif
#define KILN_UK_PREFETCH4(p) _mm_prefetch((const char *)(p) + KILN_UK_PREFETCH4_BYTES, _MM_HINT_T1)

/* Step j of `steps` of prefetching the `bytes` at p: that share of its cache
 * lines, so that a kernel's prefetches spread over its work instead of
 * filling the miss queue at once. */
KILN_UK_INLINE void prefetch_share(const uint8_t *p, int32_t bytes, int32_t j, int32_t steps) {
  const int32_t lines = (bytes + 63) / 64;
  int32_t c;
  for (c = lines * j / steps; c < lines * (j + 1) / steps; ++c)
    KILN_UK_PREFETCH(p + 64 * c);
}

static inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

/* Sum of 32 int8 products in eight int32 lanes: |a| * (b with a's sign) as
 * unsigned x signed pairs (no overflow for values in [-127, 127]), then pairs of
 * 16-bit sums. */
static inline __m256i dot_i8x32(__m256i a, __m256i b) {
  __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

#define KILN_UK_HAS_DOT_F32 1
static inline float dot_f32(const float *x, const uint8_t *w, int32_t k) {
  const float *r = (const float *)(const void *)w;
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int32_t i, whole = k - k % 16;
  float s;
  for (i = 0; i < whole; i += 16) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(r + i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(r + i + 8), a1);
  }
  s = hsum_ps(_mm256_add_ps(a0, a1));
  for (i = whole; i < k; ++i)
    s += x[i] * r[i];
  return s;
}

#define KILN_UK_HAS_DOT_F16 1
static inline float dot_f16(const float *x, const uint8_t *w, int32_t k) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int32_t i, whole = k - k % 16;
  float s;
  for (i = 0; i < whole; i += 16) {
    __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(w + 2 * i)));
    __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(w + 2 * i + 16)));
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), w0, a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), w1, a1);
  }
  s = hsum_ps(_mm256_add_ps(a0, a1));
  for (i = whole; i < k; ++i)
    s += x[i] * load_f16(w + 2 * i);
  return s;
}

#define KILN_UK_HAS_QDOT_I8 1
/* int8 weights (f16 scale + g int8 per group, g a multiple of 32) against int8
 * activations: int32 sums per group, scaled and accumulated in float lanes. */
static inline float qdot_i8(const int8_t *xq, const float *xd, const uint8_t *w, int32_t k,
                     int32_t g) {
  __m256 acc = _mm256_setzero_ps();
  int32_t b, j;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + g) * b;
    __m256i s = _mm256_setzero_si256();
    for (j = 0; j < g; j += 32)
      s = _mm256_add_epi32(s, dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)(xq + g * b + j)),
                                        _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2 + j))));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(xd[b] * load_f16(blk)), acc);
  }
  return hsum_ps(acc);
}

#define KILN_UK_HAS_QDOT_I4 1
/* int4 weights: byte j of a group holds value j (low nibble) and j + g/2 (high
 * nibble), each + 8. Nibbles are spread to int8 lanes 32 values at a time. */
static inline float qdot_i4(const int8_t *xq, const float *xd, const uint8_t *w, int32_t k,
                     int32_t g) {
  const __m256i low = _mm256_set1_epi8(15), eight = _mm256_set1_epi8(8);
  __m256 acc = _mm256_setzero_ps();
  int32_t b, j, h = g / 2;
  for (b = 0; b < k / g; ++b) {
    const uint8_t *blk = w + (2 + h) * b;
    const int8_t *xb = xq + g * b;
    __m256i s = _mm256_setzero_si256();
    if (h == 16) {
      __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
      __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
      __m256i v = _mm256_sub_epi8(_mm256_and_si256(both, low), eight);
      s = dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)xb), v);
    } else {
      for (j = 0; j < h; j += 32) {
        __m256i raw = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2 + j));
        __m256i lo = _mm256_sub_epi8(_mm256_and_si256(raw, low), eight);
        __m256i hi = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low), eight);
        s = _mm256_add_epi32(s, dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)(xb + j)), lo));
        s = _mm256_add_epi32(s, dot_i8x32(_mm256_loadu_si256((const __m256i *)(const void *)(xb + h + j)), hi));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(xd[b] * load_f16(blk)), acc);
  }
  return hsum_ps(acc);
}

/* Sum of 4-byte dot products of unsigned weight bytes w and signed activations
 * x, added to acc: VNNI's vpdpbusd where the compiler may use it, else
 * vpmaddubsw + vpmaddwd, whose pairs saturate past 32767 (so weights there are
 * below 128: int4 nibbles, k-quant codes, or int8 + 128 only with VNNI). */
#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__)
#define KILN_UK_VNNI 1
#else
#define KILN_UK_VNNI 0
#endif
static inline __m256i dot_u8s8(__m256i acc, __m256i w, __m256i x) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, w, x);
#elif defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(acc, w, x);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
#endif
}

#include "kernels/x86/avx2/kiln_uk_avx2_blocks.h"

#endif /* KILN_UK_AVX2_H */
