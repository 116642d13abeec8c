#include "codegen_targets/TranslateToC.h"

#include "codegen_targets/Template.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;
using namespace kiln;
using llvm::formatv;

namespace {

struct EmbeddedFile {
  const char *path;
  const char *text;
};
#include "codegen_targets/EmbeddedFiles.inc"

int64_t slotOffset(Operation *op) {
  return getSlotAttr(op).getOffset();
}

/// Operands of a planned function as C expressions of the schedule, which has
/// `w` (weights), `a` (arena), `tokens`, `rows` and `pos` in scope.
class ScheduleNames : public OperandNames {
public:
  std::string operand(Value v) const override {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getArgNumber() == 0 ? "tokens" : "pos";
    Operation *def = v.getDefiningOp();
    // The caches qkv_matmul writes are the caches it was given.
    if (auto qkv = dyn_cast<QkvMatmulOp>(def)) {
      if (v == qkv.getKeysOut())
        return operand(qkv.getKeys());
      if (v == qkv.getValuesOut())
        return operand(qkv.getValues());
    }
    if (auto weight = dyn_cast<WeightOp>(def))
      return formatv("(w + {0}u)", getSegmentAttr(weight).getOffset());
    return result(def);
  }

  std::string result(Operation *op) const override {
    return formatv("(float *)(void *)(a + {0}u)", slotOffset(op));
  }

  std::string scratch(Operation *op) const override {
    return formatv("(void *)(a + {0}u)", getScratchAttr(op).getOffset());
  }
};

struct ModelInfo {
  std::string name, upper;
  ModelAttr config;
  /// The pack written for the module (zeros without one: hand-written IR).
  uint64_t packHash = 0, dataOffset = 0, dataBytes = 0, fileBytes = 0, vocabOffset = 0,
           vocabBytes = 0;
  int64_t arenaBytes = 0, kvBytes = 0;
  int64_t threads = 1; // shares of every split kernel
};

/// Whether the model's sessions share a pool of KV pages: its schedule then
/// hands the kernels the rows' positions and page tables (kiln_uk_positions).
bool paged(const ModelInfo &info) { return info.config && info.config.getKvPage() > 0; }

/// The C type of the schedule's `pos`, with the space before the name.
std::string positionsType(const ModelInfo &info) {
  return paged(info) ? "const kiln_uk_positions *" : "int32_t ";
}

ModelInfo moduleNames(ModuleOp module) {
  ModelInfo info;
  info.name = module.getSymName() ? module.getSymName()->str() : "model";
  info.upper = llvm::StringRef(info.name).upper();
  return info;
}

/// The run-time work of a split op's kernel, as partition-work measures it, as
/// a C expression of the schedule's `rows` (or `head_rows`) and `pos`.
std::string workExpression(Operation *op, StringRef rows, bool paged) {
  KernelWork work = *cast<KernelOpInterface>(op).getKernelWork();
  std::string expr = formatv("(int64_t){0} * {1}", rows, work.perRow);
  if (!work.overContext)
    return expr;
  // Over a pool of pages, the furthest row's context (kiln_uk_positions).
  std::string context = paged ? "pos->span" : formatv("(pos + {0})", rows).str();
  if (work.window)
    context = formatv("({0} < {1} ? {0} : {1})", context, work.window);
  return expr + " * " + context;
}

/// Emits the schedule of one function and collects the kernels it calls.
class ScheduleEmitter {
public:
  /// `standalone`: plain functions over a weight buffer and an arena (kernel
  /// IR without a model), with no prefetch, profile or workers.
  ScheduleEmitter(const TargetDescription &target, const ModelInfo &info,
                  std::map<std::string, KernelCall> &kernels, bool standalone = false)
      : target(target), info(info), kernels(kernels), standalone(standalone) {}

  /// One label per kernel call, in schedule order, for KILN_PROFILE builds.
  const std::vector<std::string> &sites() const { return siteLabels; }
  /// What a KILN_TAPS build shows around each of those calls (a C initializer
  /// of the model's tap_site).
  const std::vector<std::string> &taps() const { return siteTaps; }
  /// The weight bytes each of those calls reads: its weights' segments for a
  /// matmul kernel, 0 otherwise (an embedding reads one row).
  const std::vector<int64_t> &siteWeightBytes() const { return siteBytes; }
  /// The functions that run the shares of split kernels.
  const std::string &sitesText() const { return siteFunctions; }

