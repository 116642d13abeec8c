#include "compiler/quant/Quantize.h"

#include "compiler/quant/GgmlBlocks.h"

#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

// The ggml reference rounds after every operation. -ffast-math would replace
// the divisions and NaN checks this code relies on, so refuse it outright.
#ifdef __FAST_MATH__
#error "Quantize.cpp must be built without -ffast-math to stay bit-exact with ggml"
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace kiln::quant {
namespace {

constexpr unsigned kGgmlBlock = 32;

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

void storeF16(uint8_t *p, uint16_t h) {
  p[0] = static_cast<uint8_t>(h & 0xFF);
  p[1] = static_cast<uint8_t>(h >> 8);
}

uint16_t loadF16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

// What ggml's `(int8_t)floatValue` yields as compiled for x86-64: cvttss2si to
// int32 (INT32_MIN for NaN and out of range), then the low byte. Without UB.
// Only reached for finite, in-range values unless the block is degenerate.
int8_t cCastToInt8(float v) {
  int32_t wide = INT32_MIN;
  if (v > -2147483904.0f && v < 2147483648.0f)
    wide = static_cast<int32_t>(v); // truncates toward zero
  return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint32_t>(wide) & 0xFF));
}

// Truncation toward zero saturated to [lo, hi]; NaN gives `nanValue`.
int truncClamp(float v, int lo, int hi, int nanValue) {
  if (std::isnan(v))
    return nanValue;
  if (v <= static_cast<float>(lo))
    return lo;
  if (v >= static_cast<float>(hi))
    return hi;
  return static_cast<int>(v);
}

// ggml's amax loop for q8_0: MAX(a, b) is `a > b ? a : b`, reproduced for its
// NaN behaviour.
float absMaxGgml(const float *x, size_t n) {
  float amax = 0.0f;
  for (size_t j = 0; j < n; ++j) {
    float a = std::fabs(x[j]);
    amax = amax > a ? amax : a;
  }
  return amax;
}

// Largest magnitude, skipping NaN (Kiln's own formats need no ggml quirk).
float absMaxIgnoringNaN(const float *x, size_t n) {
  float amax = 0.0f;
  for (size_t j = 0; j < n; ++j) {
    float a = std::fabs(x[j]);
    if (a > amax)
      amax = a;
  }
  return amax;
}

// The element of largest magnitude with its sign, first one on ties (NaN never
// wins the strict comparison).
float signedMax(const float *x, size_t n) {
  float amax = 0.0f, max = 0.0f;
  for (size_t j = 0; j < n; ++j) {
    float a = std::fabs(x[j]);
    if (amax < a) {
      amax = a;
      max = x[j];
    }
  }
  return max;
}

void quantizeQ8_0(const float *x, uint8_t *out) {
  const float amax = absMaxGgml(x, kGgmlBlock);
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  storeF16(out, f32ToF16(d));
  for (unsigned j = 0; j < kGgmlBlock; ++j) {
    const float x0 = x[j] * id;
    out[2 + j] = static_cast<uint8_t>(cCastToInt8(std::roundf(x0)));
  }
}

void quantizeQ4_0(const float *x, uint8_t *out) {
  const float max = signedMax(x, kGgmlBlock);
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  storeF16(out, f32ToF16(d));
  const unsigned half = kGgmlBlock / 2;
  for (unsigned j = 0; j < half; ++j) {
    const float x0 = ggml::roundedProduct(x[j], id);
    const float x1 = ggml::roundedProduct(x[j + half], id);
    const float v0 = x0 + 8.5f;
    const float v1 = x1 + 8.5f;
    // MIN(15, (int8_t)v) stored to uint8_t, then packed, exactly as ggml.
    const int8_t t0 = cCastToInt8(v0), t1 = cCastToInt8(v1);
    const uint8_t xi0 = static_cast<uint8_t>(t0 < 15 ? t0 : 15);
    const uint8_t xi1 = static_cast<uint8_t>(t1 < 15 ? t1 : 15);
    out[2 + j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
  }
}

// Reciprocal of the scale as the decoder will see it.
float storedInverse(uint16_t h) {
  const float ds = f16ToF32(h);
  return ds != 0.0f ? 1.0f / ds : 0.0f;
}

void quantizeI8G(const float *x, unsigned g, uint8_t *out) {
  const float amax = absMaxIgnoringNaN(x, g);
  const uint16_t h = f32ToF16(amax / 127.0f);
  const float id = storedInverse(h);
  storeF16(out, h);
  for (unsigned j = 0; j < g; ++j) {
    const float r = std::roundf(x[j] * id);
    out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(truncClamp(r, -127, 127, 0)));
  }
}

