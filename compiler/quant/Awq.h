#ifndef KILN_COMPILER_QUANT_AWQ_H
#define KILN_COMPILER_QUANT_AWQ_H

// Activation-aware scaling (AWQ): the weights that read one input have their
// columns multiplied by s and the norm that makes the input divides by s, so
// the model computes the same function while the columns whose inputs are
// large get more of each block's levels. s = rms(x)^alpha per column
// (normalised to a geometric mean of 1), alpha searched over 1/4 .. 1 in
// quarters by the output error the weights' encoding leaves on the
// calibration inputs (second moments H: the error of a row is
// (w - y)^T H (w - y)), measured on rows of each weight spread over it
// (kScaleSampleRows at most), and kept only where it lowers that error by at
// least 1%.

#include "compiler/quant/Quantize.h"

#include <vector>

namespace kiln::quant {

/// The rows of a weight that stand for it in the search: the same for every
/// alpha, and as many whatever the model's width.
constexpr size_t kScaleSampleRows = 96;

/// One weight reading the input: `rows` of its rows (at most
/// kScaleSampleRows, spread over it) over the input's columns, and the format
/// it is encoded in.
struct ScaledWeight {
  FormatSpec spec;
  const float *values;
  size_t rows;
};

struct InputScales {
  std::vector<float> scale; // per column; empty: no alpha lowers the error
  double alpha = 0;
  double error = 0, plainError = 0; // summed over the weights, with and without
};

/// The scales for `weights` sharing one input of `cols` columns with second
/// moments `moments` (cols x cols, row-major).
InputScales chooseInputScales(const std::vector<ScaledWeight> &weights, size_t cols,
                              const float *moments);

/// The second moments of the input divided by s: H_ij / (s_i s_j).
std::vector<float> scaledMoments(const float *moments, const std::vector<float> &scale);

} // namespace kiln::quant

#endif // KILN_COMPILER_QUANT_AWQ_H
