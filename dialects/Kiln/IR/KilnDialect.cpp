#include "dialects/Kiln/IR/KilnDialect.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln;

#include "dialects/Kiln/IR/KilnDialect.cpp.inc"
#include "dialects/Kiln/IR/KilnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Kiln/IR/KilnAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Kiln/IR/KilnTypes.cpp.inc"

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Kiln/IR/KilnOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/Kiln/IR/KilnTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Kiln/IR/KilnAttrs.cpp.inc"
      >();
}

static LogicalResult verifyGroupSize(function_ref<InFlightDiagnostic()> emitError,
                                     unsigned groupSize) {
  // Any even size: weights use 32 to 256, a q8 KV cache one group per head.
  if (groupSize < 2 || groupSize % 2 != 0 || groupSize > 4096)
    return emitError() << "group size must be an even number from 2 to 4096, got "
                       << groupSize;
  return success();
}

LogicalResult I8GroupType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  unsigned groupSize) {
  return verifyGroupSize(emitError, groupSize);
}

LogicalResult I4GroupType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  unsigned groupSize) {
  return verifyGroupSize(emitError, groupSize);
}

#define KILN_GGML_BLOCK_TYPES                                                            \
  Q4_1Type, Q5_0Type, Q5_1Type, IQ4_NLType, Q2_KType, Q3_KType, Q4_KType, Q5_KType, Q6_KType

bool kiln::isGgmlBlockType(Type elementType) { return isa<KILN_GGML_BLOCK_TYPES>(elementType); }

llvm::StringRef kiln::getGgmlBlockName(Type elementType) {
  return llvm::TypeSwitch<Type, llvm::StringRef>(elementType)
      .Case<KILN_GGML_BLOCK_TYPES>([](auto t) { return decltype(t)::getMnemonic(); })
      .Default([](Type) { return llvm::StringRef(); });
}

bool kiln::isQuantizedType(Type elementType) {
  return isa<Q8_0Type, Q4_0Type, I8GroupType, I4GroupType>(elementType) ||
         isGgmlBlockType(elementType);
}

int64_t kiln::getBlockElements(Type elementType) {
  return llvm::TypeSwitch<Type, int64_t>(elementType)
      .Case<Q8_0Type, Q4_0Type>([](auto) { return 32; })
      .Case<KILN_GGML_BLOCK_TYPES>([](auto t) { return decltype(t)::kBlockElements; })
      .Case<I8GroupType, I4GroupType>([](auto t) { return t.getGroupSize(); })
      .Default([](Type) { return 1; });
}

int64_t kiln::getBlockBytes(Type elementType) {
  // Group-wise formats store an f16 scale followed by the packed values.
  return llvm::TypeSwitch<Type, int64_t>(elementType)
      .Case<Q8_0Type>([](auto) { return 34; })
      .Case<Q4_0Type>([](auto) { return 18; })
      .Case<KILN_GGML_BLOCK_TYPES>([](auto t) { return decltype(t)::kBlockBytes; })
      .Case<I8GroupType>([](auto t) { return 2 + t.getGroupSize(); })
      .Case<I4GroupType>([](auto t) { return 2 + t.getGroupSize() / 2; })
      .Case<Float16Type, BFloat16Type>([](auto) { return 2; })
      .Default([](Type t) { return (t.getIntOrFloatBitWidth() + 7) / 8; });
}

int64_t kiln::getStorageBytes(RankedTensorType type) {
  Type element = type.getElementType();
  return type.getNumElements() / getBlockElements(element) * getBlockBytes(element);
}
