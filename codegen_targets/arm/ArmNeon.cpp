// arm-neon: 4-row panel kernels with the Armv8.2 dot-product instructions
// (sdot by lane) and NEON row helpers (codegen_targets/arm/neon/).
#include "codegen_targets/Target.h"

const kiln::IsaVariant &kiln::armNeonVariant() {
  // 4-row panels (one int32x4 or float32x4), 32 vector registers; 512 KiB of L2
  // per core as on Cortex-A76/A78-class cores.
  static const IsaVariant variant{"arm-neon",
                                  "codegen_targets/arm/neon/kiln_uk_neon_panels.h",
                                  "-march=armv8.2-a+dotprod",
                                  "",
                                  {/*panelRows=*/4, /*l2Bytes=*/524288, /*vectorBytes=*/16,
                                   /*registers=*/32}};
  return variant;
}
