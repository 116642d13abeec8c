#include "compiler/import/LlamaImporter.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

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

Expected<LlamaConfig> kiln::readLlamaConfig(const gguf::File &file) {
  const gguf::Value *arch = file.find("general.architecture");
  if (!arch || arch->type != gguf::ValueType::String)
    return fail("missing metadata 'general.architecture'");
  if (arch->str != "llama" && arch->str != "qwen2")
    return fail(llvm::formatv("unknown architecture '{0}' (supported: llama, qwen2)",
                              arch->str));

  LlamaConfig c;
  c.arch = arch->str;
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
  if (c.nEmbd % c.nHead != 0)
    return fail(llvm::formatv("embedding length {0} is not a multiple of the head "
                              "count {1}",
                              c.nEmbd, c.nHead));
  if (c.nHead % c.nKvHead != 0)
    return fail(llvm::formatv("head count {0} is not a multiple of the kv head count "
                              "{1}",
                              c.nHead, c.nKvHead));
  c.headDim = c.nEmbd / c.nHead;
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

  const gguf::TensorInfo *embd = file.findTensor("token_embd.weight");
  if (!embd || embd->ne.size() != 2)
    return fail("missing tensor 'token_embd.weight' (or not 2-D)");
  c.nVocab = embd->ne[1];
  if (Error e = read(c.nVocab, key("vocab_size"), c.nVocab))
    return std::move(e);

  // Rope variants change the math: refuse those Kiln lacks rather than compute
  // something else. Linear scaling divides every frequency by its factor; Llama
  // 3's scaling is the per-pair divisors of the rope_freqs tensor.
  const gguf::Value *scaling = file.find(key("rope.scaling.type"));
  std::string scalingType = scaling ? scaling->str : "none";
  if (scalingType != "none" && scalingType != "linear" &&
      !(scalingType == "llama3" && file.findTensor("rope_freqs.weight")))
    return fail(llvm::formatv("unsupported rope scaling '{0}' (metadata "
                              "'{1}'; supported: none, linear, and llama3 with a rope_freqs "
                              "tensor)",
                              scalingType, key("rope.scaling.type")));
  c.ropeFreqFactors.assign(c.ropeDim / 2, 1.0f);
  bool scaled = false;
  if (scalingType == "linear") {
    if (!file.find(key("rope.scaling.factor")))
      return fail(llvm::formatv("linear rope scaling without metadata '{0}'",
                                key("rope.scaling.factor")));
    Expected<float> factor = getFloat(file, key("rope.scaling.factor"), 1.0f);
    if (!factor)
      return factor.takeError();
    c.ropeFreqFactors.assign(c.ropeDim / 2, *factor);
    scaled = true;
  }
  if (const gguf::TensorInfo *t = file.findTensor("rope_freqs.weight")) {
    if (t->shape() != std::vector<int64_t>{c.ropeDim / 2} ||
        t->type != uint32_t(gguf::TensorType::F32))
      return fail(llvm::formatv("tensor 'rope_freqs.weight' must be {0} F32 values (one per "
                                "rotated pair), got {1} of {2}",
                                c.ropeDim / 2, t->numElements(), gguf::tensorTypeName(t->type)));
    ArrayRef<uint8_t> bytes = file.tensorBytes(*t);
    for (int64_t i = 0; i < c.ropeDim / 2; ++i) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, sizeof f);
      if (!(f > 0.0f) || std::isinf(f))
        return fail(llvm::formatv("tensor 'rope_freqs.weight': factor {0} is {1} (must be "
                                  "positive and finite)",
                                  i, f));
      c.ropeFreqFactors[i] *= f;
    }
    scaled = true;
  }
  if (!scaled)
    c.ropeFreqFactors.clear();

  int64_t d = c.nEmbd, kv = c.nKvHead * c.headDim;
  if (Error e = checkTensor(file, "token_embd.weight", {c.nVocab, d}, true))
    return std::move(e);
  for (int64_t l = 0; l < c.nLayer; ++l) {
    std::string p = llvm::formatv("blk.{0}.", l);
    struct Expect { const char *name; std::vector<int64_t> shape; bool matrix; };
    for (const Expect &x : {Expect{"attn_norm", {d}, false},
                            Expect{"attn_q", {d, d}, true},
                            Expect{"attn_k", {kv, d}, true},
                            Expect{"attn_v", {kv, d}, true},
                            Expect{"attn_output", {d, d}, true},
                            Expect{"ffn_norm", {d}, false},
                            Expect{"ffn_gate", {c.nFF, d}, true},
                            Expect{"ffn_up", {c.nFF, d}, true},
                            Expect{"ffn_down", {d, c.nFF}, true}})
      if (Error e = checkTensor(file, p + x.name + ".weight", x.shape, x.matrix))
        return std::move(e);
    // qwen2: biases on the query, key and value projections.
    if (c.arch == "qwen2")
      for (const Expect &x : {Expect{"attn_q", {d}, false}, Expect{"attn_k", {kv}, false},
                              Expect{"attn_v", {kv}, false}})
        if (Error e = checkTensor(file, p + x.name + ".bias", x.shape, x.matrix))
          return std::move(e);
  }
  if (Error e = checkTensor(file, "output_norm.weight", {d}, false))
    return std::move(e);
  c.tiedOutput = file.findTensor("output.weight") == nullptr;
  if (!c.tiedOutput)
    if (Error e = checkTensor(file, "output.weight", {c.nVocab, d}, true))
      return std::move(e);
  // A tensor the decoder would not read (biases, experts, rope factors) means a
  // model this importer does not describe: ignoring it would give wrong results.
  size_t perLayer = c.arch == "qwen2" ? 12 : 9;
  size_t expected = 2 + perLayer * c.nLayer + (c.tiedOutput ? 0 : 1) +
                    (file.findTensor("rope_freqs.weight") ? 1 : 0);
  if (file.tensors.size() != expected)
    for (const gguf::TensorInfo &t : file.tensors) {
      llvm::StringRef name = t.name;
      int64_t layer;
      bool known = name == "token_embd.weight" || name == "output_norm.weight" ||
                   name == "output.weight" || name == "rope_freqs.weight";
      if (name.consume_front("blk.") && !name.consumeInteger(10, layer) && layer >= 0 &&
          layer < c.nLayer)
        known = llvm::is_contained({".attn_norm.weight", ".attn_q.weight", ".attn_k.weight",
                                    ".attn_v.weight", ".attn_output.weight", ".ffn_norm.weight",
                                    ".ffn_gate.weight", ".ffn_up.weight", ".ffn_down.weight"},
                                   name) ||
                (c.arch == "qwen2" &&
                 llvm::is_contained({".attn_q.bias", ".attn_k.bias", ".attn_v.bias"}, name));
      if (!known)
        return fail(llvm::formatv("unsupported tensor '{0}': a {1} model has no such "
                                  "tensor (biases and experts are not supported)",
                                  t.name, c.arch));
    }
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
                 int64_t capacity)
      : b(b), file(file), c(c), capacity(capacity), loc(b.getUnknownLoc()) {}

  void build(StringRef name, int64_t rows);