void quantizeI4G(const float *x, unsigned g, uint8_t *out) {
  const float max = signedMax(x, g);
  const uint16_t h = f32ToF16(max / -8.0f);
  const float id = storedInverse(h);
  storeF16(out, h);
  const unsigned half = g / 2;
  for (unsigned j = 0; j < half; ++j) {
    const float x0 = ggml::roundedProduct(x[j], id);
    const float x1 = ggml::roundedProduct(x[j + half], id);
    // NaN takes code 8 so that it decodes to 0.
    const int q0 = truncClamp(x0 + 8.5f, 0, 15, 8);
    const int q1 = truncClamp(x1 + 8.5f, 0, 15, 8);
    out[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

void dequantizeInt8(const uint8_t *in, unsigned g, float *y) {
  const float d = f16ToF32(loadF16(in));
  for (unsigned j = 0; j < g; ++j)
    y[j] = static_cast<float>(static_cast<int8_t>(in[2 + j])) * d;
}

void dequantizeInt4(const uint8_t *in, unsigned g, float *y) {
  const float d = f16ToF32(loadF16(in));
  const unsigned half = g / 2;
  for (unsigned j = 0; j < half; ++j) {
    const uint8_t b = in[2 + j];
    y[j] = static_cast<float>((b & 0x0F) - 8) * d;
    y[j + half] = static_cast<float>((b >> 4) - 8) * d;
  }
}

bool isGroupSize(unsigned g) {
#define KILN_IS_GROUP(size) g == size ||
  return KILN_UK_GROUP_SIZES(KILN_IS_GROUP) false;
#undef KILN_IS_GROUP
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool equalsLower(std::string_view text, std::string_view word) {
  if (text.size() != word.size())
    return false;
  for (size_t i = 0; i < text.size(); ++i)
    if (lower(text[i]) != word[i])
      return false;
  return true;
}

} // namespace

// a * b rounded to binary32 before the caller adds to it. A fused
// multiply-add of x * id + 8.5f (AArch64 and FMA-enabled x86 builds, and
// -ffp-contract=fast even despite the pragma) changes codes at rounding
// boundaries; the empty asm makes the rounded product observable.
float ggml::roundedProduct(float a, float b) {
  float p = a * b;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && defined(__SSE__)
  __asm__("" : "+x"(p));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(p));
#else
  volatile float v = p;
  p = v;
#endif
  return p;
}

uint16_t f32ToF16(float value) {
  const uint32_t x = floatBits(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7FFFFFFF;

  if (ax > 0x7F800000) // NaN: quiet it, keep the top payload bits
    return static_cast<uint16_t>(sign | 0x7E00 | ((ax >> 13) & 0x3FF));
  // 65520 (0x477FF000) is halfway between 65504 and 2^16; the tie goes to the
  // even neighbour, which is infinity.
  if (ax >= 0x477FF000)
    return static_cast<uint16_t>(sign | 0x7C00);
  if (ax >= 0x38800000) { // result is a normal binary16 (>= 2^-14)
    // Rebias the exponent (127 -> 15), then round the 13 dropped bits to
    // nearest even; a mantissa carry correctly bumps the exponent.
    uint32_t r = ax - 0x38000000;
    r += 0x0FFF + ((r >> 13) & 1);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  // Subnormal or zero result: units of 2^-24. The value is mant * 2^(e-150)
  // with the implicit bit, i.e. (mant >> (126 - e)) units.
  const uint32_t e = ax >> 23;
  if (e < 102) // below 2^-25: rounds to zero (2^-25 itself ties to even 0)
    return sign;
  const uint32_t mant = (ax & 0x7FFFFF) | 0x800000;
  const uint32_t shift = 126 - e; // 14..24
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1)))
    ++q; // may carry into the smallest normal, 0x0400, which is right
  return static_cast<uint16_t>(sign | q);
}

float f16ToF32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exp = (bits >> 10) & 0x1F;
  uint32_t mant = bits & 0x3FF;
  if (exp == 0x1F) // inf / NaN, payload kept
    return bitsFloat(sign | 0x7F800000 | (mant << 13));
  if (exp != 0)
    return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0)
    return bitsFloat(sign);
  // Subnormal: normalize so the leading one becomes the implicit bit.
  uint32_t e = 113; // binary32 exponent of 2^-14
  while (!(mant & 0x400)) {
    mant <<= 1;
    --e;
  }
  return bitsFloat(sign | (e << 23) | ((mant & 0x3FF) << 13));
}

