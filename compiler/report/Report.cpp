//===- Report.cpp - report.json and report.html of a compile -------------===//

#include "compiler/report/Report.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include <functional>
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

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

std::string escape(llvm::StringRef s) {
  std::string out;
  for (char c : s)
    out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : c == '"' ? "&quot;"
                                                                             : std::string(1, c);
  return out;
}

int64_t num(const json::Object &o, llvm::StringRef key) {
  return o.getInteger(key).value_or(0);
}

/// The flash and RAM bar: pack, then KV cache and activations of the arena.
void sizesSvg(llvm::raw_ostream &os, const json::Object &sizes) {
  const int64_t pack = num(sizes, "pack_bytes"), arena = num(sizes, "arena_bytes"),
                kv = num(sizes, "kv_bytes");
  const double total = double(std::max<int64_t>(pack + arena, 1)), width = 900.0;
  const struct {
    const char *label, *color;
    int64_t bytes;
  } parts[] = {{"pack (flash)", "#4e79a7", pack},
               {"KV cache (RAM)", "#f28e2b", kv},
               {"activations (RAM)", "#59a14f", arena - kv}};
  os << "<svg id=\"sizes-bar\" width=\"900\" height=\"56\" role=\"img\">\n";
  double x = 0;
  for (const auto &p : parts) {
    double w = width * double(p.bytes) / total;
    os << llvm::formatv("<rect x=\"{0:f1}\" y=\"0\" width=\"{1:f1}\" height=\"28\" "
                        "fill=\"{2}\"><title>{3}: {4} bytes</title></rect>\n",
                        x, w, p.color, p.label, p.bytes);
    os << llvm::formatv("<text x=\"{0:f1}\" y=\"46\" font-size=\"12\">{1}</text>\n", x + 2,
                        p.label);
    x += w;
  }
  os << "</svg>\n";
}

/// A function's buffers over its schedule: steps across, arena offsets down,
/// the KV cache as a band on top and the function's activation region
/// [kv, kv + its peak) below at its own scale; the peak step and the lower
/// bound drawn.
void planSvg(llvm::raw_ostream &os, const json::Object &fn, int64_t kv) {
  const double width = 900.0, band = 36.0, height = 300.0;
  const int64_t steps = std::max<int64_t>(num(fn, "steps"), 1);
  const int64_t region = std::max<int64_t>(num(fn, "activation_bytes"), 1);
  const double dx = width / double(steps), dy = (height - band) / double(region);
  auto y = [&](int64_t offset) { return band + dy * double(offset - kv); };
  const std::string name = fn.getString("name").value_or("").str();
  os << llvm::formatv("<svg class=\"plan\" id=\"plan-{0}\" width=\"900\" height=\"300\" "
                      "role=\"img\">\n",
                      name);
  os << llvm::formatv("<rect class=\"kv\" x=\"0\" y=\"0\" width=\"900\" height=\"{0:f1}\" "
                      "fill=\"#f28e2b\" opacity=\"0.35\"><title>KV cache: {1} bytes at 0</title>"
                      "</rect>\n<text x=\"6\" y=\"22\" font-size=\"12\">KV cache, {1} bytes "
                      "(not to scale)</text>\n",
                      band - 4, kv);
  if (const json::Array *buffers = fn.getArray("buffers"))
    for (const json::Value &v : *buffers) {
      const json::Object &b = *v.getAsObject();
      const int64_t offset = num(b, "offset"), bytes = num(b, "bytes"), first = num(b, "first"),
                    last = num(b, "last");
      const bool scratch = b.getBoolean("scratch").value_or(false);
      os << llvm::formatv(
          "<rect class=\"buffer\" x=\"{0:f2}\" y=\"{1:f2}\" width=\"{2:f2}\" height=\"{3:f2}\" "
          "fill=\"{4}\" stroke=\"#333\" stroke-width=\"0.3\"><title>{5}{6}: {7} bytes at {8}, "
          "steps {9}-{10}</title></rect>\n",
          dx * double(first), y(offset), dx * double(last - first + 1),
          std::max(dy * double(bytes), 0.5), scratch ? "#bab0ac" : "#59a14f",
          escape(b.getString("op").value_or("")), scratch ? " scratch" : "", bytes, offset,
          first, last);
    }
  const double peak = dx * (double(num(fn, "peak_step")) + 0.5);
  os << llvm::formatv("<line class=\"peak\" x1=\"{0:f2}\" y1=\"0\" x2=\"{0:f2}\" y2=\"300\" "
                      "stroke=\"#e15759\" stroke-width=\"1.5\"><title>peak step {1}</title>"
                      "</line>\n",
                      peak, num(fn, "peak_step"));
  os << llvm::formatv("<line class=\"lower-bound\" x1=\"0\" y1=\"{0:f2}\" x2=\"900\" "
                      "y2=\"{0:f2}\" stroke=\"#000\" stroke-dasharray=\"6 4\"><title>lower "
                      "bound: {1} bytes of activations</title></line>\n",
                      y(kv + num(fn, "activation_lower_bound")) - 1,
                      num(fn, "activation_lower_bound"));
  os << "</svg>\n";
}

