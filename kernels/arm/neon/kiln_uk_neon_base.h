/* arm-neon: what the NEON kernels share: the target check, the headers and
 * lane helpers. */
#ifndef KILN_UK_NEON_BASE_H
#define KILN_UK_NEON_BASE_H

#if !defined(__aarch64__) || !defined(__ARM_FEATURE_DOTPROD)
#error "this model was generated for arm-neon: build for AArch64 with -march=armv8.2-a+dotprod"
#endif
#include <arm_neon.h>

#include "kernels/c99/kiln_uk_base.h"

/* Loads / stores the first `valid` of 4 lanes. */
static inline float32x4_t kiln_uk_load_lanes(const float *p, int32_t valid) {
  float t[4] = {0, 0, 0, 0};
  if (valid == 4)
    return vld1q_f32(p);
  memcpy(t, p, sizeof(float) * (size_t)valid);
  return vld1q_f32(t);
}
static inline void kiln_uk_store_lanes(float *p, float32x4_t v, int32_t valid) {
  float t[4];
  if (valid == 4) {
    vst1q_f32(p, v);
    return;
  }
  vst1q_f32(t, v);
  memcpy(p, t, sizeof(float) * (size_t)valid);
}

#endif /* KILN_UK_NEON_BASE_H */
