#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "dialects/Kiln/IR/KilnBase.td"
include "dialects/Kiln/IR/KilnTypes.td"
include "dialects/Kiln/IR/KilnAttrs.td"
include "dialects/Kiln/IR/KilnInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Constants and state
//===----------------------------------------------------------------------===//

def Kiln_WeightOp : Kiln_Op<"weight", [Pure]> {
  let summary = "a tensor of the source model, by name";
  let description = [{
    The bytes stay in the model file until the pack is written, so importing a large
    model never copies weights into the IR. A `transposed` 2-D weight is the
    file's tensor with its dimensions swapped (an ONNX MatMul's [K, N] weight
    read as the [N, K] rows the matmul kernels take); the pack holds it so.
    ```mlir
    %w = kiln.weight "blk.0.attn_q.weight" : tensor<256x256x!kiln.q8_0>
    %t = kiln.weight "onnx::MatMul_414" {transposed} : tensor<96x32xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, UnitAttr:$transposed);
  let extraClassDeclaration = [{
    /// The pack segment's name: the tensor's, marked when transposed, so that
    /// a tensor read both ways has two segments.
    std::string getSegmentName() {
      return getTransposed() ? (getName() + "^T").str() : getName().str();
    }
  }];
  let results = (outs Kiln_WeightTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_KvCacheOp : Kiln_Op<"kv_cache", [Pure]> {
  let summary = "the persistent key or value cache of one layer";
  let description = [{
    Rows are positions, columns the n_kv_head * head_dim features. Position p
    is in row p mod the rows, so a cache with fewer rows than the context (a
    layer with a sliding window) is a ring buffer.
    Every function of the module that names the same (layer, kind) sees the same state.
  }];
  let arguments = (ins I32Attr:$layer, Kiln_CacheKindAttr:$kind);
  let results = (outs Kiln_CacheTensor:$result);
  let assemblyFormat = "`` $kind `layer` $layer attr-dict `:` type($result)";
}

def Kiln_KvWriteOp : Kiln_Op<"kv_write", [Pure, AllTypesMatch<["cache", "result"]>,
                                          DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getKernelWork"]>]> {
  let summary = "stores C rows into the cache at positions pos..pos+C-1";
  let arguments = (ins Kiln_CacheTensor:$cache, Kiln_F32Tensor:$rows, I32:$pos);
  let results = (outs Kiln_CacheTensor:$result);
  let assemblyFormat = [{
    $rows `into` $cache `at` $pos attr-dict `:` type($rows) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

def Kiln_EmbedOp : Kiln_Op<"embed", [Pure, DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getKernelWork"]>]> {
  let summary = "gathers one table row per token, times `scale` when set (gemma3)";
  let arguments = (ins Kiln_WeightTensor:$table, Kiln_TokenTensor:$tokens,
                       OptionalAttr<F32Attr>:$scale);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = "$table `[` $tokens `]` attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_RmsNormOp : Kiln_Op<"rms_norm", [Pure, AllTypesMatch<["input", "result"]>,
                                          DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getKernelWork"]>]> {
  let summary = "x / sqrt(mean(x^2) + epsilon) * weight, per row or per head";
  let description = [{
    A weight narrower than the row normalizes each group of its width on its
    own: the per-head query and key norms of qwen3 and gemma3.
  }];
  let arguments = (ins Kiln_F32Tensor:$input, Kiln_F32Tensor:$weight, F32Attr:$epsilon);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def Kiln_LayerNormOp : Kiln_Op<"layer_norm", [Pure, AllTypesMatch<["input", "result"]>,
                                              DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getKernelWork"]>]> {
  let summary = "(x - mean) / sqrt(var + epsilon) * weight + bias, per row";
  let arguments = (ins Kiln_F32Tensor:$input, Kiln_F32Tensor:$weight,
                       Kiln_F32Tensor:$bias, F32Attr:$epsilon);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:` type($input) `,` type($weight) `,` type($bias)
  }];
  let hasVerifier = 1;
}