// Sorts a table by the clicked column: numbers as numbers, text as text.
const char *kSortScript = R"js(
for (const th of document.querySelectorAll("table.sortable th")) {
  th.addEventListener("click", () => {
    const table = th.closest("table"), body = table.tBodies[0];
    const col = Array.from(th.parentNode.children).indexOf(th);
    const up = th.dataset.order !== "up";
    th.dataset.order = up ? "up" : "down";
    const key = (tr) => tr.children[col].dataset.value ?? tr.children[col].textContent;
    const rows = Array.from(body.rows).sort((a, b) => {
      const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      const c = isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny;
      return up ? c : -c;
    });
    for (const r of rows) body.appendChild(r);
  });
}
)js";

void predictionsHtml(llvm::raw_ostream &os, const json::Object &r);

void writeHtml(llvm::raw_ostream &os, const json::Object &r) {
  const json::Object &sizes = *r.getObject("sizes");
  const int64_t kv = num(sizes, "kv_bytes");
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  os << "<title>Kiln report: " << escape(r.getString("model").value_or("")) << "</title>\n";
  os << "<style>body{font-family:sans-serif;margin:24px;max-width:960px}"
        "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;"
        "padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
        "th{background:#eee;cursor:pointer}svg{border:1px solid #ddd;margin:4px 0}</style>\n";
  os << "</head><body>\n";
  os << "<h1>" << escape(r.getString("model").value_or("")) << " for "
     << escape(r.getString("target").value_or("")) << "</h1>\n";
  os << "<h2>Sizes</h2>\n<table id=\"sizes\"><tbody>\n";
  for (const char *key : {"pack_bytes", "weights_bytes", "arena_bytes", "kv_bytes",
                          "activation_bytes"})
    os << llvm::formatv("<tr><td>{0}</td><td>{1}</td></tr>\n", key, num(sizes, key));
  if (const json::Object *code = r.getObject("code")) {
    if (code->getString("compiler")) {
      os << llvm::formatv("<tr><td>model_text_bytes</td><td>{0}</td></tr>\n"
                          "<tr><td>runtime_text_bytes</td><td>{1}</td></tr>\n",
                          num(*code, "model_text_bytes"), num(*code, "runtime_text_bytes"));
      std::optional<int64_t> stack = code->getInteger("stack_bound_bytes");
      os << "<tr><td>stack_bound_bytes</td><td>"
         << (stack ? std::to_string(*stack) : std::string("unbounded")) << "</td></tr>\n";
      os << "</tbody></table>\n<p>Machine code and stack as " << escape(*code->getString("compiler"))
         << " builds the folder; the stack bound is the deepest chain of direct calls (from "
         << escape(code->getString("stack_entry").value_or("")) << "), library calls and "
         << "calls through function pointers not counted.</p>\n";
    } else {
      os << "</tbody></table>\n<p>Code size and stack not measured: "
         << escape(code->getString("note").value_or("")) << ".</p>\n";
    }
  } else {
    os << "</tbody></table>\n";
  }
  sizesSvg(os, sizes);
  os << "<h2>Memory plan</h2>\n<p>One bar per buffer over the schedule's steps (across) at "
        "its arena offset (down; scratch grey), below the KV cache; the peak step in red, "
        "the lower bound of the activations dashed.</p>\n";
  if (const json::Array *fns = r.getArray("functions"))
    for (const json::Value &v : *fns) {
      const json::Object &fn = *v.getAsObject();
      os << llvm::formatv("<h3>@{0}: {1} bytes of activations (lower bound {2}), peak at "
                          "step {3} of {4}</h3>\n",
                          fn.getString("name").value_or(""), num(fn, "activation_bytes"),
                          num(fn, "activation_lower_bound"), num(fn, "peak_step"),
                          num(fn, "steps"));
      planSvg(os, fn, kv);
    }
  predictionsHtml(os, r);
  os << "<h2>Weights</h2>\n<table id=\"tensors\" class=\"sortable\"><thead><tr><th>tensor</th>"
        "<th>format</th><th>bytes</th><th>rms error</th></tr></thead><tbody>\n";
  if (const json::Array *tensors = r.getArray("tensors"))
    for (const json::Value &v : *tensors) {
      const json::Object &t = *v.getAsObject();
      std::optional<double> err = t.getNumber("rms_error");
      os << llvm::formatv("<tr><td>{0}</td><td>{1}</td><td>{2}</td><td data-value=\"{3}\">{4}"
                          "</td></tr>\n",
                          escape(t.getString("name").value_or("")),
                          escape(t.getString("format").value_or("")), num(t, "bytes"),
                          err ? llvm::formatv("{0:e3}", *err).str() : "-1",
                          err ? llvm::formatv("{0:e3}", *err).str() : "as stored");
    }
  os << "</tbody></table>\n<script>" << kSortScript << "</script>\n</body></html>\n";
}

