#ifndef KILN_COMPILER_QUANT_BUDGETPOLICY_H
#define KILN_COMPILER_QUANT_BUDGETPOLICY_H

#include "compiler/import/GGUFReader.h"
#include "compiler/quant/Quantize.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln {

/// A 2-D weight the policy may store in another format.
struct BudgetTensor {
  std::string name;
  int64_t rows = 0, cols = 0;
};

/// The losses of storing a tensor (its f32 values) in each of some formats,
/// measured: the mean KL divergence of the model's output from the float
/// model's with that tensor alone in that format. Errors stop the choice.
using MeasureLoss = std::function<llvm::Expected<std::vector<double>>(
    const BudgetTensor &tensor, const std::vector<quant::FormatSpec> &formats,
    const std::vector<float> &values)>;

/// A format a tensor may take: its bytes and loss.
struct BudgetOption {
  quant::FormatSpec spec;
  int64_t bytes;
  double loss;
};

/// Every tensor's formats, largest first, without dominated ones (no smaller
/// than another yet with more loss): the costly part of a choice, made once.
struct BudgetOptions {
  std::vector<std::vector<BudgetOption>> formats; // per tensor
  bool measured = false;
};

/// The options of `tensors`, each format's loss by `measure` when given, else
/// (relative RMS quantization error)^2 times the tensor's element count,
/// measured on the model's own weights.
llvm::Expected<BudgetOptions> budgetOptions(const gguf::File &model,
                                            const std::vector<BudgetTensor> &tensors,
                                            const MeasureLoss *measure = nullptr);

/// Picks a format for every tensor so that `fixedBytes` (arena, 1-D weights,
/// vocabulary, pack overhead) plus the weights fit in `budget`, minimising the
/// sum of the tensors' losses. Greedy: every tensor starts in its most precise
/// format, then the step with the least added loss per byte saved is taken
/// until the total fits. Returns quantize-pass overrides ("name=format,...");
/// an error says the smallest total reachable when nothing fits. Prints the
/// choice to `log`; `loss` gets the loss it predicts (the sum).
llvm::Expected<std::string> chooseFormatsForBudget(const BudgetOptions &options,
                                                   const std::vector<BudgetTensor> &tensors,
                                                   int64_t fixedBytes, int64_t budget,
                                                   llvm::raw_ostream &log,
                                                   double *loss = nullptr);

} // namespace kiln

#endif // KILN_COMPILER_QUANT_BUDGETPOLICY_H
