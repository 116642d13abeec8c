// kiln-translate --kiln-to-c: a hand-written planned model (one cache layer
// of roped keys and attention, then the output head) becomes the model folder's
// generated sources: sizes from the module's attributes, a schedule of kernel
// calls at the slots' offsets, the output head on the last head_rows rows, the
// context shift of the cache, the target's CPU check and compiler flags. The
// sources build against the kernel library and the runtime headers.
// RUN: kiln-translate --kiln-to-c %s | FileCheck %s
// RUN: kiln-translate --kiln-to-c --kiln-target=x86-avx2 %s | FileCheck %s --check-prefix=AVX2
// RUN: rm -rf %t && kiln-translate --kiln-to-c %s -o %t.txt && split-file %t.txt %t
// RUN: %cc -c -I%t %kiln_include -o %t/t.o %t/t.c
// RUN: %cc -c -ffp-contract=off -I%t %kiln_include -o %t/t_kernels.o %t/t_kernels.c
// RUN: not kiln-translate --kiln-to-c --kiln-target=vax %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not kiln-translate --kiln-kernels-to-c %S/Inputs/split.mlir 2>&1 | FileCheck %s --check-prefix=SPLIT

// CHECK-LABEL: //--- t.h
// CHECK: #define T_ARENA_BYTES 2048u
// CHECK: #define T_KV_BYTES 1024u
// Without a pack (hand-written IR) its facts are zeros.
// CHECK: #define T_PACK_BYTES 0ull
// CHECK: #define T_VOCAB 16
// CHECK: #define T_MAX_CONTEXT 8
// CHECK: #define T_PREFILL_CHUNK 2
// Eight kernel calls in each of prefill and decode.
// CHECK: #define T_PROFILE_SITES 16
// CHECK: #define T_THREADS 1
// CHECK: kiln_status t_decode(t_model *m, int32_t token, float *logits);

// CHECK-LABEL: //--- t.c
// CHECK: const char *const t_profile_sites[T_PROFILE_SITES] = {
// CHECK-NEXT: "prefill token_embd.weight embed_f32_d32",
// CHECK: "decode layer 0 value cache kv_write_f32_w16_r8_hm",
// The one decoder layer's weights, for prefetching.
// CHECK: static const uint64_t layer_range[][2] = {
// CHECK-NEXT: {2048u, 2048u},
// CHECK-NEXT: };
// CHECK: static void run_prefill(t_model *m, const int32_t *tokens, int32_t rows,
// CHECK: KILN_TIMED(0, t_embed_f32_d32((w + 0u), tokens, (float *)(void *)(a + 1024u), rows));
// CHECK-NEXT: prefetch_layer(m, 1);
// CHECK-NEXT: KILN_TIMED(1, t_matmul_f32_n16_k32((float *)(void *)(a + 1024u), (w + 2048u), (float *)(void *)(a + 1280u), rows));
// CHECK-NEXT: KILN_TIMED(2, t_rope_w16_h16_r16_b{{[0-9a-f]+}}((float *)(void *)(a + 1280u), (float *)(void *)(a + 1408u), rows, pos));
// CHECK-NEXT: KILN_TIMED(3, t_kv_write_f32_w16_r8_hm((float *)(void *)(a + 1408u), (float *)(void *)(a + 0u), rows, pos));
// CHECK-NEXT: KILN_TIMED(4, t_kv_write_f32_w16_r8_hm((float *)(void *)(a + 1280u), (float *)(void *)(a + 512u), rows, pos));
// CHECK-NEXT: KILN_TIMED(5, t_attention_f32_h2_kv1_d16_win0_r8_hm(
// The output head reads the last head_rows rows of its input.
// CHECK-NEXT: if (head_rows > 0)
// CHECK-NEXT: KILN_TIMED(6, t_rms_norm_d32_e{{[0-9a-f]+}}((float *)(void *)(a + 1536u) + (size_t)(rows - head_rows) * 32, (w + 4096u), (float *)(void *)(a + 1792u), head_rows));
// CHECK-NEXT: if (head_rows > 0)
// CHECK-NEXT: KILN_TIMED(7, t_matmul_f32_n16_k32((float *)(void *)(a + 1792u), (w + 4224u), (float *)(void *)(a + 1920u), head_rows));
// CHECK: static void shift_cache(t_model *m, int32_t keep, int32_t drop) {
// CHECK-NEXT: t_kv_shift_f32_w16_h16_r16_b{{[0-9a-f]+}}_r8_hm(m->arena + 0u, m->arena + 512u, m->pos, keep, drop); /* layer 0 */
// The logits are read where the head's matmul writes them.
// CHECK: memcpy(all_rows ? logits + (size_t)done * T_VOCAB : logits, m->arena + 1920u,
// CHECK: memcpy(logits, m->arena + 1920u, T_VOCAB * sizeof(float));
// c99 needs no CPU check.
// CHECK-NOT: KILN_ERR_CPU
// CHECK: const kiln_model_api t_api = {

