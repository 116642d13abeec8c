//===- ReportJson.cpp - the numbers of report.json ------------------------===//
//
// reportJson: the sizes, every function's memory plan, every weight, and the
// work of a decode step with what the roofline predicts for it.
//
//===----------------------------------------------------------------------===//

#include "compiler/report/Report.h"
#include "compiler/report/Roofline.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kiln;
namespace json = llvm::json;

namespace {

int64_t value(IntegerAttr a) { return a ? a.getInt() : 0; }

/// One function's memory plan: a buffer per op result that plan-memory gave a
/// slot (live from its op to its last use) and per scratch slot (live during
/// its op), the step where the arena's used top is highest, and the bounds.
json::Object functionPlan(func::FuncOp fn) {
  Block &block = fn.getBody().front();
  llvm::DenseMap<Operation *, int64_t> step;
  for (Operation &op : block)
    step[&op] = int64_t(step.size());
  const int64_t steps = int64_t(step.size());
  json::Array buffers;
  std::vector<int64_t> top(size_t(steps), 0);
  auto add = [&](Operation &op, SlotAttr slot, int64_t first, int64_t last, bool scratch) {
    buffers.push_back(json::Object{{"op", op.getName().getStringRef()},
                                   {"offset", slot.getOffset()},
                                   {"bytes", slot.getBytes()},
                                   {"first", first},
                                   {"last", last},
                                   {"scratch", scratch}});
    for (int64_t s = first; s <= last && s < steps; ++s)
      top[size_t(s)] = std::max(top[size_t(s)], slot.getOffset() + slot.getBytes());
  };
  for (Operation &op : block) {
    if (isa<KvCacheOp, KvWriteOp>(op))
      continue;
    if (SlotAttr slot = getSlotAttr(&op)) {
      int64_t last = step[&op];
      for (Operation *user : op.getResult(0).getUsers())
        last = std::max(last, isa<func::ReturnOp>(user) ? steps - 1 : step[user]);
      add(op, slot, step[&op], last, false);
    }
    if (SlotAttr slot = getScratchAttr(&op))
      add(op, slot, step[&op], step[&op], true);
  }
  int64_t peak = 0;
  for (int64_t s = 1; s < steps; ++s)
    if (top[size_t(s)] > top[size_t(peak)])
      peak = s;
  return json::Object{{"name", fn.getSymName()},
                      {"activation_bytes", value(getActivationBytesAttr(fn))},
                      {"activation_lower_bound", value(getActivationLowerBoundAttr(fn))},
                      {"steps", steps},
                      {"peak_step", peak},
                      {"buffers", std::move(buffers)}};
}

/// The Workload of the module's decode function.
Workload workloadOf(ModuleOp module, const PackInfo &pack) {
  Workload w;
  llvm::StringMap<uint64_t> packed;
  for (const TensorReport &t : pack.tensors)
    packed[t.name] = t.bytes;
  llvm::StringSet<> seen;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.getSymName() == "prefill")
      w.chunk = cast<RankedTensorType>(fn.getArgumentTypes()[0]).getDimSize(0);
    if (fn.getSymName() != "decode")
      continue;
    fn.walk([&](Operation *op) {
      if (auto a = dyn_cast<AttentionOp>(op))
        w.attentionMacsPerPosition += 2.0 * double(a.getNHead()) * double(a.getHeadDim());
      if (auto c = dyn_cast<KvCacheOp>(op))
        w.capacity = c.getType().getDimSize(0);
      if (!isMatmulKernel(op))
        return;
      for (Value operand : op->getOperands()) {
        auto weight = operand.getDefiningOp<WeightOp>();
        if (!weight || weight.getType().getRank() != 2 || !seen.insert(weight.getName()).second)
          continue;
        auto it = packed.find(weight.getName());
        double bytes = it != packed.end() ? double(it->second)
                                          : double(getStorageBytes(weight.getType()));
        w.weightBytes += bytes;
        if (isQuantizedType(weight.getType().getElementType()))
          w.quantizedBytes += bytes;
        w.macs += double(weight.getType().getDimSize(0)) * double(weight.getType().getDimSize(1));
      }
    });
  }
  w.kvBytesPerPosition = double(value(getKvBytesAttr(module))) / double(std::max<int64_t>(w.capacity, 1));
  return w;
}

} // namespace

json::Value kiln::reportJson(ModuleOp module, const PackInfo &pack, llvm::StringRef name,
                             llvm::StringRef target, const Device *extra,
                             const CodeMeasure *code) {
  uint64_t weights = 0;
  json::Array tensors;
  for (const TensorReport &t : pack.tensors) {
    weights += t.bytes;
    tensors.push_back(json::Object{{"name", t.name},
                                   {"format", t.format},
                                   {"bytes", int64_t(t.bytes)},
                                   {"rms_error", t.converted ? json::Value(t.rmsError) : nullptr}});
  }
  json::Array scaled;
  for (const ScaledInput &s : pack.scaledInputs)
    scaled.push_back(json::Object{
        {"norm", s.norm}, {"alpha", s.alpha}, {"output_error_ratio", s.errorRatio}});
  const int64_t arena = value(getArenaBytesAttr(module)), kv = value(getKvBytesAttr(module));
  json::Array functions;
  for (auto fn : module.getOps<func::FuncOp>())
    functions.push_back(functionPlan(fn));
  const Workload work = workloadOf(module, pack);
  json::Array predictions;
  for (const Device &d : deviceTable())
    predictions.push_back(predict(work, d));
  if (extra && llvm::none_of(deviceTable(), [&](const Device &d) { return d.name == extra->name; }))
    predictions.push_back(predict(work, *extra));
  return json::Object{{"model", name},
                      {"target", target},
                      {"sizes", json::Object{{"pack_bytes", int64_t(pack.fileSize)},
                                             {"weights_bytes", int64_t(weights)},
                                             {"arena_bytes", arena},
                                             {"kv_bytes", kv},
                                             {"activation_bytes", arena - kv}}},
                      {"code", code && !code->compiler.empty()
                                   ? json::Value(json::Object{
                                         {"compiler", code->compiler},
                                         {"model_text_bytes", code->modelText},
                                         {"runtime_text_bytes", code->runtimeText},
                                         {"stack_bound_bytes",
                                          code->stackBytes < 0 ? json::Value(nullptr)
                                                               : json::Value(code->stackBytes)},
                                         {"stack_entry", code->stackEntry}})
                                   : json::Value(json::Object{
                                         {"note", code ? code->note : "not measured"}})},
                      {"functions", std::move(functions)},
                      {"tensors", std::move(tensors)},
                      {"activation_scales", std::move(scaled)},
                      {"workload", json::Object{{"weight_bytes", work.weightBytes},
                                                {"quantized_bytes", work.quantizedBytes},
                                                {"macs", work.macs},
                                                {"kv_bytes_per_position", work.kvBytesPerPosition},
                                                {"attention_macs_per_position",
                                                 work.attentionMacsPerPosition},
                                                {"capacity", work.capacity},
                                                {"prefill_chunk", work.chunk}}},
                      {"predictions", std::move(predictions)}};
}
