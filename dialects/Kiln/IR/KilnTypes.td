#ifndef KILN_TYPES_TD
#define KILN_TYPES_TD

include "dialects/Kiln/IR/KilnBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypes.td"

class Kiln_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Kiln_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

// Block-quantized element types. A tensor of them has the logical (dequantized)
// shape; the innermost dimension must be a whole number of blocks.
def Kiln_Q8_0Type : Kiln_Type<"Q8_0", "q8_0"> {
  let summary = "GGUF Q8_0: blocks of 32 int8 with one f16 scale (34 bytes)";
}

def Kiln_Q4_0Type : Kiln_Type<"Q4_0", "q4_0"> {
  let summary = "GGUF Q4_0: blocks of 32 4-bit values with one f16 scale (18 bytes)";
}

class Kiln_GroupType<string name, string typeMnemonic, int bitWidth>
    : Kiln_Type<name, typeMnemonic> {
  let summary = "group-wise symmetric int" # bitWidth # " with one f16 scale per group";
  let parameters = (ins "unsigned":$groupSize);
  let assemblyFormat = "`<` $groupSize `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    static constexpr unsigned kBits = }] # bitWidth # [{;
  }];
}

def Kiln_I8GroupType : Kiln_GroupType<"I8Group", "i8g", 8>;
def Kiln_I4GroupType : Kiln_GroupType<"I4Group", "i4g", 4>;

def Kiln_QuantElement : AnyTypeOf<[Kiln_Q8_0Type, Kiln_Q4_0Type, Kiln_I8GroupType,
                                   Kiln_I4GroupType]>;
def Kiln_WeightElement : AnyTypeOf<[F32, F16, Kiln_QuantElement]>;

def Kiln_WeightTensor : RankedTensorOf<[Kiln_WeightElement]>;
def Kiln_F32Tensor : RankedTensorOf<[F32]>;
def Kiln_TokenTensor : 1DTensorOf<[I32]>;
def Kiln_CacheTensor : 2DTensorOf<[F32, F16, Kiln_I8GroupType]>;

#endif // KILN_TYPES_TD
