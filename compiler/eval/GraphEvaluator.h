#ifndef KILN_COMPILER_EVAL_GRAPHEVALUATOR_H
#define KILN_COMPILER_EVAL_GRAPHEVALUATOR_H

// A reference evaluator of graph-level kiln IR: every op computed the naive
// way in double precision, one value at a time. It is a test oracle (the
// importer checked against the framework that exported a graph, and later the
// generated kernels against it), never part of what Kiln ships.

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln::eval {

/// A tensor's elements, row-major, whatever its element type (integers and
/// booleans exactly: every value the graphs hold fits a double's mantissa).
struct Buffer {
  std::vector<int64_t> shape;
  std::vector<double> values;
};

/// The elements of the source tensor named `name` (kiln.weight and
/// kiln.constant), or an error.
using TensorSource = std::function<llvm::Expected<Buffer>(llvm::StringRef name)>;

/// Runs `function` of `module` over `inputs` (one per argument, in order) and
/// returns its results. Integer results are truncated toward zero and
/// booleans are 0 or 1, as the element types say.
llvm::Expected<std::vector<Buffer>> evaluate(mlir::ModuleOp module, llvm::StringRef function,
                                             const std::vector<Buffer> &inputs,
                                             const TensorSource &source);

} // namespace kiln::eval

#endif // KILN_COMPILER_EVAL_GRAPHEVALUATOR_H
