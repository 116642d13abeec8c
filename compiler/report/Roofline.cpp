//===- Roofline.cpp - the device table and the predictions ----------------===//
//
// The devices a report predicts speeds for, --device's JSON files, and the
// roofline: a decode or prefill step bound by bytes over bandwidth or by
// operations over peak.
//
//===----------------------------------------------------------------------===//

#include "compiler/report/Roofline.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

using namespace kiln;
namespace json = llvm::json;

/// The roofline: a step takes the longer of its bytes over the bandwidth (the
/// cache's when they fit in it) and its operations over the peak (int8 when
/// most weight bytes are quantized).
json::Object kiln::predict(const Workload &w, const Device &d) {
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
      {"cortex-m55", "Cortex-M55 MCU (Alif Ensemble class: 400 MHz, Helium dual-beat: 8 int8 "
                     "MACs and 2 FP32 FMAs a cycle, weights in external flash; 256 KiB DTCM)",
       0.8, 262144, 3.2, 1.6, 6.4},
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
