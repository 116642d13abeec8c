#include "compiler/import/LlamaImporter.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace kiln;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static Expected<int64_t> getInt(const gguf::File &file, StringRef key,
                                std::optional<int64_t> fallback = std::nullopt) {
  const gguf::Value *v = file.find(key);
  if (!v) {
    if (fallback)
      return *fallback;
    return fail(llvm::formatv("missing metadata '{0}'", key));
  }
  if (!v->isInteger() || v->asInt() <= 0 || v->asInt() > INT32_MAX)
    return fail(llvm::formatv("metadata '{0}' must be a positive integer", key));
  return v->asInt();
}

static Expected<float> getFloat(const gguf::File &file, StringRef key, float fallback) {
  const gguf::Value *v = file.find(key);
  if (!v)
    return fallback;
  if (v->type != gguf::ValueType::F32 && v->type != gguf::ValueType::F64)
    return fail(llvm::formatv("metadata '{0}' must be a float", key));
  if (!(v->real > 0))
    return fail(llvm::formatv("metadata '{0}' must be positive, got {1}", key, v->real));
  return static_cast<float>(v->real);
}

/// Checks a tensor's presence, shape (row-major) and type.
static Error checkTensor(const gguf::File &file, StringRef name,
                         ArrayRef<int64_t> shape, bool matrix) {
  const gguf::TensorInfo *t = file.findTensor(name);
  if (!t)
    return fail(llvm::formatv("missing tensor '{0}'", name));
  std::vector<int64_t> actual = t->shape();
  if (ArrayRef<int64_t>(actual) != shape) {
    auto fmt = [](ArrayRef<int64_t> s) {
      std::string out;
      llvm::raw_string_ostream os(out);
      llvm::interleave(s, os, "x");
      return out;
    };
    return fail(llvm::formatv("tensor '{0}' has shape {1}, expected {2}", name,
                              fmt(actual), fmt(shape)));
  }
  if (!matrix && t->type != uint32_t(gguf::TensorType::F32))
    return fail(llvm::formatv("tensor '{0}' is {1}; norm weights must be F32", name,
                              gguf::tensorTypeName(t->type)));
  return Error::success();
}

namespace {

/// Where an architecture departs from the llama graph.
struct Architecture {
  const char *name;
  bool neox, qkvBias, qkNorm, postNorms, gelu, embedScale;
  /// With a sliding window: every n-th layer is global (gemma3: 6), 0: none is.
  int64_t globalEvery;
};

constexpr Architecture kArchitectures[] = {
    {"llama", false, false, false, false, false, false, 0},
    {"qwen2", true, true, false, false, false, false, 0},
    {"qwen3", true, false, true, false, false, false, 0},
    {"gemma3", true, false, true, true, true, true, 6},
    {"phi3", true, false, false, false, false, false, 0},
};

const Architecture *findArchitecture(StringRef name) {
  for (const Architecture &a : kArchitectures)
    if (name == a.name)
      return &a;
  return nullptr;
}

/// `count` F32 rope divisors from tensor `name`, positive and finite.
Error readRopeFactors(const gguf::File &file, StringRef name, int64_t count,
                      std::vector<float> &out) {
  const gguf::TensorInfo *t = file.findTensor(name);
  if (t->shape() != std::vector<int64_t>{count} ||
      t->type != uint32_t(gguf::TensorType::F32))
    return fail(llvm::formatv("tensor '{0}' must be {1} F32 values (one per rotated pair), "
                              "got {2} of {3}",
                              name, count, t->numElements(), gguf::tensorTypeName(t->type)));
  ArrayRef<uint8_t> bytes = file.tensorBytes(*t);
  out.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(&out[i], bytes.data() + 4 * i, sizeof(float));
    if (!(out[i] > 0.0f) || std::isinf(out[i]))
      return fail(llvm::formatv("tensor '{0}': factor {1} is {2} (must be positive and "
                                "finite)",
                                name, i, out[i]));
  }
  return Error::success();
}

std::string layerName(int64_t layer, StringRef tensor) {
  return llvm::formatv("blk.{0}.{1}", layer, tensor);
}

/// Replaces tensor `name` by views of consecutive row ranges.
void splitRows(gguf::File &file, StringRef name,
               ArrayRef<std::pair<std::string, int64_t>> parts) {
  auto it = llvm::find_if(file.tensors, [&](const gguf::TensorInfo &t) { return t.name == name; });
  gguf::TensorInfo whole = *it;
  uint64_t rowBytes = whole.bytes / whole.ne[1];
  std::vector<gguf::TensorInfo> views;
  uint64_t offset = whole.offset;
  for (const auto &[partName, rows] : parts) {
    gguf::TensorInfo v = whole;
    v.name = partName;
    v.ne[1] = rows;
    v.offset = offset;
    v.bytes = rows * rowBytes;
    offset += v.bytes;
    views.push_back(v);
  }
  it = file.tensors.erase(it);
  file.tensors.insert(it, views.begin(), views.end());
}

} // namespace

