#include "compiler/Compile.h"

#include "codegen_targets/BoardPlacement.h"
#include "codegen_targets/TranslateToC.h"
#include "compiler/HostRun.h"
#include "compiler/import/OnnxImporter.h"
#include "compiler/pack/PackWriter.h"
#include "compiler/pack/VocabSegment.h"
#include "compiler/quant/BudgetPolicy.h"
#include "compiler/quant/Gptq.h"
#include "compiler/quant/Imatrix.h"
#include "compiler/quant/QuantPolicy.h"
#include "compiler/report/Compare.h"
#include "compiler/report/Report.h"
#include "kernels/c99/kiln_uk_pack.h"
#include "passes/Passes.h"
#include "kiln/kiln_checksum.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>
#include <thread>

#include <sys/resource.h>

using namespace mlir;
using namespace kiln;

/// The most workers a split kernel is compiled for (the runtime pool's limit,
/// KILN_POOL_MAX_THREADS).
static constexpr int64_t kMaxThreads = 64;

static LogicalResult report(llvm::raw_ostream &errs, llvm::StringRef file,
                            const llvm::Twine &msg) {
  errs << "kiln-compile: error: " << file << ": " << msg << "\n";
  return failure();
}

static LogicalResult writeFile(llvm::StringRef path, llvm::raw_ostream &errs,
                               llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::error_code ec;
  llvm::ToolOutputFile file(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return report(errs, path, ec.message());
  write(file.os());
  file.keep();
  return success();
}

/// A textual phase's IR: printed to `out`, or into `dir`/<module name>.mlir.
namespace {
/// The errors emitted on a context while it lives, to be reported as the
/// compiler's own, one line each; notes and warnings print as usual.
class CollectedErrors {
public:
  explicit CollectedErrors(MLIRContext &context)
      : handler(&context, [this](Diagnostic &d) -> LogicalResult {
          if (d.getSeverity() != DiagnosticSeverity::Error)
            return failure(); // the default handler prints it
          lines.push_back(d.str());
          return success();
        }) {}

  /// Reports every error against `file`, or `otherwise` when none was
  /// emitted; failure().
  LogicalResult report(llvm::raw_ostream &errs, llvm::StringRef file,
                       llvm::StringRef otherwise) const {
    if (lines.empty())
      return ::report(errs, file, otherwise);
    for (const std::string &line : lines)
      (void)::report(errs, file, line);
    return failure();
  }

private:
  std::vector<std::string> lines;
  ScopedDiagnosticHandler handler;
};
} // namespace

static LogicalResult writeIr(ModuleOp module, llvm::StringRef dir, llvm::raw_ostream &out,
                             llvm::raw_ostream &errs) {
  if (dir.empty()) {
    module->print(out);
    return success();
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return report(errs, dir, ec.message());
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, module.getSymName()->str() + ".mlir");
  return writeFile(path, errs, [&](llvm::raw_ostream &os) { module->print(os); });
}

/// Pack + arena of `module` compiled with `overrides`, as planned: the arena
/// and the data section exactly, the table and vocabulary by `overhead`.
static llvm::Expected<int64_t> plannedTotal(ModuleOp module, StringRef overrides,
                                            StringRef kvType, StringRef fuse,
                                            const KernelTarget &kernel, int64_t overhead) {
  OwningOpRef<ModuleOp> probe = module.clone();
  QuantizeOptions quantize;
  quantize.overrides = overrides.str();
  quantize.kv = kvType.str();
  PassManager pm(module.getContext());
  buildGraphPipeline(pm, quantize, fuse);
  buildKernelPipeline(pm, kernel);
  if (failed(pm.run(*probe)) || !getPackDataBytesAttr(*probe))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "memory planning of the budget's choice failed");
  return getArenaBytesAttr(*probe).getInt() +
         int64_t(llvm::alignTo(getPackDataBytesAttr(*probe).getInt(), 4096)) + overhead;
}

/// Chooses per-tensor formats for --memory-budget. The arena is planned once
/// with float weights; quantized matmuls add at most one scratch buffer at a time,
/// so the largest one is added. Pack overhead is bounded from above (header,
/// table, vocabulary, 64-byte segments, a page per layer), so the first choice
/// fits; the room that bound leaves (the choice planned as it will be compiled)
/// is then given to a second choice, kept when it fits as planned.
static llvm::Expected<std::string> fitMemoryBudget(ModuleOp module, const gguf::File &file,
                                                   int64_t budget, StringRef kvType,
                                                   const KernelTarget &kernel, StringRef fuse,
                                                   llvm::raw_ostream &log,
                                                   const MeasureLoss *measure,
                                                   double &predicted) {
  const int64_t panelRows = kernel.panelRows;
  OwningOpRef<ModuleOp> probe = module.clone();
  QuantizeOptions kvOnly;
  kvOnly.kv = kvType.str();
  PassManager pm(module.getContext());
  buildGraphPipeline(pm, kvOnly, fuse);
  buildKernelPipeline(pm);
  if (failed(pm.run(*probe)))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "memory planning failed");
  int64_t fixed = getArenaBytesAttr(*probe).getInt();
  int64_t scratch = 0, layers = 0;
  std::vector<BudgetTensor> tensors;
  llvm::StringSet<> seen;
  probe->walk([&](Operation *op) {
    if (isMatmulKernel(op)) {
      ArrayRef<int64_t> x = cast<RankedTensorType>(op->getOperand(0).getType()).getShape();
      // Whatever format the budget picks, at most the largest input rows.
      scratch = std::max(scratch, int64_t(llvm::alignTo(
                                      x[0] * kiln_uk_act_stride_bound(int32_t(x[1])),
                                      KILN_UK_ALIGN)));
    }
    auto w = dyn_cast<WeightOp>(op);
    if (!w || !seen.insert(w.getName()).second)
      return;
    SegmentAttr seg = getSegmentAttr(w);
    layers = std::max(layers, seg.getLayer() + 1);
    if (w.getType().getRank() == 2) {
      int64_t rows = w.getType().getDimSize(0), cols = w.getType().getDimSize(1);
      tensors.push_back({w.getName().str(), rows, cols});
      // Rows a panel layout pads, at the widest format's bytes.
      if (panelRows > 0)
        fixed += (int64_t(llvm::alignTo(rows, panelRows)) - rows) * cols * 4;
    } else
      fixed += llvm::alignTo(seg.getBytes(), 64);
    fixed += 64; // name and fields in the pack table
  });
  llvm::Expected<Vocabulary> vocab = readVocabulary(file);
  if (!vocab)
    return vocab.takeError();
  int64_t vocabBytes = 0;
  for (const std::string &t : vocab->tokens)
    vocabBytes += 2 * int64_t(t.size()) + 40; // in the table and in the vocab segment
  for (const std::string &m : vocab->merges)
    vocabBytes += 2 * int64_t(m.size()) + 24;
  // Header, table root, and page alignment of the data, each layer, the vocab
  // segment and the end.
  fixed += scratch + vocabBytes + 64 + 1024 + (layers + 5) * 4096;
  llvm::Expected<BudgetOptions> options = budgetOptions(file, tensors, measure);
  if (!options)
    return options.takeError();
  // The header, table and vocabulary: what the bound counts beyond the data.
  const int64_t overhead = vocabBytes + 64 * int64_t(seen.size()) + 1024 + 3 * 4096;
  // The bound leaves room: give it back to the choice, halving the room
  // given while a choice does not fit as planned.
  int64_t bestFixed = fixed, room = 0, step = 0;
  for (int round = 0; round < 8; ++round) {
    llvm::Expected<std::string> choice =
        chooseFormatsForBudget(*options, tensors, fixed - room - step, budget, llvm::nulls());
    if (!choice) {
      if (round == 0)
        return choice.takeError();
      llvm::consumeError(choice.takeError());
      break;
    }
    llvm::Expected<int64_t> planned =
        plannedTotal(module, *choice, kvType, fuse, kernel, overhead);
    if (!planned)
      return planned.takeError();
    if (*planned <= budget) {
      room += step;
      bestFixed = fixed - room;
      step = budget - *planned;
    } else {
      step /= 2;
    }
    if (step < 4096)
      break;
  }
  return chooseFormatsForBudget(*options, tensors, bestFixed, budget, log, &predicted);
}

