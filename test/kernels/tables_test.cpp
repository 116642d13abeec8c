// The tables every consumer reads, against each consumer that cannot be
// generated from them: each row of the format table (KILN_UK_FORMATS,
// kernels/kiln_uk_abi.h) as the dialect's type, the quantizer's format, a GGUF
// tensor type and the pack schema's enum name; and each row of the ISA table
// (codegen_targets/isa_variants.json) as kiln-compile reads it, with formats
// that exist and entry headers that do. Exit status 1 names each disagreement.
#include "codegen_targets/Target.h"
#include "compiler/import/GGUFReader.h"
#include "compiler/pack/kiln_pack_generated.h"
#include "compiler/quant/Quantize.h"
#include "dialects/Kiln/IR/KilnDialect.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <string>

using namespace kiln;

static int failed = 0, passed = 0;

static void check(bool ok, const std::string &what) {
  if (ok) {
    ++passed;
    return;
  }
  ++failed;
  std::printf("FAIL %s\n", what.c_str());
}

static std::string printed(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

static void checkFormat(mlir::MLIRContext &ctx, int code) {
  const kiln_uk_format_info *f = kiln_uk_format(code);
  std::string row = std::string("format ") + f->name;
  check(f->pack == code, row + ": the table's rows are in the order of their codes");
  unsigned group = f->elements ? unsigned(f->elements) : 64;
  std::string name = f->name + std::string(f->elements ? "" : "64");

  // The dialect: a type per row, bound both ways, with the table's sizes.
  mlir::Type type = getWeightFormatType(&ctx, code, group);
  check(bool(type), row + ": the dialect has a type for it");
  if (!type)
    return;
  WeightFormat w = getWeightFormat(type);
  check(w.code == code && w.group == group, row + ": getWeightFormat gives the row back");
  check(getWeightFormatName(type) == name, row + ": named " + name);
  check(parseWeightFormat(&ctx, name) == type, row + ": parseWeightFormat(" + name + ")");
  check(getBlockElements(type) == int64_t(group) &&
            getBlockBytes(type) == kiln_uk_format_bytes(code, int32_t(group)),
        row + ": block elements and bytes");
  check(getKernelFamily(type) == f->family, row + ": kernel family");
  std::string text = printed(type);
  check(text == name || llvm::StringRef(text).starts_with("!kiln." + std::string(f->name)),
        row + ": prints as " + text);

  // The quantizer's formats.
  quant::FormatSpec spec;
  check(quant::parseFormat(name, spec) && int(spec.format) == code && spec.group == group &&
            quant::blockBytes(spec) == size_t(getBlockBytes(type)) &&
            quant::formatName(spec) == name,
        row + ": the quantizer's format");

  // GGUF's tensor types.
  if (f->gguf >= 0) {
    uint64_t elements = 0, bytes = 0;
    check(gguf::formatOfTensorType(uint32_t(f->gguf)) == code &&
              gguf::blockLayout(uint32_t(f->gguf), elements, bytes) &&
              elements == uint64_t(group) && bytes == uint64_t(getBlockBytes(type)),
          row + ": GGUF type " + std::to_string(f->gguf));
  }

  // The pack schema's enum (its codes are checked when the pack writer builds).
  check(llvm::StringRef(pack::EnumNameFormat(pack::Format(code))).lower() ==
            llvm::StringRef(f->name).lower(),
        row + ": kiln_pack.fbs names code " + std::to_string(code) + " " +
            pack::EnumNameFormat(pack::Format(code)));
}

static void checkVariant(const IsaVariant &v, const char *root) {
  std::string row = std::string("variant ") + v.name;
  for (llvm::StringRef format : llvm::split(v.kernel.blockPanels, ',')) {
    if (format.empty())
      continue;
    mlir::MLIRContext ctx;
    ctx.loadDialect<KilnDialect>();
    mlir::Type type = parseWeightFormat(&ctx, format);
    check(type && isGgmlBlockType(type),
          row + ": block_panels names " + format.str() + ", a GGUF block format");
  }
  if (*v.header)
    check(llvm::sys::fs::exists(std::string(root) + "/" + v.header),
          row + ": its entry header " + v.header + " exists");
  // 0 keeps the model's row layout: the portable target, and microcontrollers,
  // whose row dots read a weight row once per token either way.
  check(v.kernel.panelRows >= 0 && (*v.header || v.kernel.panelRows == 0),
        row + ": panel rows " + std::to_string(v.kernel.panelRows));
  check(!v.cpuCheck().empty() || std::string(v.arch) != "x86_64" || v.cpuFeatures.empty(),
        row + ": an x86 variant checks the CPU");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::printf("usage: tables-test <repository root>\n");
    return 2;
  }
  mlir::MLIRContext ctx;
  ctx.loadDialect<KilnDialect>();
  for (int code = 0; code < KILN_UK_FORMAT_END; ++code)
    checkFormat(ctx, code);
  check(pack::Format_TQ2_0 + 1 == KILN_UK_FORMAT_END && pack::Format_I64 == 64 &&
            pack::Format_MAX == pack::Format_BOOL,
        "kiln_pack.fbs has every weight format, then only the graph constants' codes from 64");
  for (const IsaVariant &v : isaVariants())
    checkVariant(v, argv[1]);
  check(!isaVariants().empty() && std::string(isaVariants().front().name) == "c99",
        "the ISA table starts with the portable c99");
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
