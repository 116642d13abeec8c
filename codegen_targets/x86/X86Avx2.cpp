// x86-avx2 and x86-avxvnni: 8-row panel kernels and AVX2/FMA/F16C row helpers
// (codegen_targets/x86/avx2/), with AVX-VNNI int8 dot products for the second.
#include "codegen_targets/Target.h"

// 8-row panels (one ymm of int32 or f32 lanes; q4_k, q5_k and q6_k too), 16
// vector registers; 256 KiB of L2 per core as on most AVX2 parts.
static constexpr kiln::KernelTarget kAvx2Kernels{/*panelRows=*/8,
                                                 /*blockPanels=*/"q4_k,q5_k,q6_k",
                                                 /*l2Bytes=*/262144, /*vectorBytes=*/32,
                                                 /*registers=*/16};

const kiln::IsaVariant &kiln::x86Avx2Variant() {
  static const IsaVariant variant{
      "x86-avx2",
      "codegen_targets/x86/avx2/kiln_uk_avx2_panels.h",
      "-mavx2 -mfma -mf16c",
      "__builtin_cpu_supports(\"avx2\") && __builtin_cpu_supports(\"fma\")",
      kAvx2Kernels,
      {"avx2", "fma", "f16c"}};
  return variant;
}

const kiln::IsaVariant &kiln::x86AvxVnniVariant() {
  static const IsaVariant variant{
      "x86-avxvnni",
      "codegen_targets/x86/avxvnni/kiln_uk_avxvnni.h",
      "-mavxvnni -mavx2 -mfma -mf16c",
      "__builtin_cpu_supports(\"avx2\") && __builtin_cpu_supports(\"fma\") && "
      "__builtin_cpu_supports(\"avxvnni\")",
      kAvx2Kernels,
      {"avxvnni", "avx2", "fma", "f16c"}};
  return variant;
}
