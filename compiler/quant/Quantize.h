#ifndef KILN_COMPILER_QUANT_QUANTIZE_H
#define KILN_COMPILER_QUANT_QUANTIZE_H

// Block quantization of weight rows: encoders and decoders for the formats a
// pack can store. Plain C++17 with no LLVM/MLIR dependency, so the runtime
// tests and tools can link it on its own.
//
// Byte layouts (all multi-byte fields little-endian, blocks back to back):
//
//   f32      4 bytes per element, the IEEE binary32 bits.
//   f16      2 bytes per element, IEEE binary16, round to nearest even.
//   q8_0     34-byte blocks of 32 elements (ggml block_q8_0):
//              f16 d, then int8 q[32];            x[j] ~ q[j] * d
//   q4_0     18-byte blocks of 32 elements (ggml block_q4_0):
//              f16 d, then uint8 qs[16] with qs[j] = q[j] | q[j + 16] << 4;
//                                                 x[j] ~ (q[j] - 8) * d
//   i8g<G>   (2 + G)-byte groups of G elements:
//              f16 d, then int8 q[G], q in [-127, 127]; x[j] ~ q[j] * d
//   i4g<G>   (2 + G/2)-byte groups of G elements:
//              f16 d, then uint8 qs[G/2] with qs[j] = q[j] | q[j + G/2] << 4,
//              q in [0, 15];                      x[j] ~ (q[j] - 8) * d
//   bf16, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k
//            ggml's block layouts, byte for byte; GgmlBlocks.h describes them
//            and how they decode.
//
// q8_0 and q4_0 reproduce ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref
// bit for bit (every operation in binary32, no fused multiply-add), so a tensor
// Kiln quantizes is byte-identical to the one llama.cpp would write.
//
// Scales: q8_0/i8g d = amax / 127; q4_0/i4g d = m / -8 where m is the element
// of largest magnitude (the first on ties) with its sign, so m encodes as code
// 0. An all-zero q4_0/i4g block therefore stores d = -0 (0x8000), as ggml does.
//
// i8g/i4g are Kiln's own group-wise formats. They differ from q8_0/q4_0 in
// one point: the values are rounded against the scale as stored in f16
// (id = 1 / f16(d)) rather than against the binary32 d, so the decoded error
// is bounded by the scale the decoder actually uses. i8g clamps to [-127, 127]
// and i4g to [0, 15] because that rounding can step past the last code.
//
// Degenerate inputs: q8_0/q4_0 follow ggml's operations to the letter, NaN
// included, and do its float-to-int8 casts as x86-64 code does (NaN or beyond
// int32 gives 0, anything else keeps its low byte), so even such blocks match
// llama.cpp on that host. i8g/i4g skip NaN when picking the scale and encode a
// NaN element as the code for 0. A group holding an infinity gets an infinite
// scale in every format.

#include "kernels/kiln_uk_abi.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::quant {

/// The rows of the format table (KILN_UK_FORMATS), numbered by their code.
enum class Format {
#define KILN_QUANT_FORMAT(id, name, pack, gguf, elements, bytes, bits, family) id = pack,
  KILN_UK_FORMATS(KILN_QUANT_FORMAT)
#undef KILN_QUANT_FORMAT
};

struct FormatSpec {
  Format format;
  // Elements per block: the table's (32 for Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/IQ4_NL,
  // 256 for the k-quants, 1 for F32/F16/BF16), G (32, 64, 128 or 256) for
  // I8G/I4G.
  unsigned group = 0;
};

/// Parses a format name of the table ("f32", "q4_k", ...), or "i8g<G>" /
/// "i4g<G>" with G one of 32, 64, 128, 256 (ASCII case-insensitive). Returns
/// false and leaves `out` untouched on anything else.
bool parseFormat(std::string_view text, FormatSpec &out);

/// The lowercase name parseFormat accepts, e.g. "q8_0", "i4g128".
std::string formatName(const FormatSpec &spec);

/// Bytes per block, from the table: f32 4, q8_0 34, q4_k 144, i8g 2 + G, ...
size_t blockBytes(const FormatSpec &spec);

/// Elements per block (the row length must be a multiple of it).
size_t blockElements(const FormatSpec &spec);

/// Bytes of n elements; n must be a multiple of blockElements(spec).
size_t rowBytes(const FormatSpec &spec, size_t n);

/// Encodes n floats (n a multiple of spec.group) into rowBytes(spec, n) bytes
/// at `out`.
void quantize(const FormatSpec &spec, const float *x, size_t n, uint8_t *out);

/// As quantize, with the importance of every input column (llama.cpp's
/// importance matrix: the mean square of the activations that column meets):
/// element j of the n (rows of `cols` columns) has the weight elementWeights
/// gives it, and each block's scales (and mins) minimise
/// sum w[j] (x[j] - y[j])^2; the plain encoding is kept where it is no worse
/// by that measure, and a block whose weights are all 0 is encoded plainly.
/// No importance (nullptr) or a format without scales: quantize.
void quantizeWeighted(const FormatSpec &spec, const float *x, size_t n, const float *importance,
                      size_t cols, uint8_t *out);

/// The weights of n elements x with the importance of their columns: what
/// quantizeWeighted minimises.
void elementWeights(const float *x, const float *importance, size_t n, float *w);

/// sum w[j] (x[j] - y[j])^2 over one block of `in` (y its decoded values,
/// `scratch` room for them).
double weightedError(const FormatSpec &spec, const float *x, const float *w, const uint8_t *in,
                     float *scratch);

/// Decodes rowBytes(spec, n) bytes at `in` into n floats.
void dequantize(const FormatSpec &spec, const uint8_t *in, size_t n, float *y);

/// sqrt(sum (x - dequantize(quantize(x)))^2 / sum x^2), accumulated in double;
/// 0 when sum x^2 == 0. n must be a multiple of spec.group.
double relativeRmsError(const FormatSpec &spec, const float *x, size_t n);

/// IEEE binary32 -> binary16, round to nearest even; subnormals and overflow to
/// infinity are exact, a NaN stays a NaN (quieted, sign and top payload kept).
uint16_t f32ToF16(float value);

/// IEEE binary16 -> binary32, exact for every input.
float f16ToF32(uint16_t bits);

} // namespace kiln::quant

#endif // KILN_COMPILER_QUANT_QUANTIZE_H
