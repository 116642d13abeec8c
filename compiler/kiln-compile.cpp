// kiln-compile: a model file in, static C (or an earlier phase) out.
#include "codegen_targets/Target.h"
#include "compiler/Compile.h"
#include "dialects/Kiln/IR/KilnDialect.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

using namespace llvm;

static cl::OptionCategory category("kiln-compile options");

static cl::opt<std::string> input(cl::Positional, cl::desc("<model.gguf | model.onnx>"), cl::Required,
                                  cl::cat(category));
static cl::opt<std::string> outputDir("o", cl::desc("Output directory"),
                                      cl::value_desc("dir"), cl::cat(category));
static cl::opt<kiln::EmitPhase> emit(
    "emit", cl::desc("Phase to stop after"), cl::init(kiln::EmitPhase::C),
    cl::values(clEnumValN(kiln::EmitPhase::Mlir, "mlir", "graph-level kiln IR"),
               clEnumValN(kiln::EmitPhase::KernelIr, "kernel-ir",
                          "kernel-level IR: arena slots and weight segments"),
               clEnumValN(kiln::EmitPhase::C, "c",
                          "C sources, pack and CMakeLists.txt in the -o directory")),
    cl::cat(category));
enum class Weights { Pack, Embed };
static cl::opt<Weights> weights(
    "weights", cl::desc("Where the generated code finds its weights"),
    cl::init(Weights::Pack),
    cl::values(clEnumValN(Weights::Pack, "pack", "a .kpack file, mapped or loaded at run time"),
               clEnumValN(Weights::Embed, "embed",
                          "also a const array in <name>_weights.c, for flash/XIP")),
    cl::cat(category));
// The formats are the rows of the format table (kernels/kiln_uk_abi.h).
static const std::string quantHelp =
    "Format of every 2-D f32/f16 weight: " + kiln::weightFormatNames() +
    "; or the mixes q3_k_m / q4_k_m / q5_k_m; default: as in the model. As "
    "llama-quantize does, formats below 6 bits keep the output head (output.weight, "
    "or a tied token_embd.weight) at q6_k (q8_0 if its rows are not whole blocks of "
    "256); q4_k_m / q5_k_m also give attn_v and ffn_down q6_k in the first and last "
    "eighth of the layers and every third between, q3_k_m gives attn_v q5_k (first two "
    "layers) or q4_k, ffn_down and attn_output q4_k; a k-quant falls back to q5_0 / q5_1 / "
    "q8_0 / iq4_nl for rows that are not whole blocks of 256. --quant-override wins "
    "over these rules; --pure drops them";
static cl::opt<std::string> quant("quant", cl::desc(quantHelp), cl::cat(category));
static cl::opt<bool> pureQuant("pure",
                               cl::desc("--quant applies to every 2-D weight, output head "
                                        "included (no default rules)"),
                               cl::cat(category));
