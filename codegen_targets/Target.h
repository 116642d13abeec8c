#ifndef KILN_CODEGEN_TARGETS_TARGET_H
#define KILN_CODEGEN_TARGETS_TARGET_H

#include "passes/KernelTarget.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// One specialised kernel and how the schedule calls it.
struct KernelCall {
  std::string name;               // unique per specialisation
  std::string params;             // C parameter list
  std::string body;               // C statements
  std::vector<std::string> args;  // argument expressions at the call site
  /// Kernels the schedule runs first, once, before all shares of this one
  /// (e.g. quantizing the activations that every output reads).
  std::vector<KernelCall> setup;
  /// Functions this kernel calls (emitted beside it, not called by the schedule).
  std::vector<KernelCall> helpers;
  /// A body several kernels share: one copy, never inlined into its callers
  /// (KILN_UK_OUTLINE).
  bool outOfLine = false;
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

/// An instruction-set variant of the kernel library: a row of the ISA table
/// (codegen_targets/isa_variants.json, which documents the fields).
struct IsaVariant {
  const char *name;
  const char *arch = "";           // the machine that runs it; "" for any
  const char *header = "";         // micro-kernel header, included before c99's
  const char *compileOptions = ""; // for the generated CMakeLists.txt (GCC/Clang)
  /// Features the CPU needs (__builtin_cpu_supports and LLVM's host names).
  std::vector<const char *> cpuFeatures = {};
  /// Panel height and cache model, for pack-layout and tile-for-cache.
  KernelTarget kernel = {};

  /// A C expression that is true when the running CPU can run the code (x86,
  /// GCC and Clang), empty when the target needs no check.
  std::string cpuCheck() const;
};

/// The ISA table, in its order.
const std::vector<IsaVariant> &isaVariants();

/// A memory region of a board and the roles it takes in a firmware image:
/// "code", "weights", "data", "arena" (comma-separated; empty: none).
struct BoardRegion {
  const char *name;
  uint64_t origin;
  uint64_t bytes;
  const char *roles;

  bool takes(llvm::StringRef role) const;
};

/// An emulated microcontroller board (the `boards` of isa_variants.json).
struct Board {
  const char *name;
  const char *machine;               // qemu-system-arm -M
  std::vector<const char *> variants; // ISA variants its core runs; the first is the default
  uint64_t uart;                      // CMSDK APB UART 0
  uint64_t clockHz;                   // core clock
  std::vector<BoardRegion> regions;

  /// The region that takes `role`; null when none does.
  const BoardRegion *regionFor(llvm::StringRef role) const;
};

/// The board named `name`, or null.
const Board *lookupBoard(llvm::StringRef name);
std::vector<std::string> boardNames();

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
  /// `<prefix>_kv_rerope_...(void *keys, int32_t r0, int32_t r1, int32_t delta)`:
  /// rows r0..r1-1 of the key cache that `keyWriter` (a kv_write of roped keys,
  /// or a qkv_matmul) fills, turned by delta positions with its rope, for a
  /// context shift. Failure with a diagnostic when its keys are not roped.
  virtual mlir::FailureOr<KernelCall> reropeKernelFor(mlir::Operation *keyWriter,
                                                      llvm::StringRef prefix) const = 0;
  /// For sessions over a pool of KV pages of `page` positions, the kernels of
  /// the caches `keyWriter` fills and the value cache beside it:
  /// `<prefix>_kv_copy_page_...(uint8_t *k, uint8_t *v, int32_t from, int32_t to)`
  /// copies page `from` of both to page `to`, and
  /// `<prefix>_kv_shift_paged_...(uint8_t *k, uint8_t *v, const int32_t *table,
  /// int32_t pos, int32_t keep, int32_t drop)` moves a session's positions
  /// keep + drop..pos-1 down by drop and turns the moved keys back (it calls
  /// the rerope kernel, added to `helpers`).
  virtual mlir::FailureOr<std::pair<KernelCall, KernelCall>>
  pagedCacheKernelsFor(mlir::Operation *keyWriter, llvm::StringRef prefix,
                       int64_t page) const = 0;
};

/// The kernel of an imported graph's op beyond a decoder's (GraphKernels.cpp),
/// the same C for every target: a call with its operands and result, and no
/// row count. std::nullopt for an op that is not one.
std::optional<mlir::FailureOr<KernelCall>> graphKernelFor(mlir::Operation *op,
                                                          llvm::StringRef prefix,
                                                          const OperandNames &names);
/// kiln_uk_graph.h's KILN_UK_ELEM_* code of a graph tensor's element type
/// (f32, i64, i32, i8, ui8, i1, f16, f64); -1 for another.
int graphElementCode(mlir::Type element);
/// Bytes of one element as a graph's kernels store it (a boolean in a byte).
int64_t graphElementBytes(mlir::Type element);

/// The target named `name`, or null when there is none. "host" is the best
/// target for the machine kiln-compile runs on.
const TargetDescription *lookupTarget(llvm::StringRef name);
std::vector<std::string> targetNames();

} // namespace kiln

#endif // KILN_CODEGEN_TARGETS_TARGET_H