/// What one decode step reads and computes, from the kernel IR: the bytes of
/// every weight a matmul kernel reads (each once), the multiply-adds of those
/// weights, the KV cache bytes and attention multiply-adds per position of
/// context, the cache's capacity and the prefill chunk.
struct Workload {
  double weightBytes = 0, quantizedBytes = 0, macs = 0, kvBytesPerPosition = 0,
         attentionMacsPerPosition = 0;
  int64_t capacity = 1, chunk = 1;
};

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

/// The roofline: a step takes the longer of its bytes over the bandwidth (the
/// cache's when they fit in it) and its operations over the peak (int8 when
/// most weight bytes are quantized).
json::Object predict(const Workload &w, const Device &d) {
  const double peak = (w.quantizedBytes * 2 > w.weightBytes ? d.int8Gops : d.fmaGFlops) * 1e9;
  auto seconds = [&](double bytes, double ops, const char **bound) {
    const double bw = (bytes <= d.cacheBytes ? d.cacheGBs : d.dramGBs) * 1e9;
    const double memory = bytes / bw, compute = ops / peak;
    if (bound)
      *bound = memory >= compute ? "memory" : "compute";
    return std::max(memory, compute);
  };
  auto decode = [&](double context, const char **bound) {
    return 1.0 / seconds(w.weightBytes + w.kvBytesPerPosition * context,
                         2.0 * (w.macs + w.attentionMacsPerPosition * context), bound);
  };
  const char *bound = "memory";
  const double short16 = decode(16, &bound);
  return json::Object{
      {"device", d.name},
      {"description", d.description},
      {"dram_gbs", d.dramGBs},
      {"cache_bytes", d.cacheBytes},
      {"cache_gbs", d.cacheGBs},
      {"fma_gflops", d.fmaGFlops},
      {"int8_gops", d.int8Gops},
      {"decode_tps_16", short16},
      {"decode_bound_16", bound},
      {"decode_tps_max", decode(double(w.capacity), nullptr)},
      {"prefill_tps", 1.0 / seconds(w.weightBytes / double(w.chunk), 2.0 * w.macs, nullptr)}};
}

