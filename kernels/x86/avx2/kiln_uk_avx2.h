/* x86-avx2 (and x86-avxvnni, which builds on it): the AVX2/FMA/F16C kernels,
 * by family of ops, each replacing the portable helpers of its name; the
 * generated <name>_kernels.c includes this, then kernels/c99/kiln_uk_c99.h. */
#ifndef KILN_UK_AVX2_H
#define KILN_UK_AVX2_H

#include "kernels/x86/avx2/kiln_uk_avx2_base.h"
#include "kernels/x86/avx2/kiln_uk_avx2_elementwise.h"
#include "kernels/x86/avx2/kiln_uk_avx2_quantize.h"
#include "kernels/x86/avx2/kiln_uk_avx2_matmul_rows.h"
#include "kernels/x86/avx2/kiln_uk_avx2_matmul_blocks.h"
#include "kernels/x86/avx2/kiln_uk_avx2_matmul_panels.h"
#include "kernels/x86/avx2/kiln_uk_avx2_attention.h"
#include "kernels/x86/avx2/kiln_uk_avx2_graph.h"

#endif /* KILN_UK_AVX2_H */
