/* The portable micro-kernels, by family of ops: the reference every ISA
 * variant is tested against, and the fallback for the helpers an ISA header
 * (included before this one) does not replace. */
#ifndef KILN_UK_C99_H
#define KILN_UK_C99_H

#include "kernels/c99/kiln_uk_base.h"
#include "kernels/c99/kiln_uk_elementwise.h"
#include "kernels/c99/kiln_uk_matmul_rows.h"
#include "kernels/c99/kiln_uk_attention.h"
#include "kernels/c99/kiln_uk_matmul_blocks.h"
#include "kernels/c99/kiln_uk_graph.h"

#endif /* KILN_UK_C99_H */