Error kiln::splitFusedTensors(gguf::File &file) {
  const gguf::Value *arch = file.find("general.architecture");
  if (!arch || arch->str != "phi3")
    return Error::success();
  Expected<int64_t> layers = getInt(file, "phi3.block_count");
  Expected<int64_t> embd = getInt(file, "phi3.embedding_length");
  Expected<int64_t> heads = getInt(file, "phi3.attention.head_count");
  Expected<int64_t> ff = getInt(file, "phi3.feed_forward_length");
  for (Expected<int64_t> *v : {&layers, &embd, &heads, &ff})
    if (!*v)
      return v->takeError();
  Expected<int64_t> kvHeads = getInt(file, "phi3.attention.head_count_kv", *heads);
  if (!kvHeads)
    return kvHeads.takeError();
  if (*embd % *heads != 0)
    return fail(llvm::formatv("embedding length {0} is not a multiple of the head count {1}",
                              *embd, *heads));
  int64_t q = *embd, kv = *kvHeads * (*embd / *heads);
  for (int64_t l = 0; l < *layers; ++l) {
    std::string qkv = layerName(l, "attn_qkv.weight"), up = layerName(l, "ffn_up.weight");
    if (const gguf::TensorInfo *t = file.findTensor(qkv)) {
      if (t->ne.size() != 2 || int64_t(t->ne[1]) != q + 2 * kv || int64_t(t->ne[0]) != *embd)
        return fail(llvm::formatv("tensor '{0}' must be {1}x{2} (query, key and value rows)",
                                  qkv, q + 2 * kv, *embd));
      splitRows(file, qkv, {{layerName(l, "attn_q.weight"), q},
                            {layerName(l, "attn_k.weight"), kv},
                            {layerName(l, "attn_v.weight"), kv}});
    }
    if (const gguf::TensorInfo *t = file.findTensor(up);
        t && !file.findTensor(layerName(l, "ffn_gate.weight"))) {
      if (t->ne.size() != 2 || int64_t(t->ne[1]) != 2 * *ff || int64_t(t->ne[0]) != *embd)
        return fail(llvm::formatv("tensor '{0}' must be {1}x{2} (gate rows, then up rows)", up,
                                  2 * *ff, *embd));
      splitRows(file, up, {{layerName(l, "ffn_gate.weight"), *ff}, {up, *ff}});
    }
  }
  return Error::success();
}