/// The most memory this process has held resident (file pages it mapped
/// included), from the system's own count.
static uint64_t peakResidentBytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
#ifdef __APPLE__
  return uint64_t(usage.ru_maxrss); // bytes
#else
  return uint64_t(usage.ru_maxrss) * 1024; // kilobytes
#endif
}

/// The --report table: every weight as stored, then the memory plan.
static void printReport(ModuleOp module, const PackInfo &pack, const Vocabulary &vocab,
                        llvm::raw_ostream &os) {
  os << llvm::formatv("{0,-32} {1,-7} {2,12} {3,12}\n", "tensor", "format", "bytes",
                      "rms error");
  uint64_t weights = 0;
  for (const TensorReport &t : pack.tensors) {
    std::string err = t.converted ? llvm::formatv("{0:e3}", t.rmsError).str()
                      : t.scaled  ? "rescaled"
                                  : "as stored";
    os << llvm::formatv("{0,-32} {1,-7} {2,12} {3,12}{4}{5}\n", t.name, t.format, t.bytes, err,
                        t.feedback ? " (moments)" : t.weighted ? " (imatrix)" : "",
                        t.scaled ? " (activation-scaled)" : "");
    weights += t.bytes;
  }
  for (const ScaledInput &s : pack.scaledInputs)
    os << llvm::formatv("activation-aware scales: {0} divided, the weights after it times "
                        "rms(x)^{1}: their output error x{2:f3}\n",
                        s.norm, s.alpha, s.errorRatio);
  auto value = [](IntegerAttr a) { return a ? a.getInt() : 0; };
  int64_t arena = value(getArenaBytesAttr(module)), kv = value(getKvBytesAttr(module));
  os << llvm::formatv("weights: {0} bytes in {1} tensors; pack: {2} bytes\n", weights,
                      pack.tensors.size(), pack.fileSize);
  os << llvm::formatv("arena: {0} bytes = KV cache {1} + activations {2}\n", arena, kv,
                      arena - kv);
  for (auto fn : module.getOps<func::FuncOp>())
    os << llvm::formatv("  @{0}: activations {1} bytes, lower bound {2}\n", fn.getSymName(),
                        value(getActivationBytesAttr(fn)),
                        value(getActivationLowerBoundAttr(fn)));
  os << llvm::formatv("total (pack + arena): {0} bytes\n", pack.fileSize + arena);
  // What the runtime tokenizer does with text.
  int64_t specials = llvm::count_if(vocab.types, [](int32_t t) { return t == 3 || t == 4; });
  std::vector<int32_t> eog = vocab.endOfGeneration;
  llvm::sort(eog);
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  os << llvm::formatv("tokenizer: {0} of {1} tokens, pre-tokenizer {2}, {3} special tokens, "
                      "end of generation {4}, chat template {5}\n",
                      vocab.model, vocab.tokens.size(),
                      vocab.model == "gpt2" && !vocab.preTokenizer.empty() ? vocab.preTokenizer
                                                                            : "none",
                      specials, eog.empty() ? "none" : llvm::join(llvm::map_range(eog, [](int32_t id) {
                        return std::to_string(id);
                      }), ","),
                      chatTemplateName(chatTemplateCode(vocab.chatTemplate)));
}

/// The target's kernel facts with the options' overrides (--min-split-work).
static KernelTarget kernelTarget(const TargetDescription &target, const CompileOptions &options) {
  KernelTarget kernel = target.isaVariant().kernel;
  if (options.minSplitWork >= 0)
    kernel.minSplitWork = options.minSplitWork;
  return kernel;
}

static LogicalResult compileOne(const CompileOptions &options, llvm::raw_ostream &out,
                                llvm::raw_ostream &errs, std::string *nameOut,
                                PackInfo *packOut = nullptr);

