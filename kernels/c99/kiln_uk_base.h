/* What every micro-kernel header of the library shares: fixed-size types, the
 * format families and weight layouts (kiln_uk_pack.h), the f16 conversions and
 * an unaligned f16 load. Plain C99. */
#ifndef KILN_UK_BASE_H
#define KILN_UK_BASE_H

#include "kernels/c99/kiln_uk_pack.h"
#include "kiln/kiln_half.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The large kernels are written once with a row count or tile as a parameter
 * and instantiated with constants; forcing the inline keeps them specialised. */
#if defined(__GNUC__)
#define KILN_UK_INLINE static inline __attribute__((always_inline))
#else
#define KILN_UK_INLINE static inline
#endif

/* A generated kernel that several others call (the panel matmul of one format,
 * K and tile): one copy, which GCC would otherwise clone back per caller's
 * constant arguments. */
#if defined(__clang__)
#define KILN_UK_OUTLINE __attribute__((noinline))
#elif defined(__GNUC__)
#define KILN_UK_OUTLINE __attribute__((noinline, noclone))
#else
#define KILN_UK_OUTLINE
#endif

/* The hardware conversion where there is one: the portable one scales a float
 * subnormal for a subnormal half, which costs x86 a microcode assist of about a
 * hundred cycles, and the small scales of k-quant blocks are often subnormal
 * halves. */
static inline float kiln_uk_load_f16(const uint8_t *p) {
  uint16_t h;
  memcpy(&h, p, sizeof h);
#if defined(__F16C__)
  return _cvtsh_ss(h);
#elif defined(__aarch64__) || defined(__ARM_FP16_FORMAT_IEEE)
  {
    __fp16 f;
    memcpy(&f, &h, sizeof f);
    return (float)f;
  }
#elif defined(__thumb2__) && defined(__ARM_FP) && (__ARM_FP & 2)
  { /* Armv7-M FPv5 (Cortex-M7): vcvtb, which GCC reaches only through __fp16 */
    uint32_t bits = h;
    float in, f;
    memcpy(&in, &bits, sizeof in);
    __asm__("vcvtb.f32.f16 %0, %1" : "=t"(f) : "t"(in));
    return f;
  }
#else
  return kiln_f16_to_f32(h);
#endif
}

/* Value i of a KV cache row of one head (i8 rows: unscaled), for the scalar
 * tails of vector loops. */
static inline float kiln_uk_kv_value(int family, const uint8_t *row, int32_t i) {
  float f;
  if (family == KILN_UK_F32) {
    memcpy(&f, row + 4 * i, 4);
    return f;
  }
  return family == KILN_UK_F16 ? kiln_uk_load_f16(row + 2 * i) : (float)(int8_t)row[2 + i];
}

/* The per-format KV helpers of an ISA header from its family-generic dot and
 * axpy over one cache row (i8 rows: the row's f16 scale is applied here). */
#define KILN_UK_KV_HELPERS(dot, axpy)                                                           \
  static inline float kiln_uk_kv_dot_f32(const float *q, const uint8_t *row, int32_t hd) {      \
    return dot(KILN_UK_F32, q, row, hd);                                                        \
  }                                                                                             \
  static inline void kiln_uk_kv_axpy_f32(float *acc, float e, const uint8_t *row, int32_t hd) { \
    axpy(KILN_UK_F32, acc, e, row, hd);                                                         \
  }                                                                                             \
  static inline float kiln_uk_kv_dot_f16(const float *q, const uint8_t *row, int32_t hd) {      \
    return dot(KILN_UK_F16, q, row, hd);                                                        \
  }                                                                                             \
  static inline void kiln_uk_kv_axpy_f16(float *acc, float e, const uint8_t *row, int32_t hd) { \
    axpy(KILN_UK_F16, acc, e, row, hd);                                                         \
  }                                                                                             \
  static inline void kiln_uk_kv_axpy_i8(float *acc, float e, const uint8_t *row, int32_t hd) {  \
    axpy(KILN_UK_I8, acc, e * kiln_uk_load_f16(row), row, hd);                                  \
  }

/* Asks for the cache lines of the `bytes` at p ahead of a store: the KV cache
 * row the next step writes, so that store does not wait on memory. A hint. */
static inline void kiln_uk_prefetch_store(const void *p, size_t bytes) {
#if defined(__GNUC__)
  size_t i;
  for (i = 0; i < bytes; i += 64)
    __builtin_prefetch((const char *)p + i, 1, 3);
#else
  (void)p;
  (void)bytes;
#endif
}

