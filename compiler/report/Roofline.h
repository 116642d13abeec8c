//===- Roofline.h - what a device would make of a step --------------------===//
//
// The roofline model reportJson applies to every device: private to
// compiler/report.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_REPORT_ROOFLINE_H
#define KILN_COMPILER_REPORT_ROOFLINE_H

#include "compiler/report/Report.h"

#include "llvm/Support/JSON.h"

#include <cstdint>

namespace kiln {

/// What one decode step reads and computes, from the kernel IR: the bytes of
/// every weight a matmul kernel reads (each once), the multiply-adds of those
/// weights, the KV cache bytes and attention multiply-adds per position of
/// context, the cache's capacity and the prefill chunk.
struct Workload {
  double weightBytes = 0, quantizedBytes = 0, macs = 0, kvBytesPerPosition = 0,
         attentionMacsPerPosition = 0;
  int64_t capacity = 1, chunk = 1;
};

/// The roofline: a step takes the longer of its bytes over the bandwidth (the
/// cache's when they fit in it) and its operations over the peak (int8 when
/// most weight bytes are quantized).
llvm::json::Object predict(const Workload &w, const Device &d);

} // namespace kiln

#endif // KILN_COMPILER_REPORT_ROOFLINE_H
