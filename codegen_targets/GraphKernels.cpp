// The kernels of an imported graph's ops beyond a decoder's: the same C for
// every ISA variant, calls of kernels/c99/kiln_uk_graph.h with every shape,
// stride and scalar a constant. A kernel is named after its op and a hash of
// its body, so two ops of the same shapes share one.
#include "codegen_targets/Target.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"

#include <cmath>

using namespace mlir;
using namespace kiln;
using llvm::formatv;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

int64_t count(Value v) { return typeOf(v).getNumElements(); }

std::vector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// `static const int64_t name[] = {...};` (a rank-0 walk is one element).
std::string array(StringRef name, ArrayRef<int64_t> values) {
  std::vector<std::string> items;
  for (int64_t v : values)
    items.push_back(std::to_string(v));
  if (items.empty())
    items.push_back(name == "shape" ? "1" : "0");
  return formatv("    static const int64_t {0}[] = {{{1}};\n", name, llvm::join(items, ", ")).str();
}

/// The walk of `shape` from `src` at `srcStrides` to `dst` at `dstStrides`.
std::string copy(int64_t size, StringRef src, StringRef dst, ArrayRef<int64_t> srcStrides,
                 ArrayRef<int64_t> dstStrides, ArrayRef<int64_t> shape) {
  return "  {\n" + array("from", srcStrides) + array("to", dstStrides) + array("shape", shape) +
         formatv("    kiln_uk_copy_strided({0}, (const uint8_t *){1}, from, (uint8_t *){2}, to, "
                 "shape, {3});\n  }\n",
                 size, src, dst, std::max<size_t>(shape.size(), 1))
             .str();
}

/// A float constant that reads back as the same float (infinities and NaN
/// as math.h's).
std::string floatLiteral(double v) {
  if (std::isnan(v))
    return "NAN";
  if (std::isinf(v))
    return v < 0 ? "-INFINITY" : "INFINITY";
  return formatv("{0:e9}f", v).str();
}

/// `<v>0`, `<v>1`: the units of the call's shares of `units` (nothing when
/// not split).
std::string shareRange(StringRef v, int64_t units, SplitAttr split) {
  if (!split)
    return "";
  return formatv("  const int32_t {0}0 = kiln_uk_share({1}, s0, {2}), {0}1 = kiln_uk_share({1}, "
                 "s1, {2});\n",
                 v, units, split.getShares())
      .str();
}

/// Kernel parameters x0..x(n-1) and y, all untyped: the kernels read what
/// the IR's types say.
std::string params(unsigned inputs) {
  std::string p;
  for (unsigned i = 0; i < inputs; ++i)
    p += formatv("const void *x{0}, ", i).str();
  return p + "void *y";
}

} // namespace

int kiln::graphElementCode(Type element) {
  if (element.isF32())
    return 0;
  if (element.isInteger(64))
    return 1;
  if (element.isInteger(32))
    return 2;
  if (element.isUnsignedInteger(8))
    return 4;
  if (element.isInteger(8))
    return 3;
  if (element.isInteger(1))
    return 5;
  if (element.isF16())
    return 6;
  if (element.isF64())
    return 7;
  return -1;
}

int64_t kiln::graphElementBytes(Type element) {
  return element.isInteger(1) ? 1 : (element.getIntOrFloatBitWidth() + 7) / 8;
}

