#include "compiler/pack/PackWriter.h"

#include "kernels/c99/kiln_uk_pack.h"

#include "compiler/pack/VocabSegment.h"
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
#include <map>

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
static_assert(pack::Format_MAX + 1 == KILN_UK_FORMAT_END,
              "kiln_pack.fbs and KILN_UK_FORMATS list different formats");

pack::Format formatOf(Type element, uint32_t &groupSize) {
  quant::FormatSpec spec = specOf(element);
  groupSize = spec.group;
  return static_cast<pack::Format>(spec.format);
}

bool sameFormat(quant::FormatSpec a, quant::FormatSpec b) {
  return a.format == b.format && a.group == b.group;
}

/// The bytes of a weight as the generated kernels read them: the model file's
/// bytes when the format is unchanged, else decoded and re-encoded into `owned`.
Expected<llvm::ArrayRef<uint8_t>> segmentBytes(const gguf::File &model, const Segment &s,
                                               std::vector<uint8_t> &owned,
                                               TensorReport &report) {
  const gguf::TensorInfo *t = model.findTensor(s.name);
  if (!t)
    return fail(llvm::formatv("the model has no tensor '{0}'", s.name));
  quant::FormatSpec from = formatOfGgmlType(t->type), to = specOf(s.type.getElementType());
  int64_t rowLayoutBytes = getStorageBytes(s.type);
  report.name = s.name;
  report.format = quant::formatName(to);
  report.bytes = s.attr.getBytes();
  if (t->numElements() != uint64_t(s.type.getNumElements()))
    return fail(llvm::formatv("tensor '{0}' has {1} elements in the model but the IR "
                              "expects {2}",
                              s.name, t->numElements(), s.type.getNumElements()));
  if (sameFormat(from, to)) {
    if (t->bytes != uint64_t(rowLayoutBytes))
      return fail(llvm::formatv("tensor '{0}' has {1} bytes in the model but the IR "
                                "expects {2}",
                                s.name, t->bytes, rowLayoutBytes));
    return model.tensorBytes(*t);
  }
  size_t n = t->numElements();
  std::vector<float> values(n), decoded(n);
  quant::dequantize(from, model.tensorBytes(*t).data(), n, values.data());
  owned.resize(quant::rowBytes(to, n));
  if (owned.size() != uint64_t(rowLayoutBytes))
    return fail(llvm::formatv("tensor '{0}': {1} needs {2} bytes but the IR expects {3}",
                              s.name, report.format, owned.size(), rowLayoutBytes));
  quant::quantize(to, values.data(), n, owned.data());
  quant::dequantize(to, owned.data(), n, decoded.data());
  double err = 0, ref = 0;
  for (size_t i = 0; i < n; ++i) {
    err += (double(values[i]) - decoded[i]) * (double(values[i]) - decoded[i]);
    ref += double(values[i]) * values[i];
  }
  report.rmsError = ref > 0 ? std::sqrt(err / ref) : 0;
  report.converted = true;
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

/// Row-layout bytes of `s` repacked into the panels its kernels read.
Expected<std::vector<uint8_t>> repackPanels(const Segment &s, llvm::ArrayRef<uint8_t> rows) {
  Type element = s.type.getElementType();
  int family = getKernelFamily(element);
  int32_t n = int32_t(s.type.getDimSize(0)), k = int32_t(s.type.getDimSize(1));
  int32_t g = int32_t(getBlockElements(element));
  size_t bytes = kiln_uk_panel_bytes(family, n, k, g, int32_t(s.panelRows));
  if (bytes != uint64_t(s.attr.getBytes()) ||
      rows.size() != size_t(n) * kiln_uk_row_bytes(family, k, g))
    return fail(llvm::formatv("internal error: tensor '{0}' in {1}-row panels needs {2} "
                              "bytes but its segment has {3}",
                              s.name, s.panelRows, bytes, s.attr.getBytes()));
  std::vector<uint8_t> panels(bytes);
  kiln_uk_pack_panels(family, rows.data(), panels.data(), n, k, g, int32_t(s.panelRows));
  return panels;
}

} // namespace

quant::FormatSpec kiln::formatOfGgmlType(uint32_t ggmlType) {
  int code = gguf::formatOfTensorType(ggmlType);
  if (code < 0)
    return {quant::Format::F32, 1};
  return {quant::Format(code), unsigned(kiln_uk_format(code)->elements)};
}