  /// `run_<fn>(m, tokens, rows, pos, head_rows)`: the output head (final norm
  /// and logits matmul) runs on the last head_rows rows only (none when 0), so
  /// a prefill computes no logits that nobody reads.
  LogicalResult emit(func::FuncOp fn, llvm::raw_ostream &out, int64_t &logitsOffset) {
    ScheduleNames names;
    llvm::SmallPtrSet<Operation *, 2> head;
    if (standalone) {
      out << formatv("void {0}({1}) {{\n  (void)w, (void)a, (void)tokens, (void)rows, (void)pos;\n",
                     standaloneName(fn), kStandaloneParams);
    } else {
      head = outputHead(fn);
      out << formatv("static void run_{0}({1}_model *m, const int32_t *tokens, int32_t rows,\n"
                     "    {2}pos, int32_t head_rows) {{\n"
                     "  const uint8_t *w = m->weights;\n  uint8_t *a = m->arena;\n",
                     fn.getSymName(), info.name, positionsType(info));
    }
    // The calls, then (when some kernel is split) what the shares read first.
    std::string calls;
    llvm::raw_string_ostream os(calls);
    bool anySplit = false;
    if (!standalone)
      os << "  prefetch_layer(m, 0);\n";
    int64_t lastLayer = -1, tapLayer = -1;
    for (Operation &op : fn.getBody().front()) {
      if (auto weight = dyn_cast<WeightOp>(op)) {
        if (standalone)
          continue;
        int64_t layer = getSegmentAttr(weight).getLayer();
        if (layer > lastLayer) {
          // Ask for the next layer's pages while this one computes.
          os << formatv("  prefetch_layer(m, {0});\n", layer + 1);
          lastLayer = layer;
        }
        continue;
      }
      if (isa<KvCacheOp>(op))
        continue;
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        if (!standalone)
          logitsOffset = slotOffset(ret.getOperand(0).getDefiningOp());
        continue;
      }
      FailureOr<KernelCall> call = target.kernelFor(&op, info.name, names);
      if (failed(call))
        return failure();
      bool inHead = head.contains(&op);
      // Row-wise ops of the head start at the first head row of the input and
      // write head_rows rows from the start of the result.
      auto headArgs = [&](std::vector<std::string> args) {
        Value input = op.getOperand(0);
        if (!inHead)
          return args;
        if (!head.contains(input.getDefiningOp()))
          args.front() = formatv("{0} + (size_t)(rows - head_rows) * {1}", args.front(),
                                 cast<RankedTensorType>(input.getType()).getDimSize(1));
        args.back() = "head_rows";
        return args;
      };
      std::string statement;
      for (const KernelCall &setup : call->setup) {
        statement += formatv("{0}({1}); ", setup.name, llvm::join(headArgs(setup.args), ", "));
        kernels.try_emplace(setup.name, setup);
      }
      std::string invoke = formatv("{0}({1})", call->name, llvm::join(headArgs(call->args), ", "));
      kernels.try_emplace(call->name, *call);
      for (const KernelCall &helper : call->helpers)
        kernels.try_emplace(helper.name, helper);
      if (standalone) {
        if (getSplitAttr(&op))
          return op.emitOpError("is split over threads, which needs a model's workers");
        os << "  " << statement << invoke << ";\n";
        continue;
      }
      if (SplitAttr split = getSplitAttr(&op)) {
        // The shares run in a site function the workers call.
        std::string site = formatv("{0}_site_{1}", fn.getSymName(), siteLabels.size());
        siteFunctions += formatv("static void {0}(void *ctx, int32_t s0, int32_t s1) {{\n"
                                 "  KILN_SITE_SCOPE(ctx);\n  {1};\n}\n\n",
                                 site, invoke.substr(0, invoke.size() - 1) + ", s0, s1)");
        anySplit = true;
        invoke = formatv("run_shares(m, {0}, &ctx, {1} >= {2})", site,
                         workExpression(&op, inHead ? "head_rows" : "rows", paged(info)),
                         split.getThreshold());
      }
      statement += invoke;
      if (inHead)
        os << "  if (head_rows > 0)\n  ";
      os << formatv("  KILN_TIMED({0}, {1});\n", siteLabels.size(),
                    call->setup.empty() ? statement : "{ " + statement + "; }");
      siteTaps.push_back(tapsOf(op, head, tapLayer));
      siteLabels.push_back(siteLabel(fn, op, call->name));
      siteBytes.push_back(weightBytes(op));
    }
    if (anySplit)
      out << "  run_args ctx;\n  ctx.w = w;\n  ctx.a = a;\n  ctx.tokens = tokens;\n"
             "  ctx.rows = rows;\n  ctx.pos = pos;\n  ctx.head_rows = head_rows;\n";
    out << calls << "}\n\n";
    return success();
  }

