#ifndef KILN_COMPILER_IMPORT_GGUFREADER_H
#define KILN_COMPILER_IMPORT_GGUFREADER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::gguf {

/// Metadata value types, as numbered by the GGUF format.
enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};

/// Tensor types, as numbered by ggml: the `gguf` column of the format table
/// (KILN_UK_FORMATS) names the ones Kiln reads.
enum class TensorType : uint32_t { F32 = 0 };

/// One metadata value. Integers and floats keep their file type so a reader can
/// insist on it; arrays hold their elements.
struct Value {
  ValueType type = ValueType::U8;
  ValueType elementType = ValueType::U8; // arrays only
  uint64_t bits = 0;                     // integer and bool payload
  double real = 0;                       // F32 and F64 payload
  std::string str;
  std::vector<Value> elements;

  bool isInteger() const;
  int64_t asInt() const { return static_cast<int64_t>(bits); }
};

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> ne;   // ggml order: ne[0] is the contiguous dimension
  uint32_t type = 0;          // raw ggml type
  uint64_t offset = 0;        // from the start of the file
  uint64_t bytes = 0;

  uint64_t numElements() const;
  /// Shape in row-major order (reversed ne).
  std::vector<int64_t> shape() const;
};

/// Drops the whole pages inside `bytes`, a range of a read-only file mapping,
/// from this process's resident memory (the file's page cache keeps them).
void releaseMappedPages(llvm::ArrayRef<uint8_t> bytes);

/// A parsed GGUF file. The tensor bytes are not copied: `data` views the caller's
/// buffer (usually a memory-mapped file), which must outlive this object.
struct File {
  uint32_t version = 0;
  uint32_t alignment = 32;
  std::map<std::string, Value, std::less<>> metadata;
  std::vector<TensorInfo> tensors;
  llvm::ArrayRef<uint8_t> data;
  /// True when `data` is a read-only file mapping, whose pages `release` drops.
  bool mapped = false;

  const Value *find(llvm::StringRef key) const;
  const TensorInfo *findTensor(llvm::StringRef name) const;
  llvm::ArrayRef<uint8_t> tensorBytes(const TensorInfo &t) const {
    return data.slice(t.offset, t.bytes);
  }
  /// Drops the pages of `t` from this process's memory once they are used: a
  /// later read maps them again from the file. The compile reads each tensor
  /// once, so a model larger than memory costs about one tensor at a time.
  void release(const TensorInfo &t) const {
    if (mapped)
      releaseMappedPages(tensorBytes(t));
  }
};

/// Parses and validates the header, metadata and tensor table of `bytes`: version
/// 2 or 3, every value type, alignment, tensor ranges inside the file, aligned and
/// disjoint. Errors are one line and say what is wrong and where.
llvm::Expected<File> parse(llvm::ArrayRef<uint8_t> bytes);

/// The format table's code (KILN_UK_FORMAT_*) of a ggml tensor type, or -1
/// for a type Kiln does not read.
int formatOfTensorType(uint32_t type);

/// Name of a ggml tensor type, or "type N" for one Kiln does not know.
std::string tensorTypeName(uint32_t type);

/// The tensor types Kiln reads, for messages: "F32, F16, Q8_0, ...".
std::string supportedTensorTypes();

/// Elements per block and bytes per block of a supported tensor type.
bool blockLayout(uint32_t type, uint64_t &blockElements, uint64_t &blockBytes);

} // namespace kiln::gguf

#endif // KILN_COMPILER_IMPORT_GGUFREADER_H
