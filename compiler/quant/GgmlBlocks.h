#ifndef KILN_COMPILER_QUANT_GGMLBLOCKS_H
#define KILN_COMPILER_QUANT_GGMLBLOCKS_H

// The ggml block formats beyond q8_0/q4_0, one block at a time. Layouts are
// ggml's (little-endian, f16 = IEEE binary16), and decoding follows ggml's
// dequantize_row_* operation for operation, each rounded to binary32 (no
// fused multiply-add), so a decoded weight has the bits llama.cpp's reference
// gives it:
//
//   bf16    2 bytes: the top half of the binary32.
//   q4_1    32 elements, 20 bytes: f16 d, f16 m, qs[16] (q[j] low nibble of
//           qs[j], q[j + 16] high);                  y = q * d + m
//   q5_0    32 / 22: f16 d, qh[4] (bit j: the fifth bit of q[j]), qs[16];
//                                                   y = (q - 16) * d
//   q5_1    32 / 24: f16 d, f16 m, qh[4], qs[16];   y = q * d + m
//   iq4_nl  32 / 18: f16 d, qs[16] as q4_0;         y = d * kiln_uk_iq4nl_values[q]
//   q2_k    256 / 84: scales[16] (scale low nibble, min high nibble, per 16
//           elements), qs[64], f16 d, f16 dmin. Element 128h + 32j + l is bits
//           2j of qs[32h + l];         y = (d * sc) * q - (dmin * m)
//   q3_k    256 / 110: hmask[32], qs[64], scales[12] (sixteen 6-bit values,
//           biased by 32), f16 d. Element 128h + 32j + l: bits 2j of qs[32h + l]
//           and bit 4h + j of hmask[l] (clear: minus 4);
//                                          y = (d * (sc - 32)) * q
//   q4_k    256 / 144: f16 d, f16 dmin, scales[12] (eight 6-bit scales and
//           mins), qs[128]. Element 64c + l (l < 32) is the low nibble of
//           qs[32c + l], element 64c + 32 + l its high nibble;
//                                          y = (d * sc) * q - (dmin * m)
//   q5_k    256 / 176: f16 d, f16 dmin, scales[12], qh[32], qs[128]; as q4_k
//           with the fifth bit of element 64c + l in bit 2c of qh[l] and of
//           element 64c + 32 + l in bit 2c + 1.
//   q6_k    256 / 210: ql[128], qh[64], int8 scales[16] (per 16 elements), f16
//           d. Element 128h + 32i + l: low 4 bits from ql[64h + 32(i & 1) + l]
//           (low nibble for i < 2), high 2 bits from bits 2i of qh[32h + l];
//                                          y = (d * sc) * (q - 32)
//   tq2_0   256 / 66: qs[64] as q2_k's (element 128h + 32j + l in bits 2j of
//           qs[32h + l]), f16 d;           y = (q - 1) * d
//
// The encoders are Kiln's own: per sub-block a small search for the scale (and
// min) of least squared error, refined by least squares, then the sub-block
// scales quantized against the super-block scale, and every value rounded
// against the scales as the decoder sees them. Weighted (an importance per
// element), the search is wider and a sub-block's scale (and min) code may be
// a neighbour of the nearest one when that rounds its values better.

#include "compiler/quant/Quantize.h"

namespace kiln::quant::ggml {

/// a * b rounded to binary32 before a caller adds to it: never fused into a
/// multiply-add, whatever the compiler's contraction (Quantize.cpp).
float roundedProduct(float a, float b);

/// Encodes one block (blockElements(format) floats) of a format listed above.
/// With weights `w` (one per element, >= 0, not all 0) the scales (and mins)
/// minimise sum w[j] (x[j] - y[j])^2 over a wider search, and q8_0, q4_0,
/// i8g and i4g (group `group`) are encoded here too, their scale fitted like
/// q5_0's rather than taken from the largest element as ggml does.
void encodeBlock(Format format, unsigned group, const float *x, const float *w, uint8_t *out);

/// The largest code of a block format's elements (0 for the formats without
/// codes: f32, f16, bf16): codes run 0..topCode, offset as the format's
/// decoder reads them (q8_0's code q is the int8 q - 127).
int topCode(Format format);

/// Element j's code in a block set to q (0..topCode); the other codes, the
/// scales and the mins stay.
void setCode(Format format, unsigned group, uint8_t *block, int j, int q);

/// The level code q stands for: q, or iq4_nl's codebook entry. Decoded,
/// element j is a * codeLevel(q) + b with a and b from its scales (and min).
float codeLevel(Format format, int q);

/// Decodes one block with the kernel library's decoder of the format
/// (kernels/c99/kiln_uk_block_decode.h).
void decodeBlock(Format format, const uint8_t *in, float *y);

} // namespace kiln::quant::ggml

#endif // KILN_COMPILER_QUANT_GGMLBLOCKS_H
