#include "compiler/eval/Npy.h"

#include "kiln/kiln_half.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

namespace kiln::eval {
namespace {

struct TypeName {
  NpyType type;
  const char *descr;
  size_t bytes;
};
constexpr TypeName kTypes[] = {
    {NpyType::F16, "<f2", 2}, {NpyType::F32, "<f4", 4}, {NpyType::F64, "<f8", 8}, {NpyType::I8, "|i1", 1}, {NpyType::I32, "<i4", 4},
    {NpyType::I64, "<i8", 8}, {NpyType::U8, "|u1", 1},  {NpyType::Bool, "|b1", 1},
};

llvm::Error bad(llvm::StringRef path, const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), path + ": " + why);
}

/// The text after `key` in the header dict, up to its closing quote or paren.
std::string field(llvm::StringRef header, llvm::StringRef key) {
  size_t at = header.find(key);
  if (at == llvm::StringRef::npos)
    return "";
  llvm::StringRef rest = header.drop_front(at + key.size()).ltrim(" :");
  if (rest.consume_front("'"))
    return rest.take_until([](char c) { return c == '\''; }).str();
  if (rest.consume_front("("))
    return rest.take_until([](char c) { return c == ')'; }).str();
  return rest.take_until([](char c) { return c == ',' || c == '}'; }).trim().str();
}

} // namespace

llvm::Expected<Buffer> readNpy(llvm::StringRef path, NpyType *typeOut) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!file)
    return bad(path, file.getError().message());
  llvm::StringRef bytes = (*file)->getBuffer();
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    return bad(path, "not a .npy file");
  const unsigned major = static_cast<uint8_t>(bytes[6]);
  size_t headerLen = 0, at = 0;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(bytes[8]) | static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8;
    at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad(path, "truncated header");
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    at = 12;
  } else {
    return bad(path, "unknown .npy version " + llvm::Twine(major));
  }
  if (at + headerLen > bytes.size())
    return bad(path, "truncated header");
  llvm::StringRef header = bytes.substr(at, headerLen);
  const std::string descr = field(header, "'descr'"), order = field(header, "'fortran_order'");
  const TypeName *type = nullptr;
  for (const TypeName &t : kTypes)
    if (descr == t.descr)
      type = &t;
  if (!type)
    return bad(path, "element type '" + descr + "' is not one kiln-eval reads (f2, f4, f8, i1, i4, i8, u1, b1)");
  if (order != "False")
    return bad(path, "Fortran order is not read; save a C-ordered array");
  Buffer b;
  llvm::SmallVector<llvm::StringRef> dims;
  llvm::StringRef(field(header, "'shape'")).split(dims, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef d : dims) {
    int64_t v;
    if (d.trim().getAsInteger(10, v) || v < 0)
      return bad(path, "malformed shape in its header");
    b.shape.push_back(v);
  }
  int64_t n = 1;
  for (int64_t d : b.shape)
    n *= d;
  const char *data = bytes.data() + at + headerLen;
  if (bytes.size() - at - headerLen != static_cast<size_t>(n) * type->bytes)
    return bad(path, "holds " + llvm::Twine(bytes.size() - at - headerLen) + " data bytes, its shape needs " +
                         llvm::Twine(static_cast<size_t>(n) * type->bytes));
  b.values.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const char *p = data + i * type->bytes;
    switch (type->type) {
    case NpyType::F16: { uint16_t v; std::memcpy(&v, p, 2); b.values[i] = kiln_f16_to_f32(v); break; }
    case NpyType::F32: { float v; std::memcpy(&v, p, 4); b.values[i] = v; break; }
    case NpyType::F64: { double v; std::memcpy(&v, p, 8); b.values[i] = v; break; }
    case NpyType::I32: { int32_t v; std::memcpy(&v, p, 4); b.values[i] = v; break; }
    case NpyType::I64: { int64_t v; std::memcpy(&v, p, 8); b.values[i] = static_cast<double>(v); break; }
    case NpyType::I8: b.values[i] = static_cast<int8_t>(*p); break;
    case NpyType::U8: case NpyType::Bool: b.values[i] = static_cast<uint8_t>(*p); break;
    }
  }
  if (typeOut)
    *typeOut = type->type;
  return b;
}

llvm::Error writeNpy(llvm::StringRef path, const Buffer &b, NpyType type) {
  const TypeName *t = nullptr;
  for (const TypeName &candidate : kTypes)
    if (candidate.type == type)
      t = &candidate;
  std::string shape;
  for (int64_t d : b.shape)
    shape += std::to_string(d) + ", ";
  if (b.shape.size() > 1)
    shape.resize(shape.size() - 1); // (2, 3) but (2,)
  else if (!b.shape.empty())
    shape.pop_back();
  std::string header = "{'descr': '" + std::string(t->descr) + "', 'fortran_order': False, 'shape': (" +
                       shape + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return bad(path, ec.message());
  out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size() & 0xff)
      << static_cast<char>(header.size() >> 8) << header;
  for (double x : b.values) {
    char bytes[8];
    switch (type) {
    case NpyType::F16: { uint16_t v = kiln_f32_to_f16(static_cast<float>(x)); std::memcpy(bytes, &v, 2); break; }
    case NpyType::F32: { float v = static_cast<float>(x); std::memcpy(bytes, &v, 4); break; }
    case NpyType::F64: std::memcpy(bytes, &x, 8); break;
    case NpyType::I32: { int32_t v = static_cast<int32_t>(x); std::memcpy(bytes, &v, 4); break; }
    case NpyType::I64: { int64_t v = static_cast<int64_t>(x); std::memcpy(bytes, &v, 8); break; }
    default: bytes[0] = static_cast<char>(static_cast<int64_t>(x)); break;
    }
    out.write(bytes, t->bytes);
  }
  if (out.has_error())
    return bad(path, out.error().message());
  return llvm::Error::success();
}

} // namespace kiln::eval
