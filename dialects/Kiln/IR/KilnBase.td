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
  // Block formats print as their table names (KilnDialect.cpp).
  let useDefaultTypePrinterParser = 0;
  let extraClassDeclaration = [{
    ::mlir::Type parseType(::mlir::DialectAsmParser &parser) const override;
    void printType(::mlir::Type type, ::mlir::DialectAsmPrinter &printer) const override;
  }];
  let useDefaultAttributePrinterParser = 1;
  // What the importer and the passes record on modules, functions and ops, as
  // `kiln.<name>` attributes (KilnDialect::get<Name>AttrHelper).
  let discardableAttrs = (ins
    // The module: its model and settings (the importer); the pack's data
    // section (pack-layout), the shares of split kernels (partition-work),
    // the KV cache and arena bytes (plan-memory), the pack written for it.
    "::kiln::ModelAttr":$model,
    "::mlir::IntegerAttr":$pack_data_bytes,
    "::mlir::IntegerAttr":$threads,
    "::mlir::IntegerAttr":$kv_bytes,
    "::mlir::IntegerAttr":$arena_bytes,
    "::kiln::PackAttr":$pack,
    // A function: its activations' bytes and their lower bound (plan-memory);
    // the names of its arguments (the importer).
    "::mlir::IntegerAttr":$activation_bytes,
    "::mlir::IntegerAttr":$activation_lower_bound,
    "::mlir::StringAttr":$name,
    // A weight: its segment of the pack and its panels (pack-layout).
    "::kiln::SegmentAttr":$segment,
    "::kiln::PanelAttr":$layout,
    // A kernel op: its tile (tile-for-cache), split (partition-work), result
    // and scratch buffers in the arena (plan-memory).
    "::kiln::TileAttr":$tile,
    "::kiln::SplitAttr":$split,
    "::kiln::SlotAttr":$slot,
    "::kiln::SlotAttr":$scratch
  );
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

#endif // KILN_BASE_TD
