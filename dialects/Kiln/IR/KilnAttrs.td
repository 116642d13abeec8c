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

class Kiln_Attr<string name, string attrMnemonic> : AttrDef<Kiln_Dialect, name> {
  let mnemonic = attrMnemonic;
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
    (codegen_targets/c99/kiln_uk_pack.h gives the byte layout per format).
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
