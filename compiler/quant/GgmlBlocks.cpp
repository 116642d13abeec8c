#include "compiler/quant/GgmlBlocks.h"

// The kernels' decoders: one decoder per format for the compiler and the
// generated code. This file builds with -ffp-contract=off, as they need.
#include "kernels/c99/kiln_uk_block_decode.h"

#include <algorithm>
#include <cassert>
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

// round(v) (half away from zero) clamped to [lo, hi], as a float; NaN gives
// the code nearest zero. Branch-free arithmetic: the fits call it a few
// hundred times per weight, side by side for several scales.
float roundedCode(float v, float lo, float hi) {
  float c = v == v ? v : 0.0f;
  c = c < lo ? lo : c;
  c = c > hi ? hi : c;
  const float t = static_cast<float>(static_cast<int>(c)); // toward zero
  const float f = c - t;                                   // exact
  return t + (f >= 0.5f ? 1.0f : 0.0f) - (f <= -0.5f ? 1.0f : 0.0f);
}

int code(float v, int lo, int hi) {
  return static_cast<int>(roundedCode(v, static_cast<float>(lo), static_cast<float>(hi)));
}

// Scales a fit weighs side by side: each error is its own sum over the
// elements in order (the same bits as one at a time), and eight independent
// sums keep the core busy where one would wait on its last add.
constexpr int kSideBySide = 8;

// The weight of element i in a fit's squared error: 1 without weights.
double weightAt(const float *w, int i) { return w ? w[i] : 1.0; }

// A weighted fit searches more candidate scales: its caller pays for a
// calibrated quantization once, and the weights make the best scale move
// further from the plain fit's.
int reach(const float *w, int plain) { return w ? 3 * plain : plain; }

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

Affine fitAffine(const float *x, int n, int nmax, bool offsetAtMostZero, const float *w) {
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
  // The sums that do not depend on the codes.
  double sw = 0, sx = 0;
  for (int i = 0; i < n; ++i) {
    const double wi = weightAt(w, i);
    sw += wi, sx += wi * x[i];
  }
  const float top = static_cast<float>(nmax);
  double bestErr = INFINITY;
  const int r = reach(w, 4), count = 2 * r + 1;
  const float step = w ? 1.0f / 12 : 0.25f;
  for (int k = 0; k < count; k += kSideBySide) {
    // Codes for scales near (hi - lo) / nmax, then twice the least-squares
    // scale and offset for the codes and the codes for those, then the
    // error; side by side as fitScale's, the last group repeating its last.
    float scale[kSideBySide], offset[kSideBySide], is[kSideBySide];
    bool moving[kSideBySide];
    for (int b = 0; b < kSideBySide; ++b) {
      const int t = std::min(k + b, count - 1) - r;
      scale[b] = (hi - lo) / (top + step * static_cast<float>(t));
      offset[b] = lo, moving[b] = true;
    }
    for (int pass = 0; pass < 2; ++pass) {
      double sq[kSideBySide] = {}, sqq[kSideBySide] = {}, sqx[kSideBySide] = {};
      for (int b = 0; b < kSideBySide; ++b)
        is[b] = 1.0f / scale[b];
      for (int i = 0; i < n; ++i) {
        const double wi = weightAt(w, i);
        for (int b = 0; b < kSideBySide; ++b) {
          double q = roundedCode((x[i] - offset[b]) * is[b], 0.0f, top);
          sq[b] += wi * q, sqq[b] += wi * q * q, sqx[b] += wi * q * x[i];
        }
      }
      for (int b = 0; b < kSideBySide; ++b) {
        double det = sw * sqq[b] - sq[b] * sq[b], sc, o;
        if (det > 0) {
          sc = (sw * sqx[b] - sq[b] * sx) / det;
          o = (sx - sc * sq[b]) / sw;
        } else { // one code for all: the scale alone
          sc = sqq[b] > 0 ? sqx[b] / sqq[b] : scale[b];
          o = sqq[b] > 0 ? 0.0 : offset[b];
        }
        if (offsetAtMostZero && o > 0) {
          o = 0;
          sc = sqq[b] > 0 ? sqx[b] / sqq[b] : sc;
        }
        moving[b] = moving[b] && sc > 0;
        if (moving[b])
          scale[b] = static_cast<float>(sc), offset[b] = static_cast<float>(o);
      }
    }
    double err[kSideBySide] = {};
    for (int b = 0; b < kSideBySide; ++b)
      is[b] = 1.0f / scale[b];
    for (int i = 0; i < n; ++i) {
      const double wi = weightAt(w, i);
      for (int b = 0; b < kSideBySide; ++b) {
        double e = scale[b] * roundedCode((x[i] - offset[b]) * is[b], 0.0f, top) + offset[b] - x[i];
        err[b] += wi * e * e;
      }
    }
    for (int b = 0; b < kSideBySide && k + b < count; ++b)
      if (err[b] < bestErr)
        bestErr = err[b], best = {scale[b], offset[b]};
  }
  return best;
}

