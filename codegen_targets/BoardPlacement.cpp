// Whether a model fits a microcontroller board: the check kiln-compile
// --board runs, on the regions of the board table (the linker script's memory
// map comes from the same table, through Kiln's CMake package).
#include "codegen_targets/BoardPlacement.h"

#include "llvm/Support/FormatVariadic.h"

using namespace kiln;

llvm::Error kiln::checkBoardFit(const Board &board, uint64_t packBytes, uint64_t arenaBytes) {
  struct Need {
    const char *role, *what;
    uint64_t bytes;
  } needs[] = {{"weights", "weights (the pack)", packBytes},
               {"arena", "arena (KV cache and activations)", arenaBytes}};
  for (const Need &n : needs) {
    const BoardRegion *r = board.regionFor(n.role);
    if (!r)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     llvm::formatv("board {0} has no region for the {1}",
                                                   board.name, n.what));
    if (n.bytes > r->bytes)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("does not fit board {0}: the {1} take {2} bytes, region {3} holds {4}: "
                        "{5} bytes over",
                        board.name, n.what, n.bytes, r->name, r->bytes, n.bytes - r->bytes));
  }
  return llvm::Error::success();
}
