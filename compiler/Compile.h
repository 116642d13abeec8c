#ifndef KILN_COMPILER_COMPILE_H
#define KILN_COMPILER_COMPILE_H

#include "compiler/HostRun.h"
#include "compiler/import/LlamaImporter.h"

#include "llvm/Support/raw_ostream.h"

namespace kiln {

/// The phase kiln-compile stops after.
enum class EmitPhase {
  Mlir,     // graph-level kiln IR, after import and graph passes
  KernelIr, // every op one kernel call: arena slots and weight segments set
  C,        // generated sources, pack and CMakeLists.txt in the output directory
};

struct CompileOptions {
  std::string input;
  std::vector<std::string> inputShapes; // ONNX: NAME=DIMS of inputs with symbolic dimensions
  std::string outputDir; // empty: print the result of a textual phase
  EmitPhase emit = EmitPhase::C;
  std::string target = "c99";
  std::string board; // an emulated board (isa_variants.json): the fit check
  std::string draft;      // a draft model compiled beside this one, as <name>_draft
  std::string draftQuant; // the draft's --quant
  int64_t draftLayers = 0; // a draft of the first layers of the model itself (with `draft` its file)
  std::string packChecksum; // "", "first-use" or "open": per-layer checksums checked then
  bool embedWeights = false; // also write the pack as a const array (<name>_weights.c)
  std::string quant;          // format of every 2-D weight; empty keeps the model's
  std::string quantOverrides; // "glob=format,..." by tensor name
  bool pureQuant = false;     // no default rules for the output head and mixes
  std::string imatrix;        // an importance matrix the quantizers weigh errors by
  Calibration calibration;    // a text to compute that matrix from (text empty: none)
  std::string imatrixOut;     // where --calibration writes the matrix
  std::string momentsOut;     // where --calibration writes its inputs' second moments
  bool activationScales = true; // with second moments, try AWQ-style scales
  Calibration compare;        // a text the float and compiled models run (text empty: none)
  double compareThreshold = 0.1; // a layer output's relative error that counts as diverged
  std::string kvType = "f32"; // f32, f16 or q8
  bool report = false;        // per-tensor formats, bytes and errors; memory plan
  std::string reportDir;      // also report.json and report.html there
  std::string device;         // a device of the table or a JSON file: its predicted speed
  int64_t memoryBudget = 0;   // bytes for weights + arena (KV included); 0: none
  std::string tile;           // "mr=M,kc=K": pins tile-for-cache's choice
  std::string fuse = "residual,swiglu,qkv,norm"; // kiln-fuse's patterns; empty: none
  int64_t threads = 1;        // workers the kernels' work is split for
  int64_t minSplitWork = -1;  // least work of a split kernel; -1: the target's
  unsigned jobs = 0;          // threads converting weights; 0: one per core
  ImportOptions import;
};

/// Runs the compiler from a model file to the requested phase. Errors are printed
/// to `errs` as one line naming the input; returns failure then.
mlir::LogicalResult compile(const CompileOptions &options, llvm::raw_ostream &out,
                            llvm::raw_ostream &errs);

} // namespace kiln

#endif // KILN_COMPILER_COMPILE_H