/// `text` with its chunk length set (`ctx` 0: min(`defaultCtx`, the model's
/// context)) and checked against the model.
static FailureOr<Calibration> checkText(const CompileOptions &options, const gguf::File &file,
                                        Calibration text, int64_t defaultCtx, StringRef flag,
                                        llvm::raw_ostream &errs) {
  llvm::Expected<LlamaConfig> config = readLlamaConfig(file);
  if (!config) {
    (void)report(errs, options.input, llvm::toString(config.takeError()));
    return failure();
  }
  if (!llvm::sys::fs::exists(text.text)) {
    (void)report(errs, text.text, "no such text for --" + flag);
    return failure();
  }
  if (text.ids) {
    // Every id in the vocabulary, checked here: a bad file fails before the build.
    auto buffer = llvm::MemoryBuffer::getFile(text.text);
    if (!buffer) {
      (void)report(errs, text.text, buffer.getError().message());
      return failure();
    }
    std::string ids = (*buffer)->getBuffer().str();
    for (char &c : ids)
      c = c == ',' || c == '\t' || c == '\n' || c == '\r' ? ' ' : c;
    llvm::SmallVector<StringRef> words;
    StringRef(ids).split(words, ' ', -1, false);
    for (size_t i = 0; i < words.size(); ++i) {
      int64_t id;
      if (words[i].getAsInteger(10, id) || id < 0 || id >= config->nVocab) {
        (void)report(errs, text.text,
                     llvm::formatv("token {0} ('{1}') is not an id of the model's vocabulary "
                                   "of {2}",
                                     i + 1, words[i], config->nVocab));
        return failure();
      }
    }
  }
  if (text.ctx == 0)
    text.ctx = std::min<int64_t>(defaultCtx, config->contextLength);
  if (text.ctx < 2 || text.ctx > config->contextLength) {
    (void)report(errs, options.input,
                 llvm::formatv("--{0}-ctx={1}: expected 2 to the model's context {2}", flag,
                               text.ctx, config->contextLength));
    return failure();
  }
  return text;
}

/// A KILN_TAPS build's kiln-generate and its pack.
struct TappedBuild {
  std::string generate, pack, dir;
};

/// `options`' model compiled into `dir` (what its pack holds into `packOut`)
/// and built there with taps.
static FailureOr<TappedBuild> tappedBuild(const CompileOptions &options, StringRef dir,
                                          llvm::raw_ostream &errs,
                                          PackInfo *packOut = nullptr) {
  std::string name;
  if (failed(compileOne(options, llvm::nulls(), errs, &name, packOut)))
    return failure();
  llvm::SmallString<128> pack(dir), build(dir);
  llvm::sys::path::append(pack, name + ".kpack");
  llvm::sys::path::append(build, "build-taps");
  llvm::Expected<std::string> generate = buildWithTaps(dir, build);
  if (!generate) {
    (void)report(errs, options.input, llvm::toString(generate.takeError()));
    return failure();
  }
  return TappedBuild{*generate, pack.str().str(), dir.str()};
}

/// The model as stored (no quantization), for this host, into `dir`/float,
/// with a KV cache for chunks of `ctx`.
static FailureOr<TappedBuild> floatBuild(const CompileOptions &options, StringRef dir,
                                         int64_t ctx, llvm::raw_ostream &errs) {
  CompileOptions f;
  f.input = options.input;
  llvm::SmallString<128> out(dir);
  llvm::sys::path::append(out, "float");
  f.outputDir = out.str().str();
  f.target = "host";
  f.jobs = options.jobs;
  f.import.maxContext = ctx;
  // A norm fused into a quantized matmul leaves no f32 input to tap.
  f.fuse = "residual,swiglu,qkv";
  return tappedBuild(f, out, errs);
}

/// --memory-budget with --calibration: the loss of a tensor in a format,
/// measured. The model is built once for this host with every weight in f32;
/// a copy of its pack gets the tensor's values as the format encodes them
/// (importance-weighted, as the compile will) in f32, the pack's hash left as
/// it was so the build still opens it, and the mean KL divergence of its
/// logits from the float pack's over two chunks of the text is the loss.
class Sensitivity {
public:
  static FailureOr<std::unique_ptr<Sensitivity>>
  create(const CompileOptions &options, const gguf::File &file, const Imatrix *imatrix,
         llvm::raw_ostream &errs) {
    auto s = std::make_unique<Sensitivity>();
    FailureOr<Calibration> text =
        checkText(options, file, options.calibration, 256, "calibration", errs);
    if (failed(text))
      return failure();
    s->text = *text;
    s->text.ctx = std::min<int64_t>(s->text.ctx, 256);
    s->text.chunks = 2;
    s->imatrix = imatrix;
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("kiln-sensitivity", s->dir))
      return (void)report(errs, "kiln-sensitivity", ec.message()), failure();
    CompileOptions f;
    f.input = options.input;
    f.outputDir = s->dir.str().str();
    f.target = "host";
    f.quant = "f32";
    f.pureQuant = true;
    f.jobs = options.jobs;
    f.import.maxContext = s->text.ctx;
    FailureOr<TappedBuild> build = tappedBuild(f, s->dir, errs, &s->pack);
    if (failed(build))
      return failure();
    s->generate = build->generate;
    llvm::SmallString<128> base(s->dir);
    llvm::sys::path::append(base, "float.logits");
    s->base = base.str().str();
    if (llvm::Error e =
            runWithTaps(s->generate, build->pack, s->text, {"--dump-logits", s->base}, s->dir))
      return (void)report(errs, options.input, llvm::toString(std::move(e))), failure();
    // One copy of the pack and one run at a time per core.
    unsigned workers = std::max(1u, llvm::hardware_concurrency().compute_thread_count());
    for (unsigned w = 0; w < workers; ++w) {
      llvm::SmallString<128> workDir(s->dir), copy;
      llvm::sys::path::append(workDir, "worker" + std::to_string(w));
      copy = workDir;
      llvm::sys::path::append(copy, "variant.kpack");
      if (std::error_code ec = llvm::sys::fs::create_directories(workDir))
        return (void)report(errs, workDir, ec.message()), failure();
      if (std::error_code ec = llvm::sys::fs::copy_file(build->pack, copy))
        return (void)report(errs, copy, ec.message()), failure();
      s->workers.push_back({workDir.str().str(), copy.str().str()});
    }
    return s;
  }

  ~Sensitivity() {
    if (!dir.empty())
      llvm::sys::fs::remove_directories(dir);
  }

  /// The losses of `values` (tensor t) in each of `formats`, t alone changed:
  /// one format per worker at a time.
  llvm::Expected<std::vector<double>> measure(const BudgetTensor &t,
                                              const std::vector<quant::FormatSpec> &formats,
                                              const std::vector<float> &values) {
    std::vector<std::optional<llvm::Expected<double>>> losses(formats.size());
    auto work = [&](size_t w) {
      for (size_t f = w; f < formats.size(); f += workers.size()) {
        llvm::Error e = patch(workers[w], t.name, storedAs(t, formats[f], values));
        losses[f].emplace(e ? llvm::Expected<double>(std::move(e)) : run(workers[w]));
      }
      llvm::consumeError(patch(workers[w], t.name, values));
    };
    std::vector<std::thread> pool;
    for (size_t w = 1; w < workers.size(); ++w)
      pool.emplace_back(work, w);
    work(0);
    for (std::thread &th : pool)
      th.join();
    std::vector<double> out;
    for (std::optional<llvm::Expected<double>> &loss : losses) {
      if (!*loss)
        return loss->takeError();
      out.push_back(**loss);
    }
    return out;
  }

  /// The loss of every tensor in its chosen format at once ("name=format,...").
  llvm::Expected<double> measureAll(const gguf::File &file, StringRef chosen) {
    llvm::SmallVector<StringRef> items;
    chosen.split(items, ',', -1, false);
    for (StringRef item : items) {
      auto [name, formatName] = item.split('=');
      quant::FormatSpec format;
      const gguf::TensorInfo *info = file.findTensor(name);
      if (!info || !quant::parseFormat(formatName.str(), format))
        continue;
      size_t n = info->numElements();
      std::vector<float> values(n);
      quant::dequantize(formatOfGgmlType(info->type), file.tensorBytes(*info).data(), n,
                        values.data());
      BudgetTensor t{name.str(), 0, int64_t(info->ne[0])};
      if (llvm::Error e = patch(workers[0], t.name, storedAs(t, format, values)))
        return std::move(e);
    }
    return run(workers[0]);
  }

  const Calibration &textRun() const { return text; }