/// The predictions table of the page.
void predictionsHtml(llvm::raw_ostream &os, const json::Object &r) {
  const json::Object *w = r.getObject("workload");
  os << "<h2>Predicted speed</h2>\n<p>A roofline per device: a decode step reads "
     << llvm::formatv("{0:f0}", w ? w->getNumber("weight_bytes").value_or(0) : 0)
     << " bytes of weights plus "
     << llvm::formatv("{0:f0}", w ? w->getNumber("kv_bytes_per_position").value_or(0) : 0)
     << " bytes of KV cache per position of context, and takes the longer of those bytes "
        "over the device's bandwidth (its cache's when they fit) and its operations over "
        "its int8 (quantized weights) or fp32 peak; prefill reads the weights once per "
     << (w ? w->getInteger("prefill_chunk").value_or(1) : 1)
     << "-token chunk. One core; the figures are the stated assumptions.</p>\n";
  os << "<table id=\"predictions\" class=\"sortable\"><thead><tr><th>device</th>"
        "<th>decode t/s @16</th><th>bound</th><th>decode t/s @max</th><th>prefill t/s</th>"
        "<th>DRAM GB/s</th><th>cache bytes</th><th>cache GB/s</th><th>fp32 GFLOP/s</th>"
        "<th>int8 GOPS</th></tr></thead><tbody>\n";
  if (const json::Array *ps = r.getArray("predictions"))
    for (const json::Value &v : *ps) {
      const json::Object &p = *v.getAsObject();
      auto n = [&](llvm::StringRef key) { return p.getNumber(key).value_or(0); };
      os << llvm::formatv("<tr><td title=\"{0}\">{1}</td><td>{2:f1}</td><td>{3}</td>"
                          "<td>{4:f1}</td><td>{5:f1}</td><td>{6:f1}</td><td>{7:f0}</td>"
                          "<td>{8:f1}</td><td>{9:f1}</td><td>{10:f1}</td></tr>\n",
                          escape(p.getString("description").value_or("")),
                          escape(p.getString("device").value_or("")), n("decode_tps_16"),
                          p.getString("decode_bound_16").value_or(""), n("decode_tps_max"),
                          n("prefill_tps"), n("dram_gbs"), n("cache_bytes"), n("cache_gbs"),
                          n("fma_gflops"), n("int8_gops"));
    }
  os << "</tbody></table>\n";
}

} // namespace

const std::vector<Device> &kiln::deviceTable() {
  // One core each; bandwidths are single-core reads.
  static const std::vector<Device> devices = {
      {"cortex-a76", "Cortex-A76 board core (Raspberry Pi 5 class: 2.4 GHz, 2 x 128-bit NEON, "
                     "LPDDR4X; 2 MiB L3)",
       9.0, 2.0 * 1048576, 40.0, 38.4, 153.6},
      {"cortex-a55", "Cortex-A55 phone core (1.8 GHz, 1 x 128-bit NEON, LPDDR4; 1 MiB L3)", 4.0,
       1048576, 15.0, 14.4, 57.6},
      {"cortex-m7", "Cortex-M7 MCU (STM32H7 class: 480 MHz, one FPU FMA and SMLAD a cycle, "
                    "weights in external SDRAM; 16 KiB D-cache)",
       0.4, 16384, 1.9, 0.96, 1.92},
      {"riscv-rvv", "RISC-V RVV board core (SpacemiT X60 class: 1.6 GHz, VLEN 256; 512 KiB L2)",
       5.0, 524288, 20.0, 25.6, 51.2},
  };
  return devices;
}

