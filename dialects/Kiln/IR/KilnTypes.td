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
// shape; the innermost dimension must be a whole number of blocks. Each is a
// row of the format table, KILN_UK_FORMATS in kernels/kiln_uk_abi.h, which has
// its block's values and bytes; getWeightFormat binds the types to the rows.
def Kiln_Q8_0Type : Kiln_Type<"Q8_0", "q8_0"> {
  let summary = "GGUF Q8_0: blocks of 32 int8 with one f16 scale";
}

def Kiln_Q4_0Type : Kiln_Type<"Q4_0", "q4_0"> {
  let summary = "GGUF Q4_0: blocks of 32 4-bit values with one f16 scale";
}

class Kiln_GroupType<string name, string typeMnemonic, int bitWidth>
    : Kiln_Type<name, typeMnemonic> {
  let summary = "group-wise symmetric int" # bitWidth # " with one f16 scale per group";
  let parameters = (ins "unsigned":$groupSize);
  let assemblyFormat = "`<` $groupSize `>`";
  let genVerifyDecl = 1;
}

def Kiln_I8GroupType : Kiln_GroupType<"I8Group", "i8g", 8>;
def Kiln_I4GroupType : Kiln_GroupType<"I4Group", "i4g", 4>;

// The other GGUF block formats, kept in the file's layout (GgmlBlocks.h in
// compiler/quant describes each).
class Kiln_GgmlBlockType<string name, string typeMnemonic, string what>
    : Kiln_Type<name, typeMnemonic> {
  let summary = "GGUF " # name # ": " # what;
}

def Kiln_Q4_1Type : Kiln_GgmlBlockType<"Q4_1", "q4_1", "4-bit, f16 scale and min">;
def Kiln_Q5_0Type : Kiln_GgmlBlockType<"Q5_0", "q5_0", "5-bit, f16 scale">;
def Kiln_Q5_1Type : Kiln_GgmlBlockType<"Q5_1", "q5_1", "5-bit, f16 scale and min">;
def Kiln_IQ4_NLType : Kiln_GgmlBlockType<"IQ4_NL", "iq4_nl",
                                         "4-bit indices into a fixed non-linear table">;
def Kiln_Q2_KType : Kiln_GgmlBlockType<"Q2_K", "q2_k", "2-bit, 4-bit scales and mins per 16">;
def Kiln_Q3_KType : Kiln_GgmlBlockType<"Q3_K", "q3_k", "3-bit, 6-bit scales per 16">;
def Kiln_Q4_KType : Kiln_GgmlBlockType<"Q4_K", "q4_k", "4-bit, 6-bit scales and mins per 32">;
def Kiln_Q5_KType : Kiln_GgmlBlockType<"Q5_K", "q5_k", "5-bit, 6-bit scales and mins per 32">;
def Kiln_Q6_KType : Kiln_GgmlBlockType<"Q6_K", "q6_k", "6-bit, int8 scales per 16">;

def Kiln_GgmlBlockElement : AnyTypeOf<[Kiln_Q4_1Type, Kiln_Q5_0Type, Kiln_Q5_1Type,
                                       Kiln_IQ4_NLType, Kiln_Q2_KType, Kiln_Q3_KType,
                                       Kiln_Q4_KType, Kiln_Q5_KType, Kiln_Q6_KType]>;
def Kiln_QuantElement : AnyTypeOf<[Kiln_Q8_0Type, Kiln_Q4_0Type, Kiln_I8GroupType,
                                   Kiln_I4GroupType, Kiln_GgmlBlockElement]>;
def Kiln_WeightElement : AnyTypeOf<[F32, F16, BF16, Kiln_QuantElement]>;

def Kiln_WeightTensor : RankedTensorOf<[Kiln_WeightElement]>;
def Kiln_F32Tensor : RankedTensorOf<[F32]>;
def Kiln_TokenTensor : 1DTensorOf<[I32]>;
def Kiln_CacheTensor : 2DTensorOf<[F32, F16, Kiln_I8GroupType, Kiln_Q4_1Type]>;

#endif // KILN_TYPES_TD