std::optional<FailureOr<KernelCall>> kiln::graphKernelFor(Operation *op, StringRef prefix,
                                                          const OperandNames &names) {
  SplitAttr split = getSplitAttr(op);
  // A float operand from the first unit of the share (`unit` times `stride`
  // floats on) when split; the operand itself when not.
  auto at = [&](StringRef operand, StringRef unit, int64_t stride, bool input) -> std::string {
    if (!split)
      return operand.str();
    return formatv("({0}float *){1} + (size_t){2} * {3}", input ? "const " : "", operand, unit,
                   stride);
  };
  std::string body;
  auto elem = [&](Value v) -> int { return graphElementCode(typeOf(v).getElementType()); };
  auto size = [&](Value v) { return graphElementBytes(typeOf(v).getElementType()); };
  std::optional<LogicalResult> made =
      llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
          .Case([&](SplatOp s) {
            body = formatv("  kiln_uk_fill(y, {0}, {1});\n", count(s.getResult()),
                           floatLiteral(s.getValue().convertToFloat()));
            return success();
          })
          .Case([&](GeluErfOp g) {
            int64_t width = typeOf(g.getResult()).getShape().back();
            body = shareRange("r", count(g.getResult()) / width, split) +
                   formatv("  kiln_uk_gelu_erf({0}, {1}, {2});\n", at("x0", "r0", width, true),
                           at("y", "r0", width, false),
                           split ? formatv("(int64_t)(r1 - r0) * {0}", width).str()
                                 : std::to_string(count(g.getResult())))
                       .str();
            return success();
          })
          .Case<SqrtOp, ErfOp, TanhOp>([&](Operation *m) {
            const char *code = isa<SqrtOp>(m)  ? "KILN_UK_MAP_SQRT"
                               : isa<ErfOp>(m) ? "KILN_UK_MAP_ERF"
                                               : "KILN_UK_MAP_TANH";
            body = formatv("  kiln_uk_map({0}, x0, y, {1});\n", code, count(m->getResult(0)));
            return success();
          })
          .Case<SubOp, DivOp, PowOp>([&](Operation *z) {
            const char *code = isa<SubOp>(z)   ? "KILN_UK_ZIP_SUB"
                               : isa<DivOp>(z) ? "KILN_UK_ZIP_DIV"
                                               : "KILN_UK_ZIP_POW";
            body = formatv("  kiln_uk_zip({0}, x0, x1, y, {1});\n", code, count(z->getResult(0)));
            return success();
          })
          .Case([&](EqualOp e) {
            body = formatv("  kiln_uk_equal({0}, x0, x1, y, {1});\n", elem(e.getLhs()),
                           count(e.getResult()));
            return success();
          })
          .Case([&](WhereOp w) {
            body = formatv("  kiln_uk_where({0}, x0, x1, x2, y, {1});\n", size(w.getResult()),
                           count(w.getResult()));
            return success();
          })
          .Case([&](CastOp c) {
            body = formatv("  kiln_uk_cast({0}, {1}, x0, y, {2});\n", elem(c.getInput()),
                           elem(c.getResult()), count(c.getResult()));
            return success();
          })
          .Case([&](BroadcastOp b) {
            ArrayRef<int64_t> in = typeOf(b.getInput()).getShape(),
                              out = typeOf(b.getResult()).getShape();
            std::vector<int64_t> inStrides = stridesOf(in), from(out.size(), 0);
            const size_t skip = out.size() - in.size();
            for (size_t d = 0; d < in.size(); ++d)
              from[skip + d] = in[d] == 1 ? 0 : inStrides[d];
            body = copy(size(b.getResult()), "x0", "y", from, stridesOf(out), out);
            return success();
          })
          .Case([&](TransposeOp t) {
            std::vector<int64_t> inStrides = stridesOf(typeOf(t.getInput()).getShape()), from;
            for (int64_t p : t.getPerm())
              from.push_back(inStrides[p]);
            ArrayRef<int64_t> out = typeOf(t.getResult()).getShape();
            body = copy(size(t.getResult()), "x0", "y", from, stridesOf(out), out);
            return success();
          })
          .Case([&](SliceOp s) {
            std::vector<int64_t> inStrides = stridesOf(typeOf(s.getInput()).getShape()), from;
            int64_t start = 0;
            for (size_t d = 0; d < inStrides.size(); ++d) {
              start += s.getStarts()[d] * inStrides[d];
              from.push_back(s.getSteps()[d] * inStrides[d]);
            }
            ArrayRef<int64_t> out = typeOf(s.getResult()).getShape();
            body = copy(size(s.getResult()),
                        formatv("((const uint8_t *)x0 + {0})", start * size(s.getResult())).str(),
                        "y", from, stridesOf(out), out);
            return success();
          })
          .Case([&](ConcatOp c) {
            ArrayRef<int64_t> out = typeOf(c.getResult()).getShape();
            std::vector<int64_t> outStrides = stridesOf(out);
            int64_t axis = c.getAxis() < 0 ? c.getAxis() + int64_t(out.size()) : c.getAxis();
            int64_t at = 0;
            for (auto [i, input] : llvm::enumerate(c.getInputs())) {
              ArrayRef<int64_t> in = typeOf(input).getShape();
              body +=
                  copy(size(input), "x" + std::to_string(i),
                       formatv("((uint8_t *)y + {0})", at * outStrides[axis] * size(input)).str(),
                       stridesOf(in), outStrides, in);
              at += in[axis];
            }
            return success();
          })
          .Case([&](GatherOp g) {
            ArrayRef<int64_t> in = typeOf(g.getInput()).getShape();
            int64_t axis = g.getAxis() < 0 ? g.getAxis() + int64_t(in.size()) : g.getAxis();
            int64_t outer = 1, inner = 1;
            for (int64_t d = 0; d < axis; ++d)
              outer *= in[d];
            for (size_t d = axis + 1; d < in.size(); ++d)
              inner *= in[d];
            body = formatv("  kiln_uk_gather({0}, x0, {1}, x1, {2}, {3}, {4}, {5}, y);\n",
                           size(g.getInput()), elem(g.getIndices()), count(g.getIndices()), outer,
                           in[axis], inner);
            return success();
          })
          .Case([&](ReduceMeanOp r) {
            ArrayRef<int64_t> in = typeOf(r.getInput()).getShape();
            std::vector<int64_t> to = stridesOf(typeOf(r.getResult()).getShape());
            int64_t reduced = 1;
            for (int64_t a : r.getAxes()) {
              int64_t d = a < 0 ? a + int64_t(in.size()) : a;
              to[d] = 0;
              reduced *= in[d];
            }
            body = "  {\n" + array("from", stridesOf(in)) + array("to", to) + array("shape", in) +
                   formatv("    kiln_uk_reduce_mean(x0, y, from, to, shape, {0}, {1}, {2});\n  }\n",
                           std::max<size_t>(in.size(), 1), count(r.getResult()), reduced)
                       .str();
            return success();
          })
          .Case([&](BatchMatmulOp m) -> LogicalResult {
            ArrayRef<int64_t> a = typeOf(m.getLhs()).getShape(), b = typeOf(m.getRhs()).getShape();
            if (a.drop_back(2) != b.drop_back(2))
              return m.emitOpError("has no kernel for broadcast batch dimensions");
            int64_t rows = a[a.size() - 2], inner = a.back(), cols = b.back();
            body = formatv("  kiln_uk_batch_matmul(x0, x1, y, {0}, {1}, {2}, {3});\n",
                           count(m.getResult()) / (rows * cols), rows, inner, cols);
            return success();
          })
          .Case([&](AttendOp a) {
            // Batches b0..b1-1, each share in scratch of its own.
            ArrayRef<int64_t> q = typeOf(a.getQuery()).getShape();
            int64_t t = typeOf(a.getKeysT()).getDimSize(2), e = typeOf(a.getValues()).getDimSize(2);
            int64_t biasRows = a.getBias() ? typeOf(a.getBias()).getDimSize(1) : 0;
            body = shareRange("b", q[0], split) +
                   formatv("  kiln_uk_attend_bidirectional({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
                           "{8}, {9}, {10}, {11}, {12});\n",
                           at("x0", "b0", q[1] * q[2], true), at("x1", "b0", q[2] * t, true),
                           at("x2", "b0", t * e, true),
                           a.getBias() ? at("x3", "b0", biasRows * t, true) : "NULL", biasRows,
                           at("y", "b0", q[1] * e, false),
                           split ? formatv("(uint8_t *)scratch + (size_t)s0 * {0}u",
                                           a.getShareScratchBytes())
                                       .str()
                                 : "scratch",
                           split ? "b1 - b0" : std::to_string(q[0]), q[1], t, q[2], e,
                           floatLiteral(a.getScale().convertToFloat()))
                       .str();
            return success();
          })
          .Default([](Operation *) { return std::nullopt; });
  if (!made)
    return std::nullopt;
  if (failed(*made))
    return FailureOr<KernelCall>(failure());
  KernelCall k;
  k.params = params(op->getNumOperands());
  k.body = body;
  // A kernel with scratch (attention's rows of scores) takes it last.
  auto kernel = dyn_cast<KernelOpInterface>(op);
  bool scratch = kernel && kernel.getScratchBytes() > 0;
  if (scratch)
    k.params += ", void *scratch";
  if (split) {
    // A split kernel computes shares s0..s1-1 of split.getShares().
    if (!isa<GeluErfOp, AttendOp>(op))
      return FailureOr<KernelCall>(op->emitOpError("has no kernel that splits over threads"));
    k.params += ", int32_t s0, int32_t s1";
  }
  k.name =
      formatv("{0}_{1}_{2:x-16}", prefix, op->getName().stripDialect(), llvm::xxh3_64bits(body))
          .str();
  for (Value v : op->getOperands())
    k.args.push_back(names.operand(v));
  k.args.push_back(names.result(op));
  if (scratch)
    k.args.push_back(names.scratch(op));
  return FailureOr<KernelCall>(k);
}
