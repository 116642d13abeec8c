// The ISA table and the boards (isa_variants.json), compiled in: CMake writes
// their rows into IsaVariants.inc and Boards.inc.
#include "codegen_targets/Target.h"

#include "llvm/ADT/StringExtras.h"

using namespace kiln;

const std::vector<IsaVariant> &kiln::isaVariants() {
  static const std::vector<IsaVariant> variants = {
#include "codegen_targets/IsaVariants.inc"
  };
  return variants;
}

std::string IsaVariant::cpuCheck() const {
  if (llvm::StringRef(arch) != "x86_64" || cpuFeatures.empty())
    return "";
  std::vector<std::string> tests;
  for (const char *f : cpuFeatures)
    tests.push_back(std::string("__builtin_cpu_supports(\"") + f + "\")");
  return llvm::join(tests, " && ");
}

static const std::vector<Board> &boards() {
  static const std::vector<Board> all = {
#include "codegen_targets/Boards.inc"
  };
  return all;
}

bool BoardRegion::takes(llvm::StringRef role) const {
  llvm::SmallVector<llvm::StringRef, 4> parts;
  llvm::StringRef(roles).split(parts, ',', -1, /*KeepEmpty=*/false);
  return llvm::is_contained(parts, role);
}

const BoardRegion *Board::regionFor(llvm::StringRef role) const {
  for (const BoardRegion &r : regions)
    if (r.takes(role))
      return &r;
  return nullptr;
}

const Board *kiln::lookupBoard(llvm::StringRef name) {
  for (const Board &b : boards())
    if (name == b.name)
      return &b;
  return nullptr;
}

std::vector<std::string> kiln::boardNames() {
  std::vector<std::string> names;
  for (const Board &b : boards())
    names.push_back(b.name);
  return names;
}