Expected<LlamaConfig> kiln::readLlamaConfig(const gguf::File &file) {
  const gguf::Value *archName = file.find("general.architecture");
  if (!archName || archName->type != gguf::ValueType::String)
    return fail("missing metadata 'general.architecture'");
  const Architecture *arch = findArchitecture(archName->str);
  if (!arch) {
    std::string names;
    for (const Architecture &a : kArchitectures)
      names += std::string(names.empty() ? "" : ", ") + a.name;
    return fail(llvm::formatv("unknown architecture '{0}' (supported: {1})", archName->str,
                              names));
  }

  LlamaConfig c;
  c.arch = arch->name;
  c.neoxRope = arch->neox;
  c.qkvBias = arch->qkvBias;
  c.qkNorm = arch->qkNorm;
  c.postNorms = arch->postNorms;
  c.geluFfn = arch->gelu;
  // Hyper-parameters are keyed by the architecture's name.
  auto key = [&](StringRef k) { return (c.arch + "." + k).str(); };
  if (const gguf::Value *n = file.find("general.name");
      n && n->type == gguf::ValueType::String)
    c.name = n->str;
  auto read = [&](int64_t &field, StringRef key,
                  std::optional<int64_t> fallback = std::nullopt) -> Error {
    Expected<int64_t> v = getInt(file, key, fallback);
    if (!v)
      return v.takeError();
    field = *v;
    return Error::success();
  };
  if (Error e = read(c.nEmbd, key("embedding_length")))
    return std::move(e);
  if (Error e = read(c.nLayer, key("block_count")))
    return std::move(e);
  if (Error e = read(c.nFF, key("feed_forward_length")))
    return std::move(e);
  if (Error e = read(c.nHead, key("attention.head_count")))
    return std::move(e);
  if (Error e = read(c.nKvHead, key("attention.head_count_kv"), c.nHead))
    return std::move(e);
  if (Error e = read(c.contextLength, key("context_length")))
    return std::move(e);
  if (c.nHead % c.nKvHead != 0)
    return fail(llvm::formatv("head count {0} is not a multiple of the kv head count "
                              "{1}",
                              c.nHead, c.nKvHead));
  // The head width is n_embd / n_head unless key_length says otherwise
  // (qwen3, gemma3); values must be as wide as keys.
  if (!file.find(key("attention.key_length")) && c.nEmbd % c.nHead != 0)
    return fail(llvm::formatv("embedding length {0} is not a multiple of the head "
                              "count {1}",
                              c.nEmbd, c.nHead));
  if (Error e = read(c.headDim, key("attention.key_length"),
                     c.nEmbd % c.nHead == 0 ? std::optional<int64_t>(c.nEmbd / c.nHead)
                                            : std::nullopt))
    return std::move(e);
  int64_t valueDim = 0;
  if (Error e = read(valueDim, key("attention.value_length"), c.headDim))
    return std::move(e);
  if (valueDim != c.headDim)
    return fail(llvm::formatv("metadata '{0}' is {1} but '{2}' is {3}: heads with values "
                              "narrower or wider than keys are not supported",
                              key("attention.value_length"), valueDim,
                              key("attention.key_length"), c.headDim));
  if (Error e = read(c.ropeDim, key("rope.dimension_count"), c.headDim))
    return std::move(e);
  if (c.ropeDim > c.headDim || c.ropeDim % 2 != 0)
    return fail(llvm::formatv("rope dimension {0} must be even and at most the head "
                              "dimension {1}",
                              c.ropeDim, c.headDim));
  Expected<float> base = getFloat(file, key("rope.freq_base"), 10000.0f);
  if (!base)
    return base.takeError();
  c.ropeFreqBase = *base;
  Expected<float> eps = getFloat(file, key("attention.layer_norm_rms_epsilon"), 1e-5f);
  if (!eps)
    return eps.takeError();
  c.rmsEpsilon = *eps;
  if (arch->embedScale)
    c.embedScale = std::sqrt(float(c.nEmbd));

  // Sliding-window attention: every layer, or gemma3's local layers (all but
  // every sixth). Local layers there turn with their own base and no scaling.
  if (Error e = read(c.slidingWindow, key("attention.sliding_window"), 0))
    return std::move(e);
  c.localLayers.assign(c.nLayer, false);
  if (c.slidingWindow)
    for (int64_t l = 0; l < c.nLayer; ++l)
      c.localLayers[l] = arch->globalEvery == 0 || (l + 1) % arch->globalEvery != 0;
  if (file.find(key("attention.sliding_window_pattern")))
    return fail(llvm::formatv("unsupported metadata '{0}' (Kiln derives {1}'s local layers "
                              "itself)",
                              key("attention.sliding_window_pattern"), c.arch));
  if (arch->globalEvery) {
    Expected<float> local = getFloat(file, key("rope.freq_base_swa"), 10000.0f);
    if (!local)
      return local.takeError();
    c.localRopeFreqBase = *local;
  }
  // gemma3 27B scales scores by its n_embd / n_head, not its head width.
  if (c.arch == "gemma3" && c.nLayer == 62)
    c.attentionScale = float(1.0 / std::sqrt(double(c.nEmbd / c.nHead)));

  const gguf::TensorInfo *embd = file.findTensor("token_embd.weight");
  if (!embd || embd->ne.size() != 2)
    return fail("missing tensor 'token_embd.weight' (or not 2-D)");
  c.nVocab = embd->ne[1];
  if (Error e = read(c.nVocab, key("vocab_size"), c.nVocab))
    return std::move(e);

  // Rope variants change the math: refuse those Kiln lacks rather than compute
  // something else. Linear scaling divides every frequency by its factor; Llama
  // 3's scaling is the per-pair divisors of the rope_freqs tensor; phi3's
  // LongRoPE has short and long divisors and scales q and k by attn_factor.
  const gguf::Value *scaling = file.find(key("rope.scaling.type"));
  std::string scalingType = scaling ? scaling->str : "none";
  bool longRope = file.findTensor("rope_factors_short.weight") ||
                  file.findTensor("rope_factors_long.weight");
  if (longRope && scalingType == "none")
    scalingType = "longrope";
  if (scalingType != "none" && scalingType != "linear" &&
      !(scalingType == "llama3" && file.findTensor("rope_freqs.weight")) &&
      !(scalingType == "longrope" && longRope))
    return fail(llvm::formatv("unsupported rope scaling '{0}' (metadata "
                              "'{1}'; supported: none, linear, llama3 with a rope_freqs "
                              "tensor, longrope with rope_factors tensors)",
                              scalingType, key("rope.scaling.type")));
  int64_t pairs = c.ropeDim / 2;
  c.ropeFreqFactors.assign(pairs, 1.0f);
  bool scaled = false;
  if (scalingType == "linear") {
    if (!file.find(key("rope.scaling.factor")))
      return fail(llvm::formatv("linear rope scaling without metadata '{0}'",
                                key("rope.scaling.factor")));
    Expected<float> factor = getFloat(file, key("rope.scaling.factor"), 1.0f);
    if (!factor)
      return factor.takeError();
    c.ropeFreqFactors.assign(pairs, *factor);
    scaled = true;
  }
  if (file.findTensor("rope_freqs.weight")) {
    std::vector<float> f;
    if (Error e = readRopeFactors(file, "rope_freqs.weight", pairs, f))
      return std::move(e);
    for (int64_t i = 0; i < pairs; ++i)
      c.ropeFreqFactors[i] *= f[i];
    scaled = true;
  }
  if (scalingType == "longrope") {
    for (const char *name : {"rope_factors_short.weight", "rope_factors_long.weight"})
      if (!file.findTensor(name))
        return fail(llvm::formatv("longrope scaling without tensor '{0}'", name));
    if (Error e = readRopeFactors(file, "rope_factors_short.weight", pairs, c.ropeFreqFactors))
      return std::move(e);
    if (Error e = readRopeFactors(file, "rope_factors_long.weight", pairs, c.ropeFreqFactorsLong))
      return std::move(e);
    if (Error e = read(c.ropeOriginalContext, key("rope.scaling.original_context_length")))
      return std::move(e);
    Expected<float> mscale = getFloat(file, key("rope.scaling.attn_factor"), 1.0f);
    if (!mscale)
      return mscale.takeError();
    c.ropeMscale = *mscale;
    scaled = true;
  }
  if (!scaled)
    c.ropeFreqFactors.clear();

  // Every tensor the graph reads, with its shape; any other is refused.
  int64_t d = c.nEmbd, q = c.queryWidth(), kv = c.kvWidth();
  struct Expect { std::string name; std::vector<int64_t> shape; bool matrix; };
  std::vector<Expect> expected = {{"token_embd.weight", {c.nVocab, d}, true},
                                  {"output_norm.weight", {d}, false}};
  c.tiedOutput = file.findTensor("output.weight") == nullptr;
  if (!c.tiedOutput)
    expected.push_back({"output.weight", {c.nVocab, d}, true});
  for (int64_t l = 0; l < c.nLayer; ++l) {
    auto add = [&](StringRef name, std::vector<int64_t> shape, bool matrix) {
      expected.push_back({layerName(l, name), std::move(shape), matrix});
    };
    add("attn_norm.weight", {d}, false);
    add("attn_q.weight", {q, d}, true);
    add("attn_k.weight", {kv, d}, true);
    add("attn_v.weight", {kv, d}, true);
    add("attn_output.weight", {d, q}, true);
    add("ffn_norm.weight", {d}, false);
    add("ffn_gate.weight", {c.nFF, d}, true);
    add("ffn_up.weight", {c.nFF, d}, true);
    add("ffn_down.weight", {d, c.nFF}, true);
    if (c.qkvBias) {
      add("attn_q.bias", {q}, false);
      add("attn_k.bias", {kv}, false);
      add("attn_v.bias", {kv}, false);
    }
    if (c.qkNorm) {
      add("attn_q_norm.weight", {c.headDim}, false);
      add("attn_k_norm.weight", {c.headDim}, false);
    }
    if (c.postNorms) {
      add("post_attention_norm.weight", {d}, false);
      add("post_ffw_norm.weight", {d}, false);
    }
  }
  llvm::StringSet<> known = {"rope_freqs.weight", "rope_factors_short.weight",
                             "rope_factors_long.weight"};
  for (const Expect &x : expected) {
    if (Error e = checkTensor(file, x.name, x.shape, x.matrix))
      return std::move(e);
    known.insert(x.name);
  }
  // A tensor the decoder would not read (biases, experts) means a model this
  // importer does not describe: ignoring it would give wrong results.
  for (const gguf::TensorInfo &t : file.tensors)
    if (!known.contains(t.name))
      return fail(llvm::formatv("unsupported tensor '{0}': a {1} model has no such "
                                "tensor (biases and experts are not supported)",
                                t.name, c.arch));
  return c;
}

