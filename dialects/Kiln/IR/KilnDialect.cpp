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

/// Rows of the format table whose blocks hold a fixed number of values (and
/// are not the builtin float types): the formats of !kiln.<name>.
static bool isBlockRow(int code) {
  const kiln_uk_format_info *f = kiln_uk_format(code);
  return f && f->elements > 1;
}

LogicalResult BlockType::verify(function_ref<InFlightDiagnostic()> emitError, int format) {
  if (!isBlockRow(format))
    return emitError() << "format " << format << " is not a block format of the format table";
  return success();
}

const kiln_uk_format_info &BlockType::getInfo() const { return *kiln_uk_format(getFormat()); }

Type KilnDialect::parseType(DialectAsmParser &parser) const {
  SMLoc loc = parser.getCurrentLocation();
  StringRef mnemonic;
  Type type;
  OptionalParseResult parsed = generatedTypeParser(parser, &mnemonic, type);
  if (parsed.has_value())
    return type;
  for (int code = 0; code < KILN_UK_FORMAT_END; ++code)
    if (isBlockRow(code) && mnemonic == kiln_uk_format(code)->name)
      return BlockType::get(getContext(), code);
  parser.emitError(loc) << "unknown kiln type '" << mnemonic << "'; the weight formats are "
                        << weightFormatNames();
  return {};
}

void KilnDialect::printType(Type type, DialectAsmPrinter &printer) const {
  if (auto block = dyn_cast<BlockType>(type))
    printer << block.getInfo().name;
  else
    (void)generatedTypePrinter(type, printer);
}

ModelAttr kiln::getModelConfig(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  return module ? getModelAttr(module) : nullptr;
}

KvCacheLayoutAttr kiln::getKvCacheLayout(Type cache) {
  auto type = dyn_cast<RankedTensorType>(cache);
  return type ? dyn_cast_or_null<KvCacheLayoutAttr>(type.getEncoding()) : nullptr;
}

WeightFormat kiln::getWeightFormat(Type element) {
  auto fixed = [](int code) {
    return WeightFormat{code, unsigned(kiln_uk_format(code)->elements)};
  };
  return llvm::TypeSwitch<Type, WeightFormat>(element)
      .Case([&](Float32Type) { return fixed(KILN_UK_FORMAT_F32); })
      .Case([&](Float16Type) { return fixed(KILN_UK_FORMAT_F16); })
      .Case([&](BFloat16Type) { return fixed(KILN_UK_FORMAT_BF16); })
      .Case([&](BlockType t) { return fixed(t.getFormat()); })
      .Case([](I8GroupType t) { return WeightFormat{KILN_UK_FORMAT_I8G, t.getGroupSize()}; })
      .Case([](I4GroupType t) { return WeightFormat{KILN_UK_FORMAT_I4G, t.getGroupSize()}; })
      .Default([](Type) { return WeightFormat{}; });
}

bool kiln::isBlockFormat(Type type, int code) {
  auto block = dyn_cast<BlockType>(type);
  return block && block.getFormat() == code;
}

Type kiln::getWeightFormatType(MLIRContext *ctx, int code, unsigned group) {
  switch (code) {
  case KILN_UK_FORMAT_F32: return Float32Type::get(ctx);
  case KILN_UK_FORMAT_F16: return Float16Type::get(ctx);
  case KILN_UK_FORMAT_BF16: return BFloat16Type::get(ctx);
  case KILN_UK_FORMAT_I8G: return I8GroupType::get(ctx, group);
  case KILN_UK_FORMAT_I4G: return I4GroupType::get(ctx, group);
  default: return isBlockRow(code) ? BlockType::get(ctx, code) : nullptr;
  }
}

Type kiln::parseWeightFormat(MLIRContext *ctx, llvm::StringRef name) {
  for (int code = 0; code < KILN_UK_FORMAT_END; ++code) {
    const kiln_uk_format_info *f = kiln_uk_format(code);
    llvm::StringRef rest = name;
    if (!rest.consume_front(f->name))
      continue;
    if (f->elements)
      return rest.empty() ? getWeightFormatType(ctx, code) : nullptr;
    unsigned group;
    if (!rest.getAsInteger(10, group) && isGroupSize(group))
      return getWeightFormatType(ctx, code, group);
  }
  return nullptr;
}

std::string kiln::getWeightFormatName(Type element) {
  WeightFormat w = getWeightFormat(element);
  if (w.code < 0)
    return "";
  const kiln_uk_format_info *f = kiln_uk_format(w.code);
  return f->elements ? std::string(f->name) : f->name + std::to_string(w.group);
}

std::string kiln::weightFormatNames() {
  std::string names;
  for (bool grouped : {false, true})
    for (int code = 0; code < KILN_UK_FORMAT_END; ++code) {
      const kiln_uk_format_info *f = kiln_uk_format(code);
      if (!f->elements == grouped)
        names += (names.empty() ? "" : ", ") + std::string(f->name) + (grouped ? "<G>" : "");
    }
#define KILN_GROUP_NAME(g) " " #g ","
  std::string groups = KILN_UK_GROUP_SIZES(KILN_GROUP_NAME);
#undef KILN_GROUP_NAME
  return names + " with G in" + groups.substr(0, groups.size() - 1);
}

bool kiln::isGroupSize(unsigned group) {
#define KILN_IS_GROUP(g) group == g ||
  return KILN_UK_GROUP_SIZES(KILN_IS_GROUP) false;
#undef KILN_IS_GROUP
}

int kiln::getKernelFamily(Type element) {
  WeightFormat w = getWeightFormat(element);
  return w.code < 0 ? -1 : kiln_uk_format(w.code)->family;
}

bool kiln::isGgmlBlockType(Type element) {
  return kiln_uk_is_block_family(getKernelFamily(element));
}

bool kiln::isQuantizedType(Type element) {
  int family = getKernelFamily(element);
  return family == KILN_UK_I8 || family == KILN_UK_I4 || kiln_uk_is_block_family(family);
}

int64_t kiln::getBlockElements(Type element) {
  WeightFormat w = getWeightFormat(element);
  return w.code < 0 ? 1 : w.group;
}

int64_t kiln::getBlockBytes(Type element) {
  WeightFormat w = getWeightFormat(element);
  if (w.code < 0)
    return (element.getIntOrFloatBitWidth() + 7) / 8;
  return kiln_uk_format_bytes(w.code, int32_t(w.group));
}

int64_t kiln::getStorageBytes(RankedTensorType type) {
  Type element = type.getElementType();
  return type.getNumElements() / getBlockElements(element) * getBlockBytes(element);
}