llvm::Expected<Device> kiln::findDevice(llvm::StringRef spec) {
  for (const Device &d : deviceTable())
    if (d.name == spec)
      return d;
  std::string names;
  for (const Device &d : deviceTable())
    names += (names.empty() ? "" : ", ") + d.name;
  auto buffer = llvm::MemoryBuffer::getFile(spec);
  if (!buffer)
    return llvm::createStringError(
        "--device=%s: neither a device of the table (%s) nor a readable JSON file",
        spec.str().c_str(), names.c_str());
  llvm::Expected<json::Value> value = json::parse((*buffer)->getBuffer());
  if (!value)
    return llvm::createStringError("%s: not JSON: %s", spec.str().c_str(),
                                   llvm::toString(value.takeError()).c_str());
  const json::Object *o = value->getAsObject();
  auto field = [&](llvm::StringRef key) { return o ? o->getNumber(key) : std::nullopt; };
  if (!field("bandwidth_gbs") || !field("fma_gflops") || !field("int8_gops") ||
      *field("bandwidth_gbs") <= 0 || *field("fma_gflops") <= 0 || *field("int8_gops") <= 0)
    return llvm::createStringError("%s: a device needs positive bandwidth_gbs, fma_gflops "
                                   "and int8_gops",
                                   spec.str().c_str());
  Device d;
  d.name = o->getString("name").value_or("host").str();
  d.description = ("measured: " + spec).str();
  d.dramGBs = *field("bandwidth_gbs");
  d.cacheBytes = field("cache_bytes").value_or(0);
  d.cacheGBs = field("cache_gbs").value_or(d.dramGBs);
  d.fmaGFlops = *field("fma_gflops");
  d.int8Gops = *field("int8_gops");
  return d;
}

std::string kiln::predictionLine(const json::Value &report, llvm::StringRef device) {
  if (const json::Array *ps = report.getAsObject()->getArray("predictions"))
    for (const json::Value &v : *ps) {
      const json::Object &p = *v.getAsObject();
      if (p.getString("device") != device)
        continue;
      return llvm::formatv("predicted on {0}: decode {1:f1} tokens/s at context 16 "
                           "({2}-bound), {3:f1} at {4}; prefill {5:f1} tokens/s",
                           device, p.getNumber("decode_tps_16").value_or(0),
                           p.getString("decode_bound_16").value_or(""),
                           p.getNumber("decode_tps_max").value_or(0),
                           report.getAsObject()->getObject("workload")->getInteger("capacity").value_or(0),
                           p.getNumber("prefill_tps").value_or(0))
          .str();
    }
  return "";
}

namespace {

/// Machine-code bytes of an object file: its executable sections.
int64_t textBytes(llvm::StringRef object) {
  auto file = llvm::object::ObjectFile::createObjectFile(object);
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  int64_t bytes = 0;
  for (const llvm::object::SectionRef &section : file->getBinary()->sections())
    if (section.isText())
      bytes += int64_t(section.getSize());
  return bytes;
}

/// The deepest stack over the call graphs of GCC's .ci files: each function's
/// frame plus its deepest callee's, -1 where a cycle or an unbounded frame is
/// reached. Calls through function pointers are not in the graph.
void stackBound(const std::vector<std::string> &graphs, CodeMeasure &m) {
  llvm::StringMap<int64_t> frame; // -1: unbounded
  llvm::StringMap<std::vector<std::string>> callees;
  llvm::Regex node("node: \\{ title: \"([^\"]+)\" label: \"[^\"]*\\\\n([0-9]+) bytes \\(([a-z,]+)\\)");
  llvm::Regex edge("edge: \\{ sourcename: \"([^\"]+)\" targetname: \"([^\"]+)\"");
  for (const std::string &g : graphs)
    for (llvm::StringRef line : llvm::split(g, '\n')) {
      llvm::SmallVector<llvm::StringRef, 4> f;
      if (node.match(line, &f))
        frame[f[1]] = f[3] == "dynamic" ? -1 : std::stoll(f[2].str());
      else if (edge.match(line, &f))
        callees[f[1]].push_back(f[2].str());
    }
  llvm::StringMap<int64_t> depth;
  llvm::StringSet<> open;
  std::function<int64_t(llvm::StringRef)> deepest = [&](llvm::StringRef fn) -> int64_t {
    auto known = depth.find(fn);
    if (known != depth.end())
      return known->second;
    if (!open.insert(fn).second)
      return -1; // recursion
    auto own = frame.find(fn);
    int64_t below = 0, self = own == frame.end() ? 0 : own->second;
    for (const std::string &callee : callees.lookup(fn)) {
      int64_t d = deepest(callee);
      below = d < 0 || below < 0 ? -1 : std::max(below, d);
    }
    open.erase(fn);
    return depth[fn] = self < 0 || below < 0 ? -1 : self + below;
  };
  m.stackBytes = 0;
  for (const auto &f : frame) {
    int64_t d = deepest(f.getKey());
    if (d < 0) {
      m.stackBytes = -1;
      m.stackEntry = f.getKey().str();
      return;
    }
    if (d > m.stackBytes)
      m.stackBytes = d, m.stackEntry = f.getKey().str();
  }
  // A static function's node is named after its file's path: keep the file.
  m.stackEntry = llvm::sys::path::filename(m.stackEntry).str();
}

} // namespace