bool parseFormat(std::string_view text, FormatSpec &out) {
  for (int code = 0; code < KILN_UK_FORMAT_END; ++code) {
    const kiln_uk_format_info *f = kiln_uk_format(code);
    std::string_view name = f->name;
    if (text.size() < name.size() || !equalsLower(text.substr(0, name.size()), name))
      continue;
    std::string_view digits = text.substr(name.size());
    if (f->elements) {
      if (!digits.empty())
        continue;
      out = FormatSpec{Format(code), unsigned(f->elements)};
      return true;
    }
    if (digits.empty() || digits.size() > 3 || digits[0] == '0')
      return false;
    unsigned g = 0;
    for (char c : digits) {
      if (c < '0' || c > '9')
        return false;
      g = g * 10 + static_cast<unsigned>(c - '0');
    }
    if (!isGroupSize(g))
      return false;
    out = FormatSpec{Format(code), g};
    return true;
  }
  return false;
}

std::string formatName(const FormatSpec &spec) {
  const kiln_uk_format_info *f = kiln_uk_format(int(spec.format));
  if (!f)
    return "?";
  return f->elements ? std::string(f->name) : f->name + std::to_string(spec.group);
}

size_t blockBytes(const FormatSpec &spec) {
  return size_t(kiln_uk_format_bytes(int(spec.format), int32_t(blockElements(spec))));
}

// The fixed formats have their block whatever spec.group says, so a
// default-initialized group cannot change their layout.
size_t blockElements(const FormatSpec &spec) {
  const kiln_uk_format_info *f = kiln_uk_format(int(spec.format));
  return !f ? 1 : f->elements ? size_t(f->elements) : size_t(spec.group);
}

size_t rowBytes(const FormatSpec &spec, size_t n) {
  const size_t per = blockElements(spec);
  assert(per != 0 && n % per == 0 && "row length is not a whole number of groups");
  return n / per * blockBytes(spec);
}

void quantize(const FormatSpec &spec, const float *x, size_t n, uint8_t *out) {
  const size_t per = blockElements(spec);
  assert(per != 0 && n % per == 0 && "row length is not a whole number of groups");
  const size_t stride = blockBytes(spec);
  switch (spec.format) {
  case Format::F32:
    if (n)
      std::memcpy(out, x, n * sizeof(float)); // host order: little-endian targets
    return;
  case Format::F16:
    for (size_t i = 0; i < n; ++i)
      storeF16(out + 2 * i, f32ToF16(x[i]));
    return;
  case Format::Q8_0:
    for (size_t b = 0; b < n / per; ++b)
      quantizeQ8_0(x + b * per, out + b * stride);
    return;
  case Format::Q4_0:
    for (size_t b = 0; b < n / per; ++b)
      quantizeQ4_0(x + b * per, out + b * stride);
    return;
  case Format::I8G:
    for (size_t b = 0; b < n / per; ++b)
      quantizeI8G(x + b * per, spec.group, out + b * stride);
    return;
  case Format::I4G:
    for (size_t b = 0; b < n / per; ++b)
      quantizeI4G(x + b * per, spec.group, out + b * stride);
    return;
  default:
    for (size_t b = 0; b < n / per; ++b)
      ggml::encodeBlock(spec.format, spec.group, x + b * per, nullptr, out + b * stride);
    return;
  }
}

