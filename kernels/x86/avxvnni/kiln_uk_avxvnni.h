/* x86-avxvnni: the 8-row panel kernels of x86-avx2 with AVX-VNNI's 256-bit
 * vpdpbusd for the int8 dot products (Intel Alder Lake and later, Zen 5). */
#ifndef KILN_UK_AVXVNNI_H
#define KILN_UK_AVXVNNI_H

#ifndef __AVXVNNI__
#error "this model was generated for x86-avxvnni: build with -mavxvnni -mavx2 -mfma -mf16c"
#endif

#include "kernels/x86/avx2/kiln_uk_avx2.h"

#endif /* KILN_UK_AVXVNNI_H */
