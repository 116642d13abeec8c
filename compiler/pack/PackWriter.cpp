#include "compiler/pack/PackWriter.h"

#include "kernels/c99/kiln_uk_pack.h"

#include "compiler/pack/VocabSegment.h"
#include "compiler/quant/Awq.h"
#include "compiler/quant/GgmlBlocks.h"
#include "compiler/quant/Gptq.h"
#include "compiler/quant/Quantize.h"
#include "compiler/pack/kiln_pack_generated.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>

using namespace mlir;
using namespace kiln;
using llvm::Expected;

namespace {

constexpr uint64_t kHeaderBytes = 64;
constexpr uint64_t kPageBytes = 4096;
constexpr uint32_t kPackVersion = 1;

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// FNV-1a, 64-bit: small, dependency-free and stable across hosts.
class Fnv1a {
public:
  void add(llvm::ArrayRef<uint8_t> bytes) {
    for (uint8_t b : bytes)
      hash = (hash ^ b) * 0x100000001b3ull;
  }
  void add(llvm::StringRef s) {
    add(llvm::ArrayRef(reinterpret_cast<const uint8_t *>(s.data()), s.size()));
    add(uint64_t(s.size()));
  }
  void add(uint64_t v) {
    uint8_t le[8];
    llvm::support::endian::write64le(le, v);
    add(llvm::ArrayRef(le));
  }
  uint64_t value() const { return hash; }

private:
  uint64_t hash = 0xcbf29ce484222325ull;
};

struct Segment {
  std::string name;
  RankedTensorType type;
  SegmentAttr attr;
  int64_t panelRows = 0; // 0: the row layout
};

quant::FormatSpec specOf(Type element) {
  WeightFormat w = getWeightFormat(element);
  return {quant::Format(w.code < 0 ? KILN_UK_FORMAT_F32 : w.code), w.group};
}

// The pack table numbers the formats as the format table does.
#define KILN_PACK_FORMAT_CODE(id, name, code, gguf, elements, bytes, bits, family)        \
  static_assert(int(pack::Format_##id) == code, "kiln_pack.fbs numbers " #id              \
                                                " otherwise than KILN_UK_FORMATS");
KILN_UK_FORMATS(KILN_PACK_FORMAT_CODE)
#undef KILN_PACK_FORMAT_CODE
static_assert(pack::Format_TQ2_0 + 1 == KILN_UK_FORMAT_END,
              "kiln_pack.fbs and KILN_UK_FORMATS list different formats");

/// The pack code of a graph constant's integer or boolean element type; -1
/// for a weight's.
int rawFormat(Type element) {
  if (element.isInteger(64))
    return pack::Format_I64;
  if (element.isInteger(32))
    return pack::Format_I32;
  if (element.isSignedInteger(8) || element.isSignlessInteger(8))
    return pack::Format_I8;
  if (element.isUnsignedInteger(8))
    return pack::Format_U8;
  if (element.isInteger(1))
    return pack::Format_BOOL;
  return -1;
}

pack::Format formatOf(Type element, uint32_t &groupSize) {
  if (int raw = rawFormat(element); raw >= 0) {
    groupSize = 1;
    return static_cast<pack::Format>(raw);
  }
  quant::FormatSpec spec = specOf(element);
  groupSize = spec.group;
  return static_cast<pack::Format>(spec.format);
}

bool sameFormat(quant::FormatSpec a, quant::FormatSpec b) {
  return a.format == b.format && a.group == b.group;
}

/// Elements a worker converts at a time: the floats of a whole tensor are
/// never held (an 8B model's token embedding alone is 2 GB of them).
constexpr size_t kChunkElements = size_t(1) << 18;

/// A worker's floats and rows, reused from chunk to chunk.
struct ChunkScratch {
  std::vector<float> values, decoded;
  std::vector<uint8_t> rows;
};

/// How a weight's rows go from the model's bytes to the pack's: decoded and
/// re-encoded when the format changes, repacked into `panel`-row panels when
/// the kernels read panels.
struct RowCodec {
  quant::FormatSpec from, to;
  bool convert;
  size_t cols, fromRow, toRow;
  int family;
  int32_t group, panel;
  const quant::WeightEncoder *encoder; // the converted rows' encoder
  const float *columnScale = nullptr;   // activation-aware scales of the columns, or nullptr

  /// Rows [begin, begin + count) of the model's rows at `src` into the
  /// segment at `dst` (`begin` a whole number of panels); adds the squared
  /// error and the squared values of a conversion to `err` and `ref` once,
  /// at the end (workers' sums may share a cache line).
  void encode(const uint8_t *src, uint8_t *dst, size_t begin, size_t count,
              ChunkScratch &scratch, double &err, double &ref) const {
    const uint8_t *rows = src + begin * fromRow;
    size_t n = count * cols;
    if (convert) {
      uint8_t *out = dst + begin * toRow;
      if (panel > 0) {
        scratch.rows.resize(count * toRow);
        out = scratch.rows.data();
      }
      scratch.values.resize(n);
      scratch.decoded.resize(n);
      quant::dequantize(from, rows, n, scratch.values.data());
      if (columnScale)
        for (size_t i = 0; i < n; ++i)
          scratch.values[i] *= columnScale[i % cols];
      encoder->encode(scratch.values.data(), count, out);
      quant::dequantize(to, out, n, scratch.decoded.data());
      double e = 0, r = 0;
      for (size_t i = 0; i < n; ++i) { // the error of the weight as the model has it
        const double s = columnScale ? columnScale[i % cols] : 1.0;
        double x = scratch.values[i] / s, d = x - scratch.decoded[i] / s;
        e += d * d;
        r += x * x;
      }
      err += e;
      ref += r;
      rows = out;
    }
    if (panel > 0)
      kiln_uk_pack_panels(family, rows, dst + begin * toRow, int32_t(count), int32_t(cols),
                          group, panel);
  }
};

/// Activation-aware scales (quant/Awq.h) the calibration's moments chose: a
/// weight's columns are multiplied by its input's scales, and the norm that
/// makes the input divided by them.
struct ActivationScales {
  std::map<std::string, std::vector<float>> columns, norms;
  /// A scaled weight's input moments and importance, divided by the scales
  /// (one array for the weights of one input, so they share its factor).
  std::map<std::string, std::shared_ptr<const std::vector<float>>> moments, importance;
};

/// A norm and the weights that read its output, with the rows of them the
/// scale search scores.
struct NormGroup {
  const Segment *norm;
  std::vector<std::string> members;
  std::vector<std::vector<float>> values;
  std::vector<quant::ScaledWeight> weights;
  const std::vector<float> *moments = nullptr;
  size_t cols = 0;
  quant::InputScales choice;
};

/// The llama-family norm `norm` and the matmuls that alone read its output
/// (attn_norm -> attn_q, attn_k, attn_v; ffn_norm -> ffn_gate, ffn_up), all
/// converted into a block format and with moments; false if there are none.
bool normGroup(const gguf::File &model, const std::map<std::string, const Segment *> &byName,
               const Imatrix &imatrix, const Segment &norm, NormGroup &g) {
  StringRef name(norm.name), prefix, kind;
  if (!name.starts_with("blk.") || !name.ends_with("_norm.weight"))
    return false;
  std::tie(prefix, kind) = name.rsplit('.').first.rsplit('.');
  if (kind == "attn_norm")
    g.members = {"attn_q", "attn_k", "attn_v"};
  else if (kind == "ffn_norm")
    g.members = {"ffn_gate", "ffn_up"};
  else
    return false;
  const gguf::TensorInfo *nt = model.findTensor(norm.name);
  if (!nt || formatOfGgmlType(nt->type).format != quant::Format::F32 ||
      specOf(norm.type.getElementType()).format != quant::Format::F32 ||
      rawFormat(norm.type.getElementType()) >= 0)
    return false;
  g.norm = &norm;
  for (std::string &m : g.members) {
    m = (prefix + "." + m + ".weight").str();
    auto it = byName.find(m);
    const gguf::TensorInfo *t = model.findTensor(m);
    const std::vector<float> *mm = imatrix.findMoments(m);
    if (it == byName.end() || !t || !mm || (g.moments && mm != g.moments))
      return false;
    g.moments = mm;
    quant::FormatSpec from = formatOfGgmlType(t->type), to = specOf(it->second->type.getElementType());
    g.cols = size_t(t->ne[0]);
    if (sameFormat(from, to) || quant::ggml::topCode(to.format) == 0 ||
        mm->size() != g.cols * g.cols || g.cols != nt->numElements())
      return false;
    // Only the rows the search scores are decoded: a 7B model's weights are
    // never held whole.
    const size_t rows = t->numElements() / g.cols,
                 sampled = std::min(rows, quant::kScaleSampleRows),
                 rowSize = quant::rowBytes(from, g.cols);
    g.values.emplace_back(sampled * g.cols);
    for (size_t r = 0; r < sampled; ++r)
      quant::dequantize(from, model.tensorBytes(*t).data() + r * rows / sampled * rowSize,
                        g.cols, g.values.back().data() + r * g.cols);
    g.weights.push_back({to, nullptr, sampled});
  }
  size_t readers = 0; // of the input: no other weight may read it
  for (const auto &entry : imatrix.moments)
    readers += entry.second.get() == g.moments;
  if (readers != g.members.size())
    return false;
  for (size_t i = 0; i < g.weights.size(); ++i)
    g.weights[i].values = g.values[i].data();
  return true;
}

/// For each norm group the scales that lower its weights' output error by
/// 1%, if any, the groups searched by `threads` workers; each choice is
/// reported in `scaled`.
void chooseActivationScales(const gguf::File &model, const std::vector<Segment> &segments,
                            const Imatrix &imatrix, unsigned threads, ActivationScales &out,
                            std::vector<ScaledInput> &scaled) {
  std::map<std::string, const Segment *> byName;
  for (const Segment &s : segments)
    byName[s.name] = &s;
  std::vector<NormGroup> groups;
  for (const Segment &norm : segments) {
    NormGroup g;
    if (normGroup(model, byName, imatrix, norm, g))
      groups.push_back(std::move(g));
  }
  auto work = [&](size_t first, size_t step) {
    for (size_t i = first; i < groups.size(); i += step)
      groups[i].choice = quant::chooseInputScales(groups[i].weights, groups[i].cols,
                                                  groups[i].moments->data());
  };
  unsigned workers = unsigned(std::min<size_t>(threads, groups.size()));
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w)
    pool.emplace_back(work, w, workers);
  work(0, std::max(1u, workers));
  for (std::thread &th : pool)
    th.join();
  for (const NormGroup &g : groups) {
    if (g.choice.scale.empty())
      continue;
    auto h = std::make_shared<const std::vector<float>>(
        quant::scaledMoments(g.moments->data(), g.choice.scale));
    auto diagonal =
        std::make_shared<const std::vector<float>>(quant::diagonalOf(h->data(), g.cols));
    for (const std::string &m : g.members) {
      out.columns[m] = g.choice.scale;
      out.moments[m] = h;
      out.importance[m] = diagonal;
    }
    out.norms[g.norm->name] = g.choice.scale;
    scaled.push_back({g.norm->name, g.choice.alpha, g.choice.error / g.choice.plainError});
  }
}

/// The bytes of a weight as the generated kernels read them: the model file's
/// bytes when neither the format nor the layout changes, else encoded into
/// `owned` in chunks of rows by `threads` workers. The error sums are added in
/// chunk order, so the result is the same on any number of threads.
Expected<llvm::ArrayRef<uint8_t>> encodeSegment(const gguf::File &model, const Segment &s,
                                                const Imatrix *imatrix,
                                                const ActivationScales &scales,
                                                quant::FactorCache &factors,
                                                std::vector<uint8_t> &owned,
                                                TensorReport &report, unsigned threads) {
  const gguf::TensorInfo *t = model.findTensor(s.name);
  if (!t)
    return fail(llvm::formatv("the model has no tensor '{0}'", s.name));
  if (rawFormat(s.type.getElementType()) >= 0) {
    // A graph's constant: its elements as they are.
    report.name = s.name;
    report.offset = s.attr.getOffset();
    llvm::raw_string_ostream(report.format) << s.type.getElementType();
    report.bytes = s.attr.getBytes();
    if (t->bytes != uint64_t(getStorageBytes(s.type)))
      return fail(llvm::formatv("constant '{0}' has {1} bytes in the model but the IR "
                                "expects {2}",
                                s.name, t->bytes, getStorageBytes(s.type)));
    return model.tensorBytes(*t);
  }
  quant::FormatSpec from = formatOfGgmlType(t->type), to = specOf(s.type.getElementType());
  int64_t rowLayoutBytes = getStorageBytes(s.type);
  report.name = s.name;
  report.offset = s.attr.getOffset();
  report.panelRows = s.panelRows;
  report.cols = s.type.getShape().empty() ? 1 : s.type.getShape().back();
  report.format = quant::formatName(to);
  report.bytes = s.attr.getBytes();
  if (t->numElements() != uint64_t(s.type.getNumElements()))
    return fail(llvm::formatv("tensor '{0}' has {1} elements in the model but the IR "
                              "expects {2}",
                              s.name, t->numElements(), s.type.getNumElements()));
  bool convert = !sameFormat(from, to);
  if (!convert && t->bytes != uint64_t(rowLayoutBytes))
    return fail(llvm::formatv("tensor '{0}' has {1} bytes in the model but the IR "
                              "expects {2}",
                              s.name, t->bytes, rowLayoutBytes));
  if (convert && quant::rowBytes(to, t->numElements()) != uint64_t(rowLayoutBytes))
    return fail(llvm::formatv("tensor '{0}': {1} needs {2} bytes but the IR expects {3}",
                              s.name, report.format, quant::rowBytes(to, t->numElements()),
                              rowLayoutBytes));
  if (auto norm = scales.norms.find(s.name); norm != scales.norms.end()) {
    // The norm before scaled weights: divided by their scales, still f32.
    const std::vector<float> &scale = norm->second;
    owned.resize(scale.size() * sizeof(float));
    const uint8_t *src = model.tensorBytes(*t).data();
    for (size_t j = 0; j < scale.size(); ++j) {
      float v;
      std::memcpy(&v, src + 4 * j, 4);
      v /= scale[j];
      std::memcpy(owned.data() + 4 * j, &v, 4);
    }
    report.scaled = true;
    return llvm::ArrayRef<uint8_t>(owned);
  }
  if (!convert && s.panelRows == 0)
    return model.tensorBytes(*t);

  Type element = s.type.getElementType();
  size_t cols = size_t(s.type.getShape().back()), rows = t->numElements() / cols;
  RowCodec codec{from, to, convert, cols, quant::rowBytes(from, cols), quant::rowBytes(to, cols),
                 getKernelFamily(element), int32_t(getBlockElements(element)),
                 int32_t(s.panelRows), nullptr};
  const std::vector<float> *columns = imatrix ? imatrix->find(s.name) : nullptr;
  const std::vector<float> *moments = imatrix ? imatrix->findMoments(s.name) : nullptr;
  if (auto scale = scales.columns.find(s.name); scale != scales.columns.end()) {
    codec.columnScale = scale->second.data();
    columns = scales.importance.at(s.name).get();
    moments = scales.moments.at(s.name).get();
    report.scaled = true;
  }
  if (columns && columns->size() != cols)
    return fail(llvm::formatv("tensor '{0}' has {1} columns but its importance has {2}",
                              s.name, cols, columns->size()));
  if (moments && moments->size() != cols * cols)
    return fail(llvm::formatv("tensor '{0}' has {1} columns but its moments have {2} values",
                              s.name, cols, moments->size()));
  quant::WeightEncoder encoder(to, cols, columns ? columns->data() : nullptr,
                               moments ? moments->data() : nullptr, &factors);
  codec.encoder = &encoder;
  report.weighted = convert && columns;
  report.feedback = convert && encoder.feedback();
  if (codec.panel > 0) {
    size_t bytes = kiln_uk_panel_bytes(codec.family, int32_t(rows), int32_t(cols), codec.group,
                                       codec.panel);
    if (bytes != uint64_t(s.attr.getBytes()) ||
        codec.toRow != kiln_uk_row_bytes(codec.family, int32_t(cols), codec.group))
      return fail(llvm::formatv("internal error: tensor '{0}' in {1}-row panels needs {2} "
                                "bytes but its segment has {3}",
                                s.name, codec.panel, bytes, s.attr.getBytes()));
    owned.resize(bytes);
  } else {
    owned.resize(size_t(rowLayoutBytes));
  }
  // Chunks of whole panels, small enough to stay in cache and to give every
  // worker a few.
  size_t chunkRows = std::max<size_t>(1, kChunkElements / cols);
  chunkRows = std::min(chunkRows, llvm::divideCeil(rows, 4 * size_t(threads)));
  chunkRows = llvm::alignTo(std::max<size_t>(chunkRows, 1), size_t(std::max(codec.panel, 1)));
  size_t chunks = llvm::divideCeil(rows, chunkRows);
  std::vector<double> err(chunks, 0), ref(chunks, 0);
  const uint8_t *src = model.tensorBytes(*t).data();
  auto work = [&](size_t first, size_t step) {
    ChunkScratch scratch;
    for (size_t c = first; c < chunks; c += step) {
      size_t begin = c * chunkRows;
      codec.encode(src, owned.data(), begin, std::min(chunkRows, rows - begin), scratch, err[c],
                   ref[c]);
    }
  };
  unsigned workers = unsigned(std::min<size_t>(threads, chunks));
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w)
    pool.emplace_back(work, w, workers);
  work(0, workers);
  for (std::thread &th : pool)
    th.join();

