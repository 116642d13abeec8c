#include "compiler/quant/GgmlBlocks.h"

// The kernels' decoders: one decoder per format for the compiler and the
// generated code. This file builds with -ffp-contract=off, as they need.
#include "kernels/c99/kiln_uk_block_decode.h"

#include <cmath>
#include <cstring>

#ifdef __FAST_MATH__
#error "GgmlBlocks.cpp must be built without -ffast-math to stay bit-exact with ggml"
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace kiln::quant::ggml {

namespace {

// Stores f16(v) and returns the value the decoder will read.
float storeHalf(uint8_t *p, float v) {
  uint16_t h = f32ToF16(v);
  p[0] = static_cast<uint8_t>(h & 0xFF);
  p[1] = static_cast<uint8_t>(h >> 8);
  return f16ToF32(h);
}

// round(v) (half away from zero) clamped to [lo, hi]; NaN gives the code
// nearest zero. Inline arithmetic: the encoders call it a few dozen times per
// weight.
int code(float v, int lo, int hi) {
  if (!(v == v))
    return lo > 0 ? lo : (hi < 0 ? hi : 0);
  if (v <= static_cast<float>(lo))
    return lo;
  if (v >= static_cast<float>(hi))
    return hi;
  int t = static_cast<int>(v); // toward zero, |v| < 2^31 here
  float f = v - static_cast<float>(t);
  return f >= 0.5f ? t + 1 : f <= -0.5f ? t - 1 : t;
}

// The q4_k / q5_k packing of eight 6-bit scales and eight 6-bit mins.
void packScaleMinK4(const int *sc, const int *m, uint8_t *q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

// The q3_k packing of sixteen 6-bit values: value s = 4 * group + i sits in
// a nibble of byte i (groups 0, 2) or 4 + i (groups 1, 3), low nibble for
// groups 0 and 1, and its top two bits in bits 2 * group of byte 8 + i.
void packQ3Scales(const int *v, uint8_t *p) {
  std::memset(p, 0, 12);
  for (int s = 0; s < 16; ++s) {
    int group = s / 4, i = s % 4;
    uint8_t &byte = p[(group & 1) ? 4 + i : i];
    byte = static_cast<uint8_t>(byte | ((v[s] & 15) << (group < 2 ? 0 : 4)));
    p[8 + i] = static_cast<uint8_t>(p[8 + i] | ((v[s] >> 4) << (2 * group)));
  }
}

// --- encoders -------------------------------------------------------------

// x ~ scale * q + offset with q in [0, nmax] by least squared error: a few
// scales around (max - min) / nmax, each refit by least squares. With
// `offsetAtMostZero` (the k-quants store -offset as an unsigned min) the
// offset is kept <= 0.
struct Affine {
  float scale = 0, offset = 0;
};

Affine fitAffine(const float *x, int n, int nmax, bool offsetAtMostZero) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  if (offsetAtMostZero && lo > 0)
    lo = 0;
  Affine best{0, lo};
  if (!(hi > lo)) // constant (or NaN) block
    return best;
  double bestErr = INFINITY;
  for (int t = -4; t <= 4; ++t) {
    // Codes for a scale near (hi - lo) / nmax, then twice the least-squares
    // scale and offset for the codes and the codes for those, then its error.
    Affine a{(hi - lo) / (static_cast<float>(nmax) + 0.25f * static_cast<float>(t)), lo};
    for (int pass = 0; pass < 2; ++pass) {
      const float is = 1.0f / a.scale;
      double sq = 0, sqq = 0, sx = 0, sqx = 0;
      for (int i = 0; i < n; ++i) {
        double q = code((x[i] - a.offset) * is, 0, nmax);
        sq += q, sqq += q * q, sx += x[i], sqx += q * x[i];
      }
      double det = n * sqq - sq * sq, sc, o;
      if (det > 0) {
        sc = (n * sqx - sq * sx) / det;
        o = (sx - sc * sq) / n;
      } else { // one code for all: the scale alone
        sc = sqq > 0 ? sqx / sqq : a.scale;
        o = sqq > 0 ? 0.0 : a.offset;
      }
      if (offsetAtMostZero && o > 0) {
        o = 0;
        sc = sqq > 0 ? sqx / sqq : sc;
      }
      if (!(sc > 0))
        break;
      a = {static_cast<float>(sc), static_cast<float>(o)};
    }
    const float is = 1.0f / a.scale;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      double e = a.scale * code((x[i] - a.offset) * is, 0, nmax) + a.offset - x[i];
      err += e * e;
    }
    if (err < bestErr) {
      bestErr = err;
      best = a;
    }
  }
  return best;
}

// x ~ scale * level(q): levels `lv` (count of them, ascending, the first the
// most negative), by least squared error; the value of largest magnitude maps
// near the first level.
// The nearest of `count` ascending levels, branch-free: the number of the
// midpoints between neighbours that v passes (a tie takes the lower level).
int nearestLevel(float v, const int *lv, int count) {
  int index = 0;
  for (int i = 0; i + 1 < count; ++i)
    index += v > 0.5f * static_cast<float>(lv[i] + lv[i + 1]);
  return index;
}

float fitLevels(const float *x, int n, const int *lv, int count) {
  float peak = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(peak))
      peak = x[i];
  if (peak == 0 || std::isnan(peak))
    return 0;
  float best = peak / static_cast<float>(lv[0]);
  double bestErr = INFINITY;
  for (int t = -3; t <= 3; ++t) {
    float s = peak / (static_cast<float>(lv[0]) * (1.0f + 0.05f * static_cast<float>(t)));
    double sll = 0, slx = 0;
    for (int i = 0; i < n; ++i) {
      double l = lv[nearestLevel(x[i] / s, lv, count)];
      sll += l * l, slx += l * x[i];
    }
    if (sll > 0)
      s = static_cast<float>(slx / sll);
    if (s == 0)
      continue;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      double e = s * lv[nearestLevel(x[i] / s, lv, count)] - x[i];
      err += e * e;
    }
    if (err < bestErr) {
      bestErr = err;
      best = s;
    }
  }
  return best;
}

