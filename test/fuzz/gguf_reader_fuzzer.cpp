// libFuzzer target: the GGUF reader must reject any byte string with an error,
// never read out of bounds or crash.
#include "compiler/import/GGUFReader.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<kiln::gguf::File> file = kiln::gguf::parse(llvm::ArrayRef(data, size));
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  // Touch every tensor's bytes: a parsed file promises they are in range.
  unsigned sum = 0;
  for (const kiln::gguf::TensorInfo &t : file->tensors)
    for (uint8_t b : file->tensorBytes(t))
      sum += b;
  return sum == 0xFFFFFFFFu ? 1 : 0;
}
