#include "compiler/quant/Imatrix.h"

#include "compiler/quant/Gptq.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

using namespace kiln;
using llvm::StringRef;

namespace {

llvm::Error fail(StringRef path, const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": importance matrix: " + what);
}

/// Little-endian fields of a byte range, each read checked against its end.
class Cursor {
public:
  explicit Cursor(llvm::ArrayRef<uint8_t> bytes) : bytes(bytes) {}
  bool atEnd() const { return at == bytes.size(); }
  bool i32(int32_t &v) {
    if (bytes.size() - at < 4)
      return false;
    v = int32_t(llvm::support::endian::read32le(bytes.data() + at));
    at += 4;
    return true;
  }
  bool text(int32_t length, std::string &s) {
    if (length < 0 || bytes.size() - at < size_t(length))
      return false;
    s.assign(reinterpret_cast<const char *>(bytes.data() + at), size_t(length));
    at += size_t(length);
    return true;
  }
  bool floats(int32_t count, std::vector<float> &v) {
    if (count < 0 || (bytes.size() - at) / 4 < size_t(count))
      return false;
    v.resize(size_t(count));
    for (float &f : v) {
      uint32_t u = llvm::support::endian::read32le(bytes.data() + at);
      std::memcpy(&f, &u, 4);
      at += 4;
    }
    return true;
  }

private:
  llvm::ArrayRef<uint8_t> bytes;
  size_t at = 0;
};

llvm::Error checkValues(StringRef path, StringRef name, const std::vector<float> &v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]) || v[i] < 0)
      return fail(path, llvm::formatv("entry '{0}' column {1} is {2}: an importance is a "
                                      "finite mean square, >= 0",
                                      name, i, v[i]));
  return llvm::Error::success();
}

llvm::Expected<Imatrix> readLegacy(StringRef path, llvm::ArrayRef<uint8_t> bytes) {
  Cursor c(bytes);
  Imatrix m;
  int32_t entries;
  if (!c.i32(entries) || entries <= 0 || size_t(entries) > bytes.size() / 12)
    return fail(path, "not an importance matrix: the .dat form starts with a count of "
                      "entries that fits the file, and GGUF with 'GGUF'");
  for (int32_t e = 0; e < entries; ++e) {
    int32_t length, ncall, nval;
    std::string name;
    std::vector<float> values;
    if (!c.i32(length) || !c.text(length, name) || !c.i32(ncall) || !c.i32(nval) ||
        !c.floats(nval, values))
      return fail(path, llvm::formatv("entry {0} of {1} is cut short (the file ends at byte "
                                      "{2})",
                                      e, entries, bytes.size()));
    if (name.empty() || nval <= 0 || ncall < 0)
      return fail(path, llvm::formatv("entry {0} ('{1}') has {2} values over {3} calls", e,
                                      name, nval, ncall));
    if (ncall > 0)
      for (float &v : values)
        v /= float(ncall);
    if (llvm::Error err = checkValues(path, name, values))
      return std::move(err);
    if (!m.columns.emplace(name, std::move(values)).second)
      return fail(path, llvm::formatv("entry '{0}' appears twice", name));
  }
  int32_t chunks, length;
  if (c.atEnd())
    return m;
  if (!c.i32(chunks) || !c.i32(length) || !c.text(length, m.dataset) || !c.atEnd())
    return fail(path, "the trailer (chunk count, dataset name) is malformed");
  m.chunks = chunks;
  return m;
}

llvm::Expected<Imatrix> readGguf(StringRef path, llvm::ArrayRef<uint8_t> bytes) {
  llvm::Expected<gguf::File> file = gguf::parse(bytes);
  if (!file)
    return fail(path, llvm::toString(file.takeError()));
  const gguf::Value *type = file->find("general.type");
  if (!type || type->str != "imatrix")
    return fail(path, "a GGUF file without general.type = \"imatrix\" (a model, not an "
                      "importance matrix?)");
  Imatrix m;
  if (const gguf::Value *chunks = file->find("imatrix.chunk_count"))
    m.chunks = chunks->asInt();
  if (const gguf::Value *sets = file->find("imatrix.datasets"))
    if (!sets->elements.empty())
      m.dataset = sets->elements.front().str;
  for (const gguf::TensorInfo &t : file->tensors) {
    StringRef name(t.name);
    if (!name.consume_back(".in_sum2"))
      continue;
    const gguf::TensorInfo *counts = file->findTensor((name + ".counts").str());
    if (!counts)
      return fail(path, llvm::formatv("'{0}' has no counts tensor", t.name));
    uint64_t matrices = t.ne.size() > 1 ? t.ne[1] : 1;
    if (t.type != 0 || counts->type != 0 || t.ne.empty() || counts->numElements() != matrices)
      return fail(path, llvm::formatv("'{0}' and its counts are not F32 [columns, matrices] "
                                      "and [1, matrices]",
                                      t.name));
    auto floatsOf = [&](const gguf::TensorInfo &info) {
      std::vector<float> v(info.numElements());
      std::memcpy(v.data(), file->tensorBytes(info).data(), v.size() * 4);
      return v;
    };
    std::vector<float> values = floatsOf(t), n = floatsOf(*counts);
    const uint64_t cols = t.ne[0];
    for (uint64_t i = 0; i < values.size(); ++i) {
      float count = n[i / cols];
      values[i] = count > 0 ? values[i] / count : 1.0f; // unseen: every column alike
    }
    if (llvm::Error err = checkValues(path, name, values))
      return std::move(err);
    m.columns.emplace(name.str(), std::move(values));
  }
  if (m.columns.empty())
    return fail(path, "no '<tensor>.in_sum2' tensors");
  return m;
}

