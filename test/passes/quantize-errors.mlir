// RUN: not kiln-opt %s --kiln-quantize="weights=q8_k" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not kiln-opt %s --kiln-quantize="overrides=output.weight" 2>&1 | FileCheck %s --check-prefix=RULE
// RUN: not kiln-opt %s --kiln-quantize="kv=q2" 2>&1 | FileCheck %s --check-prefix=KV

// The format table's names, fixed then grouped.
// FORMAT: unknown weight format 'q8_k' (f32, f16, q8_0, q4_0, {{([a-z0-9_]+, )+}}i8g<G>, i4g<G> with G in 32, 64, 128, 256)
// RULE: bad override 'output.weight' (expected <glob>=<format>)
// KV: unknown KV cache type 'q2' (f32, f16, q8, q4)
func.func @f() {
  return
}