Expected<Vocabulary> kiln::readVocabulary(const gguf::File &file) {
  Vocabulary v;
  const gguf::Value *model = file.find("tokenizer.ggml.model");
  v.model = model && model->type == gguf::ValueType::String ? model->str : "llama";
  if (v.model != "llama" && v.model != "gpt2")
    return fail(llvm::formatv("unsupported tokenizer '{0}' (supported: llama, gpt2)",
                              v.model));
  if (const gguf::Value *pre = file.find("tokenizer.ggml.pre");
      pre && pre->type == gguf::ValueType::String)
    v.preTokenizer = pre->str;
  const gguf::Value *tokens = file.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != gguf::ValueType::Array ||
      tokens->elementType != gguf::ValueType::String)
    return fail("missing metadata 'tokenizer.ggml.tokens' (array of strings)");
  for (const gguf::Value &t : tokens->elements)
    v.tokens.push_back(t.str);
  size_t n = v.tokens.size();
  if (const gguf::Value *s = file.find("tokenizer.ggml.scores")) {
    if (s->elementType != gguf::ValueType::F32 || s->elements.size() != n)
      return fail("metadata 'tokenizer.ggml.scores' must be f32 per token");
    for (const gguf::Value &x : s->elements)
      v.scores.push_back(static_cast<float>(x.real));
  }
  if (const gguf::Value *t = file.find("tokenizer.ggml.token_type")) {
    if (t->elementType != gguf::ValueType::I32 || t->elements.size() != n)
      return fail("metadata 'tokenizer.ggml.token_type' must be i32 per token");
    for (const gguf::Value &x : t->elements)
      v.types.push_back(static_cast<int32_t>(x.asInt()));
  }
  if (const gguf::Value *m = file.find("tokenizer.ggml.merges"))
    for (const gguf::Value &x : m->elements)
      v.merges.push_back(x.str);
  auto id = [&](StringRef key, int64_t &out) -> Error {
    if (const gguf::Value *x = file.find(key)) {
      if (!x->isInteger() || x->asInt() < 0 || x->asInt() >= int64_t(n))
        return fail(llvm::formatv("metadata '{0}' is not a token id below {1}", key, n));
      out = x->asInt();
    }
    return Error::success();
  };
  if (Error e = id("tokenizer.ggml.bos_token_id", v.bos))
    return std::move(e);
  if (Error e = id("tokenizer.ggml.eos_token_id", v.eos))
    return std::move(e);
  if (Error e = id("tokenizer.ggml.unknown_token_id", v.unk))
    return std::move(e);
  int64_t eot = -1, eom = -1;
  if (Error e = id("tokenizer.ggml.eot_token_id", eot))
    return std::move(e);
  if (Error e = id("tokenizer.ggml.eom_token_id", eom))
    return std::move(e);
  for (int64_t x : {v.eos, eot, eom})
    if (x >= 0)
      v.endOfGeneration.push_back(int32_t(x));
  // As llama.cpp: control tokens that end a turn in these families' templates.
  for (size_t i = 0; i < n; ++i)
    if (i < v.types.size() && v.types[i] == 3 &&
        llvm::is_contained({"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                            "<|endoftext|>", "<EOT>"},
                           StringRef(v.tokens[i])))
      v.endOfGeneration.push_back(int32_t(i));
  if (const gguf::Value *t = file.find("tokenizer.chat_template");
      t && t->type == gguf::ValueType::String)
    v.chatTemplate = t->str;
  if (const gguf::Value *b = file.find("tokenizer.ggml.add_bos_token"))
    v.addBos = b->bits != 0;
  if (const gguf::Value *b = file.find("tokenizer.ggml.add_eos_token"))
    v.addEos = b->bits != 0;
  if (const gguf::Value *b = file.find("tokenizer.ggml.add_space_prefix"))
    v.addSpacePrefix = b->bits != 0;
  return v;
}

