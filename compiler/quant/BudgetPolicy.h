#ifndef KILN_COMPILER_QUANT_BUDGETPOLICY_H
#define KILN_COMPILER_QUANT_BUDGETPOLICY_H

#include "compiler/import/GGUFReader.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace kiln {

/// A 2-D weight the policy may store in another format.
struct BudgetTensor {
  std::string name;
  int64_t rows = 0, cols = 0;
};

/// Picks a format for every tensor so that `fixedBytes` (arena, 1-D weights,
/// vocabulary, pack overhead) plus the weights fit in `budget`, minimising the
/// estimated loss: the sum over tensors of (relative RMS quantization error)^2
/// times the tensor's element count, measured on the model's own weights.
/// Greedy: every tensor starts in its most precise format, then the step with
/// the least added loss per byte saved is taken until the total fits. Returns
/// quantize-pass overrides ("name=format,..."); an error says the smallest total
/// reachable when nothing fits. Prints the choice to `log`.
llvm::Expected<std::string> chooseFormatsForBudget(const gguf::File &model,
                                                   const std::vector<BudgetTensor> &tensors,
                                                   int64_t fixedBytes, int64_t budget,
                                                   llvm::raw_ostream &log);

} // namespace kiln

#endif // KILN_COMPILER_QUANT_BUDGETPOLICY_H
