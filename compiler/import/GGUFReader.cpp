#include "compiler/import/GGUFReader.h"

#include "kernels/kiln_uk_abi.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

using namespace kiln::gguf;
using llvm::ArrayRef;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

namespace {

constexpr uint32_t kMagic = 0x46554747; // "GGUF" read as little-endian u32
constexpr unsigned kMaxArrayDepth = 2;
constexpr unsigned kMaxDims = 4;

Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Bounds-checked little-endian cursor over the file.
class Cursor {
public:
  explicit Cursor(ArrayRef<uint8_t> bytes) : bytes(bytes) {}

  uint64_t offset() const { return pos; }
  uint64_t remaining() const { return bytes.size() - pos; }

  template <typename T> Error read(T &out, StringRef what) {
    if (remaining() < sizeof(T))
      return fail(llvm::formatv("truncated {0} at offset {1}", what, pos));
    std::memcpy(&out, bytes.data() + pos, sizeof(T));
    pos += sizeof(T);
    return Error::success();
  }

  Error readString(std::string &out, StringRef what) {
    uint64_t len;
    if (Error e = read(len, what))
      return e;
    if (len > remaining())
      return fail(llvm::formatv("truncated {0} at offset {1}: string of {2} bytes "
                                "with {3} left in the file",
                                what, pos - 8, len, remaining()));
    out.assign(reinterpret_cast<const char *>(bytes.data() + pos), len);
    pos += len;
    return Error::success();
  }

private:
  ArrayRef<uint8_t> bytes;
  uint64_t pos = 0;
};

/// Smallest encoding of one element, to reject array counts the file cannot hold
/// before allocating for them.
uint64_t minEncodedBytes(ValueType t) {
  switch (t) {
  case ValueType::U8: case ValueType::I8: case ValueType::Bool: return 1;
  case ValueType::U16: case ValueType::I16: return 2;
  case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
  case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
  case ValueType::String: return 8;
  case ValueType::Array: return 12;
  }
  return 1;
}

bool isKnownValueType(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::F64); }

template <typename T>
Error readScalar(Cursor &c, Value &v, StringRef what) {
  T raw;
  if (Error e = c.read(raw, what))
    return e;
  if constexpr (std::is_floating_point_v<T>)
    v.real = raw;
  else if constexpr (std::is_signed_v<T>)
    v.bits = static_cast<uint64_t>(static_cast<int64_t>(raw));
  else
    v.bits = raw;
  return Error::success();
}

Error readValue(Cursor &c, ValueType type, Value &v, StringRef what, unsigned depth) {
  v.type = type;
  switch (type) {
  case ValueType::U8: return readScalar<uint8_t>(c, v, what);
  case ValueType::I8: return readScalar<int8_t>(c, v, what);
  case ValueType::U16: return readScalar<uint16_t>(c, v, what);
  case ValueType::I16: return readScalar<int16_t>(c, v, what);
  case ValueType::U32: return readScalar<uint32_t>(c, v, what);
  case ValueType::I32: return readScalar<int32_t>(c, v, what);
  case ValueType::U64: return readScalar<uint64_t>(c, v, what);
  case ValueType::I64: return readScalar<int64_t>(c, v, what);
  case ValueType::F32: return readScalar<float>(c, v, what);
  case ValueType::F64: return readScalar<double>(c, v, what);
  case ValueType::Bool: {
    if (Error e = readScalar<uint8_t>(c, v, what))
      return e;
    if (v.bits > 1)
      return fail(llvm::formatv("{0}: bool value {1} is not 0 or 1", what, v.bits));
    return Error::success();
  }
  case ValueType::String: return c.readString(v.str, what);
  case ValueType::Array: {
    if (depth >= kMaxArrayDepth)
      return fail(llvm::formatv("{0}: arrays nested deeper than {1}", what,
                                kMaxArrayDepth));
    uint32_t elem;
    uint64_t count;
    if (Error e = c.read(elem, what))
      return e;
    if (!isKnownValueType(elem))
      return fail(llvm::formatv("{0}: unknown array element type {1}", what, elem));
    if (Error e = c.read(count, what))
      return e;
    v.elementType = static_cast<ValueType>(elem);
    if (count > c.remaining() / minEncodedBytes(v.elementType))
      return fail(llvm::formatv("truncated {0}: array of {1} elements does not fit "
                                "in the {2} bytes left",
                                what, count, c.remaining()));
    v.elements.resize(count);
    for (Value &e : v.elements)
      if (Error err = readValue(c, v.elementType, e, what, depth + 1))
        return err;
    return Error::success();
  }
  }
  return fail(llvm::formatv("{0}: unknown value type {1}", what,
                            static_cast<uint32_t>(type)));
}

} // namespace

