// Unit test for quantization with error feedback (compiler/quant/Gptq.h): on
// random weights and correlated random inputs X, the factor U of
// feedbackFactor against its definition (U^T U (H + damp) = I, recomputed
// naively), and for every block format the output error |X (w - y)|^2 of
// each row, computed here from X itself, never above the importance-weighted
// encoder's and below a quarter of it in total (half for 2-bit codes); the
// code setter against the decoder (each element's code found among its
// 0..top, the other elements untouched). A plain program; the exit status is
// the verdict.

#include "compiler/quant/Gptq.h"

#include "compiler/quant/GgmlBlocks.h"

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
  // Two-bit codes leave the feedback fewer levels to correct with.
  const double bound = ggml::topCode(s.format) <= 3 ? 0.5 : 0.25;
  check(encoder.feedback() && worse == 0 && totalF < bound * totalW,
        std::string(name) + ": output error with feedback / weighted " +
            std::to_string(totalF / totalW) + " (< " + std::to_string(bound) + "), rows worse " +
            std::to_string(worse) + " (0)");
}

/// Every element of an encoded block: one of its codes 0..topCode decodes to
/// the element's value, and setting any code leaves the others' values.
void testSetCode(const char *name) {
  FormatSpec s{Format::F32, 1};
  parseFormat(name, s);
  const size_t per = blockElements(s);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(per), y(per), z(per);
  for (float &v : x)
    v = normal(rng);
  std::vector<uint8_t> block(blockBytes(s)), probe;
  quantize(s, x.data(), per, block.data());
  dequantize(s, block.data(), per, y.data());
  const int top = ggml::topCode(s.format);
  size_t found = 0, disturbed = 0;
  for (size_t j = 0; j < per; ++j) {
    bool hit = false;
    for (int q = 0; q <= top; ++q) {
      probe = block;
      ggml::setCode(s.format, s.group, probe.data(), int(j), q);
      dequantize(s, probe.data(), per, z.data());
      hit = hit || z[j] == y[j];
      for (size_t i = 0; i < per; ++i)
        disturbed += i != j && z[i] != y[i];
    }
    found += hit;
  }
  check(top > 0 && found == per && disturbed == 0,
        std::string(name) + ": setCode finds " + std::to_string(found) + " of " +
            std::to_string(per) + " elements' codes, disturbs " + std::to_string(disturbed) +
            " others (0)");
}

} // namespace

int main() {
  const size_t cols = 256;
  const std::vector<float> x = randomInputs(1024, cols, 3, 5);
  std::vector<float> h, diagonal;
  momentsOf(x, cols, h, diagonal);
  testFactor(h, cols);
  for (const char *name : {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "iq4_nl", "i4g32", "i8g64",
                           "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "tq2_0"}) {
    testSetCode(name);
    testFormat(name, x, h, diagonal, cols);
  }

  // Not second moments: no factor, and the encoder falls back to the weights.
  std::vector<float> zero(cols * cols, 0.0f), u;
  check(!feedbackFactor(zero.data(), cols, u), "feedbackFactor refuses all-zero moments");
  std::vector<float> negative = h;
  negative[1] = negative[cols] = 1e6f; // |h01| > sqrt(h00 h11): not semi-definite
  check(!feedbackFactor(negative.data(), cols, u), "feedbackFactor refuses a matrix that is not "
                                                   "positive semi-definite");
  FormatSpec f{Format::F32, 1};
  parseFormat("f16", f);
  check(!WeightEncoder(f, cols, diagonal.data(), h.data()).feedback(),
        "f16 (no codes) is encoded without feedback");
  return kiln::test::finish();
}