private:
  std::vector<float> storedAs(const BudgetTensor &t, const quant::FormatSpec &format,
                              const std::vector<float> &values) const {
    const std::vector<float> *columns = imatrix ? imatrix->find(t.name) : nullptr;
    const std::vector<float> *moments = imatrix ? imatrix->findMoments(t.name) : nullptr;
    std::vector<uint8_t> bytes(quant::rowBytes(format, values.size()));
    const size_t cols = size_t(t.cols);
    quant::WeightEncoder(format, cols, columns ? columns->data() : nullptr,
                         moments ? moments->data() : nullptr, &factors)
        .encode(values.data(), values.size() / cols, bytes.data());
    std::vector<float> stored(values.size());
    quant::dequantize(format, bytes.data(), values.size(), stored.data());
    return stored;
  }

  /// A folder of its own with a copy of the float pack.
  struct Worker {
    std::string dir, variant;
  };

  /// The tensor's f32 rows in a worker's pack, in panels as its kernels read.
  llvm::Error patch(const Worker &worker, StringRef name, const std::vector<float> &values) {
    auto it = llvm::find_if(pack.tensors, [&](const TensorReport &r) { return r.name == name; });
    const int32_t cols = it == pack.tensors.end() ? 0 : int32_t(it->cols);
    const int32_t rows = cols ? int32_t(values.size() / size_t(cols)) : 0;
    const size_t bytes = it == pack.tensors.end() ? 0
                         : it->panelRows ? kiln_uk_panel_bytes(KILN_UK_F32, rows, cols, 1,
                                                               int32_t(it->panelRows))
                                         : values.size() * 4;
    if (it == pack.tensors.end() || it->format != "f32" || it->bytes != bytes)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "internal error: no f32 segment of " + name +
                                         " in the sensitivity pack");
    std::vector<uint8_t> panels;
    const char *data = reinterpret_cast<const char *>(values.data());
    if (it->panelRows) {
      panels.resize(bytes);
      kiln_uk_pack_panels(KILN_UK_F32, reinterpret_cast<const uint8_t *>(values.data()),
                          panels.data(), rows, cols, 1, int32_t(it->panelRows));
      data = reinterpret_cast<const char *>(panels.data());
    }
    std::error_code ec;
    llvm::raw_fd_ostream os(worker.variant, ec, llvm::sys::fs::CD_OpenExisting,
                            llvm::sys::fs::FA_Write, llvm::sys::fs::OF_None);
    if (ec)
      return llvm::createStringError(ec, worker.variant + ": " + ec.message());
    os.seek(pack.dataOffset + it->offset);
    os.write(data, bytes);
    return llvm::Error::success();
  }

  llvm::Expected<double> run(const Worker &worker) const {
    if (llvm::Error e =
            runWithTaps(generate, worker.variant, text, {"--kl-base", base}, worker.dir))
      return std::move(e);
    llvm::SmallString<128> log(worker.dir);
    llvm::sys::path::append(log, "run.log");
    auto buffer = llvm::MemoryBuffer::getFile(log);
    StringRef out = buffer ? (*buffer)->getBuffer() : "";
    StringRef rest = out.split("mean KL divergence from ").second.split(": ").second;
    double kld;
    if (rest.split(' ').first.getAsDouble(kld))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "no KL divergence in " + log);
    return kld;
  }

  llvm::SmallString<128> dir;
  Calibration text;
  PackInfo pack;
  std::string generate, base;
  std::vector<Worker> workers;
  const Imatrix *imatrix = nullptr; // the compile's, which outlives this
  mutable quant::FactorCache factors; // of its moments, shared by every format
};

/// --calibration: the model as stored runs over the text in its own
/// generated code in a new folder `dir`; `imatrixPath` gets the second
/// moments it wrote (--moments-out, or a file in `dir`), which hold the
/// importance too; --imatrix-out gets llama.cpp's form of that.
static LogicalResult calibrate(const CompileOptions &options, const gguf::File &file,
                               llvm::raw_ostream &errs, llvm::SmallString<128> &dir,
                               std::string &imatrixPath) {
  FailureOr<Calibration> text =
      checkText(options, file, options.calibration, 512, "calibration", errs);
  if (failed(text))
    return failure();
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("kiln-calibration", dir))
    return report(errs, "kiln-calibration", ec.message());
  FailureOr<TappedBuild> build = floatBuild(options, dir, text->ctx, errs);
  if (failed(build))
    return failure();
  llvm::SmallString<128> written(dir);
  llvm::sys::path::append(written, "moments.bin");
  imatrixPath = options.momentsOut.empty() ? written.str().str() : options.momentsOut;
  std::vector<std::string> outputs = {"--moments-out", imatrixPath};
  if (!options.imatrixOut.empty())
    outputs.insert(outputs.end(), {"--imatrix-out", options.imatrixOut});
  if (llvm::Error e = runWithTaps(build->generate, build->pack, *text, outputs, build->dir))
    return report(errs, options.input,
                  llvm::toString(std::move(e)) + " (its files are in " + dir.str() + ")");
  return success();
}

