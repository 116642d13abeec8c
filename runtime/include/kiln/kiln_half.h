/* IEEE 754 binary16 <-> binary32 conversions for generated kernels.
 *
 * Pure bit manipulation so results are identical on every target, including
 * cores without f16 hardware and compilers without _Float16. */
#ifndef KILN_KILN_HALF_H
#define KILN_KILN_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* memcpy rather than a union: well defined in both C and C++, and compilers
 * turn it into a register move. */
static inline float kiln_bits_to_f32(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static inline uint32_t kiln_f32_to_bits(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return bits;
}

/* Exact: every half value, including subnormals, infinities and NaN payloads,
 * is representable as a float. */
static inline float kiln_f16_to_f32(uint16_t h) {
  /* Branch-free so kernel loops vectorize: the exponent and mantissa bits moved
   * into float position and scaled by 2^112 give every finite half exactly
   * (subnormals included, as float subnormals times 2^112); inf and NaN then
   * get the all-ones exponent with their payload. */
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t bits = kiln_f32_to_bits(kiln_bits_to_f32((uint32_t)(h & 0x7FFFu) << 13) *
                                   5.192296858534828e+33f);
  uint32_t special = (h & 0x7C00u) == 0x7C00u ? 0x7F800000u : 0u;
  return kiln_bits_to_f32(sign | bits | special);
}

/* Round to nearest, ties to even, like the hardware conversions. Values of
 * magnitude >= 65520 become infinity; NaN stays NaN with its top payload bits. */
static inline uint16_t kiln_f32_to_f16(float f) {
  uint32_t x = kiln_f32_to_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t a = x & 0x7FFFFFFFu;
  uint32_t half, rem, mant, shift, halfway;

  if (a > 0x7F800000u) { /* NaN: keep the payload, but it must not become zero (inf) */
    mant = (a >> 13) & 0x3FFu;
    return (uint16_t)(sign | 0x7C00u | (mant != 0u ? mant : 0x200u));
  }
  if (a >= 0x477FF000u) /* 65520: halfway to 2^16, ties to even go up */
    return (uint16_t)(sign | 0x7C00u);
  if (a >= 0x38800000u) { /* half normal range, >= 2^-14 */
    a -= 0x38000000u;     /* rebias 127 -> 15 */
    half = a >> 13;
    rem = a & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u) != 0u))
      half++; /* a carry into the exponent is still the right answer */
    return (uint16_t)(sign | half);
  }
  if (a <= 0x33000000u) /* <= 2^-25: rounds to (signed) zero */
    return (uint16_t)sign;
  /* Half subnormal: value * 2^24 rounded, i.e. the float mantissa shifted down. */
  mant = (a & 0x7FFFFFu) | 0x800000u;
  shift = 126u - (a >> 23); /* 14..24 */
  half = mant >> shift;
  rem = mant & ((1u << shift) - 1u);
  halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (half & 1u) != 0u))
    half++; /* may reach 0x400, the smallest normal: correct */
  return (uint16_t)(sign | half);
}

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_HALF_H */
