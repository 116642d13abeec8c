/* x86-avx2: what the AVX2 kernels (and the AVX-512 ones, which build on
 * them) share: the weight-stream prefetches, horizontal sums, the int8 dot
 * products with and without VNNI, and lane helpers. */
#ifndef KILN_UK_AVX2_BASE_H
#define KILN_UK_AVX2_BASE_H

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
/* The int8/int4 decode GEMV (one panel at a time, a group's few dot products
 * between lines) asks for each line twice: into L1 1 KiB ahead and into L2
 * 4 KiB ahead. On AVX-512 a q4_0 stream kept 0.79-0.80 of a plain read of the
 * same bytes with the hardware prefetchers alone, 0.86-0.90 with the L1
 * request, 0.97-0.98 with both (q8_0: 0.96, 1.00), on a Xeon, one thread or
 * two (bench/gemv.c); the AVX2 kernels ask the same. */
#ifndef KILN_UK_PREFETCH_ROW_BYTES
#define KILN_UK_PREFETCH_ROW_BYTES 1024
#endif
#ifndef KILN_UK_PREFETCH_ROW_L2_BYTES
#define KILN_UK_PREFETCH_ROW_L2_BYTES 4096
#endif
/* A tile of at most this many rows is a batch of decodes (or the last rows of
 * a prefill chunk): it reads each panel once, as one stream, and asks for it
 * as one (KILN_UK_STREAM_L2_BYTES). Asking as the one-row GEMV does took
 * bench/gemv.c's q4_0 5632 x 2048 from DRAM, kernel/read of 4 rows from 0.57
 * to 0.69 and of 2 rows from 0.63 to 0.86 against asking 16 KiB ahead into
 * L1, as 8-row tiles (prefill) still do. */
#define KILN_UK_STREAM_ROWS 4

/* Every line of the `bytes` at p, as the int8/int4 decode GEMV asks (above). */
KILN_UK_INLINE void kiln_uk_prefetch_row(const uint8_t *p, int32_t bytes) {
  int32_t c;
  for (c = 0; c < bytes; c += 64) {
    _mm_prefetch((const char *)p + KILN_UK_PREFETCH_ROW_BYTES + c, _MM_HINT_T0);
    _mm_prefetch((const char *)p + KILN_UK_PREFETCH_ROW_L2_BYTES + c, _MM_HINT_T1);
  }
}

/* Pins v's value in a register where it is computed. At -O3 GCC reassociates
 * a tile's chains of integer sums: it computes every product of a group
 * first, holds them on the stack and adds them up after (the q8_0 tile at six
 * rows stored and loaded 48 vectors a group). An empty asm that reads and
 * writes v keeps each running sum a running sum. */
#define KILN_UK_KEEP(v) __asm__("" : "+x"(v))

/* Decode and batches of up to KILN_UK_STREAM_ROWS rows read a panel once, as
 * one stream: each block's lines are asked for at once, into L2 only, 8 KiB
 * ahead. The block kernels read a block out of order (q6_k its d and scales,
 * last in the block, first), and asking into L1 and L2 as each step of the
 * block reached its share kept too few lines in flight. Zen 4, one row from
 * DRAM (bench/gemv.c, 5632 x 2048, kernel/read): AVX-512 q6_k 0.39 ->
 * 0.80-0.84, q4_k 0.60-0.71 -> 0.94-0.97, four rows q4_0 0.63 -> 0.84, q6_k
 * 0.33 -> 0.73; the AVX2 kernels q6_k 0.40 -> 0.78, q4_k 0.49 -> 0.70-0.81,
 * q5_k 0.56-0.61 -> 0.79-0.82. One int8/int4 row keeps kiln_uk_prefetch_row
 * (AVX-512 q8_0 0.87 against 0.74 this way). */
#define KILN_UK_STREAM_L2_BYTES 8192
KILN_UK_INLINE void kiln_uk_prefetch_stream(const uint8_t *p, int32_t bytes) {
  int32_t c;
  for (c = 0; c < bytes; c += 64)
    _mm_prefetch((const char *)p + KILN_UK_STREAM_L2_BYTES + c, _MM_HINT_T1);
}

/* Step j of `steps` of prefetching the `bytes` at p: that share of its cache
 * lines, so that a kernel's prefetches spread over its work instead of
 * filling the miss queue at once; a tile of at most KILN_UK_STREAM_ROWS rows
 * asks for every line at step 0 as a stream (above). */