bool Value::isInteger() const {
  switch (type) {
  case ValueType::U8: case ValueType::I8: case ValueType::U16: case ValueType::I16:
  case ValueType::U32: case ValueType::I32: case ValueType::U64: case ValueType::I64:
    return true;
  default:
    return false;
  }
}

uint64_t TensorInfo::numElements() const {
  uint64_t n = 1;
  for (uint64_t d : ne)
    n *= d;
  return n;
}

std::vector<int64_t> TensorInfo::shape() const {
  return std::vector<int64_t>(ne.rbegin(), ne.rend());
}

const Value *File::find(StringRef key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

const TensorInfo *File::findTensor(StringRef name) const {
  for (const TensorInfo &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

int kiln::gguf::formatOfTensorType(uint32_t type) {
  for (int code = 0; code < KILN_UK_FORMAT_END; ++code)
    if (kiln_uk_format(code)->gguf == int64_t(type))
      return code;
  return -1;
}

std::string kiln::gguf::tensorTypeName(uint32_t type) {
  if (int code = formatOfTensorType(type); code >= 0)
    return llvm::StringRef(kiln_uk_format(code)->name).upper();
  // ggml's other types that a file might hold, by their names.
  static const std::pair<uint32_t, const char *> others[] = {{9, "Q8_1"}, {15, "Q8_K"}};
  for (auto [id, name] : others)
    if (id == type)
      return name;
  return "type " + std::to_string(type);
}

std::string kiln::gguf::supportedTensorTypes() {
  std::string names;
  for (int code = 0; code < KILN_UK_FORMAT_END; ++code)
    if (kiln_uk_format(code)->gguf >= 0)
      names += (names.empty() ? "" : ", ") + tensorTypeName(kiln_uk_format(code)->gguf);
  return names;
}

bool kiln::gguf::blockLayout(uint32_t type, uint64_t &blockElements,
                             uint64_t &blockBytes) {
  int code = formatOfTensorType(type);
  if (code < 0)
    return false;
  blockElements = uint64_t(kiln_uk_format(code)->elements);
  blockBytes = uint64_t(kiln_uk_format_bytes(code, 0));
  return true;
}

static Error readTensorInfo(Cursor &c, TensorInfo &t, unsigned index) {
  std::string what = llvm::formatv("tensor info {0}", index);
  if (Error e = c.readString(t.name, what))
    return e;
  what = "tensor info '" + t.name + "'";
  uint32_t nDims;
  if (Error e = c.read(nDims, what))
    return e;
  if (nDims == 0 || nDims > kMaxDims)
    return fail(llvm::formatv("{0}: {1} dimensions (expected 1 to {2})", what, nDims,
                              kMaxDims));
  t.ne.resize(nDims);
  uint64_t elements = 1;
  for (uint64_t &d : t.ne) {
    if (Error e = c.read(d, what))
      return e;
    // Keep the element count far from overflow; no real tensor comes close.
    if (d == 0 || d > (uint64_t(1) << 40) || elements > (uint64_t(1) << 40) / d)
      return fail(llvm::formatv("{0}: dimension {1} is zero or too large", what, d));
    elements *= d;
  }
  if (Error e = c.read(t.type, what))
    return e;
  if (Error e = c.read(t.offset, what))
    return e;
  uint64_t blockElements, blockBytes;
  if (!blockLayout(t.type, blockElements, blockBytes))
    return fail(llvm::formatv("{0}: unsupported tensor type {1} (supported: {2})", what,
                              tensorTypeName(t.type), supportedTensorTypes()));
  if (t.ne[0] % blockElements != 0)
    return fail(llvm::formatv("{0}: row of {1} elements is not a whole number of {2} "
                              "blocks of {3}",
                              what, t.ne[0], tensorTypeName(t.type), blockElements));
  t.bytes = elements / blockElements * blockBytes;
  return Error::success();
}

Expected<File> kiln::gguf::parse(ArrayRef<uint8_t> bytes) {
  Cursor c(bytes);
  File file;
  uint32_t magic;
  if (Error e = c.read(magic, "header"))
    return std::move(e);
  if (magic != kMagic)
    return fail("not a GGUF file (bad magic)");
  if (Error e = c.read(file.version, "header"))
    return std::move(e);
  if (file.version != 2 && file.version != 3)
    return fail(llvm::formatv("unsupported GGUF version {0} (supported: 2, 3)",
                              file.version));
  uint64_t tensorCount, kvCount;
  if (Error e = c.read(tensorCount, "header"))
    return std::move(e);
  if (Error e = c.read(kvCount, "header"))
    return std::move(e);
  // Each key-value and tensor info takes at least 12 and 24 bytes.
  if (kvCount > c.remaining() / 12 || tensorCount > c.remaining() / 24)
    return fail(llvm::formatv("truncated header: {0} metadata entries and {1} tensors "
                              "cannot fit in {2} bytes",
                              kvCount, tensorCount, bytes.size()));

  for (uint64_t i = 0; i < kvCount; ++i) {
    std::string key;
    if (Error e = c.readString(key, llvm::formatv("metadata key {0}", i).str()))
      return std::move(e);
    std::string what = "metadata '" + key + "'";
    uint32_t type;
    if (Error e = c.read(type, what))
      return std::move(e);
    if (!isKnownValueType(type))
      return fail(llvm::formatv("{0}: unknown value type {1}", what, type));
    Value v;
    if (Error e = readValue(c, static_cast<ValueType>(type), v, what, 0))
      return std::move(e);
    if (!file.metadata.emplace(key, std::move(v)).second)
      return fail(llvm::formatv("{0}: duplicate key", what));
  }

  if (const Value *a = file.find("general.alignment")) {
    if (!a->isInteger() || a->bits == 0 || a->bits > (1u << 16) ||
        (a->bits & (a->bits - 1)) != 0)
      return fail(llvm::formatv("general.alignment must be a power of two up to 65536, "
                                "got {0}",
                                a->bits));
    file.alignment = static_cast<uint32_t>(a->bits);
  }

  file.tensors.resize(tensorCount);
  for (uint64_t i = 0; i < tensorCount; ++i)
    if (Error e = readTensorInfo(c, file.tensors[i], i))
      return std::move(e);

  uint64_t dataStart = llvm::alignTo(c.offset(), file.alignment);
  if (dataStart > bytes.size() && tensorCount > 0)
    return fail(llvm::formatv("truncated: tensor data would start at {0} but the file "
                              "has {1} bytes",
                              dataStart, bytes.size()));
  file.data = bytes.drop_front(std::min<uint64_t>(dataStart, bytes.size()));

  std::vector<const TensorInfo *> byOffset;
  for (TensorInfo &t : file.tensors) {
    if (t.offset % file.alignment != 0)
      return fail(llvm::formatv("tensor '{0}': offset {1} is not a multiple of the "
                                "alignment {2}",
                                t.name, t.offset, file.alignment));
    if (t.offset > file.data.size() || t.bytes > file.data.size() - t.offset)
      return fail(llvm::formatv("tensor '{0}': data [{1}, {2}) runs past the end of the "
                                "file ({3} data bytes; truncated?)",
                                t.name, dataStart + t.offset,
                                dataStart + t.offset + t.bytes, file.data.size()));
    byOffset.push_back(&t);
  }
  std::sort(byOffset.begin(), byOffset.end(),
            [](auto *a, auto *b) { return a->offset < b->offset; });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i - 1]->offset + byOffset[i - 1]->bytes > byOffset[i]->offset)
      return fail(llvm::formatv("tensors '{0}' and '{1}' overlap", byOffset[i - 1]->name,
                                byOffset[i]->name));
  llvm::StringSet<> names;
  for (const TensorInfo &t : file.tensors)
    if (!names.insert(t.name).second)
      return fail(llvm::formatv("tensor '{0}' appears twice", t.name));
  return std::move(file);
}

void kiln::gguf::releaseMappedPages(ArrayRef<uint8_t> bytes) {
#ifdef MADV_DONTNEED
  uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  uintptr_t begin = llvm::alignTo(uintptr_t(bytes.data()), page);
  uintptr_t end = llvm::alignDown(uintptr_t(bytes.data()) + bytes.size(), page);
  // Advice only: when refused, the pages stay until the mapping is closed.
  if (end > begin)
    (void)madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
#else
  (void)bytes;
#endif
}
