// arm-neon: 4-row panel kernels with the Armv8.2 dot-product instructions
// (sdot by lane) and NEON row helpers (codegen_targets/arm/neon/); arm-neon-i8mm
// adds the Armv8.6 int8 matrix multiply (smmla) for pairs of activation rows.
#include "codegen_targets/Target.h"

// 4-row panels (one int32x4 or float32x4), 32 vector registers; 512 KiB of L2 per
// core as on Cortex-A76/A78-class cores.
static constexpr kiln::KernelTarget kNeonKernels{/*panelRows=*/4, /*blockPanels=*/"",
                                                 /*l2Bytes=*/524288, /*vectorBytes=*/16,
                                                 /*registers=*/32};

const kiln::IsaVariant &kiln::armNeonVariant() {
  static const IsaVariant variant{"arm-neon", "codegen_targets/arm/neon/kiln_uk_neon_panels.h",
                                  "-march=armv8.2-a+dotprod", "", kNeonKernels};
  return variant;
}

const kiln::IsaVariant &kiln::armNeonI8mmVariant() {
  static const IsaVariant variant{"arm-neon-i8mm",
                                  "codegen_targets/arm/neon/kiln_uk_neon_panels.h",
                                  "-march=armv8.2-a+dotprod+i8mm", "", kNeonKernels};
  return variant;
}
