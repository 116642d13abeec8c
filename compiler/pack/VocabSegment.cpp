#include "compiler/pack/VocabSegment.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace kiln {
namespace {

constexpr uint32_t kVersion = 2;
constexpr uint32_t kHeaderBytes = 56;

void put32(std::vector<uint8_t> &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(uint8_t(v >> (8 * i)));
}

/// memcmp order with a proper prefix first, as the runtime's binary search.
bool bytesLess(const std::string &a, const std::string &b) {
  size_t n = std::min(a.size(), b.size());
  int c = n ? std::memcmp(a.data(), b.data(), n) : 0;
  return c != 0 ? c < 0 : a.size() < b.size();
}

/// Indices of `strings` in byte order. Equal strings: lowest index first, or
/// highest with `lastFirst`, so a lower-bound search finds the entry llama.cpp
/// keeps (its token map keeps the last id, its merge map the first rank).
std::vector<uint32_t> sortedOrder(const std::vector<std::string> &strings, bool lastFirst) {
  std::vector<uint32_t> order(strings.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (bytesLess(strings[a], strings[b]))
      return true;
    if (bytesLess(strings[b], strings[a]))
      return false;
    return lastFirst ? a > b : a < b;
  });
  return order;
}

} // namespace

std::vector<uint8_t> encodeVocabSegment(const VocabSegmentSpec &spec) {
  const std::vector<std::string> &tokens = spec.tokens, &merges = spec.merges;
  uint32_t modelCode;
  if (spec.model == "llama")
    modelCode = 0;
  else if (spec.model == "gpt2")
    modelCode = 1;
  else
    return {};
  const uint64_t nTokens = tokens.size(), nMerges = merges.size();
  if (nTokens == 0 || nTokens > INT32_MAX || nMerges > INT32_MAX || spec.pre > 4 ||
      (modelCode == 0 && spec.pre != 0) || spec.chat > 4)
    return {};
  auto idOk = [&](int32_t id) { return id == -1 || (id >= 0 && uint64_t(id) < nTokens); };
  if (!idOk(spec.bos) || !idOk(spec.eos) || !idOk(spec.unk))
    return {};
  std::vector<uint32_t> eog;
  for (int32_t id : spec.endOfGeneration) {
    if (id < 0 || uint64_t(id) >= nTokens)
      return {};
    if (std::find(eog.begin(), eog.end(), uint32_t(id)) == eog.end())
      eog.push_back(uint32_t(id));
  }
  std::sort(eog.begin(), eog.end());
  // Special tokens, longest text first (the runtime takes the longest match).
  auto type = [&](size_t i) { return i < spec.types.size() ? spec.types[i] : 1; };
  std::vector<uint32_t> specials;
  for (size_t i = 0; i < nTokens; ++i)
    if ((type(i) == 3 || type(i) == 4) && !tokens[i].empty())
      specials.push_back(uint32_t(i));
  std::sort(specials.begin(), specials.end(), [&](uint32_t a, uint32_t b) {
    return tokens[a].size() != tokens[b].size() ? tokens[a].size() > tokens[b].size() : a < b;
  });

  uint64_t blobBytes = 0;
  for (const std::string &s : tokens)
    blobBytes += s.size();
  for (const std::string &s : merges)
    blobBytes += s.size();
  const uint64_t arrays = kHeaderBytes + 4 * (nTokens * 4 + 1) + 4 * (nMerges * 2 + 1) +
                          4 * (specials.size() + eog.size());
  const uint64_t total = arrays + blobBytes;
  if (total > UINT32_MAX)
    return {};

  uint32_t flags = (spec.addBos && spec.bos >= 0 ? 1u : 0u) |
                   (spec.addEos && spec.eos >= 0 ? 2u : 0u) | (spec.addSpacePrefix ? 4u : 0u);
  std::vector<uint8_t> out;
  out.reserve(total);
  out.insert(out.end(), {'K', 'V', 'O', 'C'});
  put32(out, kVersion);
  put32(out, uint32_t(nTokens));
  put32(out, uint32_t(nMerges));
  put32(out, modelCode);
  put32(out, flags);
  put32(out, uint32_t(spec.bos));
  put32(out, uint32_t(spec.eos));
  put32(out, uint32_t(spec.unk));
  put32(out, spec.pre);
  put32(out, uint32_t(total));
  put32(out, uint32_t(specials.size()));
  put32(out, uint32_t(eog.size()));
  put32(out, spec.chat);

  uint32_t offset = 0;
  put32(out, offset);
  for (const std::string &s : tokens)
    put32(out, offset += uint32_t(s.size()));
  for (size_t i = 0; i < nTokens; ++i) {
    float score = i < spec.scores.size() ? spec.scores[i] : 0.0f;
    uint32_t bits;
    std::memcpy(&bits, &score, sizeof bits);
    put32(out, bits);
  }
  for (size_t i = 0; i < nTokens; ++i)
    put32(out, uint32_t(type(i)));
  for (uint32_t id : sortedOrder(tokens, /*lastFirst=*/true))
    put32(out, id);
  put32(out, offset);
  for (const std::string &s : merges)
    put32(out, offset += uint32_t(s.size()));
  for (uint32_t rank : sortedOrder(merges, /*lastFirst=*/false))
    put32(out, rank);
  for (uint32_t id : specials)
    put32(out, id);
  for (uint32_t id : eog)
    put32(out, id);

  for (const std::string &s : tokens)
    out.insert(out.end(), s.begin(), s.end());
  for (const std::string &s : merges)
    out.insert(out.end(), s.begin(), s.end());
  return out;
}

namespace {

// llama.cpp's names for each pattern (tokenizer.ggml.pre).
const struct {
  const char *name;
  int code;
} kPreTokenizers[] = {
    {"default", 0},   {"gpt-2", 0},     {"phi-2", 0},     {"llama-bpe", 1},
    {"llama3", 1},    {"llama-v3", 1},  {"falcon3", 1},   {"qwen2", 2},
    {"deepseek-r1-qwen", 2},            {"smollm", 3},    {"starcoder", 3},
    {"refact", 3},    {"command-r", 3},  {"gpt-4o", 4},
};

} // namespace

int preTokenizerCode(const std::string &pre) {
  if (pre.empty())
    return 0;
  for (const auto &p : kPreTokenizers)
    if (pre == p.name)
      return p.code;
  return -1;
}

std::string preTokenizerNames() {
  std::string names;
  for (const auto &p : kPreTokenizers)
    names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

uint32_t chatTemplateCode(const std::string &t) {
  auto has = [&](const char *marker) { return t.find(marker) != std::string::npos; };
  if (has("<|start_header_id|>") && has("<|end_header_id|>"))
    return 1; // llama3
  if (has("<|im_start|>"))
    return 2; // chatml
  if (has("<start_of_turn>"))
    return 3; // gemma
  if (has("<|assistant|>") && has("<|end|>"))
    return 4; // phi3
  return 0;
}

const char *chatTemplateName(uint32_t code) {
  static const char *const names[] = {"none", "llama3", "chatml", "gemma", "phi3"};
  return code < 5 ? names[code] : "none";
}

} // namespace kiln