// iq4_nl's 16 ascending levels and the midpoints between neighbours: the
// nearest level to v is the number of midpoints v passes (a tie takes the
// lower level), found in four steps.
struct Codebook {
  float level[16], mid[15];

  Codebook() {
    for (int i = 0; i < 16; ++i) {
      level[i] = static_cast<float>(kiln_uk_iq4nl_values[i]);
      if (i < 15)
        mid[i] = 0.5f * static_cast<float>(kiln_uk_iq4nl_values[i] + kiln_uk_iq4nl_values[i + 1]);
    }
  }

  int nearest(float v) const {
    int index = 0;
    for (int half = 8; half > 0; half /= 2)
      index += v > mid[index + half - 1] ? half : 0;
    return index;
  }
};

// A weighted fit's candidate scales: the peak at either extreme level times
// 0.7 to 2: the weights may favour clipping the peak (its column matters
// little) or a coarse grid that meets it exactly. With int8's 255 levels the
// error changes at every step of a level's width over the peak's, so the
// candidates are that close, over 0.65 to 1.5.
template <typename Consider>
void weightedCandidates(float peak, int first, int last, int levels, Consider consider) {
  const bool fine = levels > 64;
  const float from = fine ? 0.65f : 0.7f;
  const float step = fine ? 1.0f / static_cast<float>(levels) : 1.0f / 30;
  const int count = static_cast<int>(((fine ? 1.5f : 2.0f) - from) / step) + 1;
  for (int extreme : {first, last}) {
    if (extreme == 0 || (extreme == last && last == -first))
      continue; // no level there, or the same scales with the other sign
    for (int k = 0; k < count; ++k)
      consider(peak / (static_cast<float>(extreme) * (from + step * static_cast<float>(k))));
  }
}

// The weighted squared errors err[b] of x against scales s[b] (1 / s[b] in
// is[b]), the levels given by level(i, s, 1 / s).
template <typename Error, typename Level>
void scaleErrors(const float *x, int n, const float *w, const float *s, const float *is,
                 Level level, Error *err) {
  Error sum[kSideBySide] = {};
  for (int i = 0; i < n; ++i) {
    const Error wi = static_cast<Error>(weightAt(w, i));
    for (int b = 0; b < kSideBySide; ++b) {
      float e = s[b] * static_cast<float>(level(i, s[b], is[b])) - x[i];
      sum[b] += wi * e * e;
    }
  }
  std::memcpy(err, sum, sizeof sum);
}