/// --compare: the model as stored and as compiled (the folder just written,
/// built with taps) run one text; every op's error goes into `json` and a
/// summary to `out`. Then, in the first layer past the threshold (else the
/// layer whose output error is largest), each converted weight is compiled
/// in f32 alone to see how much of the logits' error it makes.
static LogicalResult compare(const CompileOptions &options, const gguf::File &file,
                             const PackInfo &pack, StringRef name, StringRef quantOverrides,
                             StringRef imatrixPath, llvm::json::Object &json,
                             llvm::raw_ostream &out, llvm::raw_ostream &errs) {
  FailureOr<Calibration> text = checkText(options, file, options.compare, 256, "compare", errs);
  if (failed(text))
    return failure();
  if (text->chunks == 0)
    text->chunks = 1;
  llvm::SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::create_directories(options.reportDir))
    return report(errs, options.reportDir, ec.message());
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("kiln-compare", dir))
    return report(errs, "kiln-compare", ec.message());
  auto keptIn = [&](llvm::Error e) {
    return report(errs, options.input,
                  llvm::toString(std::move(e)) + " (its files are in " + dir.str() + ")");
  };
  auto tapsFile = [&](StringRef base) {
    llvm::SmallString<128> path(options.reportDir);
    llvm::sys::path::append(path, base);
    return path.str().str();
  };
  // The float run into the report folder beside the compiled model's.
  std::string floatTaps = tapsFile("taps-float.bin"), quantTaps = tapsFile("taps-compiled.bin");
  FailureOr<TappedBuild> reference = floatBuild(options, dir, text->ctx, errs);
  if (failed(reference))
    return failure();
  if (llvm::Error e = runWithTaps(reference->generate, reference->pack, *text,
                                  {"--taps-out", floatTaps}, reference->dir))
    return keptIn(std::move(e));
  llvm::SmallString<128> compiledDir(dir), compiledPack(options.outputDir);
  llvm::sys::path::append(compiledDir, "compiled");
  llvm::sys::path::append(compiledPack, name + ".kpack");
  llvm::SmallString<128> compiledBuild(compiledDir);
  llvm::sys::path::append(compiledBuild, "build-taps");
  llvm::sys::fs::create_directories(compiledDir);
  llvm::Expected<std::string> generate = buildWithTaps(options.outputDir, compiledBuild);
  if (!generate)
    return keptIn(generate.takeError());
  if (llvm::Error e = runWithTaps(*generate, compiledPack, *text, {"--taps-out", quantTaps},
                                  compiledDir))
    return keptIn(std::move(e));
  llvm::Expected<std::vector<OpError>> ops = compareTaps(floatTaps, quantTaps);
  if (!ops)
    return keptIn(ops.takeError());
  const double threshold = options.compareThreshold;
  json = compareJson(*ops, threshold);
  json["text"] = text->text;
  json["ctx"] = text->ctx;
  json["chunks"] = text->chunks;

  // The suspect layer and its converted weights, each in f32 alone.
  int64_t suspect = firstDivergingLayer(*ops, threshold);
  if (suspect < 0) {
    double worst = -1;
    for (const OpError &e : *ops)
      if (e.layer >= 0 && e.relativeError() > worst)
        worst = e.relativeError(), suspect = e.layer;
  }
  std::string prefix = llvm::formatv("blk.{0}.", suspect).str();
  llvm::json::Array weights;
  std::string most;
  double mostError = INFINITY;
  for (const TensorReport &t : pack.tensors) {
    if (!t.converted || !StringRef(t.name).starts_with(prefix))
      continue;
    CompileOptions alone = options;
    llvm::SmallString<128> aloneDir(dir);
    llvm::sys::path::append(aloneDir, t.name);
    alone.outputDir = aloneDir.str().str();
    alone.quant = options.memoryBudget > 0 ? "" : options.quant;
    alone.quantOverrides = (quantOverrides.empty() ? "" : quantOverrides.str() + ",") + t.name +
                           "=f32";
    alone.memoryBudget = 0;
    alone.report = false;
    alone.reportDir.clear();
    alone.device.clear();
    alone.compare = {};
    alone.calibration = {};
    alone.imatrix = imatrixPath.str(); // the matrix the compiled model was made with
    alone.imatrixOut.clear();
    alone.momentsOut.clear();
    FailureOr<TappedBuild> build = tappedBuild(alone, aloneDir, errs);
    if (failed(build))
      return failure();
    llvm::SmallString<128> taps(aloneDir);
    llvm::sys::path::append(taps, "taps.bin");
    if (llvm::Error e = runWithTaps(build->generate, build->pack, *text,
                                    {"--taps-out", taps.str().str()}, build->dir))
      return keptIn(std::move(e));
    llvm::Expected<std::vector<OpError>> without = compareTaps(floatTaps, taps);
    if (!without)
      return keptIn(without.takeError());
    double error = finalError(*without);
    weights.push_back(llvm::json::Object{{"name", t.name}, {"format", t.format},
                                         {"logits_rel_error_in_f32", error}});
    if (error < mostError)
      mostError = error, most = t.name;
  }
  json["suspect_layer"] = suspect;
  json["weights_in_f32"] = std::move(weights);
  json["most_contributing"] = most.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(most);
  int64_t first = firstDivergingLayer(*ops, threshold);
  out << llvm::formatv("compare: logits relative error {0:e3}; first layer past {1}: {2}",
                       finalError(*ops), threshold,
                       first < 0 ? std::string("none") : std::to_string(first));
  if (!most.empty())
    out << llvm::formatv("; in layer {0}, {1} contributes most (logits error {2:e3} with it "
                         "in f32)",
                         suspect, most, mostError);
  out << "\n";
  llvm::sys::fs::remove_directories(dir);
  return success();
}

