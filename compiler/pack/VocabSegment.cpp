#include "compiler/pack/VocabSegment.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace kiln {
namespace {

constexpr uint32_t kVersion = 1;
constexpr uint32_t kHeaderBytes = 48;

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

std::vector<uint8_t> encodeVocabSegment(const std::string &model,
                                        const std::vector<std::string> &tokens,
                                        const std::vector<float> &scores,
                                        const std::vector<int32_t> &types,
                                        const std::vector<std::string> &merges,
                                        int32_t bos, int32_t eos, int32_t unk,
                                        bool addBos, bool addEos,
                                        bool addSpacePrefix, uint32_t pre) {
  uint32_t modelCode;
  if (model == "llama")
    modelCode = 0;
  else if (model == "gpt2")
    modelCode = 1;
  else
    return {};
  const uint64_t nTokens = tokens.size(), nMerges = merges.size();
  if (nTokens == 0 || nTokens > INT32_MAX || nMerges > INT32_MAX || pre > 3 ||
      (modelCode == 0 && pre != 0))
    return {};
  auto idOk = [&](int32_t id) { return id == -1 || (id >= 0 && uint64_t(id) < nTokens); };
  if (!idOk(bos) || !idOk(eos) || !idOk(unk))
    return {};

  uint64_t blobBytes = 0;
  for (const std::string &s : tokens)
    blobBytes += s.size();
  for (const std::string &s : merges)
    blobBytes += s.size();
  const uint64_t arrays = kHeaderBytes + 4 * (nTokens * 4 + 1) + 4 * (nMerges * 2 + 1);
  const uint64_t total = arrays + blobBytes;
  if (total > UINT32_MAX)
    return {};

  uint32_t flags = (addBos && bos >= 0 ? 1u : 0u) | (addEos && eos >= 0 ? 2u : 0u) |
                   (addSpacePrefix ? 4u : 0u);
  std::vector<uint8_t> out;
  out.reserve(total);
  out.insert(out.end(), {'K', 'V', 'O', 'C'});
  put32(out, kVersion);
  put32(out, uint32_t(nTokens));
  put32(out, uint32_t(nMerges));
  put32(out, modelCode);
  put32(out, flags);
  put32(out, uint32_t(bos));
  put32(out, uint32_t(eos));
  put32(out, uint32_t(unk));
  put32(out, pre);
  put32(out, uint32_t(total));
  put32(out, 0);

  uint32_t offset = 0;
  put32(out, offset);
  for (const std::string &s : tokens)
    put32(out, offset += uint32_t(s.size()));
  for (size_t i = 0; i < nTokens; ++i) {
    float score = i < scores.size() ? scores[i] : 0.0f;
    uint32_t bits;
    std::memcpy(&bits, &score, sizeof bits);
    put32(out, bits);
  }
  for (size_t i = 0; i < nTokens; ++i)
    put32(out, uint32_t(i < types.size() ? types[i] : 1));
  for (uint32_t id : sortedOrder(tokens, /*lastFirst=*/true))
    put32(out, id);
  put32(out, offset);
  for (const std::string &s : merges)
    put32(out, offset += uint32_t(s.size()));
  for (uint32_t rank : sortedOrder(merges, /*lastFirst=*/false))
    put32(out, rank);

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
    {"refact", 3},    {"command-r", 3},
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

} // namespace kiln
