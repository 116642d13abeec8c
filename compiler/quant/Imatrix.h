#ifndef KILN_COMPILER_QUANT_IMATRIX_H
#define KILN_COMPILER_QUANT_IMATRIX_H

// Importance matrices: per input column of a weight, the mean square of the
// activations that column multiplies over a calibration text. llama.cpp's
// files are read in both of its forms:
//
//   legacy .dat (little-endian):  int32 entries, then per entry int32 length,
//     the tensor name, int32 ncall, int32 nval, float values[nval] holding
//     mean(x^2) * ncall; then optionally int32 chunks, int32 length and the
//     calibration text's name.
//   GGUF (general.type "imatrix"): per weight X, F32 tensors X.in_sum2
//     (sum of x^2, ne = [columns, matrices]) and X.counts (tokens summed,
//     ne = [1, matrices]); imatrix.chunk_count and imatrix.datasets.
//
// Kiln writes the legacy form, which every llama.cpp tool reads.
//
// Second moments, Kiln's own (kiln-generate --moments-out): per matmul input
// mean(x x^T) over the calibration rows, which quantization with error
// feedback needs (compiler/quant/Gptq.h); their diagonal is the importance.
//   "KILNMOM1", int32 entries; per input int32 length, the names of the
//   weights it feeds joined by '+', int32 columns, int64 rows, then the
//   upper triangle row by row as float32.

#include "compiler/import/GGUFReader.h"

#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct Imatrix {
  /// Tensor name -> the mean square activation of each of its columns.
  std::map<std::string, std::vector<float>, std::less<>> columns;
  int64_t chunks = 0;  // calibration chunks the means are over
  std::string dataset; // the calibration text's name, when known

  /// Tensor name -> mean(x x^T) of its input (columns x columns, row-major;
  /// the weights of one input share it), from a moments file.
  std::map<std::string, std::shared_ptr<const std::vector<float>>, std::less<>> moments;

  /// The importance of `name`'s columns, or nullptr.
  const std::vector<float> *find(llvm::StringRef name) const;
  /// The second moments of `name`'s input, or nullptr.
  const std::vector<float> *findMoments(llvm::StringRef name) const;
};

/// Reads either form, or a moments file; errors name `path` and what is wrong (truncation, a
/// negative or non-finite value, a count that does not fit the file).
llvm::Expected<Imatrix> readImatrix(llvm::StringRef path);

/// Writes the legacy .dat form.
llvm::Error writeImatrix(const Imatrix &imatrix, llvm::StringRef path);

/// Checks that every entry names a 2-D tensor of `model` with as many columns
/// as the entry has values: an importance matrix of another model is an
/// error naming `path`, the entry and what differs.
llvm::Error checkImatrix(const Imatrix &imatrix, const gguf::File &model, llvm::StringRef path);

} // namespace kiln

#endif // KILN_COMPILER_QUANT_IMATRIX_H
