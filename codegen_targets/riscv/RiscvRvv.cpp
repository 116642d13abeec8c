// riscv-rvv: 4-row panel kernels with RISC-V Vector 1.0 multiply-adds and RVV row
// helpers (codegen_targets/riscv/rvv/), vector-length agnostic from VLEN 128 up.
#include "codegen_targets/Target.h"

// 4-row panels (4 int32 or f32 lanes at LMUL 1), 32 vector registers; 512 KiB of
// L2 per core as on C908/X60-class cores.
static constexpr kiln::KernelTarget kRvvKernels{/*panelRows=*/4, /*blockPanels=*/"",
                                                /*l2Bytes=*/524288, /*vectorBytes=*/16,
                                                /*registers=*/32};

const kiln::IsaVariant &kiln::riscvRvvVariant() {
  // qemu-riscv64 7.2 aborts on some RVV code clang 19 auto-vectorizes the
  // portable loops into, so only the intrinsic helpers use vectors.
  static const IsaVariant variant{"riscv-rvv", "codegen_targets/riscv/rvv/kiln_uk_rvv_panels.h",
                                  "-march=rv64gcv -fno-vectorize -fno-slp-vectorize", "",
                                  kRvvKernels};
  return variant;
}
