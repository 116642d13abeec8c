#include "compiler/quant/QuantPolicy.h"

#include "kernels/kiln_uk_abi.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace kiln;

namespace {

/// The format table's row named f (as --quant spells it: "q4_k", "i4g64").
const kiln_uk_format_info *formatRow(llvm::StringRef f) {
  for (int code = 0; code < KILN_UK_FORMAT_END; ++code) {
    const kiln_uk_format_info *row = kiln_uk_format(code);
    llvm::StringRef rest = f;
    if (rest.consume_front(row->name) && (rest.empty() || !row->elements))
      return row;
  }
  return nullptr;
}

/// Formats of super-blocks of 256, which need a fallback for other rows.
bool isSuperBlock(llvm::StringRef f) {
  const kiln_uk_format_info *row = formatRow(f);
  return row && row->elements == 256;
}

/// Formats whose output head llama-quantize keeps at more bits: those of
/// fewer bits per weight than q6_k's 6.56 (q5_1's 6.0 and below).
bool belowSixBits(llvm::StringRef f) {
  const kiln_uk_format_info *row = formatRow(f);
  if (!row || row->family == KILN_UK_F32 || row->family == KILN_UK_F16 ||
      row->family == KILN_UK_BF16)
    return false;
  double bits = row->elements ? 8.0 * row->bytes / row->elements : row->bits;
  return bits < 6.5;
}

/// The nearest format whose blocks of 32 fit a row that is no whole number of
/// super-blocks.
std::string fallback(llvm::StringRef f) {
  if (f == "q4_k") return "q5_0";
  if (f == "q5_k") return "q5_1";
  if (f == "q6_k") return "q8_0";
  return "iq4_nl";
}

/// llama-quantize's layers that get more bits in its _M mixes.
bool moreBits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

int64_t layerOf(llvm::StringRef name) {
  int64_t layer;
  if (!name.consume_front("blk.") || name.consumeInteger(10, layer))
    return -1;
  return layer;
}

} // namespace

QuantPolicy kiln::quantPolicy(const gguf::File &model, const std::string &quant, bool pure) {
  llvm::StringRef name(quant);
  bool mix = name == "q3_k_m" || name == "q4_k_m" || name == "q5_k_m";
  QuantPolicy policy{mix ? name.drop_back(2).str() : quant, ""};
  if (pure || policy.weights.empty())
    return policy;
  llvm::StringRef base(policy.weights);
  std::set<int64_t> layers;
  for (const gguf::TensorInfo &t : model.tensors)
    if (int64_t l = layerOf(t.name); l >= 0)
      layers.insert(l);
  auto add = [&](llvm::StringRef tensor, llvm::StringRef format) {
    policy.overrides += (policy.overrides.empty() ? "" : ",") + tensor.str() + "=" + format.str();
  };
  for (const gguf::TensorInfo &t : model.tensors) {
    if (t.ne.size() != 2)
      continue;
    bool whole = t.ne[0] % 256 == 0;
    if (isSuperBlock(base) && !whole)
      add(t.name, fallback(base));
    llvm::StringRef n(t.name);
    bool head = n == "output.weight" || (n == "token_embd.weight" && !model.findTensor("output.weight"));
    if (head && belowSixBits(base))
      add(t.name, whole ? "q6_k" : "q8_0");
    int64_t layer = layerOf(n), count = int64_t(layers.size());
    bool value = n.ends_with(".attn_v.weight"), down = n.ends_with(".ffn_down.weight");
    if (!mix || !whole)
      continue;
    if (name == "q3_k_m") {
      if (value)
        add(t.name, layer < 2 ? "q5_k" : "q4_k");
      else if (down)
        add(t.name, layer < count / 16 ? "q5_k" : "q4_k");
      else if (n.ends_with(".attn_output.weight"))
        add(t.name, "q4_k");
    } else if ((value || down) && moreBits(layer, count)) {
      add(t.name, "q6_k");
    }
  }
  return policy;
}