// x ~ scale * level, the level of x[i] against a scale s (and 1 / s) given
// by level(i, s, 1 / s), among `levels` levels from `first` to `last`: a few
// scales near the peak at the first level (weighted: weightedCandidates),
// each refit by least squares for its levels (weighted, the candidate
// itself tried too: the refit can move far when a few weights dominate), the
// least error of them, summed in `Error`; the first of equal errors wins.
template <typename Error, typename Level>
float fitScale(const float *x, int n, const float *w, int first, int last, int levels,
               Level level) {
  float peak = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(peak))
      peak = x[i];
  if (peak == 0 || std::isnan(peak))
    return 0;
  // At most 2 x (0.85 x 256 + 1) weighted candidates.
  float candidates[448];
  int count = 0;
  auto add = [&](float s) {
    assert(count < 448);
    candidates[count++] = s;
  };
  if (w)
    weightedCandidates(peak, first, last, levels, add);
  else
    for (int t = -3; t <= 3; ++t)
      add(peak / (static_cast<float>(first) * (1.0f + 0.05f * static_cast<float>(t))));
  float best = peak / static_cast<float>(first);
  Error bestErr = INFINITY;
  auto keep = [&](float s, Error err) {
    if (err < bestErr)
      bestErr = err, best = s;
  };
  for (int k = 0; k < count; k += kSideBySide) {
    // The last group repeats its last candidate; the repeats are not kept.
    float s[kSideBySide], is[kSideBySide], refit[kSideBySide], refitIs[kSideBySide];
    for (int b = 0; b < kSideBySide; ++b) {
      s[b] = candidates[std::min(k + b, count - 1)];
      is[b] = 1.0f / s[b];
    }
    Error err[kSideBySide], refitErr[kSideBySide];
    if (w)
      scaleErrors(x, n, w, s, is, level, err);
    double sll[kSideBySide] = {}, slx[kSideBySide] = {};
    for (int i = 0; i < n; ++i) {
      const double wi = weightAt(w, i);
      for (int b = 0; b < kSideBySide; ++b) {
        double l = level(i, s[b], is[b]);
        sll[b] += wi * l * l, slx[b] += wi * l * x[i];
      }
    }
    for (int b = 0; b < kSideBySide; ++b) {
      refit[b] = sll[b] > 0 ? static_cast<float>(slx[b] / sll[b]) : s[b];
      refitIs[b] = 1.0f / refit[b];
    }
    scaleErrors(x, n, w, refit, refitIs, level, refitErr);
    for (int b = 0; b < kSideBySide && k + b < count; ++b) {
      if (w)
        keep(s[b], err[b]);
      if (refit[b] != 0)
        keep(refit[b], refitErr[b]);
    }
  }
  return best;
}

// x ~ scale * level(q) for the codebook's levels.
float fitLevels(const float *x, int n, const Codebook &book, const float *w) {
  return fitScale<double>(x, n, w, kiln_uk_iq4nl_values[0], kiln_uk_iq4nl_values[15], 16,
                          [&](int i, float s, float) { return book.level[book.nearest(x[i] / s)]; });
}

// x ~ scale * q with integer codes q in lo..hi (lo < 0 < hi): the levels
// lo..hi, the nearest found by rounding; over one sub-block a float sum is
// enough to rank the scales.
float fitSymmetric(const float *x, int n, int lo, int hi, const float *w) {
  const float flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
  return fitScale<float>(x, n, w, lo, hi, hi - lo + 1, [&](int i, float, float is) {
    return roundedCode(x[i] * is, flo, fhi);
  });
}

// Of the binary16 values next to scale s (three steps either way), the one
// whose error(value) is least: rounding s to f16 moves every value of the
// block, which matters when the weights single out a few of them.
template <typename Error>
float nearbyHalf(float s, Error error) {
  const uint16_t h = f32ToF16(s);
  if (s == 0 || (h & 0x7C00) == 0x7C00)
    return s;
  float best = f16ToF32(h);
  double bestErr = error(best);
  for (int step = -3; step <= 3; ++step) {
    const int bits = (h & 0x7FFF) + step;
    if (step == 0 || bits <= 0 || bits >= 0x7C00)
      continue;
    const float t = f16ToF32(static_cast<uint16_t>((h & 0x8000) | bits));
    const double err = error(t);
    if (err < bestErr)
      bestErr = err, best = t;
  }
  return best;
}

// q4_1 and q5_1: a scale and a min for codes 0..nmax, stored as f16 at out,
// then the codes (as the decoder reads the stored halves) into q.
void fitQ4_1OrQ5_1(const float *x, int nmax, const float *w, uint8_t *out, int *q) {
  Affine a = fitAffine(x, 32, nmax, false, w);
  const float d = storeHalf(out, a.scale), m = storeHalf(out + 2, a.offset);
  for (int j = 0; j < 32; ++j)
    q[j] = d > 0 ? code((x[j] - m) / d, 0, nmax) : 0;
}