std::string kiln::toIdentifier(StringRef name) {
  std::string id;
  for (char ch : name)
    id.push_back(llvm::isAlnum(ch) ? ch : '_');
  if (id.empty() || llvm::isDigit(id[0]))
    id.insert(0, "m_");
  return id;
}

namespace {

/// Emits one function of the decoder for `rows` tokens at a time.
class DecoderBuilder {
public:
  DecoderBuilder(OpBuilder &b, const gguf::File &file, const LlamaConfig &c,
                 int64_t capacity, int64_t chunk, std::vector<int64_t> windows, KvOrder order,
                 int64_t poolRows)
      : b(b), file(file), c(c), capacity(capacity), chunk(chunk), poolRows(poolRows),
        windows(std::move(windows)),
        order(order),
        loc(b.getUnknownLoc()),
        ropeFactors(!c.ropeFreqFactorsLong.empty() && capacity > c.ropeOriginalContext
                        ? c.ropeFreqFactorsLong
                        : c.ropeFreqFactors) {}

  void build(StringRef name, int64_t rows);

private:
  Type weightElement(uint32_t ggmlType) {
    int code = gguf::formatOfTensorType(ggmlType);
    Type type = code < 0 ? nullptr
                         : getWeightFormatType(b.getContext(), code,
                                               unsigned(kiln_uk_format(code)->elements));
    return type ? type : b.getF32Type();
  }

