#ifndef KILN_COMPILER_CALIBRATE_H
#define KILN_COMPILER_CALIBRATE_H

#include "llvm/Support/Error.h"

#include <string>

namespace kiln {

/// A calibration pass over a text: the model's own generated host code, built
/// with KILN_TAPS, runs the text in chunks of `ctx` tokens (each [BOS] + ctx-1,
/// as --perplexity) and its taps sum every matmul's input per column.
struct Calibration {
  std::string text;   // the calibration text, tokenized by the model's tokenizer
  int64_t ctx = 0;    // tokens a chunk
  int64_t chunks = 0; // at most this many chunks; 0: every whole chunk of the text
};

/// Builds the generated folder `dir` (CMake, the host's C compiler) with
/// KILN_TAPS, runs its kiln-generate on `pack` over the calibration text and
/// writes the importance matrix to `out` (llama.cpp's .dat form). Errors name
/// the step that failed and end with its last line of output.
llvm::Error collectImatrix(llvm::StringRef dir, llvm::StringRef pack,
                           const Calibration &calibration, llvm::StringRef out);

} // namespace kiln

#endif // KILN_COMPILER_CALIBRATE_H
