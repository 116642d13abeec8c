/* The kernel ABI: what kiln-compile, the micro-kernels and their tests agree on,
 * written once. The weight and cache formats (one row each), the families the
 * kernels dispatch on, the bytes of a matmul's quantized input rows (its
 * scratch), the KV cache's bytes per head, and the limits of the kernels.
 *
 * Plain C99 that C++ also compiles: the compiler includes it for its format
 * tables and scratch sizes, every kernel header and test includes it, and
 * every generated folder carries it. */
#ifndef KILN_UK_ABI_H
#define KILN_UK_ABI_H

#include <stddef.h>
#include <stdint.h>

/* The families the kernels dispatch on: how a row of weights or of a KV cache
 * is stored. The formats below map onto them; q8_0 and q4_0 are the int8 and
 * int4 families with groups of 32. */
enum {
  KILN_UK_F32 = 0,   /* float */
  KILN_UK_F16 = 1,   /* IEEE binary16 */
  KILN_UK_I8 = 2,    /* groups of an f16 scale and g int8 */
  KILN_UK_I4 = 3,    /* groups of an f16 scale and g/2 bytes of two nibbles */
  KILN_UK_Q4_K = 4,  /* the GGUF block formats, in the file's layout */
  KILN_UK_Q5_K = 5,
  KILN_UK_Q6_K = 6,
  KILN_UK_Q4 = 7,    /* KV caches only: q4_1 blocks of 32 per head */
  KILN_UK_Q4T = 8,   /* KV caches only: the same blocks in tiles of 16 positions */
  KILN_UK_BF16 = 9,
  KILN_UK_Q4_1 = 10,
  KILN_UK_Q5_0 = 11,
  KILN_UK_Q5_1 = 12,
  KILN_UK_IQ4_NL = 13,
  KILN_UK_Q2_K = 14,
  KILN_UK_Q3_K = 15,
  KILN_UK_TQ2_0 = 16,
  KILN_UK_FAMILIES = 17
};

/* The formats a weight can be stored in, one row each:
 *   X(ID, name, pack, gguf, elements, bytes, bits, family)
 * ID        the C++ enumerator (kiln::quant::Format::ID) and the pack code's name
 * name      in --quant, the dialect (!kiln.<name>), reports and kernel names
 * pack      the code in the pack table (runtime/schema/kiln_pack.fbs), the row's
 *           index in this table
 * gguf      the ggml tensor type, -1 for Kiln's own formats
 * elements  values per block; 0: a group size G chosen per use (i8g<G>, i4g<G>)
 * bytes     bytes per block, plus G * bits / 8 for the grouped formats
 * family    KILN_UK_<family> of the kernels that read it
 * The byte layouts are in compiler/quant/Quantize.h and GgmlBlocks.h. */
#define KILN_UK_FORMATS(X)                                                               \
  X(F32, "f32", 0, 0, 1, 4, 0, F32)                                                      \
  X(F16, "f16", 1, 1, 1, 2, 0, F16)                                                      \
  X(Q8_0, "q8_0", 2, 8, 32, 34, 0, I8)                                                   \
  X(Q4_0, "q4_0", 3, 2, 32, 18, 0, I4)                                                   \
  X(I8G, "i8g", 4, -1, 0, 2, 8, I8)                                                      \
  X(I4G, "i4g", 5, -1, 0, 2, 4, I4)                                                      \
  X(BF16, "bf16", 6, 30, 1, 2, 0, BF16)                                                  \
  X(Q4_1, "q4_1", 7, 3, 32, 20, 0, Q4_1)                                                 \
  X(Q5_0, "q5_0", 8, 6, 32, 22, 0, Q5_0)                                                 \
  X(Q5_1, "q5_1", 9, 7, 32, 24, 0, Q5_1)                                                 \
  X(IQ4_NL, "iq4_nl", 10, 20, 32, 18, 0, IQ4_NL)                                         \
  X(Q2_K, "q2_k", 11, 10, 256, 84, 0, Q2_K)                                              \
  X(Q3_K, "q3_k", 12, 11, 256, 110, 0, Q3_K)                                             \
  X(Q4_K, "q4_k", 13, 12, 256, 144, 0, Q4_K)                                             \
  X(Q5_K, "q5_k", 14, 13, 256, 176, 0, Q5_K)                                             \
  X(Q6_K, "q6_k", 15, 14, 256, 210, 0, Q6_K)                                             \
  X(TQ2_0, "tq2_0", 16, 35, 256, 66, 0, TQ2_0)

/* KILN_UK_FORMAT_<ID>: a format's code (its `pack` column). */
enum {
#define KILN_UK_FORMAT_CODE(id, name, pack, gguf, elements, bytes, bits, family)          \
  KILN_UK_FORMAT_##id = pack,
  KILN_UK_FORMATS(KILN_UK_FORMAT_CODE)
#undef KILN_UK_FORMAT_CODE
  KILN_UK_FORMAT_END
};

/* A row of the table, by code (null for no format). */
typedef struct kiln_uk_format_info {
  const char *name;
  int32_t pack, gguf, elements, bytes, bits, family;
} kiln_uk_format_info;

