// A planned graph (an encoder imported from ONNX) as C: `<name>_run(m,
// inputs, outputs)` calls one kernel per op in order (a split one's shares
// through the workers), each value at its arena slot, each weight and
// constant at its pack offset, a reshape its input's bytes under another
// name; the outputs are copied out at the end.
#include "codegen_targets/Template.h"
#include "codegen_targets/TranslateToC.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace kiln;
using llvm::formatv;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Operands as C expressions of the run function, which has `inputs`, `w`
/// (the pack's data) and `a` (the arena) in scope.
class GraphNames : public OperandNames {
public:
  std::string operand(Value v) const override {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return formatv("inputs[{0}]", arg.getArgNumber()).str();
    Operation *def = v.getDefiningOp();
    if (auto reshape = dyn_cast<ReshapeOp>(def))
      return operand(reshape.getInput());
    if (isa<WeightOp, ConstantOp>(def))
      return formatv("(const void *)(w + {0}u)", getSegmentAttr(def).getOffset()).str();
    return result(def);
  }
  std::string result(Operation *op) const override {
    return formatv("(void *)(a + {0}u)", getSlotAttr(op).getOffset()).str();
  }
  std::string scratch(Operation *op) const override {
    return formatv("(void *)(a + {0}u)", getScratchAttr(op).getOffset()).str();
  }
};

const char *elementName(Type element) {
  static const char *const names[] = {"KILN_ELEMENT_F32", "KILN_ELEMENT_I64", "KILN_ELEMENT_I32",
                                      "KILN_ELEMENT_I8",  "KILN_ELEMENT_U8",  "KILN_ELEMENT_BOOL",
                                      "KILN_ELEMENT_F16", "KILN_ELEMENT_F64"};
  return names[graphElementCode(element)];
}

int64_t tensorBytes(Value v) {
  return typeOf(v).getNumElements() * graphElementBytes(typeOf(v).getElementType());
}

/// The name an argument or result carries (kiln.name), else "input3"/"output0".
std::string valueName(func::FuncOp fn, bool input, unsigned i) {
  auto name = input ? fn.getArgAttrOfType<StringAttr>(i, "kiln.name")
                    : fn.getResultAttrOfType<StringAttr>(i, "kiln.name");
  if (name)
    return name.str();
  return (input ? "input" : "output") + std::to_string(i);
}

/// A C string literal of `text`.
std::string quoted(llvm::StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20)
      out += formatv("\\{0:o3}", unsigned(static_cast<unsigned char>(c))).str();
    else
      out += c;
  }
  return out + "\"";
}

/// The header's constants and the .c's table of the inputs (`input` true) or
/// outputs.
void describe(func::FuncOp fn, llvm::StringRef upper, llvm::StringRef name, bool input,
              std::string &shapes, std::string &info, std::string &table) {
  TypeRange types = input ? TypeRange(fn.getArgumentTypes()) : fn.getResultTypes();
  const char *kind = input ? "INPUT" : "OUTPUT";
  std::string rows;
  for (auto [i, type] : llvm::enumerate(types)) {
    auto t = cast<RankedTensorType>(type);
    std::vector<std::string> dims;
    for (int64_t d : t.getShape())
      dims.push_back(std::to_string(d));
    int64_t bytes = t.getNumElements() * graphElementBytes(t.getElementType());
    std::string label = valueName(fn, input, i);
    shapes += formatv("/* {0} */\n#define {1}_{2}{3}_RANK {4}\n#define {1}_{2}{3}_SHAPE {{{5}}\n"
                      "#define {1}_{2}{3}_ELEMENTS {6}\n#define {1}_{2}{3}_BYTES {7}u\n",
                      label, upper, kind, i, t.getRank(),
                      dims.empty() ? "1" : llvm::join(dims, ", "), t.getNumElements(), bytes);
    std::string shape = formatv("{0}{1}_shape", input ? "input" : "output", i);
    info += formatv("static const int64_t {0}[] = {1}_{2}{3}_SHAPE;\n", shape, upper, kind, i);
    rows += formatv("    {{{0}, {1}, {2}, {3}, {4}, {5}u},\n", quoted(label),
                    elementName(t.getElementType()), t.getRank(), shape, t.getNumElements(), bytes);
  }
  if (rows.empty()) {
    table = "NULL";
    return;
  }
  std::string array = formatv("{0}_{1}", name, input ? "inputs" : "outputs");
  info += formatv("const kiln_tensor_info {0}[{1}_{2}S] = {{\n{3}};\n", array, upper, kind, rows);
  table = array;
}

