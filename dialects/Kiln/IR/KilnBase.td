#ifndef KILN_BASE_TD
#define KILN_BASE_TD

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "Static-shaped transformer graphs compiled ahead of time to C";
  let description = [{
    Graph-level ops on ranked tensors with static shapes for llama-family decoders.
    Weights are `kiln.weight` constants naming a tensor of the source model: their
    bytes never enter the IR. The KV cache is persistent state named by layer and kind.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

#endif // KILN_BASE_TD
