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

#endif // KILN_ATTRS_TD
