/* x86-avx512: what the AVX-512 kernels share, from the AVX2 base on. */
#ifndef KILN_UK_AVX512_BASE_H
#define KILN_UK_AVX512_BASE_H

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__) || \
    !defined(__AVX512VNNI__) || !defined(__FMA__) || !defined(__F16C__)
#error "this model was generated for x86-avx512: build with -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mfma -mf16c"
#endif
#include <immintrin.h>

#include "kernels/c99/kiln_uk_base.h"
#include "kernels/c99/kiln_uk_pack.h"
#include "kernels/x86/avx2/kiln_uk_avx2_base.h"

/* The first `left` of 16 lanes. */
static inline __mmask16 kiln_uk_tail_mask(int32_t left) {
  return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

/* roundf of 16 lanes (half away from zero), as quantize_act_sums rounds. */
static inline __m512 kiln_uk_round_away_ps(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __mmask16 up =
      _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 one = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ),
                                          _mm512_set1_ps(1.0f), _mm512_set1_ps(-1.0f));
  return _mm512_mask_add_ps(t, up, t, one);
}

/* e^x, 16 lanes: 2^n e^r with n = round(x log2 e), |r| <= ln2 / 2, and a degree-6
 * Taylor polynomial for e^r (relative error about 1e-7). Lanes below -104 give 0. */
static inline __m512 kiln_uk_exp_ps(__m512 x) {
  __m512 n, r, p;
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

#endif /* KILN_UK_AVX512_BASE_H */