void encodeQ4_1(const float *x, const float *w, uint8_t *out) {
  int q[32];
  fitQ4_1OrQ5_1(x, 15, w, out, q);
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

// Codes lo..hi against one scale stored as f16 at out, each rounded against
// the stored scale; `bias` is added to every code (the decoder's offset).
void fitSymmetricBlock(const float *x, int n, int lo, int hi, int bias, const float *w,
                       uint8_t *out, int *q) {
  float d = fitSymmetric(x, n, lo, hi, w);
  d = storeHalf(out, w ? nearbyHalf(d, [&](float t) {
    double err = 0;
    for (int j = 0; j < n; ++j) {
      double e = double(t * static_cast<float>(code(x[j] / t, lo, hi))) - x[j];
      err += w[j] * e * e;
    }
    return err;
  }) : d);
  for (int j = 0; j < n; ++j)
    q[j] = (d != 0 ? code(x[j] / d, lo, hi) : 0) + bias;
}

void encodeQ5_0(const float *x, const float *w, uint8_t *out) {
  int q[32];
  fitSymmetricBlock(x, 32, -16, 15, 16, w, out, q);
  packQ5(q, out + 2, out + 6);
}

void encodeQ5_1(const float *x, const float *w, uint8_t *out) {
  int q[32];
  fitQ4_1OrQ5_1(x, 31, w, out, q);
  packQ5(q, out + 4, out + 8);
}

// q4_0 / i4g<G> (codes 0..15 around 8) and q8_0 / i8g<G> (int8 codes within
// +-127, which the kernels' sign tricks need) with a fitted scale: the
// weighted encoders of the formats Quantize.cpp encodes as ggml does.
void encodeInt4(const float *x, int n, const float *w, uint8_t *out) {
  int q[256];
  fitSymmetricBlock(x, n, -8, 7, 8, w, out, q);
  for (int j = 0; j < n / 2; ++j)
    out[2 + j] = static_cast<uint8_t>(q[j] | (q[j + n / 2] << 4));
}

void encodeInt8(const float *x, int n, const float *w, uint8_t *out) {
  int q[256];
  fitSymmetricBlock(x, n, -127, 127, 0, w, out, q);
  for (int j = 0; j < n; ++j)
    out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q[j]));
}

