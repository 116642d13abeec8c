#include "codegen_targets/EmitC.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
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

LogicalResult writeFile(Operation *where, StringRef dir, StringRef name,
                        StringRef text) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  if (std::error_code ec =
          llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path)))
    return where->emitError() << path << ": " << ec.message();
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return where->emitError() << path << ": " << ec.message();
  os << text;
  return success();
}

/// The run-time work of a split op's kernel, as partition-work measures it, as
/// a C expression of the schedule's `rows` (or `head_rows`) and `pos`.
std::string workExpression(Operation *op, StringRef rows) {
  KernelWork work = *cast<KernelOpInterface>(op).getKernelWork();
  std::string expr = formatv("(int64_t){0} * {1}", rows, work.perRow);
  if (!work.overContext)
    return expr;
  std::string context = formatv("(pos + {0})", rows);
  if (work.window)
    context = formatv("({0} < {1} ? {0} : {1})", context, work.window);
  return expr + " * " + context;
}

/// Emits the schedule of one function and collects the kernels it calls.
class ScheduleEmitter {
public:
  ScheduleEmitter(const TargetDescription &target, const ModelInfo &info,
                  std::map<std::string, KernelCall> &kernels)
      : target(target), info(info), kernels(kernels) {}

  /// One label per kernel call, in schedule order, for KILN_PROFILE builds.
  const std::vector<std::string> &sites() const { return siteLabels; }
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
    llvm::SmallPtrSet<Operation *, 2> head = outputHead(fn);
    out << formatv("static void run_{0}({1}_model *m, const int32_t *tokens, int32_t rows,\n"
                   "    int32_t pos, int32_t head_rows) {{\n"
                   "  const uint8_t *w = m->weights;\n  uint8_t *a = m->arena;\n",
                   fn.getSymName(), info.name);
    // The calls, then (when some kernel is split) what the shares read first.
    std::string calls;
    llvm::raw_string_ostream os(calls);
    bool anySplit = false;
    os << "  prefetch_layer(m, 0);\n";
    int64_t lastLayer = -1;
    for (Operation &op : fn.getBody().front()) {
      if (auto weight = dyn_cast<WeightOp>(op)) {
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
      if (SplitAttr split = getSplitAttr(&op)) {
        // The shares run in a site function the workers call.
        std::string site = formatv("{0}_site_{1}", fn.getSymName(), siteLabels.size());
        siteFunctions += formatv("static void {0}(void *ctx, int32_t s0, int32_t s1) {{\n"
                                 "  KILN_SITE_SCOPE(ctx);\n  {1};\n}\n\n",
                                 site, invoke.substr(0, invoke.size() - 1) + ", s0, s1)");
        anySplit = true;
        invoke = formatv("run_shares(m, {0}, &ctx, {1} >= {2})", site,
                         workExpression(&op, inHead ? "head_rows" : "rows"),
                         split.getThreshold());
      }
      statement += invoke;
      if (inHead)
        os << "  if (head_rows > 0)\n  ";
      os << formatv("  KILN_TIMED({0}, {1});\n", siteLabels.size(),
                    call->setup.empty() ? statement : "{ " + statement + "; }");
      siteLabels.push_back(siteLabel(fn, op, call->name));
      siteBytes.push_back(weightBytes(op));
      kernels.try_emplace(call->name, *call);
      for (const KernelCall &helper : call->helpers)
        kernels.try_emplace(helper.name, helper);
    }
    if (anySplit)
      out << "  run_args ctx;\n  ctx.w = w;\n  ctx.a = a;\n  ctx.tokens = tokens;\n"
             "  ctx.rows = rows;\n  ctx.pos = pos;\n  ctx.head_rows = head_rows;\n";
    out << calls << "}\n\n";
    return success();
  }

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

