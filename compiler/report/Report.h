//===- Report.h - report.json and report.html of a compile ---------------===//
//
// What a compile decided, for a person to see before flashing: sizes, the
// memory plan over the schedule, and every weight's format and error. The
// JSON holds the numbers; the HTML shows the same numbers with inline SVG and
// needs nothing from the network.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_REPORT_REPORT_H
#define KILN_COMPILER_REPORT_REPORT_H

#include "compiler/pack/PackWriter.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

namespace kiln {

/// The report of the planned and packed `module` as JSON: the model's name,
/// target, sizes (pack, arena, KV cache, activations per function), every
/// weight (name, format, bytes, relative RMS error or null when stored as
/// read) and per function the buffers of the memory plan (offset, bytes,
/// first and last schedule step, op) with its peak step and lower bound.
llvm::json::Value reportJson(mlir::ModuleOp module, const PackInfo &pack, llvm::StringRef name,
                             llvm::StringRef target);

/// Writes DIR/report.json and DIR/report.html from reportJson's value.
llvm::Error writeReport(const llvm::json::Value &report, llvm::StringRef dir);

} // namespace kiln

#endif // KILN_COMPILER_REPORT_REPORT_H
