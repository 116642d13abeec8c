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

/// What one core of a device can do, as the roofline model reads it.
struct Device {
  std::string name, description;
  double dramGBs = 0;    // read bandwidth from main memory (or flash), GB/s
  double cacheBytes = 0; // the last cache level one core uses
  double cacheGBs = 0;   // read bandwidth of that cache
  double fmaGFlops = 0;  // fp32 FMA peak, 2 flops per multiply-add
  double int8Gops = 0;   // int8 dot-product peak, 2 ops per multiply-add
};

/// The named devices of the table, in order.
const std::vector<Device> &deviceTable();

/// `spec` as a device: a name of the table, or a JSON file with its fields
/// (bench/probes.c's line: bandwidth_gbs, fma_gflops, int8_gops; optionally
/// name, cache_bytes, cache_gbs).
llvm::Expected<Device> findDevice(llvm::StringRef spec);

/// The generated folder as a C compiler builds it for the target: the bytes
/// of machine code of the model (its schedule and kernels) and of the
/// runtime, and a bound of the stack over the direct calls the compiler's
/// call graph shows (GCC's -fstack-usage / -fcallgraph-info). Empty
/// `compiler` when it could not be measured, and `note` says why.
struct CodeMeasure {
  std::string compiler, note;
  int64_t modelText = 0, runtimeText = 0;
  int64_t stackBytes = -1; // -1: unbounded (recursion, dynamic frames) or unknown
  std::string stackEntry;
};

/// Compiles DIR's model `name` and runtime with the target's options into a
/// scratch directory and measures them.
CodeMeasure measureCode(llvm::StringRef dir, llvm::StringRef name, llvm::StringRef options,
                        bool sessions);

/// The report of the planned and packed `module` as JSON: the model's name,
/// target, sizes (pack, arena, KV cache, activations per function), every
/// weight (name, format, bytes, relative RMS error or null when stored as
/// read), per function the buffers of the memory plan (offset, bytes, first
/// and last schedule step, op) with its peak step and lower bound, the work
/// of a token (weight bytes a decode step reads, KV bytes per position,
/// operations) and the speed a roofline model predicts on every device of the
/// table, and on `extra` when given.
llvm::json::Value reportJson(mlir::ModuleOp module, const PackInfo &pack, llvm::StringRef name,
                             llvm::StringRef target, const Device *extra,
                             const CodeMeasure *code);

/// "predicted on NAME: decode ... tokens/s at context 16 and C, prefill ...",
/// the line --report prints for --device, from reportJson's value.
std::string predictionLine(const llvm::json::Value &report, llvm::StringRef device);

/// Writes DIR/report.json and DIR/report.html from reportJson's value.
llvm::Error writeReport(const llvm::json::Value &report, llvm::StringRef dir);

} // namespace kiln

#endif // KILN_COMPILER_REPORT_REPORT_H
