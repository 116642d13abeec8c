#ifndef KILN_ATTRS_TD
#define KILN_ATTRS_TD

include "dialects/Kiln/IR/KilnBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Kiln_CacheKind : I32EnumAttr<"CacheKind", "which half of the KV cache", [
  I32EnumAttrCase<"key", 0>, I32EnumAttrCase<"value", 1>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_CacheKindAttr : EnumAttr<Kiln_Dialect, Kiln_CacheKind, "cache_kind">;

def Kiln_KvOrder : I32EnumAttr<"KvOrder", "where a KV cache keeps (position, head)", [
  I32EnumAttrCase<"pos_major", 0>, I32EnumAttrCase<"head_major", 1>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}

class Kiln_Attr<string name, string attrMnemonic> : AttrDef<Kiln_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def Kiln_ModelAttr : Kiln_Attr<"Model", "model"> {
  let summary = "the model a module was imported from and how it is compiled";
  let description = [{
    Set by the importer as `kiln.model` on the module: the source file and
    architecture, the shapes, the KV cache's capacity (`max_context`), the
    prefill chunk, the `--kv-window` and `--kv-layout` settings, and what the
    generated API and tokenizer need. With `--sessions` (`sessions` > 0) the
    caches are a pool of `kv_pages` pages of `kv_page` positions that the
    sessions map through page tables. Every parameter has a default, so a
    hand-written module names only the ones its passes read:
    ```mlir
    module attributes {kiln.model = #kiln.model<max_context = 20, kv_layout = head_major>}
    ```
  }];
  let parameters = (ins
    StringRefParameter<"the model file", "\"\"">:$source,
    StringRefParameter<"general.architecture", "\"\"">:$architecture,
    DefaultValuedParameter<"int64_t", "0">:$n_embd,
    DefaultValuedParameter<"int64_t", "0">:$n_layer,
    DefaultValuedParameter<"int64_t", "0">:$n_ff,
    DefaultValuedParameter<"int64_t", "0">:$n_head,
    DefaultValuedParameter<"int64_t", "0">:$n_kv_head,
    DefaultValuedParameter<"int64_t", "0">:$head_dim,
    DefaultValuedParameter<"int64_t", "0">:$n_vocab,
    DefaultValuedParameter<"int64_t", "0">:$max_context,
    DefaultValuedParameter<"int64_t", "0">:$prefill_chunk,
    DefaultValuedParameter<"int64_t", "0">:$kv_window,
    DefaultValuedParameter<"::kiln::KvOrder", "::kiln::KvOrder::pos_major">:$kv_layout,
    DefaultValuedParameter<"bool", "false">:$tied_output,
    StringRefParameter<"llama or gpt2", "\"\"">:$tokenizer,
    DefaultValuedParameter<"int64_t", "-1">:$bos,
    DefaultValuedParameter<"int64_t", "-1">:$eos,
    DefaultValuedParameter<"bool", "false">:$add_bos,
    DefaultValuedParameter<"bool", "false">:$add_space_prefix,
    DefaultValuedParameter<"int64_t", "0">:$sessions,
    DefaultValuedParameter<"int64_t", "0">:$kv_page,
    DefaultValuedParameter<"int64_t", "0">:$kv_pages
  );
  let assemblyFormat = "`<` struct(params) `>`";
}