/* An unaligned 32-bit load: four int8 activations for one broadcast. */
static inline int32_t kiln_uk_load_i32(const int8_t *p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* The row dot of int8 (codes_per_byte 1) or int4 (2) weights, each group of g
 * an f16 scale and its codes, against int8 activations with a float scale per
 * group: `group(xq, codes, g)` gives one group's exact int32 dot, and the float
 * steps around it are the portable ones, so an ISA that brings only the group
 * dot gives the portable bits. */
#define KILN_UK_QDOT_ROW(name, codes_per_byte, group)                                        \
  static inline float name(const int8_t *xq, const float *xd, const uint8_t *w, int32_t k,  \
                           int32_t g) {                                                     \
    float acc = 0.0f;                                                                       \
    int32_t b;                                                                              \
    for (b = 0; b < k / g; ++b) {                                                           \
      const uint8_t *blk = w + (2 + g / (codes_per_byte)) * b;                              \
      acc += (float)group(xq + g * b, blk + 2, g) * (xd[b] * kiln_uk_load_f16(blk));        \
    }                                                                                       \
    return acc;                                                                             \
  }

/* Quantizes k activations per group of g: one f32 scale (amax / 127) and g
 * int8 values each, rounded half away from zero, as ggml's q8 activations. */
static inline void kiln_uk_quantize_act(const float *x, float *d, int8_t *q, int32_t k, int32_t g) {
  int32_t b, j;
  for (b = 0; b < k / g; ++b) {
    const float *xb = x + g * b;
    float amax = 0.0f, id;
    for (j = 0; j < g; ++j)
      amax = fabsf(xb[j]) > amax ? fabsf(xb[j]) : amax;
    d[b] = amax / 127.0f;
    id = d[b] != 0.0f ? 1.0f / d[b] : 0.0f;
    for (j = 0; j < g; ++j)
      q[g * b + j] = (int8_t)roundf(xb[j] * id);
  }
}

/* Writes a q4 KV block's scale (hi - lo) / 15 and minimum lo as f16 and
 * gives back the stored values, which the codes are rounded against. */
static inline void kiln_uk_kv_q4_scales(uint8_t *blk, float lo, float hi, float *d, float *m) {
  uint16_t h = kiln_f32_to_f16((hi - lo) / 15.0f);
  memcpy(blk, &h, sizeof h);
  h = kiln_f32_to_f16(lo);
  memcpy(blk + 2, &h, sizeof h);
  *d = kiln_uk_load_f16(blk);
  *m = kiln_uk_load_f16(blk + 2);
}

/* A query head against an int8 or int4 cache is quantized once per attend,
 * as the matmuls' activations are (quantize_act): per group of 32 dims (the
 * whole head when hd is no multiple of 32) an f32 scale, the int8 values and
 * their sum. A score is then an exact int32 sum per group, scaled once, on
 * every target alike. */
typedef struct kv_query {
  float d[KILN_UK_MAX_HEAD_DIM / 32];
  int32_t s[KILN_UK_MAX_HEAD_DIM / 32];
  int8_t q[KILN_UK_MAX_HEAD_DIM];
} kv_query;

static inline int32_t kiln_uk_kv_query_group(int32_t hd) { return hd % 32 == 0 ? 32 : hd; }

static inline void kiln_uk_kv_query_set(kv_query *kq, const float *q, int32_t hd) {
  const int32_t g = kiln_uk_kv_query_group(hd);
  int32_t b, i;
  kiln_uk_quantize_act(q, kq->d, kq->q, hd, g);
  for (b = 0; b < hd / g; ++b) {
    kq->s[b] = 0;
    for (i = 0; i < g; ++i)
      kq->s[b] += kq->q[g * b + i];
  }
}

/* The cache row of position t: t mod ring, or with a page table (pages not
 * NULL: a session's pages of a pool shared by several) row
 * pages[t / page] x page + t mod page. */
static inline int32_t kiln_uk_kv_slot(int32_t t, int32_t ring, const int32_t *pages, int32_t page) {
  return pages ? pages[t / page] * page + t % page : t % ring;
}

/* A fused matmul's scratch: its input rows quantized (`rows` of `stride`
 * bytes, none for float weights), then, KILN_UK_ALIGN-aligned, the rows of
 * floats it keeps (swiglu_matmul's up projection, qkv_matmul's keys and
 * values), then the row it normalizes its input into. */
static inline float *kiln_uk_fused_scratch_floats(void *scratch, int32_t rows, size_t stride) {
  return (float *)(void *)((uint8_t *)scratch +
                           (((size_t)rows * stride + (KILN_UK_ALIGN - 1u)) &
                            ~(size_t)(KILN_UK_ALIGN - 1u)));
}

static inline float *kiln_uk_norm_scratch_row(void *scratch, int32_t rows, size_t stride, int32_t floats) {
  return kiln_uk_fused_scratch_floats(scratch, rows, stride) + (size_t)rows * (size_t)floats;
}

/* The first unit of share s of `shares` equal shares of `units` (rows, or
 * (KV head, row) pairs): a split kernel's shares s0..s1-1 take units
 * kiln_uk_share(units, s0, shares) up to kiln_uk_share(units, s1, shares). */
static inline int32_t kiln_uk_share(int64_t units, int32_t s, int32_t shares) {
  return (int32_t)(units * s / shares);
}

/* Where column v of fused projections side by side falls in the one of
 * `width` columns from `start`: v - start clamped to [0, width]. */
static inline int32_t kiln_uk_part(int32_t v, int32_t start, int32_t width) {
  return v - start < 0 ? 0 : v - start > width ? width : v - start;
}

#endif /* KILN_UK_BASE_H */