  /// "decode blk.3.ffn_up.weight matmul_q8_0_n768_k256": the function, the weight
  /// the op reads (if any) and the kernel.
  std::string siteLabel(func::FuncOp fn, Operation &op, StringRef kernel) {
    std::string weight;
    for (Value v : op.getOperands())
      if (auto w = v.getDefiningOp<WeightOp>())
        weight += (weight.empty() ? "" : "+") + w.getName().str();
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
  std::vector<std::string> siteLabels;
  std::vector<int64_t> siteBytes;
  std::string siteFunctions;
};

std::string headerText(const ModelInfo &m, size_t sites) {
  return formatv(R"c(/* Generated by kiln-compile for model {0}; do not edit. */
#ifndef {1}_H
#define {1}_H

#include "kiln/kiln.h"
#include "kiln/kiln_model.h"
#include "kiln/kiln_tokenizer.h"

#ifdef __cplusplus
extern "C" {{
#endif

/* Exact sizes, known at compile time. */
#define {1}_ARENA_BYTES {2}u      /* KV cache + activations; 64-byte aligned */
#define {1}_KV_BYTES {3}u          /* a layer with a window keeps a ring of window + chunk - 1 rows */
#define {1}_KV_WINDOW {16}  /* --kv-window: positions every layer attends to; 0: the model's windows */
#define {1}_PACK_BYTES {4}ull
#define {1}_MODEL_HASH 0x{5:x-16}ull
#define {1}_VOCAB {6}
#define {1}_MAX_CONTEXT {7}
#define {1}_PREFILL_CHUNK {8}
#define {1}_BOS {9}
#define {1}_EOS {10}
#define {1}_VOCAB_SEGMENT_OFFSET {12}u /* in the data section */
#define {1}_VOCAB_SEGMENT_BYTES {13}u

#define {1}_PROFILE_SITES {11}  /* kernel calls in the schedule */
#define {1}_THREADS {14}  /* shares of each split kernel: the most workers it uses */

typedef struct {0}_model {{
  const uint8_t *weights;           /* data section of the pack */
  uint8_t *arena;                   /* caller's, {1}_ARENA_BYTES */
  const kiln_pack_source *source;
  int32_t pos;                      /* tokens in the KV cache */
  int32_t cold;                     /* no step has run yet: ask for each layer's pages */
{15}#ifdef KILN_PROFILE
  /* Set by the caller after open: a clock in any unit; each kernel call adds
   * its time to site_time and one to site_calls, which open zeroes. */
  uint64_t (*clock)(void);
  uint64_t site_time[{1}_PROFILE_SITES];
  uint64_t site_calls[{1}_PROFILE_SITES];
#endif
} {0}_model;

/* What each profiled kernel call is, e.g. "decode blk.0.ffn_up.weight matmul_f32_n768_k256". */
extern const char *const {0}_profile_sites[{1}_PROFILE_SITES];
/* The weight bytes each of those calls reads (matmuls; 0 for the others). */
extern const uint64_t {0}_profile_weight_bytes[{1}_PROFILE_SITES];

/* Checks the arena (64-byte aligned, at least {1}_ARENA_BYTES) and that the
 * pack was written for this code, then zeroes the arena's {1}_ARENA_BYTES.
 * The source and arena must outlive the model. */
kiln_status {0}_open({0}_model *m, const kiln_pack_source *src, void *arena,
                     size_t arena_bytes);
/* Appends n tokens (any n up to the free context), in chunks of
 * {1}_PREFILL_CHUNK. If logits is not NULL it receives n rows of {1}_VOCAB floats;
 * with NULL no logits are computed. */
kiln_status {0}_prefill({0}_model *m, const int32_t *tokens, int32_t n, float *logits);
/* As prefill, but logits (not NULL) receives only the last token's {1}_VOCAB
 * floats, and the output head runs on that token alone. */
kiln_status {0}_prefill_last({0}_model *m, const int32_t *tokens, int32_t n, float *logits);
/* Appends one token; logits (may be NULL) receives {1}_VOCAB floats. */
kiln_status {0}_decode({0}_model *m, int32_t token, float *logits);
/* The tokenizer over the vocabulary in the pack of an open model. */
kiln_status {0}_tokenizer(const {0}_model *m, kiln_tokenizer *t);
/* Empties the KV cache. */
void {0}_reset({0}_model *m);
/* Context shift: keeps the first `keep` tokens, drops the next `drop`, moves
 * the rest down (their keys turned back by drop positions), so generation can
 * go on in the same arena. KILN_ERR_ARGUMENT when keep + drop passes the
 * tokens in the cache, or a sliding window would then reach back to the kept
 * tokens in a ring that has wrapped. */
kiln_status {0}_shift({0}_model *m, int32_t keep, int32_t drop);
/* The workers that run split kernels (a copy is kept); NULL or a zeroed one:
 * everything on the calling thread. Not while a call on m runs. */
void {0}_set_workers({0}_model *m, const kiln_workers *workers);
void {0}_close({0}_model *m);

extern const kiln_model_api {0}_api;

/* Defined in {0}_weights.c when compiled with --weights=embed: the whole pack,
 * for kiln_pack_source_from_memory. */
extern const uint8_t {0}_pack_bytes[{1}_PACK_BYTES];

#ifdef __cplusplus
}
#endif

#endif /* {1}_H */
)c",
                 m.name, m.upper, m.arenaBytes, m.kvBytes, m.fileBytes, m.packHash,
                 m.config.getNVocab(), m.config.getMaxContext(), m.config.getPrefillChunk(),
                 m.config.getBos(), m.config.getEos(), sites, m.vocabOffset, m.vocabBytes,
                 m.threads,
                 m.threads > 1 ? "  kiln_workers workers;             /* see set_workers */\n"
                               : "",
                 m.config.getKvWindow());
}

/// `shift_cache(m, keep, drop)` and `shift_fits(m, keep, drop)`: the context
/// shift of every layer's cache, read off the decode function: a kernel per
/// cache shape moves each block (a head's rows when head-major) with the
/// library's kv_shift_block and turns the moved keys back; a wrapped ring with
/// a window refuses a shift after which the window would reach back to kept
/// tokens (their rows were overwritten).
FailureOr<std::string> shiftText(func::FuncOp decode, const TargetDescription &target,
                                 const ModelInfo &info,
                                 std::map<std::string, KernelCall> &kernels) {
  std::string moves, fits;
  for (auto cache : decode.getBody().front().getOps<KvCacheOp>()) {
    if (cache.getKind() != CacheKind::key)
      continue;
    Operation *writer = *cache->getUsers().begin();
    KvCacheOp values;
    int64_t window = 0;
    for (Operation &op : decode.getBody().front()) {
      if (auto v = dyn_cast<KvCacheOp>(op))
        if (v.getKind() == CacheKind::value && v.getLayer() == cache.getLayer())
          values = v;
      if (auto a = dyn_cast<AttentionOp>(op))
        if (a.getKeys().getDefiningOp() == writer && a.getWindow())
          window = *a.getWindow();
    }
    if (!values) {
      cache.emitOpError("has no value cache");
      return failure();
    }
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
    shift.body = formatv(R"c(  int32_t h, r0, r1;
  for (h = 0; h < {0}; ++h)
    kv_shift_block(k + (size_t)h * {1}u, v + (size_t)h * {1}u, {2}u, {3}, {4}, {5}, pos, keep,
                   drop);
  kv_shift_turned({4}, {3}, pos, keep, drop, &r0, &r1);
  {6}(k, r0, r1, -drop);
)c",
                         heads, blockBytes, rowBytes, rows, ring ? 1 : 0, tiledHd, rerope->name)
                     .str();
    kernels.try_emplace(shift.name, shift);
    moves += formatv("  {0}(m->arena + {1}u, m->arena + {2}u, m->pos, keep, drop); /* layer {3} */\n",
                     shift.name, slotOffset(cache), slotOffset(values), cache.getLayer());
    if (ring)
      fits += formatv("  if (m->pos > {0} && m->pos - drop - {1} + 1 < keep)\n    return 0;\n",
                      rows, window);
  }
  return formatv(R"c(/* Whether every windowed ring can shift: after it, no window may reach back
 * to the kept tokens (their rows were overwritten). */
static int shift_fits(const {0}_model *m, int32_t keep, int32_t drop) {{
{1}  (void)m, (void)keep, (void)drop;
  return 1;
}

static void shift_cache({0}_model *m, int32_t keep, int32_t drop) {{
{2}}

)c",
                 info.name, fits, moves)
      .str();
}

std::string scheduleApiText(const ModelInfo &m,
                            int64_t prefillLogits, int64_t decodeLogits,
                            const IsaVariant &isa) {
  // Refuse to run kernels the CPU cannot execute (GCC and Clang on x86).
  std::string check = isa.cpuCheck();
  std::string cpuCheck =
      !check.empty() ? formatv("#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))\n"
                               "  if (!({0}))\n    return KILN_ERR_CPU;\n#endif\n",
                               check)
                           .str()
                     : "";
  return formatv(R"c(static kiln_status check_tokens(const int32_t *tokens, int32_t n) {{
  int32_t i;
  for (i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= {1}_VOCAB)
      return KILN_ERR_ARGUMENT;
  return KILN_OK;
}

kiln_status {0}_open({0}_model *m, const kiln_pack_source *src, void *arena,
                     size_t arena_bytes) {{
  static const kiln_pack_expect expect = {{{1}_MODEL_HASH, {1}_PACK_BYTES, {2}u, {3}u};
  kiln_status s;
  if (!m || !src)
    return KILN_ERR_ARGUMENT;
  m->weights = NULL;
  m->arena = NULL;
  m->source = NULL;
  m->pos = 0;
  m->cold = 1;
#ifdef KILN_PROFILE
  memset(m->site_time, 0, sizeof m->site_time);
  memset(m->site_calls, 0, sizeof m->site_calls);
#endif
{7}{6}  s = kiln_arena_check(arena, arena_bytes, {1}_ARENA_BYTES);
  if (s != KILN_OK)
    return s;
  s = kiln_pack_verify(src, &expect, &m->weights);
  if (s != KILN_OK)
    return s;
  /* Every page of the arena written now, so no step waits for the system to
   * commit one (a fresh KV cache row every few tokens would). */
  memset(arena, 0, {1}_ARENA_BYTES);
  m->arena = (uint8_t *)arena;
  m->source = src;
  return KILN_OK;
}

/* In chunks; the output head runs on every row (all_rows), only on the last
 * token, or not at all when logits is NULL. */
static kiln_status prefill_chunks({0}_model *m, const int32_t *tokens, int32_t n,
                                  float *logits, int all_rows) {{
  int32_t done, rows, head;
  kiln_status s;
  if (!m || !m->arena || !tokens || n <= 0)
    return KILN_ERR_ARGUMENT;
  s = check_tokens(tokens, n);
  if (s != KILN_OK)
    return s;
  if (n > {1}_MAX_CONTEXT - m->pos)
    return KILN_ERR_CONTEXT_FULL;
  for (done = 0; done < n; done += rows) {{
    rows = n - done < {1}_PREFILL_CHUNK ? n - done : {1}_PREFILL_CHUNK;
    head = !logits ? 0 : all_rows ? rows : done + rows == n ? 1 : 0;
    run_prefill(m, tokens + done, rows, m->pos, head);
    m->cold = 0;
    if (head)
      memcpy(all_rows ? logits + (size_t)done * {1}_VOCAB : logits, m->arena + {4}u,
             (size_t)head * {1}_VOCAB * sizeof(float));
    m->pos += rows;
  }
  return KILN_OK;
}

kiln_status {0}_prefill({0}_model *m, const int32_t *tokens, int32_t n, float *logits) {{
  return prefill_chunks(m, tokens, n, logits, 1);
}

kiln_status {0}_prefill_last({0}_model *m, const int32_t *tokens, int32_t n, float *logits) {{
  return prefill_chunks(m, tokens, n, logits, 0);
}

kiln_status {0}_decode({0}_model *m, int32_t token, float *logits) {{
  kiln_status s;
  if (!m || !m->arena)
    return KILN_ERR_ARGUMENT;
  s = check_tokens(&token, 1);
  if (s != KILN_OK)
    return s;
  if (m->pos >= {1}_MAX_CONTEXT)
    return KILN_ERR_CONTEXT_FULL;
  run_decode(m, &token, 1, m->pos, 1);
  m->cold = 0;
  if (logits)
    memcpy(logits, m->arena + {5}u, {1}_VOCAB * sizeof(float));
  m->pos += 1;
  return KILN_OK;
}

kiln_status {0}_tokenizer(const {0}_model *m, kiln_tokenizer *t) {{
  if (!m || !m->weights)
    return KILN_ERR_ARGUMENT;
  return kiln_tokenizer_init(t, m->weights + {1}_VOCAB_SEGMENT_OFFSET,
                             {1}_VOCAB_SEGMENT_BYTES);
}

void {0}_reset({0}_model *m) {{
  if (m)
    m->pos = 0;
}

kiln_status {0}_shift({0}_model *m, int32_t keep, int32_t drop) {{
  if (!m || !m->arena || keep < 0 || drop < 0 || drop > m->pos - keep ||
      !shift_fits(m, keep, drop))
    return KILN_ERR_ARGUMENT;
  if (drop == 0)
    return KILN_OK;
  shift_cache(m, keep, drop);
  m->pos -= drop;
  return KILN_OK;
}

void {0}_set_workers({0}_model *m, const kiln_workers *workers) {{
{8}}

void {0}_close({0}_model *m) {{
  if (m) {{
    m->weights = NULL;
    m->arena = NULL;
    m->source = NULL;
    m->pos = 0;
  }
}

static kiln_status api_open(void *m, const kiln_pack_source *src, void *arena,
                            size_t arena_bytes) {{
  return {0}_open(({0}_model *)m, src, arena, arena_bytes);
}
static kiln_status api_prefill(void *m, const int32_t *tokens, int32_t n, float *logits) {{
  return {0}_prefill(({0}_model *)m, tokens, n, logits);
}
static kiln_status api_prefill_last(void *m, const int32_t *tokens, int32_t n, float *logits) {{
  return {0}_prefill_last(({0}_model *)m, tokens, n, logits);
}
static kiln_status api_decode(void *m, int32_t token, float *logits) {{
  return {0}_decode(({0}_model *)m, token, logits);
}
static int32_t api_position(const void *m) {{ return ((const {0}_model *)m)->pos; }
static kiln_status api_tokenizer(const void *m, kiln_tokenizer *t) {{
  return {0}_tokenizer((const {0}_model *)m, t);
}
static void api_reset(void *m) {{ {0}_reset(({0}_model *)m); }
static kiln_status api_shift(void *m, int32_t keep, int32_t drop) {{
  return {0}_shift(({0}_model *)m, keep, drop);
}
static void api_set_workers(void *m, const kiln_workers *w) {{
  {0}_set_workers(({0}_model *)m, w);
}
static void api_close(void *m) {{ {0}_close(({0}_model *)m); }

const kiln_model_api {0}_api = {{
    "{0}", sizeof({0}_model), {1}_ARENA_BYTES, {1}_PACK_BYTES, {1}_VOCAB,
    {1}_MAX_CONTEXT, {1}_PREFILL_CHUNK, {1}_BOS, {1}_EOS, {1}_THREADS,
    api_open, api_prefill, api_prefill_last, api_decode, api_position, api_tokenizer,
    api_reset, api_shift, api_set_workers, api_close};
)c",
                 m.name, m.upper, m.dataOffset, m.dataBytes, prefillLogits,
                 decodeLogits, cpuCheck,
                 m.threads > 1 ? "  m->workers.parallel_for = NULL;\n  m->workers.pool = NULL;\n" : "",
                 m.threads > 1 ? "  if (m) {\n    m->workers.parallel_for = workers ? workers->parallel_for : NULL;\n"
                                 "    m->workers.pool = workers ? workers->pool : NULL;\n  }\n"
                               : "  (void)m;\n  (void)workers; /* compiled for one thread */\n");
}

/// Byte range of every decoder layer in the pack file, for prefetching.
std::string layerTableText(ModuleOp module, const ModelInfo &m) {
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
  std::string rows;
  for (auto [index, range] : layers)
    rows += formatv("    {{{0}u, {1}u},\n", m.dataOffset + range.first,
                    range.second - range.first);
  if (layers.empty())
    rows = "    {0u, 0u},\n";
  return formatv(R"c(/* Hosted builds map the pack and, on the first step after open, ask for a
 * layer's pages before it runs. Later steps ask nothing: a hint per layer and
 * token is a system call that walks every page of the layer (a tenth of model
 * A's decode time), and the pages it asked for are resident by then. */
#ifdef KILN_NO_MMAP
static void prefetch_layer(const {0}_model *m, int32_t layer) {{
  (void)m;
  (void)layer;
}
#else
/* File offset and size of each decoder layer's weights. */
static const uint64_t layer_range[][2] = {{
{1}};

static void prefetch_layer(const {0}_model *m, int32_t layer) {{
  if (m->cold && layer >= 0 && layer < (int32_t)(sizeof layer_range / sizeof layer_range[0]))
    kiln_pack_source_prefetch(m->source, layer_range[layer][0], layer_range[layer][1]);
}
#endif

)c",
                 m.name, rows);
}

std::string cmakeText(const ModelInfo &m, bool embedWeights, const IsaVariant &isa) {
  std::string flags = *isa.compileOptions
                          ? formatv("# Kernels for {0}.\ntarget_compile_options({1} PRIVATE {2})\n",
                                    isa.name, m.name, isa.compileOptions)
                                .str()
                          : "";
  return formatv(R"cm(# Generated by kiln-compile: builds model {0} as a static library and, on a
# hosted system, the kiln-generate program. Vendor this folder as it is.
cmake_minimum_required(VERSION 3.13)
project({0} C)

option(KILN_HOSTED "Build the mmap pack loader and kiln-generate" ON)
option(KILN_PROFILE "Time every kernel call (kiln-generate prints the profile)" OFF)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
set(CMAKE_C_STANDARD 99)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)

set(runtime_sources runtime/src/status.c runtime/src/pack.c runtime/src/tokenizer.c
  runtime/src/sampler.c)
if(KILN_HOSTED)
  list(APPEND runtime_sources runtime/src/pack_file.c)
endif()
{4}add_library(kiln_runtime STATIC ${{runtime_sources})
target_include_directories(kiln_runtime PUBLIC ${{CMAKE_CURRENT_SOURCE_DIR}/runtime/include)
target_link_libraries(kiln_runtime PUBLIC m)
{5}
add_library({0} STATIC {0}.c {0}_kernels.c{2})
target_include_directories({0} PUBLIC ${{CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries({0} PUBLIC kiln_runtime m)
# Every float operation rounded as written: a kernel gives the same bits
# wherever it is inlined (fused or not, split over threads or not).
if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options({0} PRIVATE -ffp-contract=off)
endif()
{3}if(NOT KILN_HOSTED)
  target_compile_definitions({0} PRIVATE KILN_NO_MMAP)
endif()
if(KILN_PROFILE)
  target_compile_definitions({0} PUBLIC KILN_PROFILE)
endif()

if(KILN_HOSTED)
  add_executable(kiln-generate samples/generate/kiln_generate.c)
  target_compile_definitions(kiln-generate PRIVATE
    KILN_MODEL_HEADER="{0}.h" KILN_MODEL_API={0}_api KILN_MODEL_TYPE={0}_model
    KILN_ARENA_BYTES={1}_ARENA_BYTES KILN_VOCAB={1}_VOCAB
    KILN_MAX_CONTEXT={1}_MAX_CONTEXT KILN_PREFILL_CHUNK={1}_PREFILL_CHUNK
    KILN_DEFAULT_PACK="{0}.kpack" KILN_PROFILE_SITES={1}_PROFILE_SITES KILN_THREADS={1}_THREADS
    KILN_PROFILE_NAMES={0}_profile_sites KILN_PROFILE_WEIGHT_BYTES={0}_profile_weight_bytes)
  target_link_libraries(kiln-generate PRIVATE {0})
endif()
)cm",
                 m.name, m.upper, embedWeights ? " " + m.name + "_weights.c" : "", flags,
                 m.threads > 1 ? "# Split kernels: the pthread pool for hosted builds.\n"
                                 "if(KILN_HOSTED)\n"
                                 "  list(APPEND runtime_sources runtime/src/pool.c)\n"
                                 "  find_package(Threads REQUIRED)\n"
                                 "endif()\n"
                               : "",
                 m.threads > 1 ? "if(KILN_HOSTED)\n"
                                 "  target_link_libraries(kiln_runtime PUBLIC Threads::Threads)\n"
                                 "endif()\n"
                               : "");
}

/// `<name>_weights.c`: the pack bytes as a const array. Decimal, 32 per line,
/// keeps the file about 3.6 bytes per pack byte and quick for C compilers.
LogicalResult writeEmbeddedWeights(Operation *where, StringRef outDir,
                                   const ModelInfo &m) {
  llvm::SmallString<256> packPath(outDir), path(outDir);
  llvm::sys::path::append(packPath, m.name + ".kpack");
  llvm::sys::path::append(path, m.name + "_weights.c");
  auto pack = llvm::MemoryBuffer::getFile(packPath, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!pack)
    return where->emitError() << packPath << ": " << pack.getError().message();
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return where->emitError() << path << ": " << ec.message();
  os << formatv(R"c(/* Generated by kiln-compile: the pack of model {0} as constant data, for
 * flash or execute-in-place. Define KILN_WEIGHTS_SECTION to place it in a
 * linker section. */
#include "{0}.h"

#if defined(__GNUC__)
#ifdef KILN_WEIGHTS_SECTION
#define KILN_WEIGHTS_PLACEMENT __attribute__((aligned(64), section(KILN_WEIGHTS_SECTION)))
#else
#define KILN_WEIGHTS_PLACEMENT __attribute__((aligned(64)))
#endif
#else
#define KILN_WEIGHTS_PLACEMENT
#endif

const uint8_t {0}_pack_bytes[{1}_PACK_BYTES] KILN_WEIGHTS_PLACEMENT = {{
)c",
                m.name, m.upper);
  llvm::StringRef bytes = (*pack)->getBuffer();
  for (size_t i = 0; i < bytes.size(); ++i) {
    os << unsigned(uint8_t(bytes[i])) << ',';
    if (i % 32 == 31)
      os << '\n';
  }
  os << "};\n";
  return success();
}

} // namespace

LogicalResult kiln::emitC(ModuleOp module, const TargetDescription &target, StringRef outDir,
                          bool embedWeights) {
  ModelInfo info;
  info.name = module.getSymName() ? module.getSymName()->str() : "model";
  info.upper = llvm::StringRef(info.name).upper();
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

  std::string source =
      formatv("/* Generated by kiln-compile for model {0}: the schedule. Every "
              "buffer is at a\n * fixed arena offset and every weight at a fixed pack "
              "offset. */\n#include \"{0}.h\"\n#include \"{0}_kernels.h\"\n\n"
              "#include <string.h>\n\n",
              info.name);
  std::string sites, siteBytes;
  for (const std::string &label : emitter.sites())
    sites += formatv("    \"{0}\",\n", label);
  for (int64_t bytes : emitter.siteWeightBytes())
    siteBytes += formatv("    {0}u,\n", bytes);
  source += formatv(R"c(/* KILN_PROFILE builds time every kernel call with the caller's clock. */
#ifdef KILN_PROFILE
#define KILN_TIMED(site, call)                                                   \
  do {{                                                                          \
    uint64_t start_ = m->clock();                                               \
    call;                                                                        \
    m->site_time[site] += m->clock() - start_;                                  \
    m->site_calls[site] += 1;                                                   \
  } while (0)
#else
#define KILN_TIMED(site, call) call
#endif

const char *const {0}_profile_sites[{1}_PROFILE_SITES] = {{
{2}};

const uint64_t {0}_profile_weight_bytes[{1}_PROFILE_SITES] = {{
{3}};

)c",
                    info.name, info.upper, sites, siteBytes);
  if (info.threads > 1)
    source += formatv(R"c(/* What the schedule hands a split kernel's shares. */
typedef struct run_args {{
  const uint8_t *w;
  uint8_t *a;
  const int32_t *tokens;
  int32_t rows, pos, head_rows;
} run_args;

/* A site function sees the schedule's names. */
#define KILN_SITE_SCOPE(ctx)                                                     \
  const run_args *args_ = (const run_args *)(ctx);                              \
  const uint8_t *w = args_->w;                                                  \
  uint8_t *a = args_->a;                                                        \
  const int32_t *tokens = args_->tokens;                                        \
  int32_t rows = args_->rows, pos = args_->pos, head_rows = args_->head_rows;   \
  (void)w, (void)a, (void)tokens, (void)rows, (void)pos, (void)head_rows

/* Shares 0..{1}_THREADS-1 of a split kernel: on the workers when it has enough
 * work, else all of them here. Every output is the same either way. */
static void run_shares(const {0}_model *m, kiln_task_fn fn, run_args *ctx, int parallel) {{
  if (parallel && m->workers.parallel_for)
    m->workers.parallel_for(m->workers.pool, fn, ctx, {1}_THREADS);
  else
    fn(ctx, 0, {1}_THREADS);
}

{2})c",
                      info.name, info.upper, emitter.sitesText());
  FailureOr<std::string> shift =
      shiftText(module.lookupSymbol<func::FuncOp>("decode"), target, info, kernels);
  if (failed(shift))
    return failure();
  source += layerTableText(module, info) + schedule + *shift +
            scheduleApiText(info, logits[0], logits[1], target.isaVariant());

  std::string decls = formatv("/* Generated by kiln-compile: kernels of model {0}. */\n"
                              "#ifndef {1}_KERNELS_H\n#define {1}_KERNELS_H\n\n"
                              "#include <stdint.h>\n\n",
                              info.name, info.upper);
  std::string bodies;
  for (auto &[name, k] : kernels) {
    decls += formatv("void {0}({1});\n", name, k.params);
    bodies += formatv("void {0}({1}) {{\n{2}}\n\n", name, k.params, k.body);
  }
  decls += formatv("\n#endif /* {0}_KERNELS_H */\n", info.upper);
  // The micro-kernel library: the ISA's header first, so that the portable one
  // leaves out the helpers it replaces.
  const char *isaHeader = target.isaVariant().header;
  std::string kernelSource =
      formatv("/* Generated by kiln-compile for target {0}: every dimension is a "
              "constant. */\n#include \"{1}_kernels.h\"\n\n{2}"
              "#include \"kernels/c99/kiln_uk_c99.h\"\n\n",
              target.name(), info.name,
              *isaHeader ? formatv("#include \"{0}\"\n", isaHeader).str() : "");
  kernelSource += bodies;

  Operation *where = module;
  if (failed(writeFile(where, outDir, info.name + ".h", headerText(info, emitter.sites().size()))) ||
      failed(writeFile(where, outDir, info.name + ".c", source)) ||
      failed(writeFile(where, outDir, info.name + "_kernels.h", decls)) ||
      failed(writeFile(where, outDir, info.name + "_kernels.c", kernelSource)) ||
      failed(writeFile(where, outDir, "CMakeLists.txt", cmakeText(info, embedWeights, target.isaVariant()))))
    return failure();
  if (embedWeights && failed(writeEmbeddedWeights(where, outDir, info)))
    return failure();
  for (const EmbeddedFile &f : kEmbeddedFiles)
    if (failed(writeFile(where, outDir, f.path, f.text)))
      return failure();
  return success();
}