/// One model to the requested phase; `nameOut` gets its C name, `packOut`
/// what its pack holds.
static LogicalResult compileOne(const CompileOptions &options, llvm::raw_ostream &out,
                                llvm::raw_ostream &errs, std::string *nameOut,
                                PackInfo *packOut) {
  auto started = std::chrono::steady_clock::now();
  // The device first: a wrong name fails before the long work.
  std::optional<Device> device;
  if (!options.device.empty()) {
    llvm::Expected<Device> d = findDevice(options.device);
    if (!d) {
      errs << "kiln-compile: error: " << llvm::toString(d.takeError()) << "\n";
      return failure();
    }
    device = *d;
  }
  // Mapped, not read: weights stay in the page cache until the pack is written.
  auto buffer = llvm::MemoryBuffer::getFile(options.input, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return report(errs, options.input, buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  llvm::Expected<gguf::File> file = gguf::parse(
      llvm::ArrayRef(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
  if (!file)
    return report(errs, options.input, llvm::toString(file.takeError()));
  file->mapped = (*buffer)->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap;
  if (llvm::Error e = splitFusedTensors(*file))
    return report(errs, options.input, llvm::toString(std::move(e)));
  if (!options.compare.text.empty() && options.reportDir.empty())
    return report(errs, options.input, "--compare writes its figures into --report=DIR");
  // The importance matrix before the long work: one of another model fails here.
  std::string imatrixPath = options.imatrix;
  llvm::SmallString<128> calibrationDir;
  auto removeCalibration = llvm::make_scope_exit([&] {
    if (!calibrationDir.empty())
      llvm::sys::fs::remove_directories(calibrationDir);
  });
  if (!options.calibration.text.empty()) {
    if (!options.imatrix.empty())
      return report(errs, options.input, "--calibration computes the importance matrix "
                                         "--imatrix gives: use one");
    if (failed(calibrate(options, *file, errs, calibrationDir, imatrixPath)))
      return failure();
  } else if (!options.imatrixOut.empty() || !options.momentsOut.empty()) {
    return report(errs, options.input,
                  "--imatrix-out and --moments-out write what --calibration computes");
  }
  std::optional<Imatrix> imatrix;
  if (!imatrixPath.empty()) {
    llvm::Expected<Imatrix> read = readImatrix(imatrixPath);
    if (!read)
      return report(errs, options.input, llvm::toString(read.takeError()));
    if (llvm::Error e = checkImatrix(*read, *file, imatrixPath))
      return report(errs, options.input, llvm::toString(std::move(e)));
    imatrix = std::move(*read);
  }

  MLIRContext context;
  auto module = importLlama(context, *file, options.input, options.import);
  if (!module)
    return report(errs, options.input, llvm::toString(module.takeError()));

  const TargetDescription *target = lookupTarget(options.target);
  if (!target)
    return report(errs, options.target,
                  "unknown target (available: " + llvm::join(targetNames(), ", ") + ")");

  const Board *board = nullptr;
  if (!options.board.empty()) {
    board = lookupBoard(options.board);
    if (!board)
      return report(errs, options.board,
                    "unknown board (available: " + llvm::join(boardNames(), ", ") + ")");
    if (target->name() != "c99" && !llvm::is_contained(board->variants, target->name()))
      return report(errs, options.input,
                    llvm::formatv("--target={0} does not run on board {1} (its targets: c99, {2})",
                                  target->name(), board->name,
                                  llvm::join(board->variants, ", ")));
    if (!options.embedWeights)
      return report(errs, options.input,
                    "--board places the weights in the board's memory: add --weights=embed");
    if (options.threads != 1)
      return report(errs, options.input, "--board: a microcontroller runs one thread (--threads=1)");
  }
  if (options.threads < 1 || options.threads > kMaxThreads)
    return report(errs, options.input,
                  llvm::formatv("--threads={0}: expected 1 to {1}", options.threads, kMaxThreads));

  QuantizeOptions quantize;
  struct {
    double predicted = 0;
    std::optional<double> measured;
  } budgetLoss; // of --memory-budget's choice, for report.json
  QuantPolicy policy = quantPolicy(*file, options.quant, options.pureQuant);
  quantize.weights = policy.weights;
  quantize.overrides = policy.overrides;
  if (!options.quantOverrides.empty())
    quantize.overrides += (quantize.overrides.empty() ? "" : ",") + options.quantOverrides;
  quantize.kv = options.kvType;
  if (options.memoryBudget > 0) {
    if (!options.quant.empty() || !options.quantOverrides.empty())
      return report(errs, options.input,
                    "--memory-budget chooses the weight formats: drop --quant and "
                    "--quant-override");
    // With a calibration text the losses are measured, not estimated.
    std::unique_ptr<Sensitivity> sensitivity;
    MeasureLoss measure = [&](const BudgetTensor &t, const std::vector<quant::FormatSpec> &f,
                              const std::vector<float> &values) {
      return sensitivity->measure(t, f, values);
    };
    if (!options.calibration.text.empty()) {
      FailureOr<std::unique_ptr<Sensitivity>> made =
          Sensitivity::create(options, *file, imatrix ? &*imatrix : nullptr, errs);
      if (failed(made))
        return failure();
      sensitivity = std::move(*made);
    }
    llvm::Expected<std::string> chosen =
        fitMemoryBudget(**module, *file, options.memoryBudget, options.kvType,
                        target->isaVariant().kernel, options.fuse, out,
                        sensitivity ? &measure : nullptr, budgetLoss.predicted);
    if (!chosen)
      return report(errs, options.input,
                    llvm::toString(chosen.takeError()) +
                        (options.kvType != "q8" && options.kvType != "q4"
                             ? "; --kv-type=q8 or q4 shrinks the KV cache"
                             : ""));
    quantize.overrides = *chosen;
    if (sensitivity) {
      llvm::Expected<double> measured = sensitivity->measureAll(*file, *chosen);
      if (!measured)
        return report(errs, options.input, llvm::toString(measured.takeError()));
      budgetLoss.measured = *measured;
      out << llvm::formatv("  measured loss {0:e3} (mean KLD of every choice at once, {1} "
                           "chunks of {2} tokens of {3})\n",
                           *measured, sensitivity->textRun().chunks,
                           sensitivity->textRun().ctx, sensitivity->textRun().text);
    }
  }
  PassManager pm(&context);
  buildGraphPipeline(pm, quantize, options.fuse);
  if (options.emit != EmitPhase::Mlir)
    buildKernelPipeline(pm, kernelTarget(*target, options), options.tile, options.threads);
  // A pass's errors (a bad --quant, --kv-type or --quant-override among them)
  // are reported as the compiler's own, one line each.
  CollectedErrors passErrors(context);
  if (failed(pm.run(**module)))
    return passErrors.report(errs, options.input, "compilation pipeline failed");

  std::string name = (*module)->getSymName()->str();
  if (nameOut)
    *nameOut = name;
  if (options.emit != EmitPhase::C)
    return writeIr(**module, options.outputDir, out, errs);

  if (options.outputDir.empty())
    return report(errs, options.input, "--emit=c needs an output directory (-o DIR)");
  if (std::error_code ec = llvm::sys::fs::create_directories(options.outputDir))
    return report(errs, options.outputDir, ec.message());
  llvm::Expected<Vocabulary> vocab = readVocabulary(*file);
  if (!vocab)
    return report(errs, options.input, llvm::toString(vocab.takeError()));
  // The runtime splits byte-BPE text with the model's own pre-tokenizer:
  // another split would give other ids than the model was trained on.
  if (vocab->model == "gpt2" && preTokenizerCode(vocab->preTokenizer) < 0)
    return report(errs, options.input,
                  "unsupported pre-tokenizer '" + vocab->preTokenizer +
                      "' (tokenizer.ggml.pre; supported: " + preTokenizerNames() + ")");
  if (!vocab->chatTemplate.empty() && chatTemplateCode(vocab->chatTemplate) == 0)
    errs << "kiln-compile: warning: " << options.input
         << ": chat template not recognized (tokenizer.chat_template begins '"
         << llvm::StringRef(vocab->chatTemplate).take_until([](char c) { return c == '\n'; }).take_front(60)
         << "'; known: llama3, chatml, gemma, phi3): kiln-generate --chat will refuse it\n";
  llvm::SmallString<256> packPath(options.outputDir);
  llvm::sys::path::append(packPath, name + ".kpack");
  llvm::Expected<PackInfo> pack = writePack(**module, *file, *vocab, packPath, options.jobs,
                                              imatrix ? &*imatrix : nullptr,
                                              options.activationScales);
  if (!pack)
    return report(errs, options.input, llvm::toString(pack.takeError()));
  if (packOut)
    *packOut = *pack;
  setPackAttr(**module, PackAttr::get(&context, pack->modelHash, pack->dataOffset,
                                      pack->dataSize, pack->fileSize, pack->vocabOffset,
                                      pack->vocabBytes));
  std::optional<PackChecksums> checksums;
  if (!options.packChecksum.empty()) {
    if (options.packChecksum != "first-use" && options.packChecksum != "open")
      return report(errs, options.input,
                    "--pack-checksum=" + options.packChecksum + ": expected first-use or open");
    auto written = llvm::MemoryBuffer::getFile(packPath, /*IsText=*/false,
                                               /*RequiresNullTerminator=*/false);
    if (!written)
      return report(errs, packPath, written.getError().message());
    const uint8_t *data =
        reinterpret_cast<const uint8_t *>((*written)->getBufferStart()) + pack->dataOffset;
    bool mapped = (*written)->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap;
    checksums.emplace();
    checksums->onOpen = options.packChecksum == "open";
    for (auto [offset, bytes] : layerByteRanges(**module)) {
      checksums->sums.push_back(kiln_checksum(data + offset, bytes));
      if (mapped)
        gguf::releaseMappedPages(llvm::ArrayRef(data + offset, bytes));
    }
  }
  FailureOr<std::vector<GeneratedFile>> sources =
      translateToC(**module, *target, options.embedWeights, checksums ? &*checksums : nullptr);
  if (board && succeeded(sources)) {
    if (llvm::Error e = checkBoardFit(*board, pack->fileSize,
                                      getArenaBytesAttr(**module).getInt()))
      return report(errs, options.input, llvm::toString(std::move(e)));
  }
  Operation *where = **module;
  if (failed(sources) ||
      failed(writeGeneratedFiles(where, options.outputDir, *sources)) ||
      failed(writeGeneratedFiles(where, options.outputDir, librarySources())) ||
      (options.embedWeights && failed(writeEmbeddedWeights(where, options.outputDir, name))))
    return report(errs, options.input, "code generation failed");
  if (options.report) {
    printReport(**module, *pack, *vocab, out);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    out << llvm::formatv("compile: {0:f1} s, peak memory {1} MB\n", seconds,
                         peakResidentBytes() >> 20);
  }
  if (!options.reportDir.empty() || device) {
    CodeMeasure code;
    if (!options.reportDir.empty())
      code = measureCode(options.outputDir, name, target->isaVariant().compileOptions,
                         options.import.sessions > 0);
    llvm::json::Value json = reportJson(**module, *pack, name, options.target,
                                        device ? &*device : nullptr,
                                        options.reportDir.empty() ? nullptr : &code);
    if (options.memoryBudget > 0) {
      llvm::json::Object b{{"bytes", options.memoryBudget},
                           {"loss", options.calibration.text.empty()
                                        ? "relative squared error x elements"
                                        : "mean KL divergence from the float model"},
                           {"predicted_loss", budgetLoss.predicted}};
      if (budgetLoss.measured)
        b["measured_loss"] = *budgetLoss.measured;
      json.getAsObject()->try_emplace("budget", std::move(b));
    }
    if (!options.compare.text.empty()) {
      llvm::json::Object figures;
      if (failed(compare(options, *file, *pack, name, quantize.overrides, imatrixPath, figures,
                         out, errs)))
        return failure();
      json.getAsObject()->try_emplace("compare", std::move(figures));
    }
    if (device)
      out << predictionLine(json, device->name) << "\n";
    if (!options.reportDir.empty())
      if (llvm::Error e = writeReport(json, options.reportDir))
        return report(errs, options.reportDir, llvm::toString(std::move(e)));
  }
  if (options.memoryBudget > 0) {
    int64_t total = pack->fileSize +
                    getArenaBytesAttr(**module).getInt();
    out << llvm::formatv("memory budget {0} bytes: pack + arena = {1} bytes\n",
                         options.memoryBudget, total);
    if (total > options.memoryBudget)
      return report(errs, options.input,
                    llvm::formatv("internal error: the result ({0} bytes) exceeds the "
                                  "memory budget",
                                  total));
  }
  return success();
}

/// The vocabulary of a GGUF file, for comparing a draft's with its target's.
static llvm::Expected<Vocabulary> fileVocabulary(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "%s", buffer.getError().message().c_str());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  llvm::Expected<gguf::File> file = gguf::parse(
      llvm::ArrayRef(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
  if (!file)
    return file.takeError();
  return readVocabulary(*file);
}

/// Why a draft cannot draft for its target: another tokenizer or vocabulary.
static std::string vocabularyDifference(const Vocabulary &target, const Vocabulary &draft) {
  if (draft.model != target.model)
    return "its tokenizer is " + draft.model + ", the target's " + target.model;
  if (draft.tokens.size() != target.tokens.size())
    return llvm::formatv("its vocabulary has {0} tokens, the target's {1}", draft.tokens.size(),
                         target.tokens.size());
  for (size_t i = 0; i < draft.tokens.size(); ++i)
    if (draft.tokens[i] != target.tokens[i] || draft.types[i] != target.types[i])
      return llvm::formatv("token {0} differs from the target's", i);
  if (draft.merges != target.merges || draft.bos != target.bos || draft.eos != target.eos)
    return "its merges or special tokens differ from the target's";
  return "";
}

/// An ONNX graph: read with static shapes, imported into graph-level IR, then
/// as a decoder: kernel IR (packed weights, planned arena), a pack of its
/// initializers and C with `<name>_run`, built with kiln-run.
static LogicalResult compileOnnx(const CompileOptions &options, llvm::raw_ostream &out,
                                 llvm::raw_ostream &errs) {
  if (!options.board.empty())
    return report(errs, options.input, "--board is for GGUF models");
  const TargetDescription *target = lookupTarget(options.target);
  if (!target)
    return report(errs, options.target,
                  "unknown target (available: " + llvm::join(targetNames(), ", ") + ")");
  if (options.emit == EmitPhase::C && options.outputDir.empty())
    return report(errs, options.input, "--emit=c needs an output directory (-o DIR)");
  onnx::InputShapes shapes;
  std::string error;
  for (const std::string &s : options.inputShapes)
    if (!onnx::parseInputShape(s, shapes, error))
      return report(errs, options.input, error);
  onnx::Graph graph;
  if (!onnx::readGraph(options.input, shapes, graph, error)) {
    errs << "kiln-compile: error: " << error << "\n";
    return failure();
  }
  MLIRContext context;
  auto module = importOnnx(context, graph,
                           options.import.name.empty() ? toIdentifier(llvm::sys::path::stem(options.input))
                                                       : options.import.name);
  if (!module) {
    errs << "kiln-compile: error: " << llvm::toString(module.takeError()) << "\n";
    return failure();
  }
  PassManager pm(&context);
  QuantizeOptions quantize;
  quantize.weights = options.quant;
  quantize.overrides = options.quantOverrides;
  buildOnnxGraphPipeline(pm, quantize);
  if (options.emit != EmitPhase::Mlir)
    buildKernelPipeline(pm, kernelTarget(*target, options), options.tile, options.threads);
  CollectedErrors errors(context);
  if (failed(pm.run(**module)))
    return errors.report(errs, options.input, "the graph passes failed");
  if (options.emit != EmitPhase::C)
    return writeIr(**module, options.outputDir, out, errs);

  if (std::error_code ec = llvm::sys::fs::create_directories(options.outputDir))
    return report(errs, options.outputDir, ec.message());
  std::string name = (*module)->getSymName()->str();
  std::vector<uint8_t> storage;
  llvm::Expected<gguf::File> tensors = graphTensors(**module, graph, storage);
  if (!tensors)
    return report(errs, options.input, llvm::toString(tensors.takeError()));
  llvm::SmallString<256> packPath(options.outputDir);
  llvm::sys::path::append(packPath, name + ".kpack");
  llvm::Expected<PackInfo> pack = writePack(**module, *tensors, Vocabulary(), packPath, options.jobs);
  if (!pack)
    return report(errs, options.input, llvm::toString(pack.takeError()));
  setPackAttr(**module, PackAttr::get(&context, pack->modelHash, pack->dataOffset, pack->dataSize,
                                      pack->fileSize, 0, 0));
  FailureOr<std::vector<GeneratedFile>> sources =
      translateGraphToC(**module, *target, options.embedWeights);
  Operation *where = **module;
  if (failed(sources) || failed(writeGeneratedFiles(where, options.outputDir, *sources)) ||
      failed(writeGeneratedFiles(where, options.outputDir, librarySources())) ||
      (options.embedWeights && failed(writeEmbeddedWeights(where, options.outputDir, name))))
    return errors.report(errs, options.input, "code generation failed");
  if (options.report)
    out << llvm::formatv("graph {0}: arena {1} bytes, pack {2} bytes ({3} tensors)\n", name,
                         getArenaBytesAttr(**module).getInt(), pack->fileSize,
                         pack->tensors.size());
  return success();
}

LogicalResult kiln::compile(const CompileOptions &options, llvm::raw_ostream &out,
                            llvm::raw_ostream &errs) {
  if (llvm::StringRef(options.input).ends_with_insensitive(".onnx"))
    return compileOnnx(options, out, errs);
  if (!options.inputShapes.empty())
    return report(errs, options.input, "--input-shape names inputs of an ONNX graph (a .onnx file)");
  if (options.draft.empty())
    return compileOne(options, out, errs, nullptr);
  if (options.emit != EmitPhase::C || options.outputDir.empty())
    return report(errs, options.draft, "--draft compiles into an output folder (-o DIR, --emit=c)");
  llvm::Expected<Vocabulary> target = fileVocabulary(options.input);
  if (!target)
    return report(errs, options.input, llvm::toString(target.takeError()));
  llvm::Expected<Vocabulary> draft = fileVocabulary(options.draft);
  if (!draft)
    return report(errs, options.draft, llvm::toString(draft.takeError()));
  std::string why = vocabularyDifference(*target, *draft);
  if (!why.empty())
    return report(errs, options.draft, "cannot draft for " + options.input + ": " + why);

  std::string name;
  if (failed(compileOne(options, out, errs, &name)))
    return failure();
  // The draft writes a CMakeLists.txt of its own: keep the target's, then
  // add the draft's library to it.
  llvm::SmallString<256> lists(options.outputDir);
  llvm::sys::path::append(lists, "CMakeLists.txt");
  auto targetLists = llvm::MemoryBuffer::getFile(lists);
  if (!targetLists)
    return report(errs, lists, targetLists.getError().message());
  std::string text = (*targetLists)->getBuffer().str();
  CompileOptions d = options;
  d.input = options.draft;
  d.draft.clear();
  d.quant = options.draftQuant;
  d.quantOverrides.clear();
  d.imatrix.clear(); // the target's columns, not the draft's
  d.calibration = {};
  d.imatrixOut.clear();
  d.momentsOut.clear();
  d.compare = {};
  d.report = false;
  d.reportDir.clear();
  d.device.clear();
  d.memoryBudget = 0;
  d.import.name = name + "_draft";
  d.import.layers = options.draftLayers;
  if (failed(compileOne(d, out, errs, nullptr)))
    return failure();
  text += draftCMakeLists(*lookupTarget(options.target), name, d.import.name);
  return writeFile(lists, errs, [&](llvm::raw_ostream &os) { os << text; });
}
