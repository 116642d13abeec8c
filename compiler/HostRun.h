#ifndef KILN_COMPILER_HOSTRUN_H
#define KILN_COMPILER_HOSTRUN_H

// Generated code built and run on this host with taps (KILN_TAPS): what
// --calibration and --compare learn from running a model.

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace kiln {

/// A text a model runs over as kiln-generate --perplexity does: chunks of
/// `ctx` tokens, each [BOS] + ctx-1 ids.
struct Calibration {
  std::string text;   // tokenized by the model's tokenizer
  int64_t ctx = 0;    // tokens a chunk; 0: the caller's default
  int64_t chunks = 0; // at most this many chunks; 0: every whole chunk of the text
  bool ids = false;   // `text` holds token ids (commas or white space between) instead
};

/// Builds the generated folder `dir` into `build` with KILN_TAPS (CMake, the
/// host's C compiler, every core); returns the path of its kiln-generate.
/// Errors name the step and end with its output's last line (the whole
/// output is in `build`'s parent's configure.log and build.log).
llvm::Expected<std::string> buildWithTaps(llvm::StringRef dir, llvm::StringRef build);

/// Runs a KILN_TAPS build's kiln-generate on `pack` over the text with
/// `extra` options (--imatrix-out FILE, --taps-out FILE), its output in
/// `logDir`/run.log; errors as buildWithTaps'.
llvm::Error runWithTaps(llvm::StringRef generate, llvm::StringRef pack, const Calibration &text,
                        const std::vector<std::string> &extra, llvm::StringRef logDir);

} // namespace kiln

#endif // KILN_COMPILER_HOSTRUN_H
