/* x86-avx512: the AVX-512 F/BW/VL + VNNI kernels, by family of ops, each
 * replacing the portable helpers of its name; the generated <name>_kernels.c
 * includes this, then kernels/c99/kiln_uk_c99.h. */
#ifndef KILN_UK_AVX512_H
#define KILN_UK_AVX512_H

#include "kernels/x86/avx512/kiln_uk_avx512_base.h"
#include "kernels/x86/avx512/kiln_uk_avx512_elementwise.h"
#include "kernels/x86/avx512/kiln_uk_avx512_quantize.h"
/* Weights that keep the row layout and the GGUF block formats without panels
 * take the AVX2 kernels. */
#include "kernels/x86/avx2/kiln_uk_avx2_matmul_rows.h"
#include "kernels/x86/avx2/kiln_uk_avx2_matmul_blocks.h"
#include "kernels/x86/avx512/kiln_uk_avx512_matmul_panels.h"
#include "kernels/x86/avx512/kiln_uk_avx512_attention.h"
#include "kernels/x86/avx512/kiln_uk_avx512_graph.h"

#endif /* KILN_UK_AVX512_H */