KILN_UK_INLINE void kiln_uk_prefetch_share(const uint8_t *p, int32_t bytes, int32_t j, int32_t steps,
                                   int32_t mr) {
  const int32_t lines = (bytes + 63) / 64;
  int32_t c;
  if (mr <= KILN_UK_STREAM_ROWS) {
    if (j == 0)
      kiln_uk_prefetch_stream(p, bytes);
    return;
  }
  for (c = lines * j / steps; c < lines * (j + 1) / steps; ++c)
    KILN_UK_PREFETCH(p + 64 * c);
}

static inline float kiln_uk_hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

/* Sum of 32 int8 products in eight int32 lanes: |a| * (b with a's sign) as
 * unsigned x signed pairs, then pairs of 16-bit sums. Exact for b in
 * [-127, 127] and any a (|-128| is 128 as an unsigned byte): weights go in a. */
static inline __m256i kiln_uk_dot_i8x32(__m256i a, __m256i b) {
  __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
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
static inline __m256i kiln_uk_dot_u8s8(__m256i acc, __m256i w, __m256i x) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, w, x);
#elif defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(acc, w, x);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
#endif
}



/* Where the x86 decode of q2_k and q3_k keeps sub-block j's 2-bit code
 * within a byte: in place (bits 2j, 2j + 1), but j = 3 shifted down to bits
 * 4-5, so that q3_k's high bit fits beside it and vpmaddubsw's pairs stay
 * below 32767. */
static inline int32_t kiln_uk_code_at(int32_t j) { return j < 3 ? 2 * j : 4; }

/* A vpshufb control (per 128 bits) that moves byte j of each 32-bit lane to
 * the lane's low byte and zeroes the other three. */
static inline __m128i kiln_uk_lane_byte128(int32_t j) {
  const int8_t z = (int8_t)-128;
  return _mm_setr_epi8((int8_t)j, z, z, z, (int8_t)(4 + j), z, z, z, (int8_t)(8 + j), z, z, z, (int8_t)(12 + j),
                       z, z, z);
}

/* roundf of 8 lanes: truncate, then step away from zero when the fraction is
 * >= 0.5. */
static inline __m256 kiln_uk_round_away8(__m256 v) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 up =
      _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(v, t), absmask), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_andnot_ps(absmask, v));
  return _mm256_add_ps(t, _mm256_and_ps(up, one));
}

/* The largest and the smallest of 8 lanes. */
static inline float kiln_uk_hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}
static inline float kiln_uk_hmin8(__m256 v) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_min_ss(m, _mm_shuffle_ps(m, m, 1)));
}


/* 8 int32 lanes as 8 bytes at p: int8 values, or unsigned bytes 0..255. */
static inline void kiln_uk_store_bytes8(uint8_t *p, __m256i v, int is_signed) {
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  _mm_storel_epi64((__m128i *)(void *)p,
                   is_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
}

/* Loads / stores the first `valid` of 8 lanes (a whole register when 8). */
#define KILN_UK_HAS_ISUMS16 1
/* s[h] = the sum of q[16h .. 16h + 15], for h < n16: vpsadbw of the bytes
 * made unsigned (+128) sums eight at a time. */
static inline void kiln_uk_isums16(const int8_t *q, int32_t *s, int32_t n16) {
  const __m128i flip = _mm_set1_epi8((char)0x80);
  int32_t h;
  for (h = 0; h < n16; ++h) {
    const __m128i v = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(q + 16 * h)), flip);
    const __m128i sad = _mm_sad_epu8(v, _mm_setzero_si128());
    s[h] = _mm_cvtsi128_si32(_mm_add_epi32(sad, _mm_unpackhi_epi64(sad, sad))) - 16 * 128;
  }
}

static inline __m256 kiln_uk_load_lanes(const float *p, int32_t valid) {
  float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (valid == 8)
    return _mm256_loadu_ps(p);
  memcpy(t, p, sizeof(float) * (size_t)valid);
  return _mm256_loadu_ps(t);
}
static inline void kiln_uk_store_lanes(float *p, __m256 v, int32_t valid) {
  float t[8];
  if (valid == 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  _mm256_storeu_ps(t, v);
  memcpy(p, t, sizeof(float) * (size_t)valid);
}

#endif /* KILN_UK_AVX2_BASE_H */
