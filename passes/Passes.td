#ifndef KILN_PASSES_TD
#define KILN_PASSES_TD

include "mlir/Pass/PassBase.td"

def Quantize : Pass<"kiln-quantize", "mlir::ModuleOp"> {
  let summary = "Chooses the storage format of every weight and of the KV cache";
  let description = [{
    Gives each 2-D f32/f16 weight the format of the policy: `weights` for all of
    them, then `overrides` (comma-separated `glob=format`, the last match wins),
    e.g. `weights=q4_0 overrides=token_embd.weight=q8_0,output.weight=f16`.
    Formats: f32, f16, q8_0, q4_0 (GGUF blocks of 32), i8g<G>, i4g<G> (one f16
    scale per group of G). Tensors the model file already stores quantized keep
    their format, as do tensors whose rows are not a whole number of blocks
    (with a warning). The bytes are converted when the pack is written.

    `kv` sets the KV cache element: f32, f16, or q8 (int8 with one f16 scale per
    head and position, i.e. `!kiln.i8g<head_dim>`).

    Before:
    ```mlir
    %w = kiln.weight "blk.0.ffn_up.weight" : tensor<768x256xf32>
    ```
    After `--kiln-quantize="weights=q4_0"`:
    ```mlir
    %w = kiln.weight "blk.0.ffn_up.weight" : tensor<768x256x!kiln.q4_0>
    ```
  }];
  let options = [
    Option<"weights", "weights", "std::string", /*default=*/"\"\"",
           "Format of every 2-D weight (empty: keep the model's)">,
    Option<"overrides", "overrides", "std::string", /*default=*/"\"\"",
           "Comma-separated glob=format rules by tensor name">,
    Option<"kv", "kv", "std::string", /*default=*/"\"f32\"",
           "KV cache element: f32, f16 or q8">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def Fuse : Pass<"kiln-fuse", "mlir::ModuleOp"> {
  let summary = "Merges the ops of a decoder block into fewer kernels";
  let description = [{
    Runs after kiln-quantize (merged matmuls need one weight format) on the
    graph, one pattern per rewrite, each only where every intermediate it
    removes has no other use:
    - `residual`: a matmul feeding only an add becomes `kiln.residual_matmul`
      (the output and down projections add the residual stream);
    - `swiglu`: mul(silu(x * gate), x * up) becomes `kiln.swiglu_matmul`;
    - `qkv`: the query, key and value matmuls of one input with the rope of
      the queries and keys and the two cache writes, as the attention reads
      them, become `kiln.qkv_matmul`;
    - `norm`: the rms_norm feeding only a qkv or swiglu matmul over int8
      weights moves into it (`normed by %g`): the kernel normalizes each row
      straight into its quantized input, and the normalized rows never reach
      the arena.
    Each fused kernel does the same float operations in the same order as the
    ops it replaces, so the results have the same bits. `patterns` picks some
    (comma-separated), for tests.

    Before:
    ```mlir
    %m = kiln.matmul %x, %w : (tensor<1x5632xf32>, tensor<2048x5632x!kiln.q4_0>) -> tensor<1x2048xf32>
    %y = kiln.add %r, %m : tensor<1x2048xf32>
    ```
    After:
    ```mlir
    %y = kiln.residual_matmul %x, %w plus %r : (...) -> tensor<1x2048xf32>
    ```
  }];
  let options = [
    Option<"patterns", "patterns", "std::string", /*default=*/"\"residual,swiglu,qkv,norm\"",
           "Comma-separated patterns to apply">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseAttention : Pass<"kiln-fuse-attention", "mlir::ModuleOp"> {
  let summary = "Merges an encoder's attention (scores, scale, mask, softmax, values) into kiln.attend";
  let description = [{
    Finds batch_matmul(softmax(scale * batch_matmul(q, kT) + bias), v) as
    imported graphs write it, the scale a splat that divides or multiplies the
    queries or multiplies the scores (or none), the bias optional, and every
    intermediate without another use, and replaces it by one kiln.attend with
    the scales multiplied into its `scale`.

    Before:
    ```mlir
    %qs = kiln.div %q, %c : tensor<4x16x8xf32>            // %c = kiln.splat 2.828...
    %s = kiln.batch_matmul %qs, %kt : (...) -> tensor<4x16x16xf32>
    %b = kiln.add %s, %mask : tensor<4x16x16xf32>
    %p = kiln.softmax %b : tensor<4x16x16xf32>
    %o = kiln.batch_matmul %p, %v : (...) -> tensor<4x16x8xf32>
    ```
    After:
    ```mlir
    %o = kiln.attend %q, %kt, %v bias %mask {scale = 0.353553385 : f32} : (...) -> tensor<4x16x8xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def PackLayout : Pass<"kiln-pack-layout", "mlir::ModuleOp"> {
  let summary = "Places every weight in the data section of the pack";
  let description = [{
    Gives each distinct `kiln.weight` a segment: 64-byte aligned, in model order,
    with every decoder layer starting on a page so the loader can prefetch or
    drop one layer at a time. The weight keeps its GGUF block layout. A weight
    read transposed is a segment of its own ("<name>^T"), and an imported
    graph's `kiln.constant`s (indices, masks) get segments too.

    Before:
    ```mlir
    %w = kiln.weight "blk.0.attn_q.weight" : tensor<256x256xf32>
    ```
    After:
    ```mlir
    %w = kiln.weight "blk.0.attn_q.weight"
           {segment = #kiln.segment<offset = 528384, bytes = 262144, layer = 0>}
           : tensor<256x256xf32>
    ```
    The module gets `kiln.pack_data_bytes`, the size of the data section.

    With `panel-rows=R` (the target's kernels read panels), a 2-D weight that
    only matmuls read is repacked, when the pack is written, into panels of R
    output rows (rows padded to a multiple of R) and records it:
    ```mlir
    %w = kiln.weight "blk.0.attn_q.weight" {layout = #kiln.panel<rows = 16>,
           segment = #kiln.segment<offset = 528384, bytes = 69632, layer = 0>}
           : tensor<256x256x!kiln.q4_0>
    ```
    A table that embed also reads (tied embeddings) keeps the row layout.
    GGUF block formats keep the file's rows unless `block-panels` names them
    (the x86 targets: q4_k, q5_k and q6_k, re-encoded per panel lane in the
    same bytes per row; kernels/c99/kiln_uk_pack.h has the layouts).
  }];
  let options = [
    Option<"panelRows", "panel-rows", "int64_t", /*default=*/"0",
           "Output rows per weight panel (0: keep the model's row layout)">,
    Option<"blockPanels", "block-panels", "std::string", /*default=*/"\"\"",
           "GGUF block formats the target's panel kernels read (comma-separated, "
           "e.g. q4_k); the others keep the file's rows">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def TileForCache : Pass<"kiln-tile-for-cache", "mlir::ModuleOp"> {
  let summary = "Picks the register and cache tile of every panel matmul";
  let description = [{
    From the target's cache model picks, for each matmul whose weight
    pack-layout put in panels:
    - `mr`, the activation rows of one register tile: each row holds one
      accumulator (float weights), two (an int32 and a float one, int8
      weights) or three (a k-quant's sub-block and super-block sums and a
      float one) of `vector-bytes`, and 4 registers stay free for the weights;
      at most 8 (the tiles the kernels are instantiated for; fewer rows take
      a smaller one at run time);
    - `kc`, the K block: the kernel passes over a panel once per row tile and
      over the activations once per panel, so kc is the largest whole number
      of weight groups for which a panel's block (nr x kc weights) and all the
      input rows' block (rows x kc, int8 or f32) fit in half of L2, at most K.
      A smaller block costs a pass over the output per block.
    `tile="mr=M,kc=K"` pins either for every matmul (`kc` rounded down to
    whole groups), for experiments.

    Before (after pack-layout with panel-rows=16):
    ```mlir
    %y = kiln.matmul %x, %w : (tensor<64x2048xf32>, tensor<5632x2048x!kiln.q4_0>) -> tensor<64x5632xf32>
    ```
    After `--kiln-tile-for-cache="l2=1048576 vector-bytes=64 registers=32"`:
    ```mlir
    %y = kiln.matmul %x, %w {tile = #kiln.tile<mr = 8, nr = 16, kc = 2048>} : ...
    ```
  }];
  let options = [
    Option<"l2", "l2", "int64_t", /*default=*/"262144", "L2 cache bytes (per core)">,
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"64",
           "Bytes of one vector register">,
    Option<"registers", "registers", "int64_t", /*default=*/"32",
           "Vector registers">,
    Option<"tile", "tile", "std::string", /*default=*/"\"\"",
           "Pinned tile for every matmul, e.g. mr=4,kc=512">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def PartitionWork : Pass<"kiln-partition-work", "mlir::ModuleOp"> {
  let summary = "Splits each large kernel's work into a fixed share per worker";
  let description = [{
    For `threads` workers, gives every op whose kernel can have at least
    `min-work` of work (multiply-adds for matmuls and attention, elements for
    row-wise ops weighted by their cost in multiply-adds: 16 for an
    exponential or division per element, 4 for a normalization; at the
    largest row count and context) a split into `threads`
    shares, decided here once:
    - matmuls: output columns, in whole weight panels (four at a time when
      every share gets at least four, so decode streams four panels at once);
      16 columns for a weight in the row layout;
    - attention: (KV head, row) pairs, head-major (whole KV heads per share);
      a graph's attend: whole batches (its heads), each share with scratch
      of its own;
    - embed, norms, rope, kv_write and elementwise ops (a graph's exact GELU
      too): rows, a row being a tensor's innermost dimension.
    Smaller kernels stay on one worker: a tiny model is never slower with more
    threads. The kernel checks its run-time work against the same `min-work`.

    Before:
    ```mlir
    %y = kiln.matmul %x, %w {tile = #kiln.tile<mr = 8, nr = 16, kc = 2048>} : ...
    ```
    After `--kiln-partition-work="threads=2 min-work=65536"`:
    ```mlir
    %y = kiln.matmul %x, %w {split = #kiln.split<axis = "columns", shares = 2, grain = 64,
           threshold = 65536>, tile = #kiln.tile<mr = 8, nr = 16, kc = 2048>} : ...
    ```
  }];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"1", "Workers (1: no split)">,
    Option<"minWork", "min-work", "int64_t", /*default=*/"65536",
           "Least work worth handing to the workers">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def PlanMemory : Pass<"kiln-plan-memory", "mlir::ModuleOp"> {
  let summary = "Assigns every intermediate a fixed offset in one arena";
  let description = [{
    The KV cache is a persistent region at the start of the arena, shared by all
    functions. Each function's intermediates follow it, placed by liveness
    (greedy by size, 64-byte aligned); an elementwise op whose operand dies there
    writes in place. A reshape has no buffer of its own (its input's bytes, kept
    alive to the reshape's last reader), nor has a graph's constant (in the
    pack). Each op producing a tensor gets `slot = #kiln.slot<...>`;
    each function gets `kiln.activation_bytes` and `kiln.activation_lower_bound`
    (most bytes live at once), and the module `kiln.kv_bytes` and
    `kiln.arena_bytes` (KV cache plus the largest function's activations).

    Before:
    ```mlir
    %1 = kiln.add %0, %x : tensor<1x256xf32>
    ```
    After:
    ```mlir
    %1 = kiln.add %0, %x {slot = #kiln.slot<offset = 262144, bytes = 1024>} : tensor<1x256xf32>
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Byte alignment of every buffer">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

#endif // KILN_PASSES_TD
