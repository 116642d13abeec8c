#include "compiler/quant/QuantPolicy.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace kiln;

namespace {

bool isKQuant(llvm::StringRef f) { return f.ends_with("_k"); }

/// Formats whose output head llama-quantize keeps at more bits.
bool belowSixBits(llvm::StringRef f) {
  return isKQuant(f) ? f != "q6_k"
                     : llvm::is_contained({"q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"}, f) ||
                           f.starts_with("i4g");
}

/// The nearest format whose blocks of 32 fit a row that is no whole number of
/// a k-quant's super-blocks.
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
  bool mix = name == "q4_k_m" || name == "q5_k_m";
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
    if (isKQuant(base) && !whole)
      add(t.name, fallback(base));
    llvm::StringRef n(t.name);
    bool head = n == "output.weight" || (n == "token_embd.weight" && !model.findTensor("output.weight"));
    if (head && belowSixBits(base))
      add(t.name, whole ? "q6_k" : "q8_0");
    if (mix && whole && (n.ends_with(".attn_v.weight") || n.ends_with(".ffn_down.weight")) &&
        moreBits(layerOf(n), int64_t(layers.size())))
      add(t.name, "q6_k");
  }
  return policy;
}