private:
  Type weightElement(uint32_t ggmlType) {
    switch (static_cast<gguf::TensorType>(ggmlType)) {
    case gguf::TensorType::F16: return b.getF16Type();
    case gguf::TensorType::Q8_0: return Q8_0Type::get(b.getContext());
    case gguf::TensorType::Q4_0: return Q4_0Type::get(b.getContext());
    case gguf::TensorType::BF16: return b.getBF16Type();
    case gguf::TensorType::Q4_1: return Q4_1Type::get(b.getContext());
    case gguf::TensorType::Q5_0: return Q5_0Type::get(b.getContext());
    case gguf::TensorType::Q5_1: return Q5_1Type::get(b.getContext());
    case gguf::TensorType::IQ4_NL: return IQ4_NLType::get(b.getContext());
    case gguf::TensorType::Q2_K: return Q2_KType::get(b.getContext());
    case gguf::TensorType::Q3_K: return Q3_KType::get(b.getContext());
    case gguf::TensorType::Q4_K: return Q4_KType::get(b.getContext());
    case gguf::TensorType::Q5_K: return Q5_KType::get(b.getContext());
    case gguf::TensorType::Q6_K: return Q6_KType::get(b.getContext());
    default: return b.getF32Type();
    }
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
    if (c.arch != "qwen2")
      return y;
    return b.create<BiasAddOp>(loc, y.getType(), y, weight(name + ".bias"));
  }

  Value rmsNorm(Value x, StringRef name) {
    return b.create<RmsNormOp>(loc, x.getType(), x, weight(name),
                               b.getF32FloatAttr(c.rmsEpsilon));
  }

  Value rope(Value x, Value pos) {
    return b.create<RopeOp>(loc, x.getType(), x, pos, b.getI32IntegerAttr(c.headDim),
                            b.getI32IntegerAttr(c.ropeDim), b.getF32FloatAttr(c.ropeFreqBase),
                            c.ropeFreqFactors.empty()
                                ? DenseF32ArrayAttr()
                                : b.getDenseF32ArrayAttr(c.ropeFreqFactors));
  }

  RankedTensorType f32Tensor(int64_t rows, int64_t cols) {
    return RankedTensorType::get({rows, cols}, b.getF32Type());
  }

  OpBuilder &b;
  const gguf::File &file;
  const LlamaConfig &c;
  int64_t capacity;
  Location loc;
};

