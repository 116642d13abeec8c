//===- Compare.cpp - per-op error of a quantized build against the float one ===//

#include "compiler/report/Compare.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstring>
#include <map>

using namespace kiln;
using llvm::StringRef;

namespace {

llvm::Error fail(StringRef path, const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), path + ": " + what);
}

/// One record of a --taps-out file, its values left in the file.
struct Record {
  std::string key;
  int64_t layer;
  std::string op;
  int32_t rows, cols;
  const uint8_t *values;
};

/// "LAYER OP [W1+W2...]" -> "LAYER OP W1": a fused norm's weight comes after
/// the matmul's, so the same op keys alike in both builds.
bool parseLabel(StringRef label, Record &r) {
  auto [layer, rest] = label.split(' ');
  auto [op, weights] = rest.split(' ');
  if (layer.getAsInteger(10, r.layer) || op.empty())
    return false;
  r.op = op.str();
  r.key = (layer + " " + op + (weights.empty() ? "" : " ") + weights.split('+').first).str();
  return true;
}

llvm::Expected<std::vector<Record>> readRecords(StringRef path,
                                                std::unique_ptr<llvm::MemoryBuffer> &buffer) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return fail(path, file.getError().message());
  buffer = std::move(*file);
  const uint8_t *p = reinterpret_cast<const uint8_t *>(buffer->getBufferStart());
  size_t size = buffer->getBufferSize(), at = 0;
  std::vector<Record> records;
  auto i32 = [&](int32_t &v) {
    if (size - at < 4)
      return false;
    v = int32_t(llvm::support::endian::read32le(p + at));
    at += 4;
    return true;
  };
  while (at < size) {
    Record r;
    int32_t length;
    if (!i32(length) || length <= 0 || size_t(length) > size - at)
      return fail(path, llvm::formatv("record {0} is cut short", records.size()));
    StringRef label(reinterpret_cast<const char *>(p + at), size_t(length));
    at += size_t(length);
    if (!parseLabel(label, r) || !i32(r.rows) || !i32(r.cols) || r.rows < 0 || r.cols <= 0 ||
        (size - at) / 4 / size_t(r.cols) < size_t(r.rows))
      return fail(path, llvm::formatv("record {0} ('{1}') is malformed or cut short",
                                      records.size(), label));
    r.values = p + at;
    at += size_t(r.rows) * size_t(r.cols) * 4;
    records.push_back(std::move(r));
  }
  return records;
}

float valueAt(const uint8_t *values, size_t i) {
  uint32_t u = llvm::support::endian::read32le(values + 4 * i);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

} // namespace

double OpError::relativeError() const {
  return reference2 > 0 ? std::sqrt(difference2 / reference2) : (difference2 > 0 ? INFINITY : 0);
}

double OpError::cosine() const {
  return reference2 > 0 && candidate2 > 0 ? dot / std::sqrt(reference2 * candidate2) : 1.0;
}

llvm::Expected<std::vector<OpError>> kiln::compareTaps(StringRef reference, StringRef candidate) {
  std::unique_ptr<llvm::MemoryBuffer> refBuffer, candBuffer;
  llvm::Expected<std::vector<Record>> ref = readRecords(reference, refBuffer);
  if (!ref)
    return ref.takeError();
  llvm::Expected<std::vector<Record>> cand = readRecords(candidate, candBuffer);
  if (!cand)
    return cand.takeError();
  // Only the ops both builds have, then record for record in order.
  llvm::StringSet<> inRef, inCand;
  for (const Record &r : *ref)
    inRef.insert(r.key);
  for (const Record &r : *cand)
    inCand.insert(r.key);
  std::vector<OpError> ops;
  std::map<std::string, size_t> index;
  size_t c = 0;
  for (const Record &r : *ref) {
    if (!inCand.contains(r.key))
      continue;
    while (c < cand->size() && !inRef.contains((*cand)[c].key))
      ++c;
    if (c == cand->size() || (*cand)[c].key != r.key)
      return fail(candidate, llvm::formatv("its ops come in another order than {0}'s at '{1}'",
                                           reference, r.key));
    const Record &q = (*cand)[c++];
    if (q.rows != r.rows || q.cols != r.cols)
      return fail(candidate, llvm::formatv("'{0}' is {1} x {2} but {3} x {4} in {5}", r.key,
                                           q.rows, q.cols, r.rows, r.cols, reference));
    auto [it, added] = index.try_emplace(r.key, ops.size());
    if (added)
      ops.push_back({r.key, r.layer, r.op});
    OpError &e = ops[it->second];
    for (size_t i = 0, n = size_t(r.rows) * size_t(r.cols); i < n; ++i) {
      double a = valueAt(r.values, i), b = valueAt(q.values, i);
      e.reference2 += a * a, e.candidate2 += b * b, e.dot += a * b;
      e.difference2 += (a - b) * (a - b);
    }
  }
  if (ops.empty())
    return fail(candidate, llvm::formatv("no op in common with {0}", reference));
  return ops;
}

/// Each layer's output error: its last op's.
static std::map<int64_t, double> layerErrors(const std::vector<OpError> &ops) {
  std::map<int64_t, double> layers;
  for (const OpError &e : ops)
    if (e.layer >= 0)
      layers[e.layer] = e.relativeError();
  return layers;
}

int64_t kiln::firstDivergingLayer(const std::vector<OpError> &ops, double threshold) {
  for (auto [layer, error] : layerErrors(ops))
    if (error > threshold)
      return layer;
  return -1;
}

double kiln::finalError(const std::vector<OpError> &ops) {
  return ops.empty() ? 0 : ops.back().relativeError();
}

llvm::json::Object kiln::compareJson(const std::vector<OpError> &ops, double threshold) {
  llvm::json::Array opArray, layerArray;
  for (const OpError &e : ops)
    opArray.push_back(llvm::json::Object{{"key", e.key},
                                         {"layer", e.layer},
                                         {"op", e.op},
                                         {"rel_error", e.relativeError()},
                                         {"cosine", e.cosine()}});
  for (auto [layer, error] : layerErrors(ops))
    layerArray.push_back(llvm::json::Object{{"layer", layer}, {"rel_error", error}});
  int64_t first = firstDivergingLayer(ops, threshold);
  return llvm::json::Object{
      {"threshold", threshold},
      {"first_diverging_layer", first < 0 ? llvm::json::Value(nullptr) : llvm::json::Value(first)},
      {"logits_rel_error", finalError(ops)},
      {"ops", std::move(opArray)},
      {"layers", std::move(layerArray)}};
}