llvm::Expected<Imatrix> readMoments(StringRef path, llvm::ArrayRef<uint8_t> bytes) {
  Cursor c(bytes.drop_front(8));
  Imatrix m;
  int32_t entries;
  if (!c.i32(entries) || entries <= 0)
    return fail(path, "a moments file without entries");
  for (int32_t e = 0; e < entries; ++e) {
    int32_t length, cols, low, high;
    std::string names;
    auto square = std::make_shared<std::vector<float>>();
    std::vector<float> triangle;
    if (!c.i32(length) || !c.text(length, names) || !c.i32(cols) || !c.i32(low) ||
        !c.i32(high) || cols <= 0 || cols > (1 << 20) ||
        !c.floats(int32_t(std::min<int64_t>(int64_t(cols) * (cols + 1) / 2, INT32_MAX)),
                  triangle))
      return fail(path, llvm::formatv("moments entry {0} of {1} is cut short or malformed", e,
                                      entries));
    if (int64_t(triangle.size()) != int64_t(cols) * (cols + 1) / 2)
      return fail(path, llvm::formatv("moments entry {0} ('{1}') is too large", e, names));
    const size_t n = size_t(cols);
    square->resize(n * n);
    for (size_t i = 0, at = 0; i < n; ++i)
      for (size_t j = i; j < n; ++j, ++at)
        (*square)[i * n + j] = (*square)[j * n + i] = triangle[at];
    const std::vector<float> diagonal = quant::diagonalOf(square->data(), n);
    for (float v : *square)
      if (!std::isfinite(v))
        return fail(path, llvm::formatv("moments entry '{0}' holds {1}", names, v));
    if (llvm::Error err = checkValues(path, names, diagonal))
      return std::move(err);
    for (StringRef rest = names; !rest.empty();) {
      auto [name, next] = rest.split('+');
      rest = next;
      if (!m.columns.emplace(name.str(), diagonal).second)
        return fail(path, llvm::formatv("tensor '{0}' appears twice", name));
      m.moments.emplace(name.str(), square);
    }
  }
  if (!c.atEnd())
    return fail(path, "bytes after the last moments entry");
  return m;
}

} // namespace

const std::vector<float> *Imatrix::find(StringRef name) const {
  auto it = columns.find(name);
  return it == columns.end() ? nullptr : &it->second;
}

const std::vector<float> *Imatrix::findMoments(StringRef name) const {
  auto it = moments.find(name);
  return it == moments.end() ? nullptr : it->second.get();
}

llvm::Expected<Imatrix> kiln::readImatrix(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(path, buffer.getError().message());
  llvm::ArrayRef<uint8_t> bytes(
      reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()), (*buffer)->getBufferSize());
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0)
    return readGguf(path, bytes);
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), "KILNMOM1", 8) == 0)
    return readMoments(path, bytes);
  return readLegacy(path, bytes);
}

llvm::Error kiln::writeImatrix(const Imatrix &imatrix, StringRef path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return fail(path, ec.message());
  auto i32 = [&](int64_t v) {
    char le[4];
    llvm::support::endian::write32le(le, uint32_t(int32_t(v)));
    os.write(le, 4);
  };
  const int64_t ncall = std::max<int64_t>(imatrix.chunks, 1);
  i32(int64_t(imatrix.columns.size()));
  for (const auto &[name, values] : imatrix.columns) {
    i32(int64_t(name.size()));
    os << name;
    i32(ncall);
    i32(int64_t(values.size()));
    for (float v : values) {
      float stored = v * float(ncall);
      char le[4];
      uint32_t u;
      std::memcpy(&u, &stored, 4);
      llvm::support::endian::write32le(le, u);
      os.write(le, 4);
    }
  }
  i32(imatrix.chunks);
  i32(int64_t(imatrix.dataset.size()));
  os << imatrix.dataset;
  os.close();
  if (os.has_error())
    return fail(path, os.error().message());
  return llvm::Error::success();
}

llvm::Error kiln::checkImatrix(const Imatrix &imatrix, const gguf::File &model, StringRef path) {
  for (const auto &[name, values] : imatrix.columns) {
    const gguf::TensorInfo *t = model.findTensor(name);
    if (!t)
      return fail(path, llvm::formatv("entry '{0}' names no tensor of the model (an "
                                      "importance matrix of another model?)",
                                      name));
    if (t->ne.size() != 2 || t->ne[0] != values.size())
      return fail(path, llvm::formatv("entry '{0}' has {1} columns but the model's tensor "
                                      "has {2}",
                                      name, values.size(), t->ne.empty() ? 0 : t->ne[0]));
  }
  return llvm::Error::success();
}
