// The ISA table (isa_variants.json), compiled in: CMake writes its rows into
// IsaVariants.inc.
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
