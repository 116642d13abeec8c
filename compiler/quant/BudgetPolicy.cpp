#include "compiler/quant/BudgetPolicy.h"

#include "compiler/pack/PackWriter.h"
#include "compiler/quant/Quantize.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <map>

using namespace kiln;

namespace {

using Option = BudgetOption;

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The formats a tensor may take, largest first, without dominated ones (an
/// option no smaller than another yet with more loss).
llvm::Expected<std::vector<Option>> optionsFor(const gguf::File &model, const BudgetTensor &t,
                                               const MeasureLoss *measure) {
  const gguf::TensorInfo *info = model.findTensor(t.name);
  quant::FormatSpec stored = formatOfGgmlType(info->type);
  size_t n = info->numElements();
  int64_t storedBytes = info->bytes;
  // A tensor the file already stores quantized keeps that format.
  if (stored.format != quant::Format::F32 && stored.format != quant::Format::F16 &&
      stored.format != quant::Format::BF16)
    return std::vector<Option>{{stored, storedBytes, 0.0}};
  std::vector<float> values(n);
  quant::dequantize(stored, model.tensorBytes(*info).data(), n, values.data());
  model.release(*info);
  std::vector<Option> all;
  for (const char *name : {"f32", "f16", "q8_0", "q6_k", "i8g128", "q5_k", "q4_k", "q4_0",
                           "i4g64", "i4g128"}) {
    quant::FormatSpec spec;
    quant::parseFormat(name, spec);
    if (t.cols % int64_t(quant::blockElements(spec)) != 0 ||
        (spec.format == quant::Format::F32 &&
                                     stored.format != quant::Format::F32))
      continue;
    double err = quant::relativeRmsError(spec, values.data(), n);
    all.push_back({spec, int64_t(quant::rowBytes(spec, n)), err * err * double(n)});
  }
  if (measure) {
    // The stored format loses nothing; the others as measured.
    std::vector<quant::FormatSpec> others;
    for (const Option &o : all)
      if (o.spec.format != stored.format)
        others.push_back(o.spec);
    llvm::Expected<std::vector<double>> losses = (*measure)(t, others, values);
    if (!losses)
      return losses.takeError();
    size_t next = 0;
    for (Option &o : all)
      o.loss = o.spec.format == stored.format ? 0.0 : (*losses)[next++];
  }
  std::sort(all.begin(), all.end(),
            [](const Option &a, const Option &b) { return a.bytes > b.bytes; });
  std::vector<Option> kept;
  for (const Option &o : all) {
    while (!kept.empty() && kept.back().loss >= o.loss && kept.back().bytes >= o.bytes)
      kept.pop_back();
    kept.push_back(o);
  }
  return kept;
}

int64_t segment(int64_t bytes) { return llvm::alignTo(bytes, 64); }

} // namespace

llvm::Expected<BudgetOptions> kiln::budgetOptions(const gguf::File &model,
                                                  const std::vector<BudgetTensor> &tensors,
                                                  const MeasureLoss *measure) {
  BudgetOptions options;
  options.measured = measure != nullptr;
  for (const BudgetTensor &t : tensors) {
    llvm::Expected<std::vector<Option>> o = optionsFor(model, t, measure);
    if (!o)
      return o.takeError();
    options.formats.push_back(std::move(*o));
  }
  return options;
}

llvm::Expected<std::string> kiln::chooseFormatsForBudget(const BudgetOptions &all,
                                                         const std::vector<BudgetTensor> &tensors,
                                                         int64_t fixedBytes, int64_t budget,
                                                         llvm::raw_ostream &log,
                                                         double *predicted) {
  const std::vector<std::vector<Option>> &options = all.formats;
  std::vector<size_t> choice(tensors.size(), 0);
  int64_t total = fixedBytes, smallest = fixedBytes;
  for (const std::vector<Option> &o : options) {
    total += segment(o.front().bytes);
    smallest += segment(o.back().bytes);
  }
  if (smallest > budget)
    return fail(llvm::formatv("nothing fits in the memory budget of {0} bytes: the "
                              "smallest reachable total is {1} bytes (pack + arena)",
                              budget, smallest));
  while (total > budget) {
    // The step that adds the least loss per byte it saves.
    size_t best = tensors.size();
    double bestRatio = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (choice[i] + 1 >= options[i].size())
        continue;
      const Option &cur = options[i][choice[i]], &next = options[i][choice[i] + 1];
      double ratio = (next.loss - cur.loss) / double(segment(cur.bytes) - segment(next.bytes) + 1);
      if (best == tensors.size() || ratio < bestRatio)
        best = i, bestRatio = ratio;
    }
    const Option &cur = options[best][choice[best]];
    total -= segment(cur.bytes) - segment(options[best][++choice[best]].bytes);
  }

  std::string overrides;
  std::map<std::string, std::pair<int, int64_t>> byFormat;
  double loss = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Option &o = options[i][choice[i]];
    std::string name = quant::formatName(o.spec);
    overrides += (overrides.empty() ? "" : ",") + tensors[i].name + "=" + name;
    byFormat[name].first += 1;
    byFormat[name].second += o.bytes;
    loss += o.loss;
  }
  log << llvm::formatv("memory budget {0} bytes: expected total {1} bytes, of which "
                       "{2} for the arena, 1-D weights, vocabulary and pack overhead\n",
                       budget, total, fixedBytes);
  for (auto &[name, stats] : byFormat)
    log << llvm::formatv("  {0,-7} {1,3} tensors {2,12} bytes\n", name, stats.first,
                         stats.second);
  if (predicted)
    *predicted = loss;
  if (all.measured)
    log << llvm::formatv("  predicted loss {0:e3} (the sum of each choice's mean KLD alone)\n",
                         loss);
  else
    log << llvm::formatv("  estimated loss {0:e3} (relative squared error x elements)\n",
                         loss);
  return overrides;
}
