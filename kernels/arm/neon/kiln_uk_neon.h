/* arm-neon and arm-neon-i8mm: the AArch64 NEON kernels (dot products with
 * sdot, smmla for pairs of rows with i8mm), by family of ops, each replacing
 * the portable helpers of its name; the generated <name>_kernels.c includes
 * this, then kernels/c99/kiln_uk_c99.h. */
#ifndef KILN_UK_NEON_H
#define KILN_UK_NEON_H

#include "kernels/arm/neon/kiln_uk_neon_base.h"
#include "kernels/arm/neon/kiln_uk_neon_elementwise.h"
#include "kernels/arm/neon/kiln_uk_neon_matmul_rows.h"
#include "kernels/arm/neon/kiln_uk_neon_matmul_blocks.h"
#include "kernels/arm/neon/kiln_uk_neon_matmul_panels.h"
#include "kernels/arm/neon/kiln_uk_neon_attention.h"
#include "kernels/arm/neon/kiln_uk_neon_graph.h"

#endif /* KILN_UK_NEON_H */
