// arm-neon: the portable kernels with AArch64 NEON dot products and sdot for
// int8 weights (codegen_targets/arm/neon/kiln_uk_neon.h).
#include "codegen_targets/Target.h"

const kiln::IsaVariant &kiln::armNeonVariant() {
  static const IsaVariant variant{"arm-neon", "codegen_targets/arm/neon/kiln_uk_neon.h",
                                  "-march=armv8.2-a+dotprod", ""};
  return variant;
}
