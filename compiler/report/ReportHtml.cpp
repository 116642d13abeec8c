//===- ReportHtml.cpp - report.html, and writing the report ---------------===//
//
// The page shows reportJson's numbers with inline SVG (the sizes bar, every
// function's memory plan) and sortable tables, and needs nothing from the
// network; writeReport writes it beside report.json.
//
//===----------------------------------------------------------------------===//

#include "compiler/report/Report.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>

using namespace kiln;
namespace json = llvm::json;

namespace {

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
void compareHtml(llvm::raw_ostream &os, const json::Object &c);

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
  if (const json::Object *compare = r.getObject("compare"))
    compareHtml(os, *compare);
  os << "<h2>Weights</h2>\n";
  if (const json::Object *b = r.getObject("budget")) {
    os << "<p id=\"budget\">--memory-budget=" << b->getInteger("bytes").value_or(0)
       << " chose the formats below; its loss (" << escape(b->getString("loss").value_or(""))
       << ") predicted " << llvm::formatv("{0:e3}", b->getNumber("predicted_loss").value_or(0));
    if (std::optional<double> measured = b->getNumber("measured_loss"))
      os << ", measured " << llvm::formatv("{0:e3}", *measured) << " with every choice at once";
    os << ".</p>\n";
  }
  os << "<table id=\"tensors\" class=\"sortable\"><thead><tr><th>tensor</th>"
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

/// A series of the error chart: the op, and for a matmul its first weight's
/// role ("residual_matmul ffn_down"), so one layer's ops are told apart.
std::string seriesOf(const json::Object &op) {
  llvm::StringRef key = op.getString("key").value_or("");
  llvm::StringRef weight = key.split(' ').second.split(' ').second;
  weight.consume_back(".weight");
  if (weight.starts_with("blk."))
    weight = weight.split('.').second.split('.').second;
  return (op.getString("op").value_or("") + (weight.empty() ? "" : " ") + weight).str();
}

/// The per-layer error of --compare: layers across, relative error up (one
/// line per op kind), the threshold dashed, the first layer past it in red;
/// then the ops and the weights compiled in f32 alone.
void compareHtml(llvm::raw_ostream &os, const json::Object &c) {
  const double threshold = c.getNumber("threshold").value_or(0);
  std::optional<int64_t> first = c.getInteger("first_diverging_layer");
  os << "<h2>Per-layer error</h2>\n<p>The model as stored and as compiled ran "
     << escape(c.getString("text").value_or("")) << " (" << c.getInteger("chunks").value_or(0)
     << " chunk of " << c.getInteger("ctx").value_or(0)
     << " tokens); each op's result compared: relative error ||compiled - float|| / ||float|| "
        "and cosine. Logits' relative error "
     << llvm::formatv("{0:e3}", c.getNumber("logits_rel_error").value_or(0))
     << "; first layer whose output passes " << threshold << ": "
     << (first ? std::to_string(*first) : std::string("none")) << ".</p>\n";
  std::map<std::string, std::vector<std::pair<int64_t, double>>> series;
  int64_t layers = 0;
  double top = threshold;
  if (const json::Array *ops = c.getArray("ops"))
    for (const json::Value &v : *ops) {
      const json::Object &op = *v.getAsObject();
      int64_t layer = op.getInteger("layer").value_or(-1);
      double error = op.getNumber("rel_error").value_or(0);
      if (layer < 0 || !std::isfinite(error))
        continue;
      series[seriesOf(op)].push_back({layer, error});
      layers = std::max(layers, layer + 1);
      top = std::max(top, error);
    }
  const double width = 900, height = 300, left = 50, bottom = 30;
  auto x = [&](double layer) {
    return left + (width - left - 20) * (layers > 1 ? layer / double(layers - 1) : 0.5);
  };
  auto y = [&](double error) { return (height - bottom) * (1 - error / (top * 1.05)); };
  static const char *colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                 "#edc948", "#b07aa1", "#ff9da7"};
  os << llvm::formatv("<svg id=\"layer-error\" width=\"{0}\" height=\"{1}\" role=\"img\">\n",
                      width + 220, height);
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1:f1}\" x2=\"{2}\" y2=\"{1:f1}\" stroke=\"#999\" "
                      "stroke-dasharray=\"4 3\"><title>threshold {3}</title></line>\n",
                      left, y(threshold), width - 20, threshold);
  if (first)
    os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"0\" x2=\"{0:f1}\" y2=\"{1}\" stroke=\"red\">"
                        "<title>first layer past the threshold: {2}</title></line>\n",
                        x(double(*first)), height - bottom, *first);
  for (int64_t l = 0; l < layers; ++l)
    os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1}\" font-size=\"11\" "
                        "text-anchor=\"middle\">{2}</text>\n",
                        x(double(l)), height - 10, l);
  os << llvm::formatv("<text x=\"4\" y=\"12\" font-size=\"11\">{0:e2}</text>\n", top * 1.05);
  size_t i = 0;
  for (const auto &[name, points] : series) {
    const char *color = colors[i % (sizeof colors / sizeof *colors)];
    os << "<polyline class=\"op-series\" data-op=\"" << escape(name) << "\" fill=\"none\" "
       << "stroke=\"" << color << "\" points=\"";
    for (auto [layer, error] : points)
      os << llvm::formatv("{0:f1},{1:f1} ", x(double(layer)), y(error));
    os << "\"><title>" << escape(name) << "</title></polyline>\n";
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" font-size=\"12\" fill=\"{2}\">{3}</text>\n",
                        width, 16 + 16 * i, color, escape(name));
    ++i;
  }
  os << "</svg>\n<table id=\"op-errors\" class=\"sortable\"><thead><tr><th>op</th>"
        "<th>layer</th><th>relative error</th><th>cosine</th></tr></thead><tbody>\n";
  if (const json::Array *ops = c.getArray("ops"))
    for (const json::Value &v : *ops) {
      const json::Object &op = *v.getAsObject();
      os << llvm::formatv("<tr><td>{0}</td><td>{1}</td><td>{2:e3}</td><td>{3:f6}</td></tr>\n",
                          escape(op.getString("key").value_or("")),
                          op.getInteger("layer").value_or(-1),
                          op.getNumber("rel_error").value_or(0),
                          op.getNumber("cosine").value_or(0));
    }
  os << "</tbody></table>\n";
  os << "<p>Layer " << c.getInteger("suspect_layer").value_or(-1)
     << "'s converted weights, each compiled in f32 alone: the logits' relative error then "
        "(the lowest names the weight whose quantization costs most: "
     << escape(c.getString("most_contributing").value_or("none")) << ").</p>\n"
     << "<table id=\"weights-in-f32\" class=\"sortable\"><thead><tr><th>weight</th>"
        "<th>format</th><th>logits error with it in f32</th></tr></thead><tbody>\n";
  if (const json::Array *ws = c.getArray("weights_in_f32"))
    for (const json::Value &v : *ws) {
      const json::Object &w = *v.getAsObject();
      os << llvm::formatv("<tr><td>{0}</td><td>{1}</td><td>{2:e3}</td></tr>\n",
                          escape(w.getString("name").value_or("")),
                          escape(w.getString("format").value_or("")),
                          w.getNumber("logits_rel_error_in_f32").value_or(0));
    }
  os << "</tbody></table>\n";
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
