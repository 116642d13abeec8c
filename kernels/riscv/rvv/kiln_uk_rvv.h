/* riscv-rvv: the RISC-V Vector 1.0 kernels, by family of ops, each replacing
 * the portable helpers of its name; the generated <name>_kernels.c includes
 * this, then kernels/c99/kiln_uk_c99.h. Vector length agnostic (the block
 * dots, 16 bytes at a time, need the V extension's least VLEN, 128). */
#ifndef KILN_UK_RVV_H
#define KILN_UK_RVV_H

#include "kernels/riscv/rvv/kiln_uk_rvv_base.h"
#include "kernels/riscv/rvv/kiln_uk_rvv_elementwise.h"
#include "kernels/riscv/rvv/kiln_uk_rvv_matmul_rows.h"
#include "kernels/riscv/rvv/kiln_uk_rvv_matmul_blocks.h"
#include "kernels/riscv/rvv/kiln_uk_rvv_matmul_panels.h"
#include "kernels/riscv/rvv/kiln_uk_rvv_attention.h"
#include "kernels/riscv/rvv/kiln_uk_rvv_graph.h"

#endif /* KILN_UK_RVV_H */
