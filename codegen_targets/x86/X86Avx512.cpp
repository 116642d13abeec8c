// x86-avx512: AVX-512 F/BW/VL + VNNI panel kernels over 16-row weight panels
// (codegen_targets/x86/avx512/kiln_uk_avx512.h).
#include "codegen_targets/Target.h"

const kiln::IsaVariant &kiln::x86Avx512Variant() {
  static const IsaVariant variant{
      "x86-avx512",
      "codegen_targets/x86/avx512/kiln_uk_avx512.h",
      "-mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx2 -mfma -mf16c",
      "__builtin_cpu_supports(\"avx512f\") && __builtin_cpu_supports(\"avx512bw\") && "
      "__builtin_cpu_supports(\"avx512vl\") && __builtin_cpu_supports(\"avx512vnni\") && "
      "__builtin_cpu_supports(\"fma\")",
      // 16-row panels (one zmm of int32 or f32 lanes); 1 MiB of L2 per core as
      // in current AVX-512 cores (Zen 4/5, Ice Lake server and later); the
      // k-quants q4_k, q5_k and q6_k repacked into panels too.
      {/*panelRows=*/16, /*blockPanels=*/"q4_k,q5_k,q6_k", /*l2Bytes=*/1048576, /*vectorBytes=*/64,
       /*registers=*/32},
      {"avx512f", "avx512bw", "avx512vl", "avx512vnni", "avx2", "fma", "f16c"}};
  return variant;
}
