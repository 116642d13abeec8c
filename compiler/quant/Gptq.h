#ifndef KILN_COMPILER_QUANT_GPTQ_H
#define KILN_COMPILER_QUANT_GPTQ_H

// Quantization with error feedback (GPTQ): a weight row is encoded one column
// at a time, and each column's rounding error is spread over the columns not
// yet encoded in the way that least changes the row's outputs on the
// calibration inputs. The inputs enter as their second moments H = E[x x^T]
// (Kiln's calibration writes them, kiln-generate --moments-out); the error
// measured is (w - y)^T H (w - y) per row, the mean squared change of that
// row's output. A block's scales (and mins) are chosen when its first column
// comes up, from the columns as the earlier errors left them; its codes then
// one at a time against them.

#include "compiler/quant/Quantize.h"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::quant {

/// The formats encoded with error feedback: every block format with codes
/// (q4_0 ... q8_0, iq4_nl, i4g, i8g, the k-quants, tq2_0).
bool hasErrorFeedback(const FormatSpec &spec);

/// The upper triangular U (cols x cols, row-major) with U^T U = (H + damp)^-1
/// for second moments H (cols x cols, row-major), damp 1% of H's mean
/// diagonal. False when H has no positive diagonal or is not positive
/// semi-definite (not second moments).
bool feedbackFactor(const float *moments, size_t cols, std::vector<float> &u);

/// Encodes `rows` rows of `cols` values at x with error feedback through U
/// (feedbackFactor), each block's scale fitted with the importance of its
/// columns (H's diagonal); a row whose error (w - y)^T H (w - y) would be
/// larger than quantizeWeighted's keeps quantizeWeighted's blocks.
void quantizeFeedback(const FormatSpec &spec, const float *x, size_t rows, size_t cols,
                      const float *moments, const float *importance, const float *u,
                      uint8_t *out);

/// feedbackFactor once per input: the weights that read one input share its
/// second moments (the same array) and so its factor. Safe across threads.
class FactorCache {
public:
  /// The factor of `moments` (cols x cols), or nullptr when it has none.
  const std::vector<float> *get(const float *moments, size_t cols);

private:
  std::mutex mutex;
  std::map<const float *, std::unique_ptr<std::vector<float>>> factors; // empty: none
};

/// How a weight's rows are encoded: with error feedback when its input's
/// second moments are known and its format has codes, else weighted by
/// the importance of its columns when that is known, else plainly.
class WeightEncoder {
public:
  /// The factor comes from `cache` when one is given.
  WeightEncoder(const FormatSpec &spec, size_t cols, const float *importance,
                const float *moments, FactorCache *cache = nullptr);
  WeightEncoder(const WeightEncoder &) = delete; // `factor` may point into `own`
  WeightEncoder &operator=(const WeightEncoder &) = delete;
  /// Whether the rows are encoded with error feedback.
  bool feedback() const { return factor != nullptr; }
  /// Encodes `rows` rows of the weight's `cols` values.
  void encode(const float *x, size_t rows, uint8_t *out) const;

private:
  FormatSpec spec;
  size_t cols;
  const float *importance, *moments;
  std::vector<float> own;                  // the factor without a cache
  const std::vector<float> *factor = nullptr; // or nullptr: no feedback
};

/// The diagonal of a cols x cols matrix (row-major): of second moments, the
/// importance of each column.
std::vector<float> diagonalOf(const float *square, size_t cols);

/// The error (w - y)^T H (w - y) of each of `rows` rows w (cols values)
/// encoded as y, into errors[0..rows).
void outputErrors(const float *w, const float *y, size_t rows, size_t cols,
                  const float *moments, double *errors);

} // namespace kiln::quant

#endif // KILN_COMPILER_QUANT_GPTQ_H