  Value weight(StringRef name) {
    const gguf::TensorInfo *t = file.findTensor(name);
    auto type = RankedTensorType::get(t->shape(), weightElement(t->type));
    return b.create<WeightOp>(loc, type, b.getStringAttr(name));
  }

  Value matmul(Value x, StringRef name) {
    Value w = weight(name);
    int64_t rows = cast<RankedTensorType>(x.getType()).getDimSize(0);
    int64_t out = cast<RankedTensorType>(w.getType()).getDimSize(0);
    return b.create<MatmulOp>(loc, f32Tensor(rows, out), x, w);
  }

  /// The projection `name` ("blk.N.attn_q"), plus its bias where the
  /// architecture has one.
  Value projection(Value x, const std::string &name) {
    Value y = matmul(x, name + ".weight");
    if (!c.qkvBias)
      return y;
    return b.create<BiasAddOp>(loc, y.getType(), y, weight(name + ".bias"));
  }

  Value rmsNorm(Value x, StringRef name) {
    return b.create<RmsNormOp>(loc, x.getType(), x, weight(name),
                               b.getF32FloatAttr(c.rmsEpsilon));
  }

  /// Local (sliding-window) layers of gemma3 turn with their own base and
  /// no frequency scaling.
  Value rope(Value x, Value pos, bool local) {
    bool own = local && c.localRopeFreqBase > 0.0f;
    ArrayRef<float> factors = own ? ArrayRef<float>() : ArrayRef<float>(ropeFactors);
    return b.create<RopeOp>(
        loc, x.getType(), x, pos, b.getI32IntegerAttr(c.headDim), b.getI32IntegerAttr(c.ropeDim),
        b.getF32FloatAttr(own ? c.localRopeFreqBase : c.ropeFreqBase),
        factors.empty() ? DenseF32ArrayAttr() : b.getDenseF32ArrayAttr(factors),
        c.neoxRope ? b.getUnitAttr() : UnitAttr(),
        c.ropeMscale != 1.0f && !own ? b.getF32FloatAttr(c.ropeMscale) : FloatAttr());
  }

  RankedTensorType f32Tensor(int64_t rows, int64_t cols) {
    return RankedTensorType::get({rows, cols}, b.getF32Type());
  }