/// `if (!indices_ok) return KILN_ERR_ARGUMENT;` before an op that reads a
/// table at indices it is given: an embedding's token ids, a gather's indices.
std::string indexCheck(Operation *op, const GraphNames &names) {
  Value indices;
  int64_t lo = 0, hi = 0;
  if (auto embed = dyn_cast<EmbedOp>(op)) {
    indices = embed.getTokens();
    hi = typeOf(embed.getTable()).getDimSize(0);
  } else if (auto gather = dyn_cast<GatherOp>(op)) {
    indices = gather.getIndices();
    RankedTensorType in = typeOf(gather.getInput());
    int64_t axis = gather.getAxis() < 0 ? gather.getAxis() + in.getRank() : gather.getAxis();
    hi = in.getDimSize(axis);
    lo = -hi;
  } else {
    return "";
  }
  return formatv("  if (!kiln_uk_indices_ok({0}, {1}, {2}, {3}, {4}))\n"
                 "    return KILN_ERR_ARGUMENT;\n",
                 graphElementCode(typeOf(indices).getElementType()), names.operand(indices),
                 typeOf(indices).getNumElements(), lo, hi)
      .str();
}

} // namespace

FailureOr<std::vector<GeneratedFile>>
kiln::translateGraphToC(ModuleOp module, const TargetDescription &target, bool embedWeights) {
  std::string name = module.getSymName() ? module.getSymName()->str() : "graph";
  std::string upper = llvm::StringRef(name).upper();
  auto fn = module.lookupSymbol<func::FuncOp>("run");
  IntegerAttr arena = getArenaBytesAttr(module);
  PackAttr pack = getPackAttr(module);
  if (!fn || !arena || !pack)
    return module.emitError("expects a planned graph with a pack (a @run function, "
                            "kiln-plan-memory and a written pack)");

  // Every value but a weight (which only the matmul and norm kernels read)
  // has an element type the kernels know.
  for (BlockArgument arg : fn.getArguments())
    if (graphElementCode(typeOf(arg).getElementType()) < 0)
      return fn.emitOpError() << "has no kernel for input " << arg.getArgNumber()
                              << "'s element type " << typeOf(arg).getElementType();
  WalkResult types = fn.walk([&](Operation *op) -> WalkResult {
    if (isa<WeightOp>(op))
      return WalkResult::advance();
    for (Type t : op->getResultTypes())
      if (auto tensor = dyn_cast<RankedTensorType>(t))
        if (graphElementCode(tensor.getElementType()) < 0)
          return op->emitOpError() << "has no kernel for element type " << tensor.getElementType();
    return WalkResult::advance();
  });
  if (types.wasInterrupted())
    return failure();

  GraphNames names;
  std::map<std::string, KernelCall> kernels;
  std::string schedule, sites;
  int64_t threads = 1, siteCount = 0;
  if (IntegerAttr t = getThreadsAttr(module))
    threads = t.getInt();
  for (Operation &op : fn.getBody().front()) {
    if (isa<WeightOp, ConstantOp, ReshapeOp>(op))
      continue;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands()))
        schedule +=
            formatv("  memcpy(outputs[{0}], {1}, {2}u);\n", i, names.operand(v), tensorBytes(v));
      continue;
    }
    FailureOr<KernelCall> call = target.kernelFor(&op, name, names);
    if (failed(call))
      return failure();
    for (const KernelCall &k : llvm::concat<const KernelCall>(call->setup, call->helpers))
      kernels.try_emplace(k.name, k);
    kernels.try_emplace(call->name, *call);
    // A row kernel's run-time row count is the op's static one here.
    // A split kernel's shares s0..s1-1 come last.
    auto statement = [&](const KernelCall &k, bool shares = false) {
      std::vector<std::string> args = k.args;
      for (std::string &arg : args)
        if (arg == "rows")
          arg = std::to_string(rowCount(op.getResult(0)));
      if (shares)
        args.insert(args.end(), {"s0", "s1"});
      return formatv("  {0}({1});\n", k.name, llvm::join(args, ", ")).str();
    };
    schedule += indexCheck(&op, names);
    for (const KernelCall &setup : call->setup)
      schedule += statement(setup);
    if (!getSplitAttr(&op)) {
      schedule += statement(*call);
      continue;
    }
    // The shares run in a site function the workers call.
    std::string site = formatv("site_{0}", siteCount++);
    sites += formatv("static void {0}(void *ctx, int32_t s0, int32_t s1) {{\n"
                     "  KILN_SITE_SCOPE(ctx);\n{1}}\n\n",
                     site, statement(*call, /*shares=*/true));
    schedule += formatv("  run_shares(m, {0}, &ctx);\n", site);
  }

  std::string shapes, info, inputTable, outputTable;
  describe(fn, upper, name, true, shapes, info, inputTable);
  describe(fn, upper, name, false, shapes, info, outputTable);

  // A graph compiled for threads has workers whether or not a kernel split.
  bool workers = threads > 1;
  TemplateValues worker = workerValues(workers);
  std::vector<GeneratedFile> files;
  files.push_back(
      {name + ".h", fillTemplate("graph.h.in", {{"name", name},
                                                {"NAME", upper},
                                                {"THREADS", std::to_string(threads)},
                                                {"ARENA_BYTES", std::to_string(arena.getInt())},
                                                {"PACK_BYTES", std::to_string(pack.getFileBytes())},
                                                {"MODEL_HASH", formatv("{0:x-16}", pack.getHash())},
                                                {"INPUTS", std::to_string(fn.getNumArguments())},
                                                {"OUTPUTS", std::to_string(fn.getNumResults())},
                                                {"SHAPES", shapes},
                                                {"WORKERS_FIELD", worker["WORKERS_FIELD"]}})});
  files.push_back(
      {name + ".c",
       fillTemplate(
           "graph.c.in",
           {{"name", name},
            {"NAME", upper},
            {"TENSOR_INFO", info},
            {"SHARES", siteCount ? fillTemplate("graph_shares.c.in", {{"name", name},
                                                                       {"NAME", upper},
                                                                       {"SITE_FUNCTIONS", sites}})
                                 : ""},
            {"DATA_OFFSET", std::to_string(pack.getDataOffset())},
            {"DATA_BYTES", std::to_string(pack.getDataBytes())},
            {"WORKERS_RESET", worker["WORKERS_RESET"]},
            {"CPU_CHECK", cpuCheckText(target.isaVariant())},
            {"INPUTS_CHECK", fn.getNumArguments() ? "!inputs || " : ""},
            {"RUN_ARGS",
             siteCount ? "  run_args ctx;\n  ctx.w = w;\n  ctx.a = a;\n  ctx.inputs = inputs;\n" : ""},
            {"SCHEDULE", schedule},
            {"SET_WORKERS", worker["SET_WORKERS"]},
            {"INPUT_INFO", inputTable},
            {"OUTPUT_INFO", outputTable}})});
  addKernelFiles(name, target, kernels, files);
  files.push_back({"CMakeLists.txt",
                   fillTemplate("graph.cmake.in",
                                {{"name", name},
                                 {"NAME", upper},
                                 {"POOL_SOURCES", worker["POOL_SOURCES"]},
                                 {"POOL_LINK", worker["POOL_LINK"]},
                                 {"WEIGHTS_SOURCE", embedWeights ? " " + name + "_weights.c" : ""},
                                 {"KERNEL_FLAGS", kernelFlags(target, name)}})});
  return files;
}
