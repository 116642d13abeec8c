// RUN: not kiln-opt %s --kiln-quantize="weights=q8_k" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not kiln-opt %s --kiln-quantize="overrides=output.weight" 2>&1 | FileCheck %s --check-prefix=RULE
// RUN: not kiln-opt %s --kiln-quantize="kv=q2" 2>&1 | FileCheck %s --check-prefix=KV

// FORMAT: unknown weight format 'q8_k' (f32, f16, q8_0, q4_0, bf16, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k, i8g<G>, i4g<G> with G in 32, 64, 128, 256)
// RULE: bad override 'output.weight' (expected <glob>=<format>)
// KV: unknown KV cache type 'q2' (f32, f16, q8, q4)
func.func @f() {
  return
}