CodeMeasure kiln::measureCode(llvm::StringRef dir, llvm::StringRef name,
                              llvm::StringRef options) {
  CodeMeasure m;
  auto cc = llvm::sys::findProgramByName("gcc");
  if (!cc) {
    m.note = "no gcc on the PATH";
    return m;
  }
  llvm::SmallString<128> work;
  if (llvm::sys::fs::createUniqueDirectory("kiln-report", work)) {
    m.note = "no scratch directory";
    return m;
  }
  auto path = [&](llvm::StringRef a, llvm::StringRef b, llvm::StringRef c = "") {
    llvm::SmallString<256> p(a);
    llvm::sys::path::append(p, b);
    if (!c.empty())
      llvm::sys::path::append(p, c);
    return std::string(p);
  };
  const std::vector<std::pair<std::string, bool>> sources = {
      {name.str() + ".c", true},          {name.str() + "_kernels.c", true},
      {"runtime/src/status.c", false},    {"runtime/src/pack.c", false},
      {"runtime/src/tokenizer.c", false}, {"runtime/src/sampler.c", false}};
  llvm::SmallVector<llvm::StringRef> flags;
  llvm::SplitString(options, flags);
  std::vector<std::string> graphs;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string object = path(work, "o" + std::to_string(i) + ".o");
    std::vector<std::string> args = {*cc, "-O2", "-std=c99", "-ffp-contract=off",
                                     "-fstack-usage", "-fcallgraph-info=su", "-c",
                                     "-I", dir.str(), "-I", path(dir, "runtime", "include")};
    for (llvm::StringRef f : flags)
      args.push_back(f.str());
    args.insert(args.end(), {path(dir, sources[i].first), "-o", object});
    std::vector<llvm::StringRef> argv(args.begin(), args.end());
    const std::string log = path(work, "log");
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                  llvm::StringRef(log)};
    std::string error;
    if (llvm::sys::ExecuteAndWait(*cc, argv, std::nullopt, redirects, 0, 0, &error) != 0) {
      auto text = llvm::MemoryBuffer::getFile(log);
      m.note = "gcc cannot build " + sources[i].first + " for the target: " +
               (text ? (*text)->getBuffer().take_until([](char c) { return c == '\n'; }).str()
                     : error);
      llvm::sys::fs::remove_directories(work);
      return m;
    }
    (sources[i].second ? m.modelText : m.runtimeText) += textBytes(object);
    if (auto ci = llvm::MemoryBuffer::getFile(path(work, "o" + std::to_string(i) + ".ci")))
      graphs.push_back((*ci)->getBuffer().str());
  }
  llvm::sys::fs::remove_directories(work);
  stackBound(graphs, m);
  m.compiler = "gcc -O2 " + options.str();
  return m;
}

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

llvm::Error kiln::writeReport(const json::Value &report, llvm::StringRef dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return llvm::createStringError(ec, "%s: %s", dir.str().c_str(), ec.message().c_str());
  auto write = [&](llvm::StringRef file, auto &&body) -> llvm::Error {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, file);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return llvm::createStringError(ec, "%s: %s", path.c_str(), ec.message().c_str());
    body(os);
    return llvm::Error::success();
  };
  if (llvm::Error e = write("report.json", [&](llvm::raw_ostream &os) {
        os << llvm::formatv("{0:2}", report) << "\n";
      }))
    return e;
  return write("report.html",
               [&](llvm::raw_ostream &os) { writeHtml(os, *report.getAsObject()); });
}
