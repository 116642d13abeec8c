// Unit test for quantization with error feedback (compiler/quant/Gptq.h): on
// random weights and correlated random inputs X, the factor U of
// feedbackFactor against its definition (U^T U (H + damp) = I, recomputed
// naively), and for every one-scale format the output error |X (w - y)|^2 of
// each row, computed here from X itself, never above the importance-weighted
// encoder's and below a quarter of it in total. A plain program; the exit
// status is the verdict.

#include "compiler/quant/Gptq.h"

#include "check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace kiln::quant;

namespace {

using kiln::test::check;

/// n rows of `cols` inputs mixed from a few shared factors (so that columns
/// correlate, as a layer's inputs do) with column scales over two decades;
/// `dead` columns are always 0.
std::vector<float> randomInputs(size_t n, size_t cols, size_t dead, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const size_t factors = 24;
  std::vector<float> mix(factors * cols), scale(cols), x(n * cols);
  for (float &v : mix)
    v = normal(rng);
  for (float &v : scale)
    v = std::pow(10.0f, 2.0f * unit(rng) - 1.0f);
  for (size_t r = 0; r < n; ++r) {
    std::vector<float> f(factors);
    for (float &v : f)
      v = normal(rng);
    for (size_t c = dead; c < cols; ++c) {
      float s = 0.5f * normal(rng);
      for (size_t k = 0; k < factors; ++k)
        s += f[k] * mix[k * cols + c];
      x[r * cols + c] = scale[c] * s;
    }
  }
  return x;
}

/// mean x x^T (cols x cols) and its diagonal.
void momentsOf(const std::vector<float> &x, size_t cols, std::vector<float> &h,
               std::vector<float> &diagonal) {
  const size_t n = x.size() / cols;
  h.assign(cols * cols, 0.0f);
  diagonal.assign(cols, 0.0f);
  for (size_t i = 0; i < cols; ++i)
    for (size_t j = 0; j < cols; ++j) {
      double s = 0;
      for (size_t r = 0; r < n; ++r)
        s += double(x[r * cols + i]) * x[r * cols + j];
      h[i * cols + j] = float(s / double(n));
    }
  for (size_t i = 0; i < cols; ++i)
    diagonal[i] = h[i * cols + i];
}

void testFactor(const std::vector<float> &h, size_t cols) {
  std::vector<float> u;
  const bool factored = feedbackFactor(h.data(), cols, u);
  check(factored, "feedbackFactor accepts second moments");
  if (!factored)
    return;
  double mean = 0;
  for (size_t j = 0; j < cols; ++j)
    mean += h[j * cols + j];
  mean /= double(cols);
  double worst = 0;
  bool upper = true;
  for (size_t i = 0; i < cols; ++i)
    for (size_t j = 0; j < i; ++j)
      upper = upper && u[i * cols + j] == 0.0f;
  // (U^T U)(H + damp) against the identity, in double.
  std::vector<double> inv(cols * cols, 0.0);
  for (size_t i = 0; i < cols; ++i)
    for (size_t j = 0; j < cols; ++j) {
      double s = 0;
      for (size_t k = 0; k <= std::min(i, j); ++k)
        s += double(u[k * cols + i]) * u[k * cols + j];
      inv[i * cols + j] = s;
    }
  for (size_t i = 0; i < cols; ++i)
    for (size_t j = 0; j < cols; ++j) {
      double s = 0;
      for (size_t k = 0; k < cols; ++k) {
        double hk = h[k * cols + j];
        if (k == j)
          hk = (hk > 0 ? hk : mean) + 0.01 * mean;
        s += inv[i * cols + k] * hk;
      }
      worst = std::max(worst, std::fabs(s - (i == j ? 1.0 : 0.0)));
    }
  std::printf("feedbackFactor: |U^T U (H + damp) - I| <= %.3g\n", worst);
  check(upper && worst < 1e-3,
        "feedbackFactor: U upper triangular, |U^T U (H + damp) - I| <= " + std::to_string(worst) +
            " (< 1e-3)");
}

/// |X (w - y)|^2 / n of each row.
std::vector<double> outputErrors(const std::vector<float> &x, const std::vector<float> &w,
                                 const std::vector<float> &y, size_t cols) {
  const size_t n = x.size() / cols, rows = w.size() / cols;
  std::vector<double> errors(rows, 0.0);
  for (size_t o = 0; o < rows; ++o)
    for (size_t r = 0; r < n; ++r) {
      double s = 0;
      for (size_t c = 0; c < cols; ++c)
        s += double(x[r * cols + c]) * (double(w[o * cols + c]) - y[o * cols + c]);
      errors[o] += s * s / double(n);
    }
  return errors;
}

void testFormat(const char *name, const std::vector<float> &x, const std::vector<float> &h,
                const std::vector<float> &diagonal, size_t cols) {
  FormatSpec s{Format::F32, 1};
  const bool parsed = parseFormat(name, s);
  check(parsed, std::string("parses ") + name);
  if (!parsed)
    return;
  const size_t rows = 24;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> w(rows * cols);
  for (float &v : w)
    v = 0.02f * normal(rng) * (unit(rng) < 0.01f ? 8.0f : 1.0f);
  std::vector<uint8_t> fed(rowBytes(s, w.size())), weighted(fed.size());
  WeightEncoder encoder(s, cols, diagonal.data(), h.data());
  encoder.encode(w.data(), rows, fed.data());
  quantizeWeighted(s, w.data(), w.size(), diagonal.data(), cols, weighted.data());
  std::vector<float> yf(w.size()), yw(w.size());
  dequantize(s, fed.data(), w.size(), yf.data());
  dequantize(s, weighted.data(), w.size(), yw.data());
  std::vector<double> ef = outputErrors(x, w, yf, cols), ew = outputErrors(x, w, yw, cols);
  double totalF = 0, totalW = 0;
  size_t worse = 0;
  for (size_t o = 0; o < rows; ++o) {
    worse += ef[o] > ew[o] * (1 + 1e-6);
    totalF += ef[o], totalW += ew[o];
  }
  std::printf("%-7s output error with feedback / weighted %.3f, rows worse %zu\n", name,
              totalF / totalW, worse);
  check(encoder.feedback() && worse == 0 && totalF < 0.25 * totalW,
        std::string(name) + ": output error with feedback / weighted " +
            std::to_string(totalF / totalW) + " (< 0.25), rows worse " + std::to_string(worse) +
            " (0)");
}

} // namespace

int main() {
  const size_t cols = 256;
  const std::vector<float> x = randomInputs(1024, cols, 3, 5);
  std::vector<float> h, diagonal;
  momentsOf(x, cols, h, diagonal);
  testFactor(h, cols);
  for (const char *name : {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "iq4_nl", "i4g32", "i8g64"})
    testFormat(name, x, h, diagonal, cols);

  // Not second moments: no factor, and the encoder falls back to the weights.
  std::vector<float> zero(cols * cols, 0.0f), u;
  check(!feedbackFactor(zero.data(), cols, u), "feedbackFactor refuses all-zero moments");
  std::vector<float> negative = h;
  negative[1] = negative[cols] = 1e6f; // |h01| > sqrt(h00 h11): not semi-definite
  check(!feedbackFactor(negative.data(), cols, u), "feedbackFactor refuses a matrix that is not "
                                                   "positive semi-definite");
  FormatSpec k{Format::F32, 1};
  parseFormat("q4_k", k);
  check(!WeightEncoder(k, cols, diagonal.data(), h.data()).feedback(),
        "q4_k (several scales a block) is encoded without feedback");
  return kiln::test::finish();
}
