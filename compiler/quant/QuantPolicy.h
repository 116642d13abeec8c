#ifndef KILN_COMPILER_QUANT_QUANTPOLICY_H
#define KILN_COMPILER_QUANT_QUANTPOLICY_H

#include "compiler/import/GGUFReader.h"

#include <string>

namespace kiln {

/// What `--quant=NAME` means for one model: the format of every 2-D weight and
/// the per-tensor rules the policy adds before the user's --quant-override
/// (which therefore win). Like llama-quantize's defaults:
///   * below 6 bits (q2_k ... q5_k, q4_0 ... q5_1, iq4_nl, i4g<G>), the output
///     head (output.weight, or token_embd.weight when it is tied) is q6_k, or
///     q8_0 when its rows are not whole super-blocks of 256;
///   * the mixes q4_k_m and q5_k_m are q4_k / q5_k with, besides, attn_v and
///     ffn_down at q6_k in the layers that matter most (the first and last
///     eighth, and every third in between);
///   * the mix q3_k_m is q3_k with attn_v at q5_k in the first two layers and
///     q4_k after, ffn_down at q5_k in the first sixteenth and q4_k after,
///     attn_output at q4_k;
///   * a tensor whose rows are not whole blocks of the chosen k-quant takes
///     the nearest format whose blocks fit (q4_k -> q5_0, q5_k -> q5_1,
///     q6_k -> q8_0, q2_k / q3_k -> iq4_nl).
/// `pure` keeps every 2-D weight at the named format (mixes: its base).
struct QuantPolicy {
  std::string weights;   // the quantize pass's default format
  std::string overrides; // "glob=format,..." before the user's
};

/// The policy of `quant` for `model`. An empty `quant` keeps the model's
/// formats and adds no rules; the quantize pass checks the format's name.
QuantPolicy quantPolicy(const gguf::File &model, const std::string &quant, bool pure);

} // namespace kiln

#endif // KILN_COMPILER_QUANT_QUANTPOLICY_H