  /// The C name of a function of standalone kernel IR.
  std::string standaloneName(func::FuncOp fn) const {
    return info.name + "_" + fn.getSymName().str();
  }
  static constexpr const char *kStandaloneParams =
      "const uint8_t *w, uint8_t *a, const int32_t *tokens, int32_t rows, int32_t pos";

private:
  /// The logits matmul the function returns and the norm feeding only it.
  static llvm::SmallPtrSet<Operation *, 2> outputHead(func::FuncOp fn) {
    llvm::SmallPtrSet<Operation *, 2> head;
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    auto logits = ret.getOperand(0).getDefiningOp<MatmulOp>();
    if (!logits)
      return head;
    head.insert(logits);
    if (auto norm = logits.getInput().getDefiningOp<RmsNormOp>())
      if (norm->hasOneUse())
        head.insert(norm);
    return head;
  }

  /// The weights an op reads, "a+b" for several; "" for none.
  static std::string weightNames(Operation &op) {
    std::string weights;
    for (Value v : op.getOperands())
      if (auto w = v.getDefiningOp<WeightOp>())
        weights += (weights.empty() ? "" : "+") + w.getName().str();
    return weights;
  }

  /// A matmul's f32 input (weights: their names, "" when the op is none or
  /// its norm is fused, whose normalized rows are no f32 buffer) and the op's
  /// first result as "LAYER OP [WEIGHTS]" (the layer of its weights or cache,
  /// the op before's for one without, -1 for the embedding and the head).
  static std::string tapsOf(Operation &op, const llvm::SmallPtrSet<Operation *, 2> &head,
                            int64_t &layer) {
    auto matrix = [](Value v) -> int64_t {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      bool f32 = type && type.getRank() == 2 && type.getElementType().isF32() &&
                 !isa<BlockArgument>(v) && getSlotAttr(v.getDefiningOp());
      return f32 ? type.getDimSize(1) : 0;
    };
    std::string weights = weightNames(op);
    bool fusedNorm = false;
    for (Value v : op.getOperands()) {
      if (auto w = v.getDefiningOp<WeightOp>()) {
        layer = getSegmentAttr(w).getLayer();
        fusedNorm |= w.getType().getRank() == 1;
      } else if (auto cache = v.getDefiningOp<KvCacheOp>()) {
        layer = cache.getLayer();
      }
    }
    bool inHead = head.contains(&op);
    std::string input = "NULL, 0u, 0, 0", result = "NULL, 0u, 0";
    if (isMatmulKernel(&op) && !weights.empty() && !fusedNorm && op.getNumOperands() > 0)
      if (int64_t cols = matrix(op.getOperand(0)))
        input = formatv("\"{0}\", {1}u, {2}, {3}", weights,
                        slotOffset(op.getOperand(0).getDefiningOp()), cols,
                        inHead && !head.contains(op.getOperand(0).getDefiningOp()) ? 1 : 0);
    if (op.getNumResults() > 0 && getSlotAttr(&op))
      if (int64_t cols = matrix(op.getResult(0)))
        result = formatv("\"{0} {1}{2}{3}\", {4}u, {5}", layer, op.getName().stripDialect(),
                         weights.empty() ? "" : " ", weights, slotOffset(&op), cols);
    return formatv("{{{0}, {1}, {2}}", input, result, inHead ? 1 : 0);
  }

  /// "decode blk.3.ffn_up.weight matmul_q8_0_n768_k256": the function, the weight
  /// the op reads (if any) and the kernel.
  std::string siteLabel(func::FuncOp fn, Operation &op, StringRef kernel) {
    std::string weight = weightNames(op);
    if (!weight.empty())
      weight += " ";
    if (auto kv = dyn_cast<KvWriteOp>(op))
      weight = formatv("layer {0} {1} cache ", kv.getCache().getDefiningOp<KvCacheOp>().getLayer(),
                       stringifyCacheKind(kv.getCache().getDefiningOp<KvCacheOp>().getKind()));
    return (fn.getSymName() + " " + weight + kernel.drop_front(info.name.size() + 1)).str();
  }

  static int64_t weightBytes(Operation &op) {
    int64_t bytes = 0;
    if (isMatmulKernel(&op))
      for (Value v : op.getOperands())
        if (auto w = v.getDefiningOp<WeightOp>())
          if (SegmentAttr seg = getSegmentAttr(w))
            bytes += seg.getBytes();
    return bytes;
  }

  const TargetDescription &target;
  const ModelInfo &info;
  std::map<std::string, KernelCall> &kernels;
  std::vector<std::string> siteLabels, siteTaps;
  std::vector<int64_t> siteBytes;
  std::string siteFunctions;
  bool standalone;
};

/// The bodies of `shift_cache(m, keep, drop)`, `shift_fits(m, keep, drop)` and
/// `truncate_fits(m, n)`: the context
/// shift of every layer's cache, read off the decode function: a kernel per
/// cache shape moves each block (a head's rows when head-major) with the
/// library's kiln_uk_kv_shift_heads and turns the moved keys back; a wrapped ring with
/// a window refuses a shift after which the window would reach back to kept
/// tokens (their rows were overwritten).
/// The value cache of `keys`' layer in `decode`; failure with a diagnostic
/// when there is none.
FailureOr<KvCacheOp> valueCacheOf(func::FuncOp decode, KvCacheOp keys) {
  for (auto v : decode.getBody().front().getOps<KvCacheOp>())
    if (v.getKind() == CacheKind::value && v.getLayer() == keys.getLayer())
      return v;
  return keys.emitOpError("has no value cache");
}

