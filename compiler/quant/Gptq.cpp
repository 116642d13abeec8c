#include "compiler/quant/Gptq.h"

#include "compiler/quant/GgmlBlocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln::quant {

namespace {

// In place: the lower triangular L with L L^T = a (n x n, row-major; the
// upper triangle is left as it was). False if a is not positive definite.
bool cholesky(std::vector<double> &a, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double *rj = &a[j * n];
    double d = rj[j];
    for (size_t k = 0; k < j; ++k)
      d -= rj[k] * rj[k];
    if (!(d > 0) || !std::isfinite(d))
      return false;
    rj[j] = std::sqrt(d);
    for (size_t i = j + 1; i < n; ++i) {
      double *ri = &a[i * n];
      double s = ri[j];
      for (size_t k = 0; k < j; ++k)
        s -= ri[k] * rj[k];
      ri[j] = s / rj[j];
    }
  }
  return true;
}

} // namespace

bool hasErrorFeedback(const FormatSpec &spec) { return ggml::topCode(spec.format) > 0; }

bool feedbackFactor(const float *moments, size_t cols, std::vector<float> &u) {
  const size_t n = cols;
  double mean = 0;
  for (size_t j = 0; j < n; ++j)
    mean += moments[j * n + j];
  mean /= double(n ? n : 1);
  if (!(mean > 0) || !std::isfinite(mean))
    return false;
  // H with its columns (and rows) in reverse order, P H P. A column no input
  // reached (its weights never matter) and the damping keep it invertible
  // when the calibration rows do not span it.
  std::vector<double> m(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      m[i * n + j] = moments[(n - 1 - i) * n + (n - 1 - j)];
  for (size_t j = 0; j < n; ++j)
    m[j * n + j] = (m[j * n + j] > 0 ? m[j * n + j] : mean) + 0.01 * mean;
  // P H P = M M^T gives H^-1 = U^T U with U = P M^-1 P upper triangular:
  // M^-1 row by row (each a sum of the rows above it), then reversed.
  if (!cholesky(m, n))
    return false;
  std::vector<double> inv(n * n, 0.0), row(n);
  for (size_t i = 0; i < n; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    row[i] = 1.0;
    for (size_t k = 0; k < i; ++k) {
      const double f = m[i * n + k];
      const double *rk = &inv[k * n];
      for (size_t j = 0; j <= k; ++j)
        row[j] -= f * rk[j];
    }
    for (size_t j = 0; j <= i; ++j)
      inv[i * n + j] = row[j] / m[i * n + i];
  }
  u.assign(n * n, 0.0f);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i; j < n; ++j)
      u[i * n + j] = float(inv[(n - 1 - i) * n + (n - 1 - j)]);
  return true;
}

std::vector<float> diagonalOf(const float *square, size_t cols) {
  std::vector<float> d(cols);
  for (size_t j = 0; j < cols; ++j)
    d[j] = square[j * cols + j];
  return d;
}

void outputErrors(const float *w, const float *y, size_t rows, size_t cols,
                  const float *moments, double *errors) {
  // H is symmetric: row i's diagonal term and twice the terms after it. Rows
  // of w eight at a time, so that each row of H is read once per eight; each
  // partial sum in float (a few hundred terms), the total in double.
  constexpr size_t kRows = 8;
  std::vector<float> e(kRows * cols);
  for (size_t r0 = 0; r0 < rows; r0 += kRows) {
    const size_t nr = std::min(kRows, rows - r0);
    for (size_t r = 0; r < nr; ++r) {
      errors[r0 + r] = 0;
      for (size_t j = 0; j < cols; ++j)
        e[r * cols + j] = w[(r0 + r) * cols + j] - y[(r0 + r) * cols + j];
    }
    for (size_t i = 0; i < cols; ++i) {
      const float *h = moments + i * cols;
      for (size_t r = 0; r < nr; ++r) {
        const float *er = &e[r * cols];
        float part[8] = {0, 0, 0, 0, 0, 0, 0, 0}; // eight sums, one vector
        size_t j = i + 1;
        for (; j + 8 <= cols; j += 8)
          for (size_t t = 0; t < 8; ++t)
            part[t] += h[j + t] * er[j + t];
        for (; j < cols; ++j)
          part[0] += h[j] * er[j];
        const float sum = ((part[0] + part[1]) + (part[2] + part[3])) +
                          ((part[4] + part[5]) + (part[6] + part[7]));
        errors[r0 + r] += double(er[i]) * (double(h[i]) * er[i] + 2.0 * sum);
      }
    }
  }
}

namespace {

// Element j of a block is a[j] * codeLevel(q) + b[j] against the block's
// scales (and mins) as they stand: the block decoded with every code 0 and
// with every code 1 gives both.
struct Levels {
  std::vector<float> a, b;
  std::vector<uint8_t> probe;
  std::vector<float> y0, y1;