  if (convert) {
    double e = 0, r = 0;
    for (size_t c = 0; c < chunks; ++c)
      e += err[c], r += ref[c];
    report.rmsError = r > 0 ? std::sqrt(e / r) : 0;
    report.converted = true;
  }
  return llvm::ArrayRef<uint8_t>(owned);
}

/// A line on stderr while the tensors are encoded (quantized, repacked): the
/// one at hand of how many, and the seconds since the first, at most ten
/// times a second. Shown only on a terminal; it ends with the total.
class Progress {
public:
  explicit Progress(size_t total)
      : total(total), tty(llvm::errs().is_displayed()), start(Clock::now()) {}
  ~Progress() {
    if (shown)
      llvm::errs() << llvm::formatv("\rkiln-compile: {0} tensors packed in {1:f1} s\x1b[K\n",
                                    total, seconds());
  }
  void at(size_t i, llvm::StringRef name) {
    if (!tty || (shown && seconds() - last < 0.1))
      return;
    last = seconds();
    shown = true;
    llvm::errs() << llvm::formatv("\rkiln-compile: packing tensor {0}/{1}, {2:f1} s: {3}\x1b[K",
                                  i + 1, total, last, name);
  }

private:
  using Clock = std::chrono::steady_clock;
  double seconds() const {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }
  size_t total;
  bool tty, shown = false;
  Clock::time_point start;
  double last = 0;
};

} // namespace