LogicalResult shiftValues(func::FuncOp decode, const TargetDescription &target,
                          const ModelInfo &info, std::map<std::string, KernelCall> &kernels,
                          TemplateValues &values) {
  std::string moves, fits, truncateFits;
  for (auto cache : decode.getBody().front().getOps<KvCacheOp>()) {
    if (cache.getKind() != CacheKind::key)
      continue;
    Operation *writer = *cache->getUsers().begin();
    FailureOr<KvCacheOp> valueCache = valueCacheOf(decode, cache);
    if (failed(valueCache))
      return failure();
    int64_t window = 0;
    for (auto a : decode.getBody().front().getOps<AttentionOp>())
      if (a.getKeys().getDefiningOp() == writer && a.getWindow())
        window = *a.getWindow();
    FailureOr<KernelCall> rerope = target.reropeKernelFor(writer, info.name);
    if (failed(rerope))
      return failure();
    kernels.try_emplace(rerope->name, *rerope);
    auto type = cast<RankedTensorType>(cache.getType());
    int64_t rows = type.getDimSize(0);
    bool ring = rows < info.config.getMaxContext();
    // Head-major caches move each head's block of rows on its own.
    KvCacheLayoutAttr layout = getKvCacheLayout(type);
    int64_t heads =
        layout && layout.getOrder() == KvOrder::head_major ? layout.getHeads() : 1;
    int64_t tiledHd = isTiledKvCache(type) ? type.getDimSize(1) / layout.getHeads() : 0;
    int64_t blockBytes = getStorageBytes(type) / heads, rowBytes = blockBytes / rows;
    // One kernel per cache shape: each block moved, then the moved keys
    // turned back by drop positions.
    KernelCall shift;
    shift.name = info.name + "_kv_shift_" + rerope->name.substr(info.name.size() + 11);
    shift.params = "uint8_t *k, uint8_t *v, int32_t pos, int32_t keep, int32_t drop";
    shift.body = formatv("  int32_t r0, r1;\n"
                         "  kiln_uk_kv_shift_heads(k, v, {0}, {1}u, {2}u, {3}, {4}, {5}, pos, keep, drop, "
                         "&r0, &r1);\n  {6}(k, r0, r1, -drop);\n",
                         heads, blockBytes, rowBytes, rows, ring ? 1 : 0, tiledHd, rerope->name)
                     .str();
    kernels.try_emplace(shift.name, shift);
    moves += formatv("  {0}(m->arena + {1}u, m->arena + {2}u, m->pos, keep, drop); /* layer {3} */\n",
                     shift.name, slotOffset(cache), slotOffset(*valueCache), cache.getLayer());
    if (ring) {
      fits += formatv("  if (m->pos > {0} && m->pos - drop - {1} + 1 < keep)\n    return 0;\n",
                      rows, window);
      // Rows written at positions n..pos-1 replaced those of n-rows..pos-1-rows;
      // the window at n reads back to n-window+1.
      truncateFits += formatv("  if (m->pos > {0} && m->pos - n > {0} - {1} + 1)\n    return 0;\n",
                              rows, window);
    }
  }
  values["SHIFT_FITS"] = fits;
  values["TRUNCATE_FITS"] = truncateFits;
  values["SHIFT_MOVES"] = moves;
  return success();
}

/// The bodies of `copy_page(ctx, from, to)` and `shift_pages(m, table, pos,
/// keep, drop)` of a model whose sessions share a pool of KV pages: each
/// layer's key and value caches by the target's paged cache kernels.
LogicalResult sessionValues(func::FuncOp decode, const TargetDescription &target,
                            const ModelInfo &info, std::map<std::string, KernelCall> &kernels,
                            TemplateValues &values) {
  std::string copies, moves;
  for (auto cache : decode.getBody().front().getOps<KvCacheOp>()) {
    if (cache.getKind() != CacheKind::key)
      continue;
    FailureOr<KvCacheOp> valueCache = valueCacheOf(decode, cache);
    if (failed(valueCache))
      return failure();
    auto paged = target.pagedCacheKernelsFor(*cache->getUsers().begin(), info.name,
                                             info.config.getKvPage());
    if (failed(paged))
      return failure();
    auto &[copy, shift] = *paged;
    kernels.try_emplace(copy.name, copy);
    kernels.try_emplace(shift.name, shift);
    for (const KernelCall &helper : shift.helpers)
      kernels.try_emplace(helper.name, helper);
    std::string caches = formatv("m->arena + {0}u, m->arena + {1}u", slotOffset(cache),
                                 slotOffset(*valueCache));
    copies += formatv("  {0}({1}, from, to); /* layer {2} */\n", copy.name, caches,
                      cache.getLayer());
    moves += formatv("  {0}({1}, table, pos, keep, drop); /* layer {2} */\n", shift.name, caches,
                     cache.getLayer());
  }
  values["COPY_PAGES"] = copies;
  values["SHIFT_MOVES"] = moves;
  return success();
}

