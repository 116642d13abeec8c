#include "compiler/quant/Gptq.h"

#include "compiler/quant/GgmlBlocks.h"

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

// The inverse of L L^T from L (lower triangle of l): L^-1 by forward
// substitution, then L^-T L^-1; full n x n.
std::vector<double> inverseOf(const std::vector<double> &l, size_t n) {
  std::vector<double> li(n * n, 0.0); // L^-1, lower triangular
  for (size_t c = 0; c < n; ++c) {
    li[c * n + c] = 1.0 / l[c * n + c];
    for (size_t i = c + 1; i < n; ++i) {
      double s = 0;
      for (size_t k = c; k < i; ++k)
        s -= l[i * n + k] * li[k * n + c];
      li[i * n + c] = s / l[i * n + i];
    }
  }
  std::vector<double> inv(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j <= i; ++j) {
      double s = 0; // (L^-T L^-1)_ij = sum over k >= i of li[k][i] li[k][j]
      for (size_t k = i; k < n; ++k)
        s += li[k * n + i] * li[k * n + j];
      inv[i * n + j] = inv[j * n + i] = s;
    }
  return inv;
}

} // namespace

bool hasErrorFeedback(const FormatSpec &spec) { return ggml::topCode(spec.format) > 0; }

bool feedbackFactor(const float *moments, size_t cols, std::vector<float> &u) {
  double mean = 0;
  for (size_t j = 0; j < cols; ++j)
    mean += moments[j * cols + j];
  mean /= double(cols ? cols : 1);
  if (!(mean > 0) || !std::isfinite(mean))
    return false;
  std::vector<double> h(moments, moments + cols * cols);
  // A column no input reached (its weights never matter) and the damping
  // that keeps H invertible when the calibration rows do not span it.
  for (size_t j = 0; j < cols; ++j)
    h[j * cols + j] = (h[j * cols + j] > 0 ? h[j * cols + j] : mean) + 0.01 * mean;
  if (!cholesky(h, cols))
    return false;
  std::vector<double> inv = inverseOf(h, cols);
  if (!cholesky(inv, cols))
    return false;
  u.assign(cols * cols, 0.0f);
  for (size_t i = 0; i < cols; ++i)
    for (size_t j = i; j < cols; ++j)
      u[i * cols + j] = float(inv[j * cols + i]); // U = L^T
  return true;
}

double outputError(const float *w, const float *y, size_t cols, const float *moments) {
  std::vector<double> e(cols);
  for (size_t j = 0; j < cols; ++j)
    e[j] = double(w[j]) - y[j];
  double err = 0;
  for (size_t i = 0; i < cols; ++i) {
    double s = 0;
    for (size_t j = 0; j < cols; ++j)
      s += double(moments[i * cols + j]) * e[j];
    err += e[i] * s;
  }
  return err;
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
  std::vector<double> w(cols);
  std::vector<float> xb(per), fed(cols), plain(cols);
  std::vector<uint8_t> kept(row);
  Levels levels;
  for (size_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    uint8_t *orow = out + r * row;
    for (size_t j = 0; j < cols; ++j)
      w[j] = xr[j];
    for (size_t b = 0; b < cols; b += per) {
      uint8_t *ob = orow + b / per * stride;
      for (size_t j = 0; j < per; ++j)
        xb[j] = float(w[b + j]);
      // The block's scales from its columns as the earlier errors left them.
      quantizeWeighted(spec, xb.data(), per, importance + b, per, ob);
      levels.of(spec, ob);
      for (size_t j = 0; j < per; ++j) {
        const size_t c = b + j;
        double value;
        ggml::setCode(spec.format, spec.group, ob, int(j), levels.nearest(spec, j, w[c], value));
        const double e = (w[c] - value) / u[c * cols + c];
        const float *uc = u + c * cols;
        for (size_t k = c + 1; k < cols; ++k)
          w[k] -= e * uc[k];
      }
    }
    // Never worse than the weighted encoder by the output error.
    quantizeWeighted(spec, xr, cols, importance, cols, kept.data());
    dequantize(spec, orow, cols, fed.data());
    dequantize(spec, kept.data(), cols, plain.data());
    if (outputError(xr, plain.data(), cols, moments) < outputError(xr, fed.data(), cols, moments))
      std::memcpy(orow, kept.data(), row);
  }
}

WeightEncoder::WeightEncoder(const FormatSpec &spec, size_t cols, const float *importance,
                             const float *moments)
    : spec(spec), cols(cols), importance(importance), moments(moments) {
  if (moments && importance && hasErrorFeedback(spec) && !feedbackFactor(moments, cols, u))
    u.clear();
}

void WeightEncoder::encode(const float *x, size_t rows, uint8_t *out) const {
  if (feedback())
    quantizeFeedback(spec, x, rows, cols, moments, importance, u.data(), out);
  else
    quantizeWeighted(spec, x, rows * cols, importance, cols, out);
}

} // namespace kiln::quant