Expected<PackInfo> kiln::writePack(ModuleOp module, const gguf::File &model,
                                   const Vocabulary &vocab, llvm::StringRef path) {
  std::vector<Segment> segments;
  llvm::StringSet<> seen;
  module.walk([&](WeightOp op) {
    SegmentAttr attr = getSegmentAttr(op);
    PanelAttr panel = getLayoutAttr(op);
    if (attr && seen.insert(op.getName()).second)
      segments.push_back({op.getName().str(), op.getType(), attr, panel ? panel.getRows() : 0});
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
  std::vector<uint8_t> vocabSegment = encodeVocabSegment(spec);
  if (vocabSegment.empty())
    return fail("the vocabulary cannot be stored for the runtime tokenizer");
  uint64_t vocabOffset = llvm::alignTo(dataBytes.getInt(), kPageBytes);
  uint64_t dataSize = llvm::alignTo(vocabOffset + vocabSegment.size(), kPageBytes);

  Fnv1a hash;
  std::vector<llvm::ArrayRef<uint8_t>> bytes;
  std::vector<std::vector<uint8_t>> owned(segments.size());
  std::vector<TensorReport> reports(segments.size());
  Progress progress(segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment &s = segments[i];
    progress.at(i, s.name);
    Expected<llvm::ArrayRef<uint8_t>> b = segmentBytes(model, s, owned[i], reports[i]);
    if (!b)
      return b.takeError();
    if (s.panelRows > 0) {
      Expected<std::vector<uint8_t>> panels = repackPanels(s, *b);
      if (!panels)
        return panels.takeError();
      owned[i] = std::move(*panels);
      b = llvm::ArrayRef<uint8_t>(owned[i]);
    }
    bytes.push_back(*b);
    uint32_t group;
    hash.add(s.name);
    hash.add(uint64_t(formatOf(s.type.getElementType(), group)));
    hash.add(uint64_t(group));
    hash.add(uint64_t(s.panelRows));
    for (int64_t d : s.type.getShape())
      hash.add(uint64_t(d));
    hash.add(uint64_t(s.attr.getOffset()));
    hash.add(*b);
  }
  hash.add(vocabOffset);
  hash.add(llvm::ArrayRef(vocabSegment));

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
  auto vocabTable = pack::CreateVocabularyDirect(
      fbb, vocab.model.c_str(), &tokens, &vocab.scores, &vocab.types, &merges,
      vocab.bos, vocab.eos, vocab.unk, vocab.addBos, vocab.addSpacePrefix);
  std::string name = module.getSymName() ? module.getSymName()->str() : "model";
  auto root = pack::CreatePackDirect(fbb, name.c_str(), hash.value(), &tensors,
                                     &layerTable, vocabTable, dataSize, vocabOffset,
                                     vocabSegment.size());
  pack::FinishPackBuffer(fbb, root);

  flatbuffers::Verifier verifier(fbb.GetBufferPointer(), fbb.GetSize());
  if (!pack::VerifyPackBuffer(verifier))
    return fail("internal error: the pack table does not verify");

  PackInfo info;
  info.modelHash = hash.value();
  info.dataOffset = llvm::alignTo(kHeaderBytes + fbb.GetSize(), kPageBytes);
  info.dataSize = dataSize;
  info.vocabOffset = vocabOffset;
  info.vocabBytes = vocabSegment.size();
  info.tensors = std::move(reports);
  info.fileSize = info.dataOffset + info.dataSize;

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail(llvm::formatv("{0}: {1}", path, ec.message()));
  // Writes of whole aligned megabytes (a full buffer, or a large segment while
  // it is empty): the system then caches the file in large pages, which the
  // runtime maps with large pages, where small writes of padding would leave
  // small ones.
  os.SetBufferSize(8u << 20);
  uint8_t header[kHeaderBytes] = {'K', 'I', 'L', 'N', 'P', 'A', 'C', 'K'};
  using namespace llvm::support::endian;
  write32le(header + 8, kPackVersion);
  write32le(header + 12, 0);
  write64le(header + 16, info.modelHash);
  write64le(header + 24, kHeaderBytes);
  write64le(header + 32, fbb.GetSize());
  write64le(header + 40, info.dataOffset);
  write64le(header + 48, info.dataSize);
  write64le(header + 56, info.fileSize);
  os.write(reinterpret_cast<const char *>(header), kHeaderBytes);
  os.write(reinterpret_cast<const char *>(fbb.GetBufferPointer()), fbb.GetSize());
  uint64_t written = kHeaderBytes + fbb.GetSize();
  auto padTo = [&](uint64_t target) {
    os.write_zeros(target - written);
    written = target;
  };
  padTo(info.dataOffset);
  for (size_t i = 0; i < segments.size(); ++i) {
    padTo(info.dataOffset + segments[i].attr.getOffset());
    os.write(reinterpret_cast<const char *>(bytes[i].data()), bytes[i].size());
    written += bytes[i].size();
  }
  padTo(info.dataOffset + vocabOffset);
  os.write(reinterpret_cast<const char *>(vocabSegment.data()), vocabSegment.size());
  written += vocabSegment.size();
  padTo(info.fileSize);
  os.close();
  if (os.has_error())
    return fail(llvm::formatv("{0}: {1}", path, os.error().message()));
  return info;
}