void DecoderBuilder::build(StringRef name, int64_t rows) {
  MLIRContext *ctx = b.getContext();
  auto tokensType = RankedTensorType::get({rows}, b.getI32Type());
  auto logitsType = f32Tensor(rows, c.nVocab);
  auto fnType = b.getFunctionType({tokensType, b.getI32Type()}, {logitsType});
  auto fn = b.create<func::FuncOp>(loc, name, fnType);
  fn.setArgAttr(0, "kiln.name", b.getStringAttr("tokens"));
  fn.setArgAttr(1, "kiln.name", b.getStringAttr("pos"));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(fn.addEntryBlock());
  Value tokens = fn.getArgument(0), pos = fn.getArgument(1);

  Value x = b.create<EmbedOp>(loc, f32Tensor(rows, c.nEmbd), weight("token_embd.weight"),
                              tokens);
  int64_t kvWidth = c.nKvHead * c.headDim;
  auto cacheType = f32Tensor(capacity, kvWidth);
  for (int64_t l = 0; l < c.nLayer; ++l) {
    std::string p = llvm::formatv("blk.{0}.", l);
    Value a = rmsNorm(x, p + "attn_norm.weight");
    Value q = rope(projection(a, p + "attn_q"), pos);
    Value k = rope(projection(a, p + "attn_k"), pos);
    Value v = projection(a, p + "attn_v");
    auto cache = [&](CacheKind kind) {
      return b.create<KvCacheOp>(loc, cacheType, b.getI32IntegerAttr(l),
                                 CacheKindAttr::get(ctx, kind));
    };
    Value keys = b.create<KvWriteOp>(loc, cacheType, cache(CacheKind::key), k, pos);
    Value values = b.create<KvWriteOp>(loc, cacheType, cache(CacheKind::value), v, pos);
    Value o = b.create<AttentionOp>(loc, q.getType(), q, keys, values, pos,
                                    b.getI32IntegerAttr(c.nHead),
                                    b.getI32IntegerAttr(c.nKvHead),
                                    b.getI32IntegerAttr(c.headDim), IntegerAttr());
    x = b.create<AddOp>(loc, x, matmul(o, p + "attn_output.weight"));
    Value f = rmsNorm(x, p + "ffn_norm.weight");
    Value gate = b.create<SiluOp>(loc, matmul(f, p + "ffn_gate.weight"));
    Value up = matmul(f, p + "ffn_up.weight");
    Value h = b.create<MulOp>(loc, gate, up);
    x = b.create<AddOp>(loc, x, matmul(h, p + "ffn_down.weight"));
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
  const LlamaConfig &c = *config;
  int64_t capacity = options.maxContext ? options.maxContext : c.contextLength;
  int64_t chunk = options.prefillChunk ? options.prefillChunk : std::min<int64_t>(64, capacity);
  if (capacity <= 0 || capacity > INT32_MAX)
    return fail(llvm::formatv("max context {0} must be in [1, {1}]", capacity, INT32_MAX));
  if (chunk <= 0 || chunk > capacity)
    return fail(llvm::formatv("prefill chunk {0} must be in [1, max context {1}]", chunk,
                              capacity));

  context.loadDialect<KilnDialect, func::FuncDialect>();
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  std::string name = options.name.empty() ? toIdentifier(c.name.empty() ? "model" : c.name)
                                          : options.name;
  module->setSymName(name);
  auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  NamedAttribute modelAttrs[] = {
      b.getNamedAttr("source", b.getStringAttr(sourcePath)),
      b.getNamedAttr("architecture", b.getStringAttr("llama")),
      b.getNamedAttr("n_embd", i64(c.nEmbd)),
      b.getNamedAttr("n_layer", i64(c.nLayer)),
      b.getNamedAttr("n_ff", i64(c.nFF)),
      b.getNamedAttr("n_head", i64(c.nHead)),
      b.getNamedAttr("n_kv_head", i64(c.nKvHead)),
      b.getNamedAttr("head_dim", i64(c.headDim)),
      b.getNamedAttr("n_vocab", i64(c.nVocab)),
      b.getNamedAttr("max_context", i64(capacity)),
      b.getNamedAttr("prefill_chunk", i64(chunk)),
      b.getNamedAttr("tied_output", b.getBoolAttr(c.tiedOutput)),
      b.getNamedAttr("tokenizer", b.getStringAttr(vocab->model)),
      b.getNamedAttr("bos", i64(vocab->bos)),
      b.getNamedAttr("eos", i64(vocab->eos)),
      b.getNamedAttr("add_bos", b.getBoolAttr(vocab->addBos)),
      b.getNamedAttr("add_space_prefix", b.getBoolAttr(vocab->addSpacePrefix)),
  };
  (*module)->setAttr("kiln.model", b.getDictionaryAttr(modelAttrs));
  b.setInsertionPointToEnd(module->getBody());
  DecoderBuilder builder(b, file, c, capacity);
  builder.build("prefill", chunk);
  builder.build("decode", 1);
  if (failed(verify(*module)))
    return fail("internal error: the imported module does not verify");
  return std::move(module);
}