/// The header's sizes of the sessions' pool of KV pages.
std::string sessionMacros(const ModelInfo &info) {
  if (!paged(info))
    return "";
  ModelAttr c = info.config;
  int64_t page = c.getKvPage(), span = (c.getMaxContext() + page - 1) / page;
  return formatv("#define {0}_SESSIONS {1}\n"
                 "#define {0}_KV_PAGE {2}      /* positions a page */\n"
                 "#define {0}_KV_PAGES {3}     /* pages in the pool: {0}_KV_BYTES */\n"
                 "#define {0}_SESSION_PAGES {4} /* the most pages one session maps */\n"
                 "#define {0}_SESSION_TOKENS {5} /* the most tokens one session holds */\n",
                 info.upper, c.getSessions(), page, c.getKvPages(), span,
                 std::min(c.getMaxContext(), c.getKvPages() * page))
      .str();
}

/// The model struct's record of what its KV cache holds.
std::string cacheFields(const ModelInfo &info) {
  if (!paged(info))
    return "  int32_t pos;                      /* tokens in the KV cache */\n";
  return formatv(
             "  kiln_kv_pages pages;              /* the sessions' page tables over the pool */\n"
             "  int32_t page_refs[{0}_KV_PAGES];\n"
             "  int32_t page_parent[{0}_KV_PAGES];\n"
             "  uint32_t page_hash[{0}_KV_PAGES];\n"
             "  uint8_t page_registered[{0}_KV_PAGES];\n"
             "  int32_t page_tokens[{0}_KV_PAGES * {0}_KV_PAGE];\n"
             "  int32_t page_table[{0}_SESSIONS * {0}_SESSION_PAGES];\n"
             "  int32_t session_pos[{0}_SESSIONS];\n"
             "  int32_t row_at[{0}_PREFILL_CHUNK];  /* a step's rows: positions and page tables */\n"
             "  const int32_t *row_table[{0}_PREFILL_CHUNK];\n",
             info.upper)
      .str();
}

/// File offset and size of every decoder layer's weights, as C initializers.
std::string layerRanges(ModuleOp module, const ModelInfo &m) {
  std::string rows;
  for (auto [offset, bytes] : layerByteRanges(module))
    rows += formatv("    {{{0}u, {1}u},\n", m.dataOffset + offset, bytes);
  return rows.empty() ? "    {0u, 0u},\n" : rows;
}

/// With --pack-checksum: the layers' sums and `verify_layers`
/// (checksums.c.in), and where it runs: in open, or before the first step.
void checksumValues(ModuleOp module, const PackChecksums *sums, TemplateValues &values) {
  values["CHECKSUMS"] = values["CHECK_ON_OPEN"] = values["CHECK_FIRST_USE"] = "";
  if (!sums)
    return;
  std::string rows;
  auto ranges = layerByteRanges(module);
  for (size_t l = 0; l < ranges.size(); ++l)
    rows += formatv("    {{{0}u, {1}u, 0x{2:x-16}ull},\n", ranges[l].first, ranges[l].second,
                    sums->sums[l]);
  values["CHECKSUMS"] = fillTemplate("checksums.c.in", {{"name", values["name"]}, {"ROWS", rows}});
  if (sums->onOpen)
    values["CHECK_ON_OPEN"] = "  s = verify_layers(m);\n  if (s != KILN_OK)\n    return s;\n";
  else
    values["CHECK_FIRST_USE"] = "  if (m->cold && (s = verify_layers(m)) != KILN_OK)\n    return s;\n";
}

} // namespace

std::vector<std::pair<uint64_t, uint64_t>> kiln::layerByteRanges(ModuleOp module) {
  std::map<int64_t, std::pair<int64_t, int64_t>> layers;
  module.walk([&](WeightOp op) {
    SegmentAttr seg = getSegmentAttr(op);
    if (seg.getLayer() < 0)
      return;
    auto [it, inserted] = layers.try_emplace(seg.getLayer(), seg.getOffset(),
                                             seg.getOffset() + seg.getBytes());
    it->second.first = std::min(it->second.first, seg.getOffset());
    it->second.second = std::max(it->second.second, seg.getOffset() + seg.getBytes());
  });
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto [index, range] : layers)
    ranges.push_back({uint64_t(range.first), uint64_t(range.second - range.first)});
  return ranges;
}

