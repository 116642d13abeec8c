// x86-avx2: the portable kernels with AVX2/FMA/F16C dot products
// (codegen_targets/x86/avx2/kiln_uk_avx2.h).
#include "codegen_targets/Target.h"

const kiln::IsaVariant &kiln::x86Avx2Variant() {
  static const IsaVariant variant{
      "x86-avx2",
      "codegen_targets/x86/avx2/kiln_uk_avx2.h",
      "-mavx2 -mfma -mf16c",
      "__builtin_cpu_supports(\"avx2\") && __builtin_cpu_supports(\"fma\")",
      {/*panelRows=*/0, /*l2Bytes=*/262144, /*vectorBytes=*/32, /*registers=*/16},
      {"avx2", "fma", "f16c"}};
  return variant;
}