void encodeIq4nl(const float *x, const float *w, uint8_t *out) {
  static const Codebook book;
  float d = fitLevels(x, 32, book, w);
  d = storeHalf(out, w ? nearbyHalf(d, [&](float t) {
    double err = 0;
    for (int j = 0; j < 32; ++j) {
      double e = double(t * book.level[book.nearest(x[j] / t)]) - x[j];
      err += w[j] * e * e;
    }
    return err;
  }) : d);
  for (int j = 0; j < 16; ++j) {
    int q0 = d != 0 ? book.nearest(x[j] / d) : 8;
    int q1 = d != 0 ? book.nearest(x[j + 16] / d) : 8;
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

// The weighted squared error of n values at sub-block scale ds and min ms,
// each code rounded against them; the codes go to q.
double affineCodes(const float *x, int n, int nmax, float ds, float ms, const float *w, int *q) {
  double err = 0;
  for (int i = 0; i < n; ++i) {
    q[i] = ds > 0 ? code((x[i] + ms) / ds, 0, nmax) : 0;
    double e = double(ds * static_cast<float>(q[i])) - ms - x[i];
    err += weightAt(w, i) * e * e;
  }
  return err;
}

double symmetricCodes(const float *x, int n, int lo, int hi, float ds, const float *w, int *q) {
  double err = 0;
  for (int i = 0; i < n; ++i) {
    q[i] = ds != 0 ? code(x[i] / ds, lo, hi) : 0;
    double e = double(ds * static_cast<float>(q[i])) - x[i];
    err += weightAt(w, i) * e * e;
  }
  return err;
}

void fitSuperAffine(const float *x, int sub, int nmax, int smax, const float *w, uint8_t *dOut,
                    uint8_t *dminOut, SuperBlock &sb, int *q) {
  const int subs = 256 / sub;
  float scale[16], min[16], maxScale = 0, maxMin = 0;
  for (int s = 0; s < subs; ++s) {
    Affine a = fitAffine(x + s * sub, sub, nmax, true, w ? w + s * sub : nullptr);
    scale[s] = a.scale, min[s] = -a.offset;
    maxScale = scale[s] > maxScale ? scale[s] : maxScale;
    maxMin = min[s] > maxMin ? min[s] : maxMin;
  }
  sb.d = storeHalf(dOut, maxScale / static_cast<float>(smax));
  sb.dmin = storeHalf(dminOut, maxMin / static_cast<float>(smax));
  for (int s = 0; s < subs; ++s) {
    const float *xs = x + s * sub, *ws = w ? w + s * sub : nullptr;
    const int sc = sb.d > 0 ? code(scale[s] / sb.d, 0, smax) : 0;
    const int m = sb.dmin > 0 ? code(min[s] / sb.dmin, 0, smax) : 0;
    sb.sc[s] = sc, sb.m[s] = m;
    double best = affineCodes(xs, sub, nmax, sb.d * static_cast<float>(sc),
                              sb.dmin * static_cast<float>(m), ws, q + s * sub);
    // Weighted: the neighbouring scale and min codes may round the values
    // better than the nearest ones.
    int trial[32];
    for (int c = sc - 1; w && c <= sc + 1; ++c)
      for (int k = m - 1; k <= m + 1; ++k) {
        if (c < 0 || c > smax || k < 0 || k > smax || (c == sc && k == m))
          continue;
        double err = affineCodes(xs, sub, nmax, sb.d * static_cast<float>(c),
                                 sb.dmin * static_cast<float>(k), ws, trial);
        if (err < best) {
          best = err, sb.sc[s] = c, sb.m[s] = k;
          std::memcpy(q + s * sub, trial, sizeof(int) * size_t(sub));
        }
      }
  }
}

// The symmetric k-quants: sub-blocks of 16 with codes lo..hi, signed scales
// quantized to slo..shi against d (the largest in magnitude maps to slo).
void fitSuperSymmetric(const float *x, int lo, int hi, int slo, int shi, const float *w,
                       uint8_t *dOut, int *sc, int *q) {
  float scale[16], peak = 0;
  for (int s = 0; s < 16; ++s) {
    scale[s] = fitSymmetric(x + 16 * s, 16, lo, hi, w ? w + 16 * s : nullptr);
    if (std::fabs(scale[s]) > std::fabs(peak))
      peak = scale[s];
  }
  const float d = storeHalf(dOut, peak / static_cast<float>(slo));
  for (int s = 0; s < 16; ++s) {
    const float *xs = x + 16 * s, *ws = w ? w + 16 * s : nullptr;
    const int near = d != 0 ? code(scale[s] / d, slo, shi) : 0;
    sc[s] = near;
    double best = symmetricCodes(xs, 16, lo, hi, d * static_cast<float>(near), ws, q + 16 * s);
    int trial[16];
    for (int c = near - 1; w && c <= near + 1; ++c) {
      if (c < slo || c > shi || c == near)
        continue;
      double err = symmetricCodes(xs, 16, lo, hi, d * static_cast<float>(c), ws, trial);
      if (err < best) {
        best = err, sc[s] = c;
        std::memcpy(q + 16 * s, trial, sizeof trial);
      }
    }
  }
}

void encodeQ2_K(const float *x, const float *w, uint8_t *out) {
  SuperBlock sb;
  int q[256];
  fitSuperAffine(x, 16, 3, 15, w, out + 80, out + 82, sb, q);
  for (int s = 0; s < 16; ++s)
    out[s] = static_cast<uint8_t>(sb.sc[s] | (sb.m[s] << 4));
  std::memset(out + 16, 0, 64);
  for (int e = 0; e < 256; ++e)
    out[16 + 32 * (e / 128) + e % 32] |= static_cast<uint8_t>(q[e] << (2 * (e % 128 / 32)));
}

void encodeQ3_K(const float *x, const float *w, uint8_t *out) {
  int sc[16], q[256];
  fitSuperSymmetric(x, -4, 3, -32, 31, w, out + 108, sc, q);
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

void encodeQ45_K(const float *x, bool five, const float *w, uint8_t *out) {
  SuperBlock sb;
  int q[256];
  fitSuperAffine(x, 32, five ? 31 : 15, 63, w, out, out + 2, sb, q);
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

void encodeQ6_K(const float *x, const float *w, uint8_t *out) {
  int sc[16], q[256];
  fitSuperSymmetric(x, -32, 31, -128, 127, w, out + 208, sc, q);
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
void encodeTQ2_0(const float *x, const float *w, uint8_t *out) {
  int q[256];
  fitSymmetricBlock(x, 256, -1, 1, 1, w, out + 64, q);
  std::memset(out, 0, 64);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, j = e % 128 / 32, l = e % 32;
    out[32 * h + l] |= static_cast<uint8_t>(q[e] << (2 * j));
  }
}

} // namespace

void encodeBlock(Format format, unsigned group, const float *x, const float *w, uint8_t *out) {
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
  case Format::Q8_0: return encodeInt8(x, 32, w, out);
  case Format::I8G: return encodeInt8(x, int(group), w, out);
  case Format::Q4_0: return encodeInt4(x, 32, w, out);
  case Format::I4G: return encodeInt4(x, int(group), w, out);
  case Format::Q4_1: return encodeQ4_1(x, w, out);
  case Format::Q5_0: return encodeQ5_0(x, w, out);
  case Format::Q5_1: return encodeQ5_1(x, w, out);
  case Format::IQ4_NL: return encodeIq4nl(x, w, out);
  case Format::Q2_K: return encodeQ2_K(x, w, out);
  case Format::Q3_K: return encodeQ3_K(x, w, out);
  case Format::Q4_K: return encodeQ45_K(x, false, w, out);
  case Format::Q5_K: return encodeQ45_K(x, true, w, out);
  case Format::Q6_K: return encodeQ6_K(x, w, out);
  case Format::TQ2_0: return encodeTQ2_0(x, w, out);
  default: return;
  }
}

int topCode(Format format) {
  switch (format) {
  case Format::Q8_0:
  case Format::I8G: return 254;
  case Format::Q4_0:
  case Format::I4G:
  case Format::Q4_1:
  case Format::IQ4_NL:
  case Format::Q4_K: return 15;
  case Format::Q5_0:
  case Format::Q5_1:
  case Format::Q5_K: return 31;
  case Format::Q6_K: return 63;
  case Format::Q3_K: return 7;
  case Format::Q2_K: return 3;
  case Format::TQ2_0: return 2;
  default: return 0;
  }
}

void setCode(Format format, unsigned group, uint8_t *block, int j, int q) {
  // Bits [at, at + width) of byte p set to v.
  auto put = [](uint8_t &p, int at, int width, int v) {
    const int mask = ((1 << width) - 1) << at;
    p = static_cast<uint8_t>((p & ~mask) | ((v << at) & mask));
  };
  auto nibble = [&](uint8_t *qs, int half, int v) { put(qs[j % half], j < half ? 0 : 4, 4, v); };
  // Element 128h + 32k + l in bits 2k of qs[32h + l] (q2_k, q3_k, tq2_0).
  auto pairs = [&](uint8_t *qs, int v) { put(qs[32 * (j / 128) + j % 32], 2 * (j % 128 / 32), 2, v); };
  switch (format) {
  case Format::Q8_0:
  case Format::I8G: block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q - 127)); return;
  case Format::Q4_0:
  case Format::IQ4_NL: return nibble(block + 2, 16, q);
  case Format::I4G: return nibble(block + 2, int(group / 2), q);
  case Format::Q4_1: return nibble(block + 4, 16, q);
  case Format::Q5_0:
  case Format::Q5_1: {
    uint8_t *qh = block + (format == Format::Q5_0 ? 2 : 4);
    put(qh[j / 8], j % 8, 1, q >> 4);
    return nibble(qh + 4, 16, q & 15);
  }
  case Format::Q2_K: return pairs(block + 16, q);
  case Format::TQ2_0: return pairs(block, q);
  case Format::Q3_K: // the high bit set: no minus 4
    put(block[j % 32], j / 32, 1, q >> 2);
    return pairs(block + 32, q & 3);
  case Format::Q4_K:
  case Format::Q5_K: {
    const int c = j / 64, l = j % 32, high = j % 64 / 32;
    if (format == Format::Q5_K)
      put(block[16 + l], 2 * c + high, 1, q >> 4);
    return put(block[(format == Format::Q5_K ? 48 : 16) + 32 * c + l], 4 * high, 4, q & 15);
  }
  case Format::Q6_K: {
    const int h = j / 128, i = j % 128 / 32, l = j % 32;
    put(block[64 * h + 32 * (i & 1) + l], i < 2 ? 0 : 4, 4, q & 15);
    return put(block[128 + 32 * h + l], 2 * i, 2, q >> 4);
  }
  default: assert(false && "a format without codes");
  }
}

float codeLevel(Format format, int q) {
  return format == Format::IQ4_NL ? static_cast<float>(kiln_uk_iq4nl_values[q])
                                  : static_cast<float>(q);
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
