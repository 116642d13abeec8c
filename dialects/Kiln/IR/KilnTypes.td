#ifndef KILN_TYPES_TD
#define KILN_TYPES_TD

include "dialects/Kiln/IR/KilnBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypes.td"

class Kiln_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Kiln_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

// Block-quantized element types: one type for every block format of the
// format table, KILN_UK_FORMATS in kernels/kiln_uk_abi.h (the rows whose blocks
// hold a fixed number of values: q8_0, q4_0, q4_1, ..., q6_k), printed as the
// row's name (`!kiln.q8_0`, `!kiln.q4_k`); the dialect parses and prints it
// (KilnDialect.cpp), so a format added to the table is a type with no change
// here. A tensor of them has the logical (dequantized) shape; the innermost
// dimension must be a whole number of blocks.
def Kiln_BlockType : TypeDef<Kiln_Dialect, "Block"> {
  let summary = "a block format of the format table";
  let typeName = "kiln.block";
  let parameters = (ins "int":$format);
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The format's row of the table (kiln_uk_format(getFormat())).
    const kiln_uk_format_info &getInfo() const;
  }];
}

// A block format by its table row's ID.
class Kiln_BlockFormat<string id>
    : Type<CPred<"::kiln::isBlockFormat($_self, KILN_UK_FORMAT_" # id # ")">,
           "block format " # id, "::kiln::BlockType">;

class Kiln_GroupType<string name, string typeMnemonic, int bitWidth>
    : Kiln_Type<name, typeMnemonic> {
  let summary = "group-wise symmetric int" # bitWidth # " with one f16 scale per group";
  let parameters = (ins "unsigned":$groupSize);
  let assemblyFormat = "`<` $groupSize `>`";
  let genVerifyDecl = 1;
}

def Kiln_I8GroupType : Kiln_GroupType<"I8Group", "i8g", 8>;
def Kiln_I4GroupType : Kiln_GroupType<"I4Group", "i4g", 4>;

def Kiln_QuantElement : AnyTypeOf<[Kiln_BlockType, Kiln_I8GroupType, Kiln_I4GroupType]>;
def Kiln_WeightElement : AnyTypeOf<[F32, F16, BF16, Kiln_QuantElement]>;

def Kiln_WeightTensor : RankedTensorOf<[Kiln_WeightElement]>;
def Kiln_F32Tensor : RankedTensorOf<[F32]>;
def Kiln_TokenTensor : 1DTensorOf<[I32]>;
def Kiln_CacheTensor : 2DTensorOf<[F32, F16, Kiln_I8GroupType, Kiln_BlockFormat<"Q4_1">]>;

#endif // KILN_TYPES_TD
