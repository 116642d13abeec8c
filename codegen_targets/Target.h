#ifndef KILN_CODEGEN_TARGETS_TARGET_H
#define KILN_CODEGEN_TARGETS_TARGET_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <set>
#include <string>
#include <vector>

namespace kiln {

/// One specialised kernel and how the schedule calls it.
struct KernelCall {
  std::string name;               // unique per specialisation
  std::string params;             // C parameter list
  std::string body;               // C statements
  std::vector<std::string> args;  // argument expressions at the call site
  std::set<std::string> helpers;  // shared static helpers the body uses
};

/// How the schedule names the operands of an op: arena slots, weight segments,
/// the token pointer and the runtime row count and position.
struct OperandNames {
  virtual ~OperandNames() = default;
  virtual std::string operand(mlir::Value v) const = 0;
  virtual std::string result(mlir::Operation *op) const = 0;
  /// The op's scratch buffer (set by plan-memory), as a `void *`.
  virtual std::string scratch(mlir::Operation *op) const = 0;
};

/// What an instruction-set target changes in the portable kernels: the hot
/// helpers (same names and signatures, intrinsics inside), the compiler flags the
/// generated library needs, and a check that the running CPU has the features.
struct IsaVariant {
  const char *name;
  const char *prelude = "";        // C text placed before the helpers (#includes)
  const char *compileOptions = ""; // for the generated CMakeLists.txt (GCC/Clang)
  const char *cpuCheck = "";       // C expression, true when the CPU can run the code
  std::vector<std::pair<const char *, const char *>> helpers; // name, C text
};

/// A code generation target: what it knows about the SoC and how it writes
/// one kernel. `c99` is the portable fallback every other target is compared to.
class TargetDescription {
public:
  virtual ~TargetDescription() = default;
  virtual llvm::StringRef name() const = 0;
  /// Flags, prelude and CPU check of the target's instruction set.
  virtual const IsaVariant &isaVariant() const = 0;
  /// Kernel for `op`, or failure with a diagnostic on `op`.
  virtual mlir::FailureOr<KernelCall> kernelFor(mlir::Operation *op,
                                                llvm::StringRef prefix,
                                                const OperandNames &names) const = 0;
  /// Definitions of the helpers named in KernelCall::helpers, in a fixed order.
  virtual std::string helperDefinitions(const std::set<std::string> &used) const = 0;
};

/// The instruction-set variants, in codegen_targets/<isa>/.
const IsaVariant &x86Avx2Variant();
const IsaVariant &armNeonVariant();
const IsaVariant &riscvRvvVariant();

/// The target named `name`, or null when there is none.
const TargetDescription *lookupTarget(llvm::StringRef name);
std::vector<std::string> targetNames();

} // namespace kiln

#endif // KILN_CODEGEN_TARGETS_TARGET_H