/// `<name>_kernels.h` and `<name>_kernels.c`: every kernel the schedule calls,
/// over the target's kernel library (its ISA header first, so that the
/// portable one leaves out the helpers it replaces).
void kiln::addKernelFiles(llvm::StringRef name, const TargetDescription &target,
                          const std::map<std::string, KernelCall> &kernels,
                          std::vector<GeneratedFile> &files) {
  std::string decls, outlined, bodies;
  for (auto &[name, k] : kernels) {
    decls += formatv("void {0}({1});\n", name, k.params);
    if (k.outOfLine)
      outlined += formatv("KILN_UK_OUTLINE void {0}({1});\n", name, k.params);
    bodies += formatv("void {0}({1}) {{\n{2}}\n\n", name, k.params, k.body);
  }
  if (!bodies.empty())
    bodies.pop_back();
  if (!outlined.empty())
    bodies = outlined + "\n" + bodies;
  const char *isaHeader = target.isaVariant().header;
  files.push_back({name.str() + "_kernels.h",
                   fillTemplate("kernels.h.in", {{"name", name.str()},
                                                 {"NAME", name.upper()},
                                                 {"DECLARATIONS", decls}})});
  files.push_back(
      {name.str() + "_kernels.c",
       fillTemplate("kernels.c.in",
                    {{"name", name.str()},
                     {"TARGET", target.name().str()},
                     {"ISA_INCLUDE",
                      *isaHeader ? formatv("#include \"{0}\"\n", isaHeader).str() : ""},
                     {"DEFINITIONS", bodies}})});
}

/// A C expression that refuses kernels the CPU cannot run (GCC and Clang on x86).
std::string kiln::cpuCheckText(const IsaVariant &isa) {
  std::string check = isa.cpuCheck();
  if (check.empty())
    return "";
  return formatv("#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))\n"
                 "  if (!({0}))\n    return KILN_ERR_CPU;\n#endif\n",
                 check);
}

TemplateValues kiln::workerValues(bool workers) {
  if (!workers)
    return {{"WORKERS_FIELD", ""},
            {"WORKERS_RESET", ""},
            {"SET_WORKERS", "  (void)m;\n  (void)workers; /* compiled for one thread */\n"},
            {"POOL_SOURCES", ""},
            {"POOL_LINK", ""}};
  return {{"WORKERS_FIELD", "  kiln_workers workers;             /* see set_workers */\n"},
          {"WORKERS_RESET", "  m->workers.parallel_for = NULL;\n  m->workers.pool = NULL;\n"},
          {"SET_WORKERS",
           "  if (m) {\n    m->workers.parallel_for = workers ? workers->parallel_for : NULL;\n"
           "    m->workers.pool = workers ? workers->pool : NULL;\n  }\n"},
          {"POOL_SOURCES", "# Split kernels: the pthread pool for hosted builds.\n"
                           "if(KILN_HOSTED)\n"
                           "  list(APPEND runtime_sources runtime/src/pool.c)\n"
                           "  find_package(Threads REQUIRED)\n"
                           "endif()\n"},
          {"POOL_LINK", "if(KILN_HOSTED)\n"
                        "  target_link_libraries(kiln_runtime PUBLIC Threads::Threads)\n"
                        "endif()\n"}};
}

/// The generated CMakeLists.txt's line giving `library`'s kernels the ISA's flags.
std::string kiln::kernelFlags(const TargetDescription &target, llvm::StringRef library) {
  const IsaVariant &isa = target.isaVariant();
  if (!*isa.compileOptions)
    return "";
  return formatv("# Kernels for {0}.\ntarget_compile_options({1} PRIVATE {2})\n", isa.name,
                 library, isa.compileOptions)
      .str();
}

