#ifndef KILN_CODEGEN_TARGETS_BOARDPLACEMENT_H
#define KILN_CODEGEN_TARGETS_BOARDPLACEMENT_H

#include "codegen_targets/Target.h"

#include "llvm/Support/Error.h"

namespace kiln {

/// Whether a model of `packBytes` (its weights, placed whole in the board's
/// "weights" region) and `arenaBytes` fits `board`; the error names the region
/// and the overflow.
llvm::Error checkBoardFit(const Board &board, uint64_t packBytes, uint64_t arenaBytes);

} // namespace kiln

#endif // KILN_CODEGEN_TARGETS_BOARDPLACEMENT_H