static cl::opt<std::string> imatrix(
    "imatrix",
    cl::desc("An importance matrix (llama.cpp's .dat or GGUF form, or Kiln's): the "
             "quantizers choose scales by the error weighted with each column's "
             "importance; or Kiln's second moments (--moments-out), with which every "
             "block format is also encoded with error feedback (GPTQ)"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> calibration(
    "calibration",
    cl::desc("A text to calibrate the quantizers on: the model as stored runs over it "
             "in its own generated host code (built with taps; needs cmake and a C "
             "compiler) and every matmul's input gives its columns' importance and its "
             "second moments (as --imatrix with a moments file)"),
    cl::value_desc("file.txt"), cl::cat(category));
static cl::opt<std::string> calibrationTokens(
    "calibration-tokens",
    cl::desc("As --calibration, with token ids (commas or white space between) instead "
             "of a text"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<int64_t> calibrationCtx(
    "calibration-ctx", cl::desc("Tokens per calibration chunk (default: 512 or the model's context)"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> calibrationChunks(
    "calibration-chunks", cl::desc("At most this many calibration chunks (default: all)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> imatrixOut(
    "imatrix-out",
    cl::desc("Also write --calibration's importance matrix (llama.cpp's .dat form) here"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> momentsOut(
    "moments-out",
    cl::desc("Also write --calibration's second moments (Kiln's form, for --imatrix) here"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<bool> activationScales(
    "activation-scales",
    cl::desc("With second moments (--calibration, or --imatrix with Kiln's moments): try "
             "activation-aware scales (AWQ) between each norm and the matmuls after it, "
             "kept where they lower those weights' output error by 1% (default true)"),
    cl::init(true), cl::cat(category));
static cl::opt<std::string> compareText(
    "compare",
    cl::desc("With --report=DIR: run the model as stored and as compiled over this text "
             "(one chunk) with taps after every op; report.json/html get each op's and "
             "layer's relative error and cosine, the first layer past --compare-threshold, "
             "and which of that layer's weights, compiled in f32 alone, takes the most "
             "error from the logits"),
    cl::value_desc("file.txt"), cl::cat(category));
static cl::opt<double> compareThreshold(
    "compare-threshold", cl::desc("A layer output's relative error that counts as diverged"),
    cl::init(0.1), cl::cat(category));
static cl::list<std::string> inputShape(
    "input-shape",
    cl::desc("NAME=DIMS, e.g. input_ids=1x128: the static shape of an ONNX graph input "
             "whose dimensions are symbolic (repeatable)"),
    cl::cat(category));
static cl::list<std::string> quantOverride(
    "quant-override",
    cl::desc("<glob>=<format> for tensors whose name matches, e.g. "
             "'output.weight=q8_0' (repeatable; the last match wins)"),
    cl::cat(category));
static cl::opt<std::string> kvType("kv-type",
                                   cl::desc("KV cache element: f32, f16, q8 (int8, one "
                                            "scale per head and position) or q4 (int4 in "
                                            "groups of 32 with a scale and a minimum; head "
                                            "dimension a multiple of 32)"),
                                   cl::init("f32"), cl::cat(category));
static cl::opt<std::string> report(
    "report", cl::ValueOptional, cl::value_desc("DIR"),
    cl::desc("Print each weight's format, bytes and quantization error, and the memory "
             "plan; --report=DIR also writes them to DIR/report.json and DIR/report.html"),
    cl::cat(category));
static cl::opt<std::string> device(
    "device", cl::value_desc("NAME|FILE"),
    cl::desc("Print the decode and prefill speed a roofline model predicts on a device: "
             "cortex-a76, cortex-a55, cortex-m7, cortex-m55, riscv-rvv, or a JSON file of a host's "
             "figures (bench/probes.c's line); --report=DIR lists them all"),
    cl::init(""), cl::cat(category));
static cl::opt<int64_t> memoryBudget(
    "memory-budget",
    cl::desc("Bytes for weights + arena (KV cache included): choose per-tensor formats "
             "that fit with the least estimated loss"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> tile(
    "tile",
    cl::desc("Pin the matmul tile that tile-for-cache picks from the target's cache "
             "model, e.g. --tile=mr=4,kc=512"),
    cl::init(""), cl::cat(category));
static cl::opt<std::string> fuse(
    "fuse",
    cl::desc("kiln-fuse's patterns, comma-separated: residual, swiglu, qkv, norm (default: all); "
             "'none' keeps one kernel per graph op"),
    cl::init("residual,swiglu,qkv,norm"), cl::cat(category));
static const std::string targetHelp =
    "Code generation target: " + llvm::join(kiln::targetNames(), ", ") +
    " (host: the best one for this machine; default: c99, or --board's core)";
static cl::opt<std::string> target("target", cl::desc(targetHelp), cl::init("c99"),
                                   cl::cat(category));
static const std::string boardHelp =
    "Place the model on an emulated microcontroller board (" +
    llvm::join(kiln::boardNames(), ", ") +
    "): its core's target unless --target says otherwise, and an error naming the region and "
    "the overflow when the weights or the arena do not fit the board's memory (with "
    "--weights=embed)";
static cl::opt<std::string> board("board", cl::desc(boardHelp), cl::cat(category));
static cl::opt<std::string> draft(
    "draft", cl::value_desc("FILE.gguf"),
    cl::desc("Also compile a draft model of the same vocabulary into the folder, as "
             "<name>_draft, for speculative decoding (kiln-generate --draft-model)"),
    cl::cat(category));
static cl::opt<std::string> draftQuant("draft-quant",
                                       cl::desc("--quant of the --draft model (default: as "
                                                "--quant for --draft-layers, else as in its file)"),
                                       cl::cat(category));
static cl::opt<std::string> packChecksum(
    "pack-checksum", cl::value_desc("first-use|open"), cl::ValueOptional,
    cl::desc("Checksum each decoder layer's weights into the generated code, checked before "
             "the first step (first-use, the default) or in open: a corrupt pack is "
             "KILN_ERR_CORRUPT naming the layer (model.corrupt_layer), not wrong text"),
    cl::cat(category));
static cl::opt<int64_t> draftLayers(
    "draft-layers",
    cl::desc("Also compile a self-speculative draft: the model's first K layers and its output "
             "head, as <name>_draft (kiln-generate --draft-model)"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> prefillChunk(
    "prefill-chunk", cl::desc("Tokens per prefill call (default: min(64, context))"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> maxContext(
    "max-context", cl::desc("KV cache capacity in tokens (default: the model's)"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> kvWindow(
    "kv-window",
    cl::desc("Attend to the last W positions on every layer (a model's own smaller windows "
             "stay): each layer's cache becomes a ring of W + prefill chunk - 1 rows instead "
             "of the capacity, positions stay absolute for rope"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> kvLayout(
    "kv-layout",
    cl::desc("KV cache order: head-major ([head][position][dim]: each head's positions "
             "contiguous, the default: measured faster at long contexts) or pos-major "
             "([position][head][dim])"),
    cl::init("head-major"), cl::cat(category));
static cl::opt<int64_t> sessions(
    "sessions",
    cl::desc("Compile S sessions into one arena: the KV cache becomes a pool of pages that "
             "each session maps through its page table, full pages whose token prefixes are "
             "equal are shared (prefix cache), and one call decodes a token of several "
             "sessions at once (<name>_session_*, <name>_decode_batch)"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> kvPage("kv-page",
                               cl::desc("With --sessions: positions per KV page, a multiple of "
                                        "16 (default 16)"),
                               cl::init(0), cl::cat(category));
static cl::opt<int64_t> kvPages(
    "kv-pages",
    cl::desc("With --sessions: pages in the pool (default: every session's whole context; "
             "fewer bound the arena and rely on shared prefixes and short sessions)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> name("name",
                                 cl::desc("C identifier of the model (default: from "
                                          "general.name)"),
                                 cl::cat(category));

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // libLLVM registers a "threads" option of its own that kiln-compile never
  // uses; ours takes the name.
  if (cl::Option *other = cl::getRegisteredOptions().lookup("threads"))
    other->removeArgument();
  cl::opt<int64_t> threads(
      "threads",
      cl::desc("Workers the kernels' work is split for at compile time (the most a "
               "program can use; 1: no threads at all)"),
      cl::init(1), cl::cat(category));
  cl::opt<unsigned> jobs(
      "jobs", cl::desc("Threads that convert and repack the weights (default: one per core)"),
      cl::init(0), cl::cat(category));
  cl::opt<int64_t> minSplitWork(
      "min-split-work",
      cl::desc("Least work (multiply-adds, or elements of row-wise ops) for which a kernel "
               "is split over the threads (default: the target's)"),
      cl::init(-1), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "Kiln ahead-of-time model compiler\n");

  kiln::CompileOptions options;
  options.input = input;
  options.outputDir = outputDir;
  options.emit = emit;
  options.target = target;
  options.board = board;
  options.draft = draft;
  options.draftQuant = draftQuant;
  options.draftLayers = draftLayers;
  if (packChecksum.getNumOccurrences())
    options.packChecksum = packChecksum.empty() ? "first-use" : packChecksum.getValue();
  if (draftLayers > 0) {
    if (!draft.empty()) {
      errs() << "kiln-compile: error: --draft-layers drafts with the model itself: drop --draft\n";
      return 1;
    }
    options.draft = input;
    if (draftQuant.getNumOccurrences() == 0)
      options.draftQuant = quant;
  }
  if (!board.empty() && target.getNumOccurrences() == 0)
    if (const kiln::Board *b = kiln::lookupBoard(board))
      options.target = b->variants.front();
  options.embedWeights = weights == Weights::Embed;
  options.quant = quant;
  options.quantOverrides = llvm::join(quantOverride, ",");
  options.inputShapes.assign(inputShape.begin(), inputShape.end());
  options.pureQuant = pureQuant;
  options.imatrix = imatrix;
  options.calibration = {calibrationTokens.empty() ? calibration : calibrationTokens,
                         calibrationCtx, calibrationChunks, !calibrationTokens.empty()};
  if (!calibration.empty() && !calibrationTokens.empty()) {
    llvm::errs() << "kiln-compile: error: --calibration and --calibration-tokens: give one\n";
    return 1;
  }
  options.imatrixOut = imatrixOut;
  options.momentsOut = momentsOut;
  options.activationScales = activationScales;
  options.compare = {compareText, 0, 1};
  options.compareThreshold = compareThreshold;
  options.kvType = kvType;
  options.report = report.getNumOccurrences() > 0;
  options.reportDir = report;
  options.device = device;
  options.memoryBudget = memoryBudget;
  options.tile = tile;
  options.threads = threads;
  options.jobs = jobs;
  options.fuse = fuse == "none" ? std::string() : fuse.getValue();
  options.minSplitWork = minSplitWork;
  options.import.prefillChunk = prefillChunk;
  options.import.maxContext = maxContext;
  options.import.kvWindow = kvWindow;
  options.import.kvLayout = kvLayout;
  options.import.name = name;
  options.import.sessions = sessions;
  options.import.kvPage = kvPage;
  options.import.kvPages = kvPages;
  return failed(kiln::compile(options, outs(), errs())) ? 1 : 0;
}
