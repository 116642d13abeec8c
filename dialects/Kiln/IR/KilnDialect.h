#ifndef KILN_DIALECTS_KILN_IR_KILNDIALECT_H
#define KILN_DIALECTS_KILN_IR_KILNDIALECT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

#include "kernels/kiln_uk_abi.h"

#include <string>

// The attributes first: the dialect's helpers of its discardable attributes
// name them.
#include "dialects/Kiln/IR/KilnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Kiln/IR/KilnAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Kiln/IR/KilnTypes.h.inc"

#include "dialects/Kiln/IR/KilnDialect.h.inc"

namespace kiln {

/// get<Name>Attr(op) and set<Name>Attr(op, value) for each of the dialect's
/// discardable attributes (`kiln.<name>`, KilnBase.td): what the importer and
/// the passes record on modules, functions and ops. A getter gives null when
/// the attribute is absent.
#define KILN_DISCARDABLE_ATTR(Name, AttrT)                                               \
  inline AttrT get##Name##Attr(mlir::Operation *op) {                                     \
    return op->getContext()->getOrLoadDialect<KilnDialect>()->get##Name##AttrHelper().getAttr( \
        op);                                                                             \
  }                                                                                      \
  inline void set##Name##Attr(mlir::Operation *op, AttrT value) {                         \
    op->getContext()->getOrLoadDialect<KilnDialect>()->get##Name##AttrHelper().setAttr(op, \
                                                                                   value); \
  }
KILN_DISCARDABLE_ATTR(Model, ModelAttr)
KILN_DISCARDABLE_ATTR(PackDataBytes, mlir::IntegerAttr)
KILN_DISCARDABLE_ATTR(Threads, mlir::IntegerAttr)
KILN_DISCARDABLE_ATTR(KvBytes, mlir::IntegerAttr)
KILN_DISCARDABLE_ATTR(ArenaBytes, mlir::IntegerAttr)
KILN_DISCARDABLE_ATTR(Pack, PackAttr)
KILN_DISCARDABLE_ATTR(ActivationBytes, mlir::IntegerAttr)
KILN_DISCARDABLE_ATTR(ActivationLowerBound, mlir::IntegerAttr)
KILN_DISCARDABLE_ATTR(Segment, SegmentAttr)
KILN_DISCARDABLE_ATTR(Layout, PanelAttr)
KILN_DISCARDABLE_ATTR(Tile, TileAttr)
KILN_DISCARDABLE_ATTR(Split, SplitAttr)
KILN_DISCARDABLE_ATTR(Slot, SlotAttr)
KILN_DISCARDABLE_ATTR(Scratch, SlotAttr)
#undef KILN_DISCARDABLE_ATTR

/// The model config of the module that holds `op` (or is it); null outside one.
ModelAttr getModelConfig(mlir::Operation *op);

/// The layout of a KV cache of type `cache` (its encoding); null for a cache
/// with none, which is pos-major.
KvCacheLayoutAttr getKvCacheLayout(mlir::Type cache);

/// A weight's storage format: its row of KILN_UK_FORMATS (the code, as the
/// pack numbers it; kernels/kiln_uk_abi.h) and the values per block (1 for the
/// float formats, the group G of i8g<G> and i4g<G>).
struct WeightFormat {
  int code = -1; // -1: not a weight format
  unsigned group = 0;
};

/// The format an element type stores, or code -1.
WeightFormat getWeightFormat(mlir::Type element);

/// Whether `type` is the block format with table code `code` (`!kiln.q4_1`
/// for KILN_UK_FORMAT_Q4_1).
bool isBlockFormat(mlir::Type type, int code);

/// The element type of a format (`group` for the formats with a chosen group),
/// or null.
mlir::Type getWeightFormatType(mlir::MLIRContext *context, int code, unsigned group = 0);

/// The element type a format name gives ("q4_0", "i8g64", "f16", ...), or null.
mlir::Type parseWeightFormat(mlir::MLIRContext *context, llvm::StringRef name);

/// Every format name, for messages: "f32, f16, ..., i8g<G>, i4g<G> with G in
/// 32, 64, 128, 256".
std::string weightFormatNames();

/// The name of a format ("q4_k", "i4g64"), empty for another type.
std::string getWeightFormatName(mlir::Type element);

/// Whether i8g<G> and i4g<G> take `group` (KILN_UK_GROUP_SIZES).
bool isGroupSize(unsigned group);

/// The kernel family (KILN_UK_<family>) that reads an element type, or -1.
int getKernelFamily(mlir::Type element);

/// True for the GGUF block formats beyond q8_0 / q4_0 (q4_1 ... q6_k, iq4_nl).
bool isGgmlBlockType(mlir::Type elementType);

/// True for every block-quantized element type: matmuls over it read their
/// input quantized to int8.
bool isQuantizedType(mlir::Type elementType);

/// Number of logical elements that share one scale: 1 for f32/f16, the block or
/// group size for quantized element types.
int64_t getBlockElements(mlir::Type elementType);

/// Bytes one block of `getBlockElements` elements occupies in the model file.
int64_t getBlockBytes(mlir::Type elementType);

/// Bytes of a tensor of weights laid out as in GGUF (row-major, blocks along the
/// innermost dimension).
int64_t getStorageBytes(mlir::RankedTensorType type);

} // namespace kiln

#endif // KILN_DIALECTS_KILN_IR_KILNDIALECT_H