// x ~ scale * q with integer codes q in lo..hi (lo < 0 < hi): as fitLevels for
// the levels lo..hi, with the nearest level found by rounding.
float fitSymmetric(const float *x, int n, int lo, int hi) {
  float peak = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(peak))
      peak = x[i];
  if (peak == 0 || std::isnan(peak))
    return 0;
  float best = peak / static_cast<float>(lo);
  float bestErr = INFINITY;
  for (int t = -3; t <= 3; ++t) {
    float s = peak / (static_cast<float>(lo) * (1.0f + 0.05f * static_cast<float>(t)));
    float is = 1.0f / s;
    double sqq = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      double q = code(x[i] * is, lo, hi);
      sqq += q * q, sqx += q * x[i];
    }
    if (sqq > 0)
      s = static_cast<float>(sqx / sqq);
    if (s == 0)
      continue;
    is = 1.0f / s;
    float err = 0; // over one sub-block: float is enough to rank the scales
    for (int i = 0; i < n; ++i) {
      float e = s * static_cast<float>(code(x[i] * is, lo, hi)) - x[i];
      err += e * e;
    }
    if (err < bestErr) {
      bestErr = err;
      best = s;
    }
  }
  return best;
}

// q4_1 and q5_1: a scale and a min for codes 0..nmax, stored as f16 at out,
// then the codes (as the decoder reads the stored halves) into q.
void fitQ4_1OrQ5_1(const float *x, int nmax, uint8_t *out, int *q) {
  Affine a = fitAffine(x, 32, nmax, false);
  const float d = storeHalf(out, a.scale), m = storeHalf(out + 2, a.offset);
  for (int j = 0; j < 32; ++j)
    q[j] = d > 0 ? code((x[j] - m) / d, 0, nmax) : 0;
}

void encodeQ4_1(const float *x, uint8_t *out) {
  int q[32];
  fitQ4_1OrQ5_1(x, 15, out, q);
  for (int j = 0; j < 16; ++j)
    out[4 + j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
}

void packQ5(const int *q, uint8_t *qh4, uint8_t *qs) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
    qh |= uint32_t(q[j] >> 4) << j | uint32_t(q[j + 16] >> 4) << (j + 16);
  }
  for (int i = 0; i < 4; ++i)
    qh4[i] = static_cast<uint8_t>(qh >> (8 * i));
}

void encodeQ5_0(const float *x, uint8_t *out) {
  const float d = storeHalf(out, fitSymmetric(x, 32, -16, 15));
  int q[32];
  for (int j = 0; j < 32; ++j)
    q[j] = d != 0 ? code(x[j] / d, -16, 15) + 16 : 16;
  packQ5(q, out + 2, out + 6);
}

void encodeQ5_1(const float *x, uint8_t *out) {
  int q[32];
  fitQ4_1OrQ5_1(x, 31, out, q);
  packQ5(q, out + 4, out + 8);
}