  void of(const FormatSpec &spec, const uint8_t *block) {
    const size_t per = blockElements(spec);
    probe.assign(block, block + blockBytes(spec));
    a.resize(per), b.resize(per), y0.resize(per), y1.resize(per);
    for (int code = 0; code < 2; ++code) {
      for (size_t j = 0; j < per; ++j)
        ggml::setCode(spec.format, spec.group, probe.data(), int(j), code);
      dequantize(spec, probe.data(), per, code ? y1.data() : y0.data());
    }
    const float l0 = ggml::codeLevel(spec.format, 0), l1 = ggml::codeLevel(spec.format, 1);
    for (size_t j = 0; j < per; ++j) {
      a[j] = (y1[j] - y0[j]) / (l1 - l0);
      b[j] = y0[j] - a[j] * l0;
    }
  }

  // The code of element j nearest x, and its value.
  int nearest(const FormatSpec &spec, size_t j, double x, double &value) const {
    const int top = ggml::topCode(spec.format);
    int q = 0;
    if (a[j] != 0 && spec.format == Format::IQ4_NL) {
      double best = INFINITY;
      for (int c = 0; c <= top; ++c) {
        const double e = std::fabs(double(a[j]) * ggml::codeLevel(spec.format, c) + b[j] - x);
        if (e < best)
          best = e, q = c;
      }
    } else if (a[j] != 0) {
      const double t = std::nearbyint((x - b[j]) / a[j]);
      q = int(t < 0 ? 0 : t > top ? top : t);
    }
    value = double(a[j]) * ggml::codeLevel(spec.format, q) + b[j];
    return q;
  }
};

} // namespace

void quantizeFeedback(const FormatSpec &spec, const float *x, size_t rows, size_t cols,
                      const float *moments, const float *importance, const float *u,
                      uint8_t *out) {
  const size_t per = blockElements(spec), stride = blockBytes(spec), row = rowBytes(spec, cols);
  std::vector<float> w(cols), xb(per);
  Levels levels;
  for (size_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    uint8_t *orow = out + r * row;
    std::copy(xr, xr + cols, w.begin());
    for (size_t b = 0; b < cols; b += per) {
      uint8_t *ob = orow + b / per * stride;
      std::copy(w.begin() + b, w.begin() + b + per, xb.begin());
      // The block's scales from its columns as the earlier errors left them.
      quantizeWeighted(spec, xb.data(), per, importance + b, per, ob);
      levels.of(spec, ob);
      for (size_t j = 0; j < per; ++j) {
        const size_t c = b + j;
        double value;
        ggml::setCode(spec.format, spec.group, ob, int(j), levels.nearest(spec, j, w[c], value));
        const float e = float((w[c] - value) / u[c * cols + c]);
        const float *uc = u + c * cols;
        for (size_t k = c + 1; k < cols; ++k)
          w[k] -= e * uc[k];
      }
    }
  }
  // Never worse than the weighted encoder by the output error.
  std::vector<uint8_t> kept(rows * row);
  std::vector<float> fed(rows * cols), plain(rows * cols);
  std::vector<double> fedErr(rows), plainErr(rows);
  quantizeWeighted(spec, x, rows * cols, importance, cols, kept.data());
  dequantize(spec, out, rows * cols, fed.data());
  dequantize(spec, kept.data(), rows * cols, plain.data());
  outputErrors(x, fed.data(), rows, cols, moments, fedErr.data());
  outputErrors(x, plain.data(), rows, cols, moments, plainErr.data());
  for (size_t r = 0; r < rows; ++r)
    if (plainErr[r] < fedErr[r])
      std::memcpy(out + r * row, kept.data() + r * row, row);
}

const std::vector<float> *FactorCache::get(const float *moments, size_t cols) {
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<std::vector<float>> &f = factors[moments];
  if (!f) {
    f = std::make_unique<std::vector<float>>();
    if (!feedbackFactor(moments, cols, *f))
      f->clear();
  }
  return f->empty() ? nullptr : f.get();
}

WeightEncoder::WeightEncoder(const FormatSpec &spec, size_t cols, const float *importance,
                             const float *moments, FactorCache *cache)
    : spec(spec), cols(cols), importance(importance), moments(moments) {
  if (!moments || !importance || !hasErrorFeedback(spec))
    return;
  if (cache)
    factor = cache->get(moments, cols);
  else if (feedbackFactor(moments, cols, own))
    factor = &own;
}

void WeightEncoder::encode(const float *x, size_t rows, uint8_t *out) const {
  if (feedback())
    quantizeFeedback(spec, x, rows, cols, moments, importance, factor->data(), out);
  else
    quantizeWeighted(spec, x, rows * cols, importance, cols, out);
}

} // namespace kiln::quant