  OpBuilder &b;
  const gguf::File &file;
  const LlamaConfig &c;
  int64_t capacity, chunk;
  int64_t poolRows; // the rows of every cache when sessions share a pool of pages; 0: none
  /// Each layer's attention window, 0 for none.
  std::vector<int64_t> windows;
  KvOrder order;
  Location loc;
  /// The rope divisors for this capacity (phi3: long ones past the original context).
  ArrayRef<float> ropeFactors;
};

void DecoderBuilder::build(StringRef name, int64_t rows) {
  MLIRContext *ctx = b.getContext();
  auto tokensType = RankedTensorType::get({rows}, b.getI32Type());
  auto logitsType = f32Tensor(rows, c.nVocab);
  auto fnType = b.getFunctionType({tokensType, b.getI32Type()}, {logitsType});
  auto fn = b.create<func::FuncOp>(loc, name, fnType);
  fn.setArgAttr(0, KilnDialect::NameAttrHelper::getNameStr(), b.getStringAttr("tokens"));
  fn.setArgAttr(1, KilnDialect::NameAttrHelper::getNameStr(), b.getStringAttr("pos"));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(fn.addEntryBlock());
  Value tokens = fn.getArgument(0), pos = fn.getArgument(1);

  Value x = b.create<EmbedOp>(loc, f32Tensor(rows, c.nEmbd), weight("token_embd.weight"), tokens,
                              c.embedScale ? b.getF32FloatAttr(c.embedScale) : FloatAttr());
  for (int64_t l = 0; l < c.nLayer; ++l) {
    std::string p = llvm::formatv("blk.{0}.", l);
    bool local = c.localLayers[l];
    // A windowed layer's cache is a ring of the rows a prefill chunk can still
    // read: its window plus the chunk's other rows (written before attention).
    int64_t window = windows[l];
    auto cacheType = RankedTensorType::get(
        {poolRows ? poolRows : window ? std::min(capacity, window + chunk - 1) : capacity,
         c.kvWidth()},
        b.getF32Type(), KvCacheLayoutAttr::get(b.getContext(), order, c.nKvHead, 0));
    Value a = rmsNorm(x, p + "attn_norm.weight");
    // Queries and keys: projected, normalized per head (qwen3, gemma3), roped.
    auto roped = [&](StringRef part) {
      Value y = projection(a, p + "attn_" + part.str());
      if (c.qkNorm)
        y = rmsNorm(y, p + "attn_" + part.str() + "_norm.weight");
      return rope(y, pos, local);
    };
    Value q = roped("q");
    Value k = roped("k");
    Value v = projection(a, p + "attn_v");
    auto cache = [&](CacheKind kind) {
      return b.create<KvCacheOp>(loc, cacheType, b.getI32IntegerAttr(l),
                                 CacheKindAttr::get(ctx, kind));
    };
    Value keys = b.create<KvWriteOp>(loc, cacheType, cache(CacheKind::key), k, pos);
    Value values = b.create<KvWriteOp>(loc, cacheType, cache(CacheKind::value), v, pos);
    Value o = b.create<AttentionOp>(
        loc, q.getType(), q, keys, values, pos, b.getI32IntegerAttr(c.nHead),
        b.getI32IntegerAttr(c.nKvHead), b.getI32IntegerAttr(c.headDim),
        window ? b.getI32IntegerAttr(window) : IntegerAttr(),
        c.attentionScale ? b.getF32FloatAttr(c.attentionScale) : FloatAttr());
    Value attn = matmul(o, p + "attn_output.weight");
    if (c.postNorms)
      attn = rmsNorm(attn, p + "post_attention_norm.weight");
    x = b.create<AddOp>(loc, x, attn);
    Value f = rmsNorm(x, p + "ffn_norm.weight");
    Value gateIn = matmul(f, p + "ffn_gate.weight");
    Value gate = c.geluFfn ? Value(b.create<GeluOp>(loc, gateIn)) : b.create<SiluOp>(loc, gateIn);
    Value up = matmul(f, p + "ffn_up.weight");
    Value h = b.create<MulOp>(loc, gate, up);
    Value ffn = matmul(h, p + "ffn_down.weight");
    if (c.postNorms)
      ffn = rmsNorm(ffn, p + "post_ffw_norm.weight");
    x = b.create<AddOp>(loc, x, ffn);
  }
  Value out = rmsNorm(x, "output_norm.weight");
  Value logits = matmul(out, c.tiedOutput ? "token_embd.weight" : "output.weight");
  b.create<func::ReturnOp>(loc, logits);
}

} // namespace