void encodeIq4nl(const float *x, uint8_t *out) {
  int lv[16];
  for (int i = 0; i < 16; ++i)
    lv[i] = kiln_uk_iq4nl_values[i];
  const float d = storeHalf(out, fitLevels(x, 32, lv, 16));
  for (int j = 0; j < 16; ++j) {
    int q0 = d != 0 ? nearestLevel(x[j] / d, lv, 16) : 8;
    int q1 = d != 0 ? nearestLevel(x[j + 16] / d, lv, 16) : 8;
    out[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

// The k-quants with a min: sub-blocks of `sub` elements with codes 0..nmax,
// their scales and mins quantized to 0..smax against d and dmin. Writes the
// codes to q and the sub-block scales and mins; returns d and dmin as stored
// (through the caller's storeHalf).
struct SuperBlock {
  int sc[16], m[16];
  float d, dmin;
};

void fitSuperAffine(const float *x, int sub, int nmax, int smax, uint8_t *dOut, uint8_t *dminOut,
                    SuperBlock &sb, int *q) {
  const int subs = 256 / sub;
  float scale[16], min[16], maxScale = 0, maxMin = 0;
  for (int s = 0; s < subs; ++s) {
    Affine a = fitAffine(x + s * sub, sub, nmax, true);
    scale[s] = a.scale, min[s] = -a.offset;
    maxScale = scale[s] > maxScale ? scale[s] : maxScale;
    maxMin = min[s] > maxMin ? min[s] : maxMin;
  }
  sb.d = storeHalf(dOut, maxScale / static_cast<float>(smax));
  sb.dmin = storeHalf(dminOut, maxMin / static_cast<float>(smax));
  for (int s = 0; s < subs; ++s) {
    sb.sc[s] = sb.d > 0 ? code(scale[s] / sb.d, 0, smax) : 0;
    sb.m[s] = sb.dmin > 0 ? code(min[s] / sb.dmin, 0, smax) : 0;
    const float ds = sb.d * static_cast<float>(sb.sc[s]);
    const float ms = sb.dmin * static_cast<float>(sb.m[s]);
    for (int i = 0; i < sub; ++i)
      q[s * sub + i] = ds > 0 ? code((x[s * sub + i] + ms) / ds, 0, nmax) : 0;
  }
}

// The symmetric k-quants: sub-blocks of 16 with codes lo..hi, signed scales
// quantized to slo..shi against d (the largest in magnitude maps to slo).
void fitSuperSymmetric(const float *x, int lo, int hi, int slo, int shi, uint8_t *dOut,
                       int *sc, int *q) {
  float scale[16], peak = 0;
  for (int s = 0; s < 16; ++s) {
    scale[s] = fitSymmetric(x + 16 * s, 16, lo, hi);
    if (std::fabs(scale[s]) > std::fabs(peak))
      peak = scale[s];
  }
  const float d = storeHalf(dOut, peak / static_cast<float>(slo));
  for (int s = 0; s < 16; ++s) {
    sc[s] = d != 0 ? code(scale[s] / d, slo, shi) : 0;
    const float ds = d * static_cast<float>(sc[s]);
    for (int i = 0; i < 16; ++i)
      q[16 * s + i] = ds != 0 ? code(x[16 * s + i] / ds, lo, hi) : 0;
  }
}

void encodeQ2_K(const float *x, uint8_t *out) {
  SuperBlock sb;
  int q[256];
  fitSuperAffine(x, 16, 3, 15, out + 80, out + 82, sb, q);
  for (int s = 0; s < 16; ++s)
    out[s] = static_cast<uint8_t>(sb.sc[s] | (sb.m[s] << 4));
  std::memset(out + 16, 0, 64);
  for (int e = 0; e < 256; ++e)
    out[16 + 32 * (e / 128) + e % 32] |= static_cast<uint8_t>(q[e] << (2 * (e % 128 / 32)));
}

void encodeQ3_K(const float *x, uint8_t *out) {
  int sc[16], q[256];
  fitSuperSymmetric(x, -4, 3, -32, 31, out + 108, sc, q);
  for (int s = 0; s < 16; ++s)
    sc[s] += 32;
  packQ3Scales(sc, out + 96);
  std::memset(out, 0, 96);
  for (int e = 0; e < 256; ++e) {
    const int u = q[e] + 4, h = e / 128, j = e % 128 / 32, l = e % 32;
    out[32 + 32 * h + l] |= static_cast<uint8_t>((u & 3) << (2 * j));
    out[l] |= static_cast<uint8_t>((u >> 2) << (4 * h + j));
  }
}

void encodeQ45_K(const float *x, bool five, uint8_t *out) {
  SuperBlock sb;
  int q[256];
  fitSuperAffine(x, 32, five ? 31 : 15, 63, out, out + 2, sb, q);
  packScaleMinK4(sb.sc, sb.m, out + 4);
  uint8_t *qh = out + 16, *qs = five ? out + 48 : out + 16;
  std::memset(out + 16, 0, five ? 160 : 128);
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, part = e % 64 / 32, l = e % 32;
    qs[32 * c + l] |= static_cast<uint8_t>((q[e] & 15) << (4 * part));
    if (five)
      qh[l] |= static_cast<uint8_t>((q[e] >> 4) << (2 * c + part));
  }
}

void encodeQ6_K(const float *x, uint8_t *out) {
  int sc[16], q[256];
  fitSuperSymmetric(x, -32, 31, -128, 127, out + 208, sc, q);
  for (int s = 0; s < 16; ++s)
    out[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(sc[s]));
  std::memset(out, 0, 192);
  for (int e = 0; e < 256; ++e) {
    const int u = q[e] + 32, h = e / 128, i = e % 128 / 32, l = e % 32;
    out[64 * h + 32 * (i & 1) + l] |= static_cast<uint8_t>((u & 15) << (i < 2 ? 0 : 4));
    out[128 + 32 * h + l] |= static_cast<uint8_t>((u >> 4) << (2 * i));
  }
}

// Ternary values against one scale: the symmetric fit of codes -1..1, and
// each value rounded against the scale the decoder reads.
void encodeTQ2_0(const float *x, uint8_t *out) {
  const float d = storeHalf(out + 64, fitSymmetric(x, 256, -1, 1));
  const float id = d != 0 ? 1.0f / d : 0.0f;
  std::memset(out, 0, 64);
  for (int e = 0; e < 256; ++e) {
    const int u = code(x[e] * id, -1, 1) + 1, h = e / 128, j = e % 128 / 32, l = e % 32;
    out[32 * h + l] |= static_cast<uint8_t>(u << (2 * j));
  }
}

} // namespace

void encodeBlock(Format format, const float *x, uint8_t *out) {
  switch (format) {
  case Format::BF16: {
    uint32_t u;
    std::memcpy(&u, x, sizeof u);
    uint16_t h;
    if ((u & 0x7FFFFFFF) > 0x7F800000)
      h = static_cast<uint16_t>((u >> 16) | 0x40); // NaN stays a quiet NaN
    else
      h = static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
    out[0] = static_cast<uint8_t>(h & 0xFF);
    out[1] = static_cast<uint8_t>(h >> 8);
    return;
  }
  case Format::Q4_1: return encodeQ4_1(x, out);
  case Format::Q5_0: return encodeQ5_0(x, out);
  case Format::Q5_1: return encodeQ5_1(x, out);
  case Format::IQ4_NL: return encodeIq4nl(x, out);
  case Format::Q2_K: return encodeQ2_K(x, out);
  case Format::Q3_K: return encodeQ3_K(x, out);
  case Format::Q4_K: return encodeQ45_K(x, false, out);
  case Format::Q5_K: return encodeQ45_K(x, true, out);
  case Format::Q6_K: return encodeQ6_K(x, out);
  case Format::TQ2_0: return encodeTQ2_0(x, out);
  default: return;
  }
}

void decodeBlock(Format format, const uint8_t *in, float *y) {
  switch (format) {
  case Format::BF16: return kiln_uk_row_bf16(in, y, 1);
  case Format::Q4_1: return kiln_uk_row_q4_1(in, y, 32);
  case Format::Q5_0: return kiln_uk_row_q5_0(in, y, 32);
  case Format::Q5_1: return kiln_uk_row_q5_1(in, y, 32);
  case Format::IQ4_NL: return kiln_uk_row_iq4_nl(in, y, 32);
  case Format::Q2_K: return kiln_uk_row_q2_k(in, y, 256);
  case Format::Q3_K: return kiln_uk_row_q3_k(in, y, 256);
  case Format::Q4_K: return kiln_uk_row_q4_k(in, y, 256);
  case Format::Q5_K: return kiln_uk_row_q5_k(in, y, 256);
  case Format::Q6_K: return kiln_uk_row_q6_k(in, y, 256);
  case Format::TQ2_0: return kiln_uk_row_tq2_0(in, y, 256);
  default: return;
  }
}

} // namespace kiln::quant::ggml
