// riscv-rvv: the portable kernels with RISC-V Vector 1.0 dot products and row-wise ops
// (codegen_targets/riscv/rvv/kiln_uk_rvv.h).
#include "codegen_targets/Target.h"

const kiln::IsaVariant &kiln::riscvRvvVariant() {
  // qemu-riscv64 7.2 aborts on some RVV code clang 19 auto-vectorizes the
  // portable loops into, so only the intrinsic helpers use vectors.
  static const IsaVariant variant{"riscv-rvv", "codegen_targets/riscv/rvv/kiln_uk_rvv.h",
                                  "-march=rv64gcv -fno-vectorize -fno-slp-vectorize", ""};
  return variant;
}
