#ifndef KILN_COMPILER_EVAL_NPY_H
#define KILN_COMPILER_EVAL_NPY_H

// NumPy's .npy files (format 1.0 and 2.0, little-endian, C order): the
// inputs and outputs of kiln-eval.

#include "compiler/eval/GraphEvaluator.h"

namespace kiln::eval {

/// The element types .npy files carry here: float16/32/64, int8/32/64, uint8, bool.
enum class NpyType { F16, F32, F64, I8, I32, I64, U8, Bool };

/// Reads `path` into a buffer; its element type in `type`.
llvm::Expected<Buffer> readNpy(llvm::StringRef path, NpyType *type = nullptr);

/// Writes `buffer` to `path` as `type`.
llvm::Error writeNpy(llvm::StringRef path, const Buffer &buffer, NpyType type);

} // namespace kiln::eval

#endif // KILN_COMPILER_EVAL_NPY_H