// CHECK-LABEL: //--- t_kernels.c
// CHECK: void t_kv_shift_f32_w16_h16_r16_b{{[0-9a-f]+}}_r8_hm(uint8_t *k, uint8_t *v, int32_t pos, int32_t keep, int32_t drop) {
// CHECK-NEXT: int32_t r0, r1;
// CHECK-NEXT: kiln_uk_kv_shift_heads(k, v, 1, 512u, 64u, 8, 0, 0, pos, keep, drop, &r0, &r1);

// CHECK-LABEL: //--- CMakeLists.txt
// CHECK: add_library(t STATIC t.c t_kernels.c)
// CHECK-NOT: target_compile_options(t PRIVATE -m

// AVX2: if (!(__builtin_cpu_supports("avx2")
// AVX2-NEXT: return KILN_ERR_CPU;
// AVX2: #include "kernels/x86/avx2/kiln_uk_avx2.h"
// AVX2: # Kernels for x86-avx2.
// AVX2-NEXT: target_compile_options(t PRIVATE -mavx2

// UNKNOWN: unknown target 'vax'; known: c99,
// SPLIT: error: 'kiln.matmul' op is split over threads, which needs a model's workers

module @t attributes {kiln.arena_bytes = 2048 : i64, kiln.kv_bytes = 1024 : i64, kiln.model = #kiln.model<architecture = "llama", n_embd = 32, n_layer = 1, n_head = 2, n_kv_head = 1, head_dim = 16, n_vocab = 16, max_context = 8, prefill_chunk = 2>} {
  func.func @prefill(%tokens: tensor<2xi32>, %pos: i32) -> tensor<2x16xf32> {
    %table = kiln.weight "token_embd.weight" {kiln.segment = #kiln.segment<offset = 0, bytes = 2048, layer = -1>} : tensor<16x32xf32>
    %x = kiln.embed %table[%tokens] {kiln.slot = #kiln.slot<offset = 1024, bytes = 256>} : (tensor<16x32xf32>, tensor<2xi32>) -> tensor<2x32xf32>
    %wk = kiln.weight "blk.0.attn_k.weight" {kiln.segment = #kiln.segment<offset = 2048, bytes = 2048, layer = 0>} : tensor<16x32xf32>
    %k = kiln.matmul %x, %wk {kiln.slot = #kiln.slot<offset = 1280, bytes = 128>} : (tensor<2x32xf32>, tensor<16x32xf32>) -> tensor<2x16xf32>
    %kr = kiln.rope %k at %pos {freq_base = 1.000000e+04 : f32, head_dim = 16 : i32, rope_dim = 16 : i32, kiln.slot = #kiln.slot<offset = 1408, bytes = 128>} : tensor<2x16xf32>
    %kc = kiln.kv_cache key layer 0 {kiln.slot = #kiln.slot<offset = 0, bytes = 512>} : tensor<8x16xf32, #kiln.kv<head_major, heads = 1>>
    %keys = kiln.kv_write %kr into %kc at %pos {kiln.slot = #kiln.slot<offset = 0, bytes = 512>} : tensor<2x16xf32> -> tensor<8x16xf32, #kiln.kv<head_major, heads = 1>>
    %vc = kiln.kv_cache value layer 0 {kiln.slot = #kiln.slot<offset = 512, bytes = 512>} : tensor<8x16xf32, #kiln.kv<head_major, heads = 1>>
    %values = kiln.kv_write %k into %vc at %pos {kiln.slot = #kiln.slot<offset = 512, bytes = 512>} : tensor<2x16xf32> -> tensor<8x16xf32, #kiln.kv<head_major, heads = 1>>
    %a = kiln.attention %x, %keys, %values at %pos {head_dim = 16 : i32, n_head = 2 : i32, n_kv_head = 1 : i32, kiln.slot = #kiln.slot<offset = 1536, bytes = 256>} : tensor<2x32xf32>, tensor<8x16xf32, #kiln.kv<head_major, heads = 1>>, tensor<8x16xf32, #kiln.kv<head_major, heads = 1>> -> tensor<2x32xf32>
    %g = kiln.weight "output_norm.weight" {kiln.segment = #kiln.segment<offset = 4096, bytes = 128, layer = -1>} : tensor<32xf32>
    %n = kiln.rms_norm %a, %g {epsilon = 9.99999974E-6 : f32, kiln.slot = #kiln.slot<offset = 1792, bytes = 256>} : tensor<2x32xf32>, tensor<32xf32>
    %wo = kiln.weight "output.weight" {kiln.segment = #kiln.segment<offset = 4224, bytes = 2048, layer = -1>} : tensor<16x32xf32>
    %logits = kiln.matmul %n, %wo {kiln.slot = #kiln.slot<offset = 1920, bytes = 128>} : (tensor<2x32xf32>, tensor<16x32xf32>) -> tensor<2x16xf32>
    return %logits : tensor<2x16xf32>
  }
  func.func @decode(%tokens: tensor<1xi32>, %pos: i32) -> tensor<1x16xf32> {
    %table = kiln.weight "token_embd.weight" {kiln.segment = #kiln.segment<offset = 0, bytes = 2048, layer = -1>} : tensor<16x32xf32>
    %x = kiln.embed %table[%tokens] {kiln.slot = #kiln.slot<offset = 1024, bytes = 128>} : (tensor<16x32xf32>, tensor<1xi32>) -> tensor<1x32xf32>
    %wk = kiln.weight "blk.0.attn_k.weight" {kiln.segment = #kiln.segment<offset = 2048, bytes = 2048, layer = 0>} : tensor<16x32xf32>
    %k = kiln.matmul %x, %wk {kiln.slot = #kiln.slot<offset = 1280, bytes = 64>} : (tensor<1x32xf32>, tensor<16x32xf32>) -> tensor<1x16xf32>
    %kr = kiln.rope %k at %pos {freq_base = 1.000000e+04 : f32, head_dim = 16 : i32, rope_dim = 16 : i32, kiln.slot = #kiln.slot<offset = 1408, bytes = 64>} : tensor<1x16xf32>
    %kc = kiln.kv_cache key layer 0 {kiln.slot = #kiln.slot<offset = 0, bytes = 512>} : tensor<8x16xf32, #kiln.kv<head_major, heads = 1>>
    %keys = kiln.kv_write %kr into %kc at %pos {kiln.slot = #kiln.slot<offset = 0, bytes = 512>} : tensor<1x16xf32> -> tensor<8x16xf32, #kiln.kv<head_major, heads = 1>>
    %vc = kiln.kv_cache value layer 0 {kiln.slot = #kiln.slot<offset = 512, bytes = 512>} : tensor<8x16xf32, #kiln.kv<head_major, heads = 1>>
    %values = kiln.kv_write %k into %vc at %pos {kiln.slot = #kiln.slot<offset = 512, bytes = 512>} : tensor<1x16xf32> -> tensor<8x16xf32, #kiln.kv<head_major, heads = 1>>
    %a = kiln.attention %x, %keys, %values at %pos {head_dim = 16 : i32, n_head = 2 : i32, n_kv_head = 1 : i32, kiln.slot = #kiln.slot<offset = 1536, bytes = 128>} : tensor<1x32xf32>, tensor<8x16xf32, #kiln.kv<head_major, heads = 1>>, tensor<8x16xf32, #kiln.kv<head_major, heads = 1>> -> tensor<1x32xf32>
    %g = kiln.weight "output_norm.weight" {kiln.segment = #kiln.segment<offset = 4096, bytes = 128, layer = -1>} : tensor<32xf32>
    %n = kiln.rms_norm %a, %g {epsilon = 9.99999974E-6 : f32, kiln.slot = #kiln.slot<offset = 1792, bytes = 128>} : tensor<1x32xf32>, tensor<32xf32>
    %wo = kiln.weight "output.weight" {kiln.segment = #kiln.segment<offset = 4224, bytes = 2048, layer = -1>} : tensor<16x32xf32>
    %logits = kiln.matmul %n, %wo {kiln.slot = #kiln.slot<offset = 1920, bytes = 64>} : (tensor<1x32xf32>, tensor<16x32xf32>) -> tensor<1x16xf32>
    return %logits : tensor<1x16xf32>
  }
}