static inline const kiln_uk_format_info *kiln_uk_format(int code) {
  static const kiln_uk_format_info rows[] = {
#define KILN_UK_FORMAT_ROW(id, name, pack, gguf, elements, bytes, bits, family)           \
  {name, pack, gguf, elements, bytes, bits, KILN_UK_##family},
      KILN_UK_FORMATS(KILN_UK_FORMAT_ROW)
#undef KILN_UK_FORMAT_ROW
  };
  return code >= 0 && code < (int)(sizeof rows / sizeof rows[0]) ? &rows[code] : 0;
}

/* Values and bytes per block of format `code`, whose group is g when the
 * format's is chosen per use (0 for no format). */
static inline int32_t kiln_uk_format_elements(int code, int32_t g) {
  const kiln_uk_format_info *f = kiln_uk_format(code);
  return !f ? 0 : f->elements ? f->elements : g;
}

static inline int32_t kiln_uk_format_bytes(int code, int32_t g) {
  const kiln_uk_format_info *f = kiln_uk_format(code);
  return !f ? 0 : f->bytes + kiln_uk_format_elements(code, g) * f->bits / 8;
}

/* Group sizes i8g<G> and i4g<G> take. */
#define KILN_UK_GROUP_SIZES(X) X(32) X(64) X(128) X(256)

/* A family's name, as in kernel names: "f32", "i8", "q4_k", ... */
static inline const char *kiln_uk_family_name(int family) {
  static const char *const names[KILN_UK_FAMILIES] = {
      "f32", "f16", "i8", "i4", "q4_k", "q5_k", "q6_k", "q4", "q4t", "bf16",
      "q4_1", "q5_0", "q5_1", "iq4_nl", "q2_k", "q3_k", "tq2_0"};
  return family >= 0 && family < KILN_UK_FAMILIES ? names[family] : "?";
}

/* Whether a family is a GGUF block format beyond q8_0/q4_0 (read by
 * matmul_blocks and the k-quant panels, with blocks_quantize_row's input):
 * every family but the float ones, the int8/int4 groups and the KV cache's. */
static inline int kiln_uk_is_block_family(int family) {
  return family >= KILN_UK_Q4_K && family < KILN_UK_FAMILIES && family != KILN_UK_Q4 &&
         family != KILN_UK_Q4T && family != KILN_UK_BF16;
}

/* Values and bytes per block of a block family, from the format table. */
static inline int32_t kiln_uk_block_elements(int family) {
#define KILN_UK_BLOCK_ELEMENTS(id, name, pack, gguf, elements, bytes, bits, fam)        \
  if (family == KILN_UK_##fam && kiln_uk_is_block_family(KILN_UK_##fam))                \
    return elements;
  KILN_UK_FORMATS(KILN_UK_BLOCK_ELEMENTS)
#undef KILN_UK_BLOCK_ELEMENTS
  return 0;
}

static inline int32_t kiln_uk_block_bytes(int family) {
#define KILN_UK_BLOCK_BYTES(id, name, pack, gguf, elements, bytes, bits, fam)           \
  if (family == KILN_UK_##fam && kiln_uk_is_block_family(KILN_UK_##fam))                \
    return bytes;
  KILN_UK_FORMATS(KILN_UK_BLOCK_BYTES)
#undef KILN_UK_BLOCK_BYTES
  return 0;
}

/* Where a block family's f16 scale d sits in its block (at[0]), and its
 * second f16, dmin or m (at[1], -1 for none): GGUF's definitions. */
static inline void kiln_uk_block_scales_at(int family, int32_t at[2]) {
  at[0] = family == KILN_UK_Q2_K    ? 80
          : family == KILN_UK_Q3_K  ? 108
          : family == KILN_UK_Q6_K  ? 208
          : family == KILN_UK_TQ2_0 ? 64
                                    : 0;
  at[1] = family == KILN_UK_Q2_K ? 82
          : family == KILN_UK_Q4_1 || family == KILN_UK_Q5_1 || family == KILN_UK_Q4_K || family == KILN_UK_Q5_K
              ? 2
              : -1;
}

/* Bytes of one row of k values in the model's row layout (groups of g for the
 * int8 and int4 families). */
static inline size_t kiln_uk_row_bytes(int family, int32_t k, int32_t g) {
  switch (family) {
  case KILN_UK_F32: return (size_t)k * 4u;
  case KILN_UK_F16:
  case KILN_UK_BF16: return (size_t)k * 2u;
  case KILN_UK_I8: return (size_t)(k / g) * (size_t)(2 + g);
  case KILN_UK_I4: return (size_t)(k / g) * (size_t)(2 + g / 2);
  default:
    return kiln_uk_is_block_family(family) ? (size_t)(k / kiln_uk_block_elements(family)) *
                                                 (size_t)kiln_uk_block_bytes(family)
                                           : 0;
  }
}

/* --- a matmul's scratch ----------------------------------------------------- */

/* Matmuls over int8/int4 and block-format weights quantize their input rows
 * once into scratch, each row at a fixed stride; the layout depends on the
 * kernels that read it:
 *   KILN_UK_ACT_ROWS    row-layout int8/int4 weights (qdot_<family>): per group
 *                       of g an f32 scale, then the k int8 values;
 *   KILN_UK_ACT_PANELS  int8/int4 panels: the k/g scales, an int32 sum per
 *                       group, then the k int8 values;
 *   KILN_UK_ACT_BLOCKS  the GGUF block formats, in rows or k-quant panels
 *                       (blocks_quantize_row): the k/g scales, a float per 16
 *                       (the scale times the sum of its values: a block's mins
 *                       and offsets meet the activations only through it), the
 *                       k int8 values, then for the panels' integer sums a
 *                       32-bit word per 64 (the int16 sums of its two 32s:
 *                       q4_k's mins) and an int32 sum per 16 (q6_k's offset).
 * Float weights read the input as it is (KILN_UK_ACT_NONE). */
enum { KILN_UK_ACT_NONE, KILN_UK_ACT_ROWS, KILN_UK_ACT_PANELS, KILN_UK_ACT_BLOCKS };

static inline int kiln_uk_act_layout(int family, int panels) {
  if (kiln_uk_is_block_family(family))
    return KILN_UK_ACT_BLOCKS;
  if (family == KILN_UK_I8 || family == KILN_UK_I4)
    return panels ? KILN_UK_ACT_PANELS : KILN_UK_ACT_ROWS;
  return KILN_UK_ACT_NONE;
}

/* Where a KILN_UK_ACT_BLOCKS row's int8 values and its int32 sums of 16
 * start (the scales at 0, the scaled sums of 16 after them). */
static inline size_t kiln_uk_act_blocks_q_at(int32_t k, int32_t g) {
  return (size_t)(k / g + k / 16) * 4u;
}
static inline size_t kiln_uk_act_blocks_sums_at(int32_t k, int32_t g) {
  return kiln_uk_act_blocks_q_at(k, g) + (size_t)k + (size_t)(k + 63) / 64u * 4u;
}

/* Bytes of one quantized input row of k values in groups of g. */
static inline size_t kiln_uk_act_stride(int layout, int32_t k, int32_t g) {
  switch (layout) {
  case KILN_UK_ACT_ROWS: return (size_t)(k / g) * 4u + (size_t)k;
  case KILN_UK_ACT_PANELS: return (size_t)(k / g) * 8u + (size_t)k;
  case KILN_UK_ACT_BLOCKS:
    return kiln_uk_act_blocks_sums_at(k, g) + (size_t)(k / 16) * 4u;
  default: return 0;
  }
}

/* The most any layout takes for a row of k (groups of 32 are the smallest). */
static inline size_t kiln_uk_act_stride_bound(int32_t k) {
  return kiln_uk_act_stride(KILN_UK_ACT_BLOCKS, k, 32);
}

/* Buffers in the arena, weight segments in the pack and the parts of a fused
 * kernel's scratch start on this many bytes. */
#define KILN_UK_ALIGN 64

/* --- the KV cache --------------------------------------------------------- */

/* Bytes of one position of one head of hd values in a cache of `family`:
 * i8 rows carry one f16 scale per head, q4 rows a q4_1 block per 32. */
static inline size_t kiln_uk_kv_head_bytes(int family, int32_t hd) {
  switch (family) {
  case KILN_UK_F32: return (size_t)hd * 4u;
  case KILN_UK_F16: return (size_t)hd * 2u;
  case KILN_UK_I8: return 2u + (size_t)hd;
  default: return (size_t)(hd / 32) * 20u; /* KILN_UK_Q4, KILN_UK_Q4T */
  }
}

/* Positions of one head a tile of the tiled int4 cache holds. */
#define KILN_UK_KV_TILE 16

/* Where the rows of a step sit when sessions share a pool of KV pages: row r
 * at position at[r] of the session whose page table is table[r] (a batch's
 * rows belong to different sessions); span is the largest at[r] + 1, how far
 * back attention reads. A schedule over such a pool hands its kernels this in
 * place of the first row's position. */
typedef struct kiln_uk_positions {
  const int32_t *at;
  const int32_t *const *table;
  int32_t span;
} kiln_uk_positions;

/* --- an encoder's attention ------------------------------------------------- */

/* Bidirectional attention (kiln_uk_attend_bidirectional) takes this many
 * query rows at a time, their rows of scores over all t keys in scratch. */
#define KILN_UK_ATTEND_ROWS 8

static inline size_t kiln_uk_attend_scratch_bytes(int64_t t) {
  return (size_t)KILN_UK_ATTEND_ROWS * (size_t)t * 4u;
}

/* --- limits the compiler checks ------------------------------------------- */

/* The largest register tile of activation rows the panel kernels are
 * instantiated for (the cases of KILN_UK_TILE_SWITCH), and the largest head
 * dimension attention takes. */
#define KILN_UK_MR_MAX 8
#define KILN_UK_MAX_HEAD_DIM 256

#endif /* KILN_UK_ABI_H */
