#ifndef KILN_DIALECTS_KILN_IR_KILNDIALECT_H
#define KILN_DIALECTS_KILN_IR_KILNDIALECT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"

#include "dialects/Kiln/IR/KilnDialect.h.inc"
#include "dialects/Kiln/IR/KilnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Kiln/IR/KilnAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Kiln/IR/KilnTypes.h.inc"

namespace kiln {

/// True for the GGUF block formats beyond q8_0 / q4_0 (q4_1 ... q6_k, iq4_nl).
bool isGgmlBlockType(mlir::Type elementType);

/// The format name of a GGUF block type ("q4_k"), empty for any other type.
llvm::StringRef getGgmlBlockName(mlir::Type elementType);

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