def Kiln_MatmulOp : Kiln_Op<"matmul", [Pure, DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getMatmulWeights", "getScratchBytes", "getKernelWork"]>]> {
  let summary = "x (C x K) times the transpose of a weight (N x K)";
  let description = [{
    The weight keeps the model's [out, in] layout, so each output is a dot product
    of two contiguous rows, whatever the weight's block format.
  }];
  let arguments = (ins Kiln_F32Tensor:$input, Kiln_WeightTensor:$weight);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_RopeOp : Kiln_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>,
                                  DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getKernelWork"]>]> {
  let summary = "rotary position embedding on adjacent pairs, row i at position pos+i";
  let description = [{
    Pair i of each head turns by (pos + row) * freq_base^(-2i/rope_dim), divided
    by freq_factors[i] when they are set (Llama 3's rope_freqs, linear scaling).
    Pair i is features 2i and 2i+1, or with `neox` features i and i + rope_dim/2
    (GPT-NeoX's layout, which qwen2, qwen3, gemma3 and phi3 keep in GGUF).
    With `mscale` the rotated pairs are also scaled by it (phi3's LongRoPE).
  }];
  let arguments = (ins Kiln_F32Tensor:$input, I32:$pos, I32Attr:$head_dim,
                       I32Attr:$rope_dim, F32Attr:$freq_base,
                       OptionalAttr<DenseF32ArrayAttr>:$freq_factors, UnitAttr:$neox,
                       OptionalAttr<F32Attr>:$mscale);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = "$input `at` $pos attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kiln_AttentionOp : Kiln_Op<"attention", [Pure, DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getKernelWork"]>]> {
  let summary = "causal grouped-query attention of C query rows over the cache";
  let description = [{
    Query row i (position pos+i) attends to positions 0..pos+i, or to the last
    `window` of them when a window is set (position p in cache row p mod the
    cache's rows). Query head h reads kv head
    h / (n_head / n_kv_head). Scores are q.k times `scale`, 1/sqrt(head_dim)
    unless set.
  }];
  let arguments = (ins Kiln_F32Tensor:$query, Kiln_CacheTensor:$keys,
                       Kiln_CacheTensor:$values, I32:$pos, I32Attr:$n_head,
                       I32Attr:$n_kv_head, I32Attr:$head_dim,
                       OptionalAttr<I32Attr>:$window, OptionalAttr<F32Attr>:$scale);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = [{
    $query `,` $keys `,` $values `at` $pos attr-dict `:`
      type($query) `,` type($keys) `,` type($values) `->` type($result)
  }];
  let hasVerifier = 1;
}

class Kiln_UnaryOp<string mnemonic, string what>
    : Kiln_Op<mnemonic, [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getKernelWork"]>]> {
  let summary = what;
  let arguments = (ins Kiln_F32Tensor:$input);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kiln_SiluOp : Kiln_UnaryOp<"silu", "x / (1 + exp(-x))">;
def Kiln_GeluOp : Kiln_UnaryOp<"gelu", "tanh-approximated GELU">;
def Kiln_SoftmaxOp : Kiln_UnaryOp<"softmax", "softmax over the innermost dimension">;

class Kiln_BinaryOp<string mnemonic, string what>
    : Kiln_Op<mnemonic, [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getKernelWork"]>]> {
  let summary = what;
  let arguments = (ins Kiln_F32Tensor:$lhs, Kiln_F32Tensor:$rhs);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs)";
}

def Kiln_AddOp : Kiln_BinaryOp<"add", "elementwise sum"> {
  let hasCanonicalizer = 1;
}

def Kiln_BiasAddOp : Kiln_Op<"bias_add", [Pure, AllTypesMatch<["input", "result"]>,
                                          DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getKernelWork"]>]> {
  let summary = "a bias vector added to every row (qwen2's q, k and v projections)";
  let arguments = (ins Kiln_F32Tensor:$input, Kiln_F32Tensor:$bias);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = "$input `,` $bias attr-dict `:` type($input) `,` type($bias)";
  let hasVerifier = 1;
}
def Kiln_MulOp : Kiln_BinaryOp<"mul", "elementwise product">;

//===----------------------------------------------------------------------===//
// Fused kernels (kiln-fuse)
//===----------------------------------------------------------------------===//

def Kiln_ResidualMatmulOp : Kiln_Op<"residual_matmul", [Pure, DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getMatmulWeights", "getScratchBytes", "getKernelWork"]>]> {
  let summary = "x times the transpose of a weight, plus a residual";
  let description = [{
    A matmul whose only use was an add: each output gets the residual added
    once its dot product is complete, one float addition as the add did, so
    the result has the same bits.
    ```mlir
    %y = kiln.residual_matmul %x, %w plus %r : (tensor<1x5632xf32>, tensor<2048x5632x!kiln.q4_0>, tensor<1x2048xf32>) -> tensor<1x2048xf32>
    ```
  }];
  let arguments = (ins Kiln_F32Tensor:$input, Kiln_WeightTensor:$weight,
                       Kiln_F32Tensor:$residual);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `plus` $residual attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_SwigluMatmulOp : Kiln_Op<"swiglu_matmul", [Pure, DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getMatmulWeights", "getScratchBytes", "getKernelWork"]>]> {
  let summary = "silu(x times gate) * (x times up): the gated feed-forward input";
  let description = [{
    The gate and up matmuls of a feed-forward block and the SiLU and product
    that joined them, as one kernel over both weights (one format, one
    quantization of x): each output is silu(g) * u of the same g and u.
    With `normed by %g` (int8 weights) the input is rms_norm(x, g, epsilon),
    computed row by row straight into the quantized input.
    ```mlir
    %h = kiln.swiglu_matmul %x, %gate, %up : (tensor<1x2048xf32>, tensor<5632x2048x!kiln.q4_0>, tensor<5632x2048x!kiln.q4_0>) -> tensor<1x5632xf32>
    ```
  }];
  let arguments = (ins Kiln_F32Tensor:$input, Kiln_WeightTensor:$gate,
                       Kiln_WeightTensor:$up, Optional<Kiln_F32Tensor>:$norm,
                       OptionalAttr<F32Attr>:$epsilon);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $gate `,` $up (`normed` `by` $norm^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_QkvMatmulOp : Kiln_Op<"qkv_matmul", [Pure, DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getMatmulWeights", "getScratchBytes", "getKernelWork"]>]> {
  let summary = "the query, key and value projections with rope and the cache write";
  let description = [{
    One kernel over the three weights (one format, one quantization of x):
    query and key rows get the rotary embedding of their positions pos..,
    the key and value rows go straight into the caches (converted to the cache
    element), and the roped queries are the result.
    ```mlir
    %q, %k1, %v1 = kiln.qkv_matmul %x, %wq, %wk, %wv into %k, %v at %pos
        {head_dim = 64 : i32, rope_dim = 64 : i32, freq_base = 1.0e4 : f32}
        : (tensor<1x2048xf32>, ...) -> (tensor<1x2048xf32>, tensor<1024x256xf32>, tensor<1024x256xf32>)
    ```
  }];
  let arguments = (ins Kiln_F32Tensor:$input, Kiln_WeightTensor:$wq, Kiln_WeightTensor:$wk,
                       Kiln_WeightTensor:$wv, Kiln_CacheTensor:$keys,
                       Kiln_CacheTensor:$values, I32:$pos, Optional<Kiln_F32Tensor>:$norm,
                       I32Attr:$head_dim, I32Attr:$rope_dim, F32Attr:$freq_base,
                       OptionalAttr<F32Attr>:$epsilon,
                       OptionalAttr<DenseF32ArrayAttr>:$freq_factors, UnitAttr:$neox,
                       OptionalAttr<F32Attr>:$mscale);
  let results = (outs Kiln_F32Tensor:$query, Kiln_CacheTensor:$keys_out,
                      Kiln_CacheTensor:$values_out);
  let assemblyFormat = [{
    $input `,` $wq `,` $wk `,` $wv `into` $keys `,` $values `at` $pos (`normed` `by` $norm^)?
      attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Graph ops of imported ONNX graphs
//
// The general ops an ONNX encoder's graph is made of, one per ONNX op where
// the importer does not match a subgraph into the kernels above. Shapes are
// static and broadcasting explicit (kiln.broadcast), so every op's result
// type follows from its operands and attributes.
//===----------------------------------------------------------------------===//

def Kiln_ConstantOp : Kiln_Op<"constant", [Pure]> {
  let summary = "a constant tensor of the source graph, by name: indices, masks, scalars";
  let description = [{
    As kiln.weight, the bytes stay in the source file until the pack is
    written; this op holds the tensors that are not matmul or norm weights.
    ```mlir
    %c = kiln.constant "/Constant_5_output_0" : tensor<i64>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Kiln_SplatOp : Kiln_Op<"splat", [Pure]> {
  let summary = "a tensor of one value: an op's scalar parameter (epsilon, alpha)";
  let arguments = (ins F32Attr:$value);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

class Kiln_GraphUnaryOp<string mnemonic, string what, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType], traits)> {
  let summary = what;
  let arguments = (ins Kiln_F32Tensor:$input);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kiln_SqrtOp : Kiln_GraphUnaryOp<"sqrt", "elementwise square root">;
def Kiln_ErfOp : Kiln_GraphUnaryOp<"erf", "elementwise error function">;
def Kiln_TanhOp : Kiln_GraphUnaryOp<"tanh", "elementwise hyperbolic tangent">;
def Kiln_GeluErfOp : Kiln_GraphUnaryOp<"gelu_erf", "exact GELU: x / 2 * (1 + erf(x / sqrt(2)))",
    [DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getKernelWork"]>]>;

class Kiln_GraphBinaryOp<string mnemonic, string what>
    : Kiln_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = what;
  let arguments = (ins Kiln_F32Tensor:$lhs, Kiln_F32Tensor:$rhs);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs)";
}

def Kiln_SubOp : Kiln_GraphBinaryOp<"sub", "elementwise difference">;
def Kiln_DivOp : Kiln_GraphBinaryOp<"div", "elementwise quotient">;
def Kiln_PowOp : Kiln_GraphBinaryOp<"pow", "elementwise power">;

def Kiln_EqualOp : Kiln_Op<"equal", [Pure, AllTypesMatch<["lhs", "rhs"]>]> {
  let summary = "elementwise equality, as booleans";
  let arguments = (ins AnyStaticShapeTensor:$lhs, AnyStaticShapeTensor:$rhs);
  let results = (outs TensorOf<[I1]>:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_WhereOp : Kiln_Op<"where", [Pure, AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "lhs where the condition holds, else rhs";
  let arguments = (ins TensorOf<[I1]>:$condition, AnyStaticShapeTensor:$lhs, AnyStaticShapeTensor:$rhs);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs)";
  let hasVerifier = 1;
}

def Kiln_CastOp : Kiln_Op<"cast", [Pure]> {
  let summary = "elementwise conversion to another element type";
  let arguments = (ins AnyStaticShapeTensor:$input);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_BroadcastOp : Kiln_Op<"broadcast", [Pure]> {
  let summary = "repeats the dimensions of 1 (numpy broadcasting) up to the result's shape";
  let arguments = (ins AnyStaticShapeTensor:$input);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure]> {
  let summary = "the same elements in the same order, in another shape";
  let arguments = (ins AnyStaticShapeTensor:$input);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose", [Pure]> {
  let summary = "permutes the dimensions: result dimension i is input dimension perm[i]";
  let arguments = (ins AnyStaticShapeTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input $perm attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_ReduceMeanOp : Kiln_Op<"reduce_mean", [Pure]> {
  let summary = "the mean over the given dimensions, each kept as a dimension of 1";
  let arguments = (ins Kiln_F32Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = "$input $axes attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather", [Pure]> {
  let summary = "entries of `input` along `axis` at the indices (negative counts from the end)";
  let arguments = (ins AnyStaticShapeTensor:$input, TensorOf<[I32, I64]>:$indices, I64Attr:$axis);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input `[` $indices `]` attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat", [Pure]> {
  let summary = "the inputs one after another along `axis`";
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice", [Pure]> {
  let summary = "every step-th entry from start, per dimension (the result's shape gives the count)";
  let arguments = (ins AnyStaticShapeTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input `from` $starts `by` $steps attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_BatchMatmulOp : Kiln_Op<"batch_matmul", [Pure]> {
  let summary = "products of two activations, [B.., M, K] times [B.., K, N]";
  let description = [{
    Attention's scores and its weighted values, where neither operand is a
    weight of the pack.
  }];
  let arguments = (ins Kiln_F32Tensor:$lhs, Kiln_F32Tensor:$rhs);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_AttendOp : Kiln_Op<"attend", [Pure, DeclareOpInterfaceMethods<Kiln_KernelOpInterface, ["getScratchBytes", "getKernelWork"]>]> {
  let summary = "bidirectional attention: softmax(scale * q kT + bias) v, per batch";
  let description = [{
    An encoder's attention over all positions, with keys given transposed
    ([B, D, T]) as exporters compute them and an optional additive bias (the
    mask: 0 or -inf), [B, S, T] or one row [B, 1, T] for every query. One
    kernel can compute it a row
    of scores at a time, so the [B, S, T] score matrix never reaches memory.
    ```mlir
    %o = kiln.attend %q, %kt, %v bias %m {scale = 0.353553385 : f32}
        : (tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>, tensor<4x16x16xf32>) -> tensor<4x16x8xf32>
    ```
  }];
  let arguments = (ins Kiln_F32Tensor:$query, Kiln_F32Tensor:$keys_t, Kiln_F32Tensor:$values,
                       Optional<Kiln_F32Tensor>:$bias, F32Attr:$scale);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = [{
    $query `,` $keys_t `,` $values (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Scratch of one share (split over threads, each has its own): the
    /// kernel's rows of scores, 64-byte aligned.
    int64_t getShareScratchBytes();
  }];
  let hasCanonicalizer = 1;
  let hasVerifier = 1;
}

#endif // KILN_OPS_TD
