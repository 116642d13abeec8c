#include "compiler/quant/Awq.h"

#include "compiler/quant/Gptq.h"

#include <cmath>

namespace kiln::quant {

namespace {

// The summed output error of the weights encoded as the compile would, with
// their columns times `scale` (empty: as they are) and the moments of the
// input divided by it.
double encodedError(const std::vector<ScaledWeight> &weights, size_t cols, const float *moments,
                    const std::vector<float> &scale) {
  std::vector<float> h = scale.empty() ? std::vector<float>(moments, moments + cols * cols)
                                       : scaledMoments(moments, scale);
  const std::vector<float> importance = diagonalOf(h.data(), cols);
  FactorCache factors; // one factor of h for all the weights
  double total = 0;
  for (const ScaledWeight &w : weights) {
    const WeightEncoder e(w.spec, cols, importance.data(), h.data(), &factors);
    const size_t rows = w.rows;
    std::vector<float> x(rows * cols), y(x.size());
    for (size_t r = 0; r < rows; ++r)
      for (size_t j = 0; j < cols; ++j)
        x[r * cols + j] = w.values[r * cols + j] * (scale.empty() ? 1.0f : scale[j]);
    std::vector<uint8_t> bytes(rowBytes(w.spec, x.size()));
    e.encode(x.data(), rows, bytes.data());
    dequantize(w.spec, bytes.data(), x.size(), y.data());
    std::vector<double> errors(rows);
    outputErrors(x.data(), y.data(), rows, cols, h.data(), errors.data());
    for (double err : errors)
      total += err;
  }
  return total;
}

} // namespace

std::vector<float> scaledMoments(const float *moments, const std::vector<float> &scale) {
  const size_t cols = scale.size();
  std::vector<float> h(cols * cols);
  for (size_t i = 0; i < cols; ++i)
    for (size_t j = 0; j < cols; ++j)
      h[i * cols + j] = float(double(moments[i * cols + j]) / (double(scale[i]) * scale[j]));
  return h;
}

InputScales chooseInputScales(const std::vector<ScaledWeight> &weights, size_t cols,
                              const float *moments) {
  InputScales best;
  if (weights.empty())
    return best;
  best.plainError = best.error = encodedError(weights, cols, moments, {});
  double logMean = 0;
  size_t live = 0;
  for (size_t j = 0; j < cols; ++j)
    if (moments[j * cols + j] > 0)
      logMean += 0.5 * std::log(double(moments[j * cols + j])), ++live;
  if (!live || !(best.plainError > 0))
    return best;
  logMean /= double(live);
  for (double alpha : {0.25, 0.5, 0.75, 1.0}) {
    std::vector<float> scale(cols, 1.0f);
    for (size_t j = 0; j < cols; ++j)
      if (moments[j * cols + j] > 0) // rms^alpha over its geometric mean
        scale[j] = float(std::exp(alpha * (0.5 * std::log(double(moments[j * cols + j])) - logMean)));
    const double error = encodedError(weights, cols, moments, scale);
    if (error < best.error)
      best.error = error, best.alpha = alpha, best.scale = std::move(scale);
  }
  if (!(best.error < 0.99 * best.plainError)) {
    best.scale.clear();
    best.alpha = 0;
    best.error = best.plainError;
  }
  return best;
}

} // namespace kiln::quant