FailureOr<std::vector<GeneratedFile>>
kiln::translateToC(ModuleOp module, const TargetDescription &target, bool embedWeights,
                   const PackChecksums *checksums) {
  ModelInfo info = moduleNames(module);
  info.config = getModelAttr(module);
  IntegerAttr arena = getArenaBytesAttr(module), kv = getKvBytesAttr(module);
  if (!info.config || !arena || !kv)
    return module.emitError("expects a planned model (run kiln-plan-memory first)");
  info.arenaBytes = arena.getInt();
  info.kvBytes = kv.getInt();
  if (IntegerAttr threads = getThreadsAttr(module))
    info.threads = threads.getInt();
  if (PackAttr pack = getPackAttr(module)) {
    info.packHash = pack.getHash();
    info.dataOffset = pack.getDataOffset();
    info.dataBytes = pack.getDataBytes();
    info.fileBytes = pack.getFileBytes();
    info.vocabOffset = pack.getVocabOffset();
    info.vocabBytes = pack.getVocabBytes();
  }

  std::map<std::string, KernelCall> kernels;
  std::string schedule;
  llvm::raw_string_ostream os(schedule);
  ScheduleEmitter emitter(target, info, kernels);
  int64_t logits[2] = {0, 0};
  const char *functions[2] = {"prefill", "decode"};
  for (int i = 0; i < 2; ++i) {
    auto fn = module.lookupSymbol<func::FuncOp>(functions[i]);
    if (!fn)
      return module.emitError() << "expects a @" << functions[i] << " function";
    if (failed(emitter.emit(fn, os, logits[i])))
      return failure();
  }

  std::string sites, siteBytes, taps;
  for (const std::string &label : emitter.sites())
    sites += formatv("    \"{0}\",\n", label);
  for (const std::string &tap : emitter.taps())
    taps += formatv("    {0},\n", tap);
  for (int64_t bytes : emitter.siteWeightBytes())
    siteBytes += formatv("    {0}u,\n", bytes);
  bool workers = info.threads > 1;
  TemplateValues values = {
      {"name", info.name},
      {"NAME", info.upper},
      {"SITES", sites},
      {"SITE_BYTES", siteBytes},
      {"TAPS", taps},
      {"SHARES", workers ? fillTemplate("shares.c.in", {{"name", info.name},
                                                        {"NAME", info.upper},
                                                        {"POS_TYPE", positionsType(info)},
                                                        {"SITE_FUNCTIONS", emitter.sitesText()}})
                         : ""},
      {"LAYER_RANGES", layerRanges(module, info)},
      {"SCHEDULE", schedule},
      {"DATA_OFFSET", std::to_string(info.dataOffset)},
      {"DATA_BYTES", std::to_string(info.dataBytes)},
      {"CPU_CHECK", cpuCheckText(target.isaVariant())},
  };
  TemplateValues worker = workerValues(workers);
  values["WORKERS_RESET"] = worker["WORKERS_RESET"];
  values["SET_WORKERS"] = worker["SET_WORKERS"];
  // How steps reach the KV cache: one cache, or the sessions' pool of pages.
  TemplateValues steps = {{"name", info.name},
                          {"NAME", info.upper},
                          {"PREFILL_LOGITS", std::to_string(logits[0])},
                          {"DECODE_LOGITS", std::to_string(logits[1])}};
  auto decode = module.lookupSymbol<func::FuncOp>("decode");
  if (failed(paged(info) ? sessionValues(decode, target, info, kernels, steps)
                         : shiftValues(decode, target, info, kernels, steps)))
    return failure();
  checksumValues(module, checksums, values);
  steps["CHECK_FIRST_USE"] = values["CHECK_FIRST_USE"];
  values.erase("CHECK_FIRST_USE");
  values["STEPS"] = fillTemplate(paged(info) ? "sessions.c.in" : "steps.c.in", steps);
  values["API_SESSIONS"] =
      paged(info) ? formatv("{0}_SESSIONS, {0}_KV_PAGE, api_session_open, api_session_close,\n"
                            "    api_session_prefill_last, api_decode_batch, api_pages_used",
                            info.upper)
                        .str()
                  : "0, 0, NULL, NULL, NULL, NULL, NULL";

  std::vector<GeneratedFile> files;
  ModelAttr c = info.config;
  files.push_back(
      {info.name + ".h",
       fillTemplate("model.h.in",
                    {{"name", info.name},
                     {"NAME", info.upper},
                     {"ARENA_BYTES", std::to_string(info.arenaBytes)},
                     {"KV_BYTES", std::to_string(info.kvBytes)},
                     {"KV_WINDOW", std::to_string(c.getKvWindow())},
                     {"PACK_BYTES", std::to_string(info.fileBytes)},
                     {"MODEL_HASH", formatv("{0:x-16}", info.packHash).str()},
                     {"VOCAB", std::to_string(c.getNVocab())},
                     {"MAX_CONTEXT", std::to_string(c.getMaxContext())},
                     {"PREFILL_CHUNK", std::to_string(c.getPrefillChunk())},
                     {"BOS", std::to_string(c.getBos())},
                     {"EOS", std::to_string(c.getEos())},
                     {"VOCAB_OFFSET", std::to_string(info.vocabOffset)},
                     {"VOCAB_BYTES", std::to_string(info.vocabBytes)},
                     {"PROFILE_SITES", std::to_string(emitter.sites().size())},
                     {"THREADS", std::to_string(info.threads)},
                     {"WORKERS_FIELD", worker["WORKERS_FIELD"]},
                     {"SESSION_INCLUDE", paged(info) ? "#include \"kiln/kiln_kv_pages.h\"\n" : ""},
                     {"SESSION_MACROS", sessionMacros(info)},
                     {"CACHE_FIELDS", cacheFields(info)},
                     {"SESSION_API",
                      paged(info) ? fillTemplate("sessions.h.in", {{"name", info.name},
                                                                   {"NAME", info.upper},
                                                                   {"SESSIONS", std::to_string(
                                                                        c.getSessions())}})
                                  : ""}})});
  files.push_back({info.name + ".c", fillTemplate("model.c.in", values)});
  addKernelFiles(info.name, target, kernels, files);

  files.push_back(
      {"CMakeLists.txt",
       fillTemplate("CMakeLists.txt.in",
                    {{"name", info.name},
                     {"NAME", info.upper},
                     {"WEIGHTS_SOURCE", embedWeights ? " " + info.name + "_weights.c" : ""},
                     {"KERNEL_FLAGS", kernelFlags(target, info.name)},
                     {"POOL_SOURCES", worker["POOL_SOURCES"]},
                     {"POOL_LINK", worker["POOL_LINK"]}})});
  return files;
}