Expected<OwningOpRef<ModuleOp>> kiln::importLlama(MLIRContext &context,
                                                  const gguf::File &file,
                                                  StringRef sourcePath,
                                                  const ImportOptions &options) {
  Expected<LlamaConfig> config = readLlamaConfig(file);
  if (!config)
    return config.takeError();
  Expected<Vocabulary> vocab = readVocabulary(file);
  if (!vocab)
    return vocab.takeError();
  if (int64_t(vocab->tokens.size()) != config->nVocab)
    return fail(llvm::formatv("vocabulary has {0} tokens but the model {1}",
                              vocab->tokens.size(), config->nVocab));
  if (options.layers < 0 || options.layers > config->nLayer)
    return fail(llvm::formatv("--draft-layers={0} must be in [1, the model's {1} layers]",
                              options.layers, config->nLayer));
  if (options.layers) {
    // A self-speculative draft: the first layers, then the model's own norm and head.
    config->nLayer = options.layers;
    config->localLayers.resize(options.layers);
  }
  const LlamaConfig &c = *config;
  int64_t capacity = options.maxContext ? options.maxContext : c.contextLength;
  int64_t chunk = options.prefillChunk ? options.prefillChunk : std::min<int64_t>(64, capacity);
  if (capacity <= 0 || capacity > INT32_MAX)
    return fail(llvm::formatv("max context {0} must be in [1, {1}]", capacity, INT32_MAX));
  // Past the trained context (which a rope-scaled model's metadata already
  // extends) the model's attention is untried, and the arena grows with it.
  if (capacity > c.contextLength)
    return fail(llvm::formatv(
        "--max-context={0} is above the model's trained context {1} ({2}.context_length); its "
        "KV cache alone would take {3} bytes at f32",
        capacity, c.contextLength, c.arch, 2 * c.nLayer * capacity * c.nKvHead * c.headDim * 4));
  if (chunk <= 0 || chunk > capacity)
    return fail(llvm::formatv("prefill chunk {0} must be in [1, max context {1}]", chunk,
                              capacity));

  // Sessions: every cache is one pool of pages the sessions' page tables map.
  int64_t page = 0, pages = 0;
  if (options.sessions < 0 || options.sessions > 4096)
    return fail(llvm::formatv("--sessions={0} must be in [1, 4096]", options.sessions));
  if (options.sessions) {
    page = options.kvPage ? options.kvPage : 16;
    // Whole int4 tiles of 16 positions a page (kv_copy_page).
    if (page <= 0 || page % 16 != 0 || page > capacity)
      return fail(llvm::formatv("--kv-page={0} must be a multiple of 16 in [16, max context {1}]",
                                page, capacity));
    int64_t span = (capacity + page - 1) / page;
    pages = options.kvPages ? options.kvPages : options.sessions * span;
    if (pages <= 0 || pages * page > INT32_MAX)
      return fail(llvm::formatv("--kv-pages={0} must be in [1, {1}]", pages, INT32_MAX / page));
    if (options.kvWindow || llvm::any_of(c.localLayers, [](bool l) { return l; }))
      return fail("--sessions keeps every position of a session in its pages: it does not take "
                  "sliding windows (--kv-window, or a model with local layers)");
  } else if (options.kvPage || options.kvPages) {
    return fail("--kv-page and --kv-pages size the page pool of --sessions");
  }

  context.loadDialect<KilnDialect, func::FuncDialect>();
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  // The C name: --name, else general.name unless it only names the
  // architecture ("llama" would collide with llama.cpp's own header and symbols
  // in an app that links both), else the file's name.
  if (!options.name.empty() && toIdentifier(options.name) != options.name)
    return fail(llvm::formatv("--name={0}: not a C identifier (letters, digits and _, not "
                              "starting with a digit)",
                              options.name));
  llvm::StringRef stem = llvm::sys::path::stem(sourcePath);
  std::string name = !options.name.empty() ? options.name
                     : !c.name.empty() && !llvm::StringRef(c.name).equals_insensitive(c.arch)
                         ? toIdentifier(c.name)
                         : toIdentifier(stem.empty() ? "model" : stem);
  module->setSymName(name);
  // The cache order first: the model's config and its caches record it.
  std::optional<KvOrder> order = options.kvLayout == "pos-major"    ? KvOrder::pos_major
                                 : options.kvLayout == "head-major" ? KvOrder::head_major
                                                                    : std::optional<KvOrder>();
  if (!order)
    return fail(llvm::formatv("unknown --kv-layout={0} (pos-major, head-major)",
                              options.kvLayout));
  setModelAttr(*module, ModelAttr::get(&context, sourcePath, c.arch, c.nEmbd, c.nLayer, c.nFF,
                                       c.nHead, c.nKvHead, c.headDim, c.nVocab, capacity, chunk,
                                       options.kvWindow, *order, c.tiedOutput, vocab->model,
                                       vocab->bos, vocab->eos, vocab->addBos,
                                       vocab->addSpacePrefix, options.sessions, page, pages));
  b.setInsertionPointToEnd(module->getBody());
  // The model's windows, narrowed (or set, on the layers without one) by
  // --kv-window.
  if (options.kvWindow < 0 || options.kvWindow > capacity)
    return fail(llvm::formatv("--kv-window={0} must be in [1, the KV cache capacity {1}] "
                              "(--max-context)",
                              options.kvWindow, capacity));
  std::vector<int64_t> windows(c.nLayer, 0);
  for (int64_t l = 0; l < c.nLayer; ++l) {
    windows[l] = c.localLayers[l] ? c.slidingWindow : 0;
    if (options.kvWindow)
      windows[l] = windows[l] ? std::min(windows[l], options.kvWindow) : options.kvWindow;
  }
  DecoderBuilder builder(b, file, c, capacity, chunk, windows, *order, pages * page);
  builder.build("prefill", chunk);
  builder.build("decode", 1);
  if (failed(verify(*module)))
    return fail("internal error: the imported module does not verify");
  return std::move(module);
}
