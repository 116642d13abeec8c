// kiln-eval: the reference evaluator of graph-level kiln IR, a test oracle.
//
//   kiln-eval graph.mlir --onnx model.onnx --input NAME=FILE.npy ... --output-dir DIR
//
// Runs @run of `graph.mlir` (kiln-compile --emit=mlir of `model.onnx`) the
// naive way in double precision over the inputs and writes each result as
// DIR/<output name>.npy (float32, or the output's integer or bool type).
#include "compiler/eval/GraphEvaluator.h"
#include "compiler/eval/Npy.h"
#include "compiler/import/OnnxReader.h"
#include "dialects/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> input(cl::Positional, cl::desc("<graph.mlir>"), cl::Required);
static cl::opt<std::string> onnxPath("onnx", cl::desc("The ONNX model whose initializers the graph names"),
                                     cl::value_desc("model.onnx"), cl::Required);
static cl::list<std::string> inputs("input", cl::desc("NAME=FILE.npy for each input of @run"));
static cl::opt<std::string> outputDir("output-dir", cl::desc("Where the outputs go, as <name>.npy"),
                                      cl::Required);

static int fail(const llvm::Twine &what) {
  llvm::errs() << "kiln-eval: error: " << what << "\n";
  return 1;
}

static kiln::eval::NpyType npyTypeOf(Type t) {
  if (t.isInteger(1))
    return kiln::eval::NpyType::Bool;
  if (t.isInteger(64))
    return kiln::eval::NpyType::I64;
  if (t.isInteger(32))
    return kiln::eval::NpyType::I32;
  if (t.isF16())
    return kiln::eval::NpyType::F16;
  return kiln::eval::NpyType::F32;
}

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "Kiln's reference evaluator of graph-level IR\n");
  MLIRContext context;
  context.loadDialect<kiln::KilnDialect, func::FuncDialect>();
  llvm::SourceMgr sources;
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(input, sources, &context);
  if (!module)
    return fail(input + ": not graph-level kiln IR");
  auto run = module->lookupSymbol<func::FuncOp>("run");
  if (!run)
    return fail(input + ": no @run (kiln-compile --emit=mlir of an ONNX graph)");

  std::map<std::string, std::string> given;
  for (const std::string &s : inputs) {
    size_t eq = s.find('=');
    if (eq == std::string::npos)
      return fail("--input=" + s + ": expected NAME=FILE.npy");
    given[s.substr(0, eq)] = s.substr(eq + 1);
  }
  // The graph's folded initializers exist for these input shapes only.
  kiln::onnx::InputShapes shapes;
  std::vector<kiln::eval::Buffer> args;
  for (unsigned i = 0; i < run.getNumArguments(); ++i) {
    auto name = run.getArgAttrOfType<StringAttr>(i, "kiln.name");
    if (!name)
      return fail(input + ": argument " + llvm::Twine(i) + " of @run has no kiln.name");
    auto type = cast<RankedTensorType>(run.getArgument(i).getType());
    shapes[name.str()] = std::vector<int64_t>(type.getShape().begin(), type.getShape().end());
    auto file = given.find(name.str());
    if (file == given.end())
      return fail("input '" + name.getValue() + "' is not given (--input " + name.getValue() + "=FILE.npy)");
    llvm::Expected<kiln::eval::Buffer> b = kiln::eval::readNpy(file->second);
    if (!b)
      return fail(llvm::toString(b.takeError()));
    if (b->shape != shapes[name.str()])
      return fail(file->second + ": its shape is not input '" + name.getValue() + "''s");
    args.push_back(std::move(*b));
    given.erase(file);
  }
  if (!given.empty())
    return fail("--input names '" + given.begin()->first + "', which is not an input of @run");
  kiln::onnx::Graph graph;
  std::string error;
  if (!kiln::onnx::readGraph(onnxPath, shapes, graph, error))
    return fail(error);
  auto source = [&](llvm::StringRef name) -> llvm::Expected<kiln::eval::Buffer> {
    const kiln::onnx::Tensor *t = graph.initializer(name.str());
    if (!t)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     onnxPath + ": no initializer '" + name + "'");
    kiln::eval::Buffer b;
    b.shape = t->info.shape;
    if (t->info.type == kiln::onnx::ElementType::F32) {
      std::vector<float> f = t->floats();
      b.values.assign(f.begin(), f.end());
    } else {
      std::vector<int64_t> n = t->integers();
      b.values.assign(n.begin(), n.end());
    }
    return b;
  };
  llvm::Expected<std::vector<kiln::eval::Buffer>> results = kiln::eval::evaluate(*module, "run", args, source);
  if (!results)
    return fail(input + ": " + llvm::toString(results.takeError()));
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return fail(outputDir + ": " + ec.message());
  for (unsigned i = 0; i < results->size(); ++i) {
    auto name = run.getResultAttrOfType<StringAttr>(i, "kiln.name");
    std::string file = name ? name.str() : "output_" + std::to_string(i);
    std::replace(file.begin(), file.end(), '/', '_');
    llvm::SmallString<256> path(outputDir);
    llvm::sys::path::append(path, file + ".npy");
    Type element = cast<RankedTensorType>(run.getResultTypes()[i]).getElementType();
    if (llvm::Error e = kiln::eval::writeNpy(path, (*results)[i], npyTypeOf(element)))
      return fail(llvm::toString(std::move(e)));
  }
  return 0;
}