std::string kiln::draftCMakeLists(const TargetDescription &target, llvm::StringRef name,
                                  llvm::StringRef draft) {
  return fillTemplate("draft.cmake.in", {{"target", name.str()},
                                         {"draft", draft.str()},
                                         {"DRAFT", draft.upper()},
                                         {"KERNEL_FLAGS", kernelFlags(target, draft)}});
}

FailureOr<std::vector<GeneratedFile>> kiln::translateKernelsToC(ModuleOp module,
                                                               const TargetDescription &target) {
  ModelInfo info = moduleNames(module);
  std::map<std::string, KernelCall> kernels;
  ScheduleEmitter emitter(target, info, kernels, /*standalone=*/true);
  std::string decls, defs;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    llvm::raw_string_ostream os(defs);
    int64_t unused = 0;
    if (failed(emitter.emit(fn, os, unused)))
      return failure();
    decls += formatv("void {0}({1});\n", emitter.standaloneName(fn),
                     ScheduleEmitter::kStandaloneParams);
  }
  if (!defs.empty())
    defs.pop_back();
  std::vector<GeneratedFile> files;
  files.push_back({info.name + ".h", fillTemplate("functions.h.in", {{"name", info.name},
                                                                    {"NAME", info.upper},
                                                                    {"DECLARATIONS", decls}})});
  files.push_back({info.name + ".c", fillTemplate("functions.c.in", {{"name", info.name},
                                                                    {"DEFINITIONS", defs}})});
  addKernelFiles(info.name, target, kernels, files);
  return files;
}

std::vector<GeneratedFile> kiln::librarySources() {
  std::vector<GeneratedFile> files;
  for (const EmbeddedFile &f : kEmbeddedFiles)
    files.push_back({f.path, f.text});
  return files;
}

LogicalResult kiln::writeGeneratedFiles(Operation *where, StringRef dir,
                                        llvm::ArrayRef<GeneratedFile> files) {
  for (const GeneratedFile &f : files) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, f.path);
    if (std::error_code ec =
            llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path)))
      return where->emitError() << path << ": " << ec.message();
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
    if (ec)
      return where->emitError() << path << ": " << ec.message();
    os << f.text;
  }
  return success();
}

LogicalResult kiln::writeEmbeddedWeights(Operation *where, StringRef dir, StringRef name) {
  llvm::SmallString<256> packPath(dir), path(dir);
  llvm::sys::path::append(packPath, name + ".kpack");
  llvm::sys::path::append(path, name + "_weights.c");
  // Read a megabyte at a time: the pack may be larger than memory.
  llvm::Expected<llvm::sys::fs::file_t> pack = llvm::sys::fs::openNativeFileForRead(packPath);
  if (!pack)
    return where->emitError() << packPath << ": " << llvm::toString(pack.takeError());
  auto closePack = llvm::make_scope_exit([&] { llvm::sys::fs::closeFile(*pack); });
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return where->emitError() << path << ": " << ec.message();
  // Decimal, 32 per line: about 3.6 bytes per pack byte and quick for C compilers.
  os << fillTemplate("weights.c.in", {{"name", name.str()}, {"NAME", name.upper()}});
  std::vector<char> chunk(1 << 20);
  size_t at = 0;
  while (true) {
    llvm::Expected<size_t> got =
        llvm::sys::fs::readNativeFile(*pack, llvm::MutableArrayRef(chunk.data(), chunk.size()));
    if (!got)
      return where->emitError() << packPath << ": " << llvm::toString(got.takeError());
    if (*got == 0)
      break;
    for (size_t i = 0; i < *got; ++i, ++at) {
      os << unsigned(uint8_t(chunk[i])) << ',';
      if (at % 32 == 31)
        os << '\n';
    }
  }
  os << "};\n";
  return success();
}