def Kiln_PackAttr : Kiln_Attr<"Pack", "pack"> {
  let summary = "the pack written for a module";
  let description = [{
    Set as `kiln.pack` on the module when its pack is written: what the
    generated code checks a pack against (the model hash, the data section and
    the file's bytes) and where the tokenizer finds its vocabulary. A module
    without it gets zeros, so its code opens no pack.
  }];
  let parameters = (ins "uint64_t":$hash, "uint64_t":$data_offset, "uint64_t":$data_bytes,
                        "uint64_t":$file_bytes, "uint64_t":$vocab_offset,
                        "uint64_t":$vocab_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Kiln_KvCacheLayoutAttr : Kiln_Attr<"KvCacheLayout", "kv"> {
  let summary = "how a KV cache keeps its positions and heads";
  let description = [{
    The encoding of a KV cache's tensor type: `order` head_major keeps each of
    the `heads` heads' positions contiguous ([head][position][dim]), pos_major
    every head of a position together ([position][head][dim]). A head-major
    int4 cache over the whole context keeps a head's positions in tiles of
    `tile` (16, kiln-quantize sets it; 0: rows). The importer sets the order
    from --kv-layout.
    ```mlir
    %k = kiln.kv_cache key layer 0 : tensor<256x128xf32, #kiln.kv<head_major, heads = 4>>
    ```
  }];
  let parameters = (ins EnumParameter<Kiln_KvOrder>:$order, "int64_t":$heads,
                        DefaultValuedParameter<"int64_t", "0">:$tile);
  let assemblyFormat = "`<` $order `,` `heads` `=` $heads (`,` `tile` `=` $tile^)? `>`";
}

def Kiln_SlotAttr : Kiln_Attr<"Slot", "slot"> {
  let summary = "a buffer at a fixed offset of the arena";
  let description = [{
    Set by plan-memory on every op whose result lives in the arena. The KV cache
    is a persistent region at the start of the arena; activations follow it.
  }];
  let parameters = (ins "int64_t":$offset, "int64_t":$bytes);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Kiln_SegmentAttr : Kiln_Attr<"Segment", "segment"> {
  let summary = "a weight's bytes in the data section of the pack";
  let description = [{
    Set by pack-layout on every `kiln.weight`. Offsets are from the start of the
    data section; layer -1 holds tensors outside the decoder blocks.
  }];
  let parameters = (ins "int64_t":$offset, "int64_t":$bytes, "int64_t":$layer);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Kiln_PanelAttr : Kiln_Attr<"Panel", "panel"> {
  let summary = "a weight repacked into panels of output rows";
  let description = [{
    Set by pack-layout as `layout` on a `kiln.weight` that only matmuls read,
    when the target's kernels read panels: `rows` consecutive output rows
    interleaved so one vector register holds one value of each
    (kernels/c99/kiln_uk_pack.h gives the byte layout per format).
    The last panel is padded with zero rows.
  }];
  let parameters = (ins "int64_t":$rows);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Kiln_TileAttr : Kiln_Attr<"Tile", "tile"> {
  let summary = "the register and cache tile of a panel matmul";
  let description = [{
    Set by tile-for-cache on a matmul whose weight is in panels: `mr` activation
    rows per register tile, `nr` output rows (the panel height) and `kc` the
    columns of one cache block (a whole number of weight groups): the kernel
    runs over K in blocks of kc so a panel's block and the tile's activations
    stay in L1 while every row tile reuses them. The arithmetic order does not
    depend on the tile.
  }];
  let parameters = (ins "int64_t":$mr, "int64_t":$nr, "int64_t":$kc);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Kiln_SplitAttr : Kiln_Attr<"Split", "split"> {
  let summary = "a kernel's work in shares, one per worker";
  let description = [{
    Set by partition-work on an op whose kernel runs on several workers. Share s
    of `shares` takes, along `axis`:
    - `columns` (matmuls): output columns from (s * u / shares) * grain, where
      u is the columns in units of `grain` (whole weight panels);
    - `rows`: input rows from s * rows / shares;
    - `heads` (attention): (KV head, row) pairs, head-major, from
      s * rows * n_kv_head / shares; a pair is the KV head's query heads.
    The kernel runs on the workers only when its work at run time (multiply-adds,
    or elements for row-wise ops) is at least `threshold`, otherwise all shares
    on the caller. Each output is computed the same way whichever share holds
    it, so the result does not depend on the number of workers.
  }];
  let parameters = (ins StringRefParameter<"rows, columns or heads">:$axis,
                        "int64_t":$shares, "int64_t":$grain, "int64_t":$threshold);
  let assemblyFormat = "`<` struct(params) `>`";
}

#endif // KILN_ATTRS_TD