// An element's weight grows with its column's importance and, more slowly,
// with its own magnitude over the block's spread (sigma2 keeps small weights
// in play): on model A this measured a lower KL divergence from f32 than the
// importance alone for the 4-bit k-quants.
void elementWeights(const float *x, const float *importance, size_t n, float *w) {
  double sum = 0;
  for (size_t j = 0; j < n; ++j)
    sum += double(x[j]) * x[j];
  const double sigma2 = n ? sum / double(n) : 0;
  for (size_t j = 0; j < n; ++j)
    w[j] = float(importance[j] * std::sqrt(sigma2 + double(x[j]) * x[j]));
}

double weightedError(const FormatSpec &spec, const float *x, const float *w, const uint8_t *in,
                     float *scratch) {
  const size_t n = blockElements(spec);
  dequantize(spec, in, n, scratch);
  double err = 0;
  for (size_t j = 0; j < n; ++j) {
    const double e = double(x[j]) - scratch[j];
    err += double(w[j]) * e * e;
  }
  return err;
}

void quantizeWeighted(const FormatSpec &spec, const float *x, size_t n, const float *importance,
                      size_t cols, uint8_t *out) {
  const size_t per = blockElements(spec);
  assert(per != 0 && n % per == 0 && cols % per == 0 && "blocks straddle rows");
  if (per == 1 || !importance) // no scale to choose
    return quantize(spec, x, n, out);
  const size_t stride = blockBytes(spec);
  std::vector<float> w(per), decoded(per);
  std::vector<uint8_t> plain(stride);
  for (size_t b = 0; b < n / per; ++b) {
    const float *xb = x + b * per;
    uint8_t *ob = out + b * stride;
    elementWeights(xb, importance + b * per % cols, per, w.data());
    double total = 0;
    for (float v : w)
      total += v;
    quantize(spec, xb, per, plain.data());
    if (!(total > 0) || !std::isfinite(total)) { // nothing to weigh by
      std::memcpy(ob, plain.data(), stride);
      continue;
    }
    ggml::encodeBlock(spec.format, spec.group, xb, w.data(), ob);
    // Never worse than the plain encoder by the weighted measure.
    if (weightedError(spec, xb, w.data(), plain.data(), decoded.data()) <
        weightedError(spec, xb, w.data(), ob, decoded.data()))
      std::memcpy(ob, plain.data(), stride);
  }
}

void dequantize(const FormatSpec &spec, const uint8_t *in, size_t n, float *y) {
  const size_t per = blockElements(spec);
  assert(per != 0 && n % per == 0 && "row length is not a whole number of groups");
  const size_t stride = blockBytes(spec);
  switch (spec.format) {
  case Format::F32:
    if (n)
      std::memcpy(y, in, n * sizeof(float));
    return;
  case Format::F16:
    for (size_t i = 0; i < n; ++i)
      y[i] = f16ToF32(loadF16(in + 2 * i));
    return;
  case Format::Q8_0:
  case Format::I8G:
    for (size_t b = 0; b < n / per; ++b)
      dequantizeInt8(in + b * stride, static_cast<unsigned>(per), y + b * per);
    return;
  case Format::Q4_0:
  case Format::I4G:
    for (size_t b = 0; b < n / per; ++b)
      dequantizeInt4(in + b * stride, static_cast<unsigned>(per), y + b * per);
    return;
  default:
    for (size_t b = 0; b < n / per; ++b)
      ggml::decodeBlock(spec.format, in + b * stride, y + b * per);
    return;
  }
}

double relativeRmsError(const FormatSpec &spec, const float *x, size_t n) {
  // Work in chunks so whole tensors need no tensor-sized scratch; 4096 is a
  // multiple of every block size.
  const size_t chunk = 4096;
  std::vector<uint8_t> packed(rowBytes(spec, n < chunk ? n : chunk));
  std::vector<float> back(n < chunk ? n : chunk);
  double err = 0.0, ref = 0.0;
  for (size_t start = 0; start < n; start += chunk) {
    const size_t len = n - start < chunk ? n - start : chunk;
    quantize(spec, x + start, len, packed.data());
    dequantize(spec, packed.data(), len, back.data());
    for (size_t i = 0; i < len; ++i) {
      const double v = x[start + i];
      const double diff = v - static_cast<double>(back[i]);
      err += diff * diff;
      ref += v * v;
    }
  }
  return ref == 0.0 ? 0.0 : std::sqrt(err / ref);
}

} // namespace kiln::quant
