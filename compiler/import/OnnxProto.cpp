#include "compiler/import/OnnxProto.h"

#include <cstring>
#include <fstream>

namespace kiln::onnx {
namespace {

using ::onnx::TensorProto;

std::string directoryOf(const std::string &path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// An external initializer's bytes: `location` beside the model, from
/// `offset`, `length` bytes (default: to the end of the file).
std::vector<uint8_t> readExternal(const std::string &modelPath, const TensorProto &t,
                                  size_t want) {
  std::string location;
  long long offset = 0, length = -1;
  for (const auto &entry : t.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset")
      offset = std::atoll(entry.value().c_str());
    else if (entry.key() == "length")
      length = std::atoll(entry.value().c_str());
  }
  if (location.empty() || location.find("..") != std::string::npos || location[0] == '/')
    throw Failure{"initializer '" + t.name() + "' names no usable external file ('" + location + "')"};
  const std::string path = directoryOf(modelPath) + "/" + location;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Failure{"initializer '" + t.name() + "': cannot open its external data " + path};
  if (length < 0)
    length = static_cast<long long>(want);
  if (static_cast<size_t>(length) != want)
    throw Failure{"initializer '" + t.name() + "': its external data holds " + std::to_string(length) +
                  " bytes, its shape needs " + std::to_string(want)};
  std::vector<uint8_t> bytes(want);
  in.seekg(offset);
  in.read(reinterpret_cast<char *>(bytes.data()), static_cast<std::streamsize>(want));
  if (!in || in.gcount() != static_cast<std::streamsize>(want))
    throw Failure{"initializer '" + t.name() + "': " + path + " ends before its " + std::to_string(want) +
                  " bytes at offset " + std::to_string(offset)};
  return bytes;
}

template <typename T, typename Field>
void copyField(const Field &field, std::vector<uint8_t> &bytes) {
  for (int i = 0; i < field.size(); ++i) {
    const T v = static_cast<T>(field.Get(i));
    std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
  }
}

} // namespace

Tensor readTensor(const std::string &modelPath, const TensorProto &t) {
  Tensor out;
  out.info.name = t.name();
  out.info.type = static_cast<ElementType>(t.data_type());
  for (int64_t d : t.dims()) {
    if (d < 0)
      throw Failure{"tensor '" + t.name() + "' has a negative dimension"};
    out.info.shape.push_back(d);
  }
  const int64_t size = elementBytes(out.info.type);
  if (size == 0)
    throw Failure{"tensor '" + t.name() + "' is of " + elementName(out.info.type) + ", which Kiln does not read"};
  const size_t want = static_cast<size_t>(out.info.numElements() * size);
  if (t.data_location() == TensorProto::EXTERNAL) {
    out.bytes = readExternal(modelPath, t, want);
    return out;
  }
  out.bytes.assign(want, 0);
  size_t have = 0;
  if (t.has_raw_data()) {
    have = t.raw_data().size();
    if (have == want)
      std::memcpy(out.bytes.data(), t.raw_data().data(), want);
  } else {
    switch (out.info.type) {
    case ElementType::F32:
      have = t.float_data_size() * 4u;
      if (have == want) copyField<float>(t.float_data(), out.bytes);
      break;
    case ElementType::F64:
      have = t.double_data_size() * 8u;
      if (have == want) copyField<double>(t.double_data(), out.bytes);
      break;
    case ElementType::I64:
      have = t.int64_data_size() * 8u;
      if (have == want) copyField<int64_t>(t.int64_data(), out.bytes);
      break;
    case ElementType::U32: case ElementType::U64:
      have = t.uint64_data_size() * static_cast<size_t>(size);
      if (have == want && size == 4) copyField<uint32_t>(t.uint64_data(), out.bytes);
      if (have == want && size == 8) copyField<uint64_t>(t.uint64_data(), out.bytes);
      break;
    default: // int32, int16, int8, uint8, uint16, bool, float16, bfloat16: int32_data
      have = t.int32_data_size() * static_cast<size_t>(size);
      if (have == want) {
        if (size == 4) copyField<int32_t>(t.int32_data(), out.bytes);
        if (size == 2) copyField<uint16_t>(t.int32_data(), out.bytes);
        if (size == 1) copyField<uint8_t>(t.int32_data(), out.bytes);
      }
    }
  }
  if (have != want)
    throw Failure{"tensor '" + t.name() + "' holds " + std::to_string(have) + " bytes, its shape needs " +
                  std::to_string(want)};
  return out;
}


} // namespace kiln::onnx
