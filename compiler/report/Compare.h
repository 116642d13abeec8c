//===- Compare.h - per-op error of a quantized build against the float one ===//
//
// Two KILN_TAPS builds of one model (as stored, and as compiled) run the same
// text with kiln-generate --taps-out; every op result the two share (a fused
// norm exists in one build only) is compared: relative error and cosine per
// op, the error of each layer's output, the first layer whose output error
// passes a threshold.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_REPORT_COMPARE_H
#define KILN_COMPILER_REPORT_COMPARE_H

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace kiln {

/// One op's results over the run, summed: the reference's squares, the
/// candidate's, their products and the squared differences.
struct OpError {
  std::string key;    // "LAYER OP FIRST-WEIGHT": the same op in both builds
  int64_t layer = -1; // -1: the embedding or the head
  std::string op;
  double reference2 = 0, candidate2 = 0, dot = 0, difference2 = 0;
  double relativeError() const;
  double cosine() const;
};

/// The ops both --taps-out files hold, in the reference's order, each
/// compared over every call. Errors name the file (unreadable, truncated,
/// shapes that differ).
llvm::Expected<std::vector<OpError>> compareTaps(llvm::StringRef reference,
                                                 llvm::StringRef candidate);

/// The layer of the error's ops whose output (its last op's result) first
/// passes `threshold`, or -1.
int64_t firstDivergingLayer(const std::vector<OpError> &ops, double threshold);

/// The output head's error: the last op's (the logits).
double finalError(const std::vector<OpError> &ops);

/// report.json's "compare": every op (key, layer, op, relative error,
/// cosine), every layer's output error, the threshold and the first layer
/// past it, the logits' error.
llvm::json::Object compareJson(const std::vector<OpError> &ops, double threshold);

} // namespace kiln

#endif // KILN_COMPILER_REPORT_COMPARE_H