quant::FormatSpec kiln::formatOfGgmlType(uint32_t ggmlType) {
  int code = gguf::formatOfTensorType(ggmlType);
  if (code < 0)
    return {quant::Format::F32, 1};
  return {quant::Format(code), unsigned(kiln_uk_format(code)->elements)};
}

Expected<PackInfo> kiln::writePack(ModuleOp module, const gguf::File &model,
                                   const Vocabulary &vocab, llvm::StringRef path,
                                   unsigned jobs, const Imatrix *imatrix,
                                   bool activationScales) {
  std::vector<Segment> segments;
  llvm::StringSet<> seen;
  module.walk([&](Operation *op) {
    SegmentAttr attr = getSegmentAttr(op);
    PanelAttr panel = getLayoutAttr(op);
    std::string name;
    if (auto weight = dyn_cast<WeightOp>(op))
      name = weight.getSegmentName();
    else if (auto constant = dyn_cast<ConstantOp>(op))
      name = constant.getName().str();
    if (attr && !name.empty() && seen.insert(name).second)
      segments.push_back({name, cast<RankedTensorType>(op->getResult(0).getType()), attr,
                          panel ? panel.getRows() : 0});
  });
  std::sort(segments.begin(), segments.end(), [](const Segment &a, const Segment &b) {
    return a.attr.getOffset() < b.attr.getOffset();
  });
  IntegerAttr dataBytes = getPackDataBytesAttr(module);
  if (!dataBytes)
    return fail("the module has no pack layout (run kiln-pack-layout first)");

  VocabSegmentSpec spec;
  spec.model = vocab.model;
  spec.tokens = vocab.tokens;
  spec.scores = vocab.scores;
  spec.types = vocab.types;
  spec.merges = vocab.merges;
  spec.bos = static_cast<int32_t>(vocab.bos);
  spec.eos = static_cast<int32_t>(vocab.eos);
  spec.unk = static_cast<int32_t>(vocab.unk);
  spec.addBos = vocab.addBos;
  spec.addEos = vocab.addEos;
  spec.addSpacePrefix = vocab.addSpacePrefix;
  if (vocab.model == "gpt2")
    spec.pre = uint32_t(std::max(0, preTokenizerCode(vocab.preTokenizer)));
  spec.endOfGeneration = vocab.endOfGeneration;
  spec.chat = chatTemplateCode(vocab.chatTemplate);
  // A graph without a tokenizer has no vocabulary segment.
  const bool hasVocab = !vocab.tokens.empty();
  std::vector<uint8_t> vocabSegment;
  if (hasVocab) {
    vocabSegment = encodeVocabSegment(spec);
    if (vocabSegment.empty())
      return fail("the vocabulary cannot be stored for the runtime tokenizer");
  }
  uint64_t vocabOffset = hasVocab ? llvm::alignTo(dataBytes.getInt(), kPageBytes) : 0;
  uint64_t dataSize = hasVocab ? llvm::alignTo(vocabOffset + vocabSegment.size(), kPageBytes)
                               : uint64_t(dataBytes.getInt());

  std::string name = module.getSymName() ? module.getSymName()->str() : "model";
  // The table holds the model hash, known once every segment is encoded: the
  // file is written with a placeholder table of the same size, then its head
  // is written again. Tensors are encoded, written and released one at a time.
  auto table = [&](uint64_t hash) {
    flatbuffers::FlatBufferBuilder fbb(1 << 16);
    std::vector<flatbuffers::Offset<pack::Tensor>> tensors;
    std::map<int64_t, std::pair<uint64_t, uint64_t>> layers; // index -> [begin, end)
    for (const Segment &s : segments) {
      uint32_t group;
      pack::Format format = formatOf(s.type.getElementType(), group);
      std::vector<int64_t> shape(s.type.getShape().begin(), s.type.getShape().end());
      uint64_t offset = s.attr.getOffset(), size = s.attr.getBytes();
      tensors.push_back(pack::CreateTensorDirect(fbb, s.name.c_str(), format, group, &shape,
                                                 offset, size, s.attr.getLayer()));
      if (s.attr.getLayer() >= 0) {
        auto [it, inserted] = layers.try_emplace(s.attr.getLayer(), offset, offset + size);
        it->second.first = std::min(it->second.first, offset);
        it->second.second = std::max(it->second.second, offset + size);
      }
    }
    std::vector<flatbuffers::Offset<pack::Layer>> layerTable;
    for (auto [index, range] : layers)
      layerTable.push_back(
          pack::CreateLayer(fbb, index, range.first, range.second - range.first));
    std::vector<flatbuffers::Offset<flatbuffers::String>> tokens, merges;
    for (const std::string &t : vocab.tokens)
      tokens.push_back(fbb.CreateString(t));
    for (const std::string &m : vocab.merges)
      merges.push_back(fbb.CreateString(m));
    flatbuffers::Offset<pack::Vocabulary> vocabTable;
    if (hasVocab)
      vocabTable = pack::CreateVocabularyDirect(
          fbb, vocab.model.c_str(), &tokens, &vocab.scores, &vocab.types, &merges,
          vocab.bos, vocab.eos, vocab.unk, vocab.addBos, vocab.addSpacePrefix);
    auto root = pack::CreatePackDirect(fbb, name.c_str(), hash, &tensors, &layerTable,
                                       vocabTable, dataSize, vocabOffset,
                                       vocabSegment.size());
    pack::FinishPackBuffer(fbb, root);
    return fbb.Release();
  };
  flatbuffers::DetachedBuffer placeholder = table(~uint64_t(0));

  PackInfo info;
  info.dataOffset = llvm::alignTo(kHeaderBytes + placeholder.size(), kPageBytes);
  info.dataSize = dataSize;
  info.vocabOffset = vocabOffset;
  info.vocabBytes = vocabSegment.size();
  info.fileSize = info.dataOffset + info.dataSize;
  info.tensors.resize(segments.size());

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail(llvm::formatv("{0}: {1}", path, ec.message()));
  // Writes of whole aligned megabytes (a full buffer, or a large segment while
  // it is empty): the system then caches the file in large pages, which the
  // runtime maps with large pages, where small writes of padding would leave
  // small ones.
  os.SetBufferSize(8u << 20);
  uint64_t written = 0;
  auto padTo = [&](uint64_t target) {
    os.write_zeros(target - written);
    written = target;
  };
  padTo(info.dataOffset); // the header and the table, written last

  Fnv1a hash;
  unsigned threads = jobs ? jobs : std::max(1u, std::thread::hardware_concurrency());
  ActivationScales scales;
  if (imatrix && !imatrix->moments.empty() && activationScales)
    chooseActivationScales(model, segments, *imatrix, threads, scales, info.scaledInputs);
  quant::FactorCache factors;
  Progress progress(segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment &s = segments[i];
    progress.at(i, s.name);
    std::vector<uint8_t> owned;
    Expected<llvm::ArrayRef<uint8_t>> b =
        encodeSegment(model, s, imatrix, scales, factors, owned, info.tensors[i], threads);
    if (!b)
      return b.takeError();
    uint32_t group;
    hash.add(s.name);
    hash.add(uint64_t(formatOf(s.type.getElementType(), group)));
    hash.add(uint64_t(group));
    hash.add(uint64_t(s.panelRows));
    for (int64_t d : s.type.getShape())
      hash.add(uint64_t(d));
    hash.add(uint64_t(s.attr.getOffset()));
    hash.add(*b);
    padTo(info.dataOffset + s.attr.getOffset());
    os.write(reinterpret_cast<const char *>(b->data()), b->size());
    written += b->size();
    if (const gguf::TensorInfo *t = model.findTensor(s.name))
      model.release(*t);
  }
  if (hasVocab) {
    hash.add(vocabOffset);
    hash.add(llvm::ArrayRef(vocabSegment));
    padTo(info.dataOffset + vocabOffset);
    os.write(reinterpret_cast<const char *>(vocabSegment.data()), vocabSegment.size());
    written += vocabSegment.size();
  }
  padTo(info.fileSize);

  info.modelHash = hash.value();
  flatbuffers::DetachedBuffer final = table(info.modelHash);
  flatbuffers::Verifier verifier(final.data(), final.size());
  if (!pack::VerifyPackBuffer(verifier))
    return fail("internal error: the pack table does not verify");
  if (llvm::alignTo(kHeaderBytes + final.size(), kPageBytes) != info.dataOffset)
    return fail("internal error: the pack table changed size with its hash");
  std::vector<uint8_t> head(info.dataOffset, 0);
  const char magic[8] = {'K', 'I', 'L', 'N', 'P', 'A', 'C', 'K'};
  std::memcpy(head.data(), magic, sizeof(magic));
  using namespace llvm::support::endian;
  write32le(head.data() + 8, kPackVersion);
  write32le(head.data() + 12, 0);
  write64le(head.data() + 16, info.modelHash);
  write64le(head.data() + 24, kHeaderBytes);
  write64le(head.data() + 32, final.size());
  write64le(head.data() + 40, info.dataOffset);
  write64le(head.data() + 48, info.dataSize);
  write64le(head.data() + 56, info.fileSize);
  std::memcpy(head.data() + kHeaderBytes, final.data(), final.size());
  os.pwrite(reinterpret_cast<const char *>(head.data()), head.size(), 0);
  os.close();
  if (os.has_error())
    return fail(llvm::formatv("{0}: {1}", path, os.error().message()));
  return info;
}
