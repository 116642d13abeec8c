// Unit test for compiler/quant/Quantize.cpp: a plain program, no framework;
// the exit status is the verdict.
//
//   quantize_test                                   run every check
//   quantize_test --encode FORMAT IN.f32 OUT.bin    quantize raw little-endian
//                                                   float32 values (for
//                                                   quantize_crosscheck.py)
//   quantize_test --decode FORMAT IN.bin OUT.f32    the inverse
//
// Expected bytes in the hand-computed cases are derived in the comments next to
// them, never by the code under test.

#include "compiler/quant/Quantize.h"

#include "check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace kiln::quant;

namespace {

using kiln::test::check;

std::string hex(const std::vector<uint8_t> &bytes) {
  std::string s;
  char buf[4];
  for (uint8_t b : bytes) {
    std::snprintf(buf, sizeof buf, "%02x ", b);
    s += buf;
  }
  return s;
}

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint32_t toBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

FormatSpec spec(const char *name) {
  FormatSpec s{Format::F32, 1};
  if (!parseFormat(name, s))
    std::printf("FAIL: test setup cannot parse %s\n", name);
  return s;
}

std::vector<uint8_t> encode(const char *format, const std::vector<float> &x) {
  FormatSpec s = spec(format);
  std::vector<uint8_t> out(rowBytes(s, x.size()), 0xCD);
  quantize(s, x.data(), x.size(), out.data());
  return out;
}

void expectBytes(const char *format, const std::vector<float> &x,
                 const std::vector<uint8_t> &expected, const std::string &what) {
  std::vector<uint8_t> got = encode(format, x);
  bool ok = got == expected;
  check(ok, std::string(format) + " " + what);
  if (!ok)
    std::printf("  expected %s\n  got      %s\n", hex(expected).c_str(), hex(got).c_str());
}

// Deterministic generator (splitmix64) so the runs are identical everywhere.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return (next() >> 11) * (1.0 / 9007199254740992.0); } // [0, 1)
  double gauss() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300)
      u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

// ---------------------------------------------------------------------------
// Format names and sizes

void testNamesAndSizes() {
  const char *names[] = {"f32",   "f16",   "q8_0",   "q4_0",   "i8g32",
                         "i8g64", "i8g128", "i8g256", "i4g32", "i4g64",
                         "i4g128", "i4g256"};
  for (const char *name : names) {
    FormatSpec s{Format::F32, 0};
    bool ok = parseFormat(name, s);
    check(ok && formatName(s) == name, std::string("parse/name round trip ") + name);
  }
  FormatSpec s{Format::F32, 0};
  check(parseFormat("Q8_0", s) && s.format == Format::Q8_0 && s.group == 32,
        "parse is case-insensitive");
  const char *bad[] = {"",     "q8",     "q8_1",  "i8g",   "i8g16", "i8g032",
                       "i4g512", "i2g32", "i8g32x", "f32 ", "i8g-32", "q4_2",
                       "q8_k", "iq4_xs", "q6_k0", "bf"};
  for (const char *name : bad) {
    FormatSpec t{Format::F16, 7};
    check(!parseFormat(name, t) && t.format == Format::F16 && t.group == 7,
          std::string("rejects \"") + name + "\" and leaves the spec alone");
  }

  struct {
    const char *name;
    unsigned group;
    size_t block;
  } sizes[] = {{"f32", 1, 4},        {"f16", 1, 2},         {"q8_0", 32, 34},
               {"q4_0", 32, 18},     {"i8g32", 32, 34},     {"i8g64", 64, 66},
               {"i8g128", 128, 130}, {"i8g256", 256, 258},  {"i4g32", 32, 18},
               {"i4g64", 64, 34},    {"i4g128", 128, 66},   {"i4g256", 256, 130}};
  for (const auto &e : sizes) {
    FormatSpec t = spec(e.name);
    check(t.group == e.group, std::string("group of ") + e.name);
    check(blockBytes(t) == e.block, std::string("blockBytes of ") + e.name);
    check(rowBytes(t, 512) == 512 / e.group * e.block, std::string("rowBytes of ") + e.name);
  }
}

// ---------------------------------------------------------------------------
// binary16 conversion

// Independent decoding: (1024 + m) * 2^(e - 25) for normals, m * 2^-24 below.
double f16Reference(uint16_t h) {
  int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

// Nearest binary16 by search over the ordered non-negative encodings, ties to
// the even code; values past 65504 round as if 65536 were the next step.
uint16_t f16NearestReference(float v) {
  double a = std::fabs(static_cast<double>(v));
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  uint16_t lo = 0, hi = 0x7BFF; // largest code with value <= a
  if (a >= 65504.0) {
    lo = 0x7BFF;
  } else {
    while (lo < hi) {
      uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
      if (f16Reference(mid) <= a)
        lo = mid;
      else
        hi = static_cast<uint16_t>(mid - 1);
    }
  }
  double below = f16Reference(lo);
  double above = lo == 0x7BFF ? 65536.0 : f16Reference(static_cast<uint16_t>(lo + 1));
  uint16_t pick;
  if (a - below < above - a)
    pick = lo;
  else if (a - below > above - a)
    pick = static_cast<uint16_t>(lo + 1);
  else
    pick = (lo & 1) ? static_cast<uint16_t>(lo + 1) : lo;
  return static_cast<uint16_t>(sign | pick); // lo + 1 == 0x7C00 is infinity
}

void testF16() {
  struct {
    float value;
    uint16_t bits;
    const char *what;
  } cases[] = {
      {1.0f, 0x3C00, "1.0"},
      {-2.0f, 0xC000, "-2"},
      {0.5f, 0x3800, "0.5"},
      {65504.0f, 0x7BFF, "65504, the largest finite"},
      {65519.99609375f, 0x7BFF, "just below 65520 rounds down"},
      {65520.0f, 0x7C00, "65520 ties to even, i.e. infinity"},
      {1e10f, 0x7C00, "overflow"},
      {-1e10f, 0xFC00, "negative overflow"},
      {5.96e-8f, 0x0001, "5.96e-8 is the smallest subnormal"},
      {fromBits(0x33800000), 0x0001, "2^-24 exactly"},
      {fromBits(0x33000000), 0x0000, "2^-25 ties to even zero"},
      {fromBits(0x33000001), 0x0001, "just above 2^-25"},
      {fromBits(0x33C00000), 0x0002, "3 * 2^-25 ties to even 2 * 2^-24"},
      {fromBits(0x387FC000), 0x03FF, "1023 * 2^-24, the largest subnormal"},
      {fromBits(0x387FE000), 0x0400, "1023.5 * 2^-24 ties up to 2^-14"},
      {fromBits(0x38800000), 0x0400, "2^-14, the smallest normal"},
      {0.1f, 0x2E66, "0.1: 1.6 * 2^-4, mantissa 614.4 -> 614"},
      {fromBits(0x3F801000), 0x3C00, "1 + 2^-11 ties to even 1.0"},
      {fromBits(0x3F803000), 0x3C02, "1 + 3 * 2^-11 ties to even 0x3C02"},
      {fromBits(0x3F801001), 0x3C01, "1 + 2^-11 + 2^-23 rounds up"},
      {0.0f, 0x0000, "+0"},
      {-0.0f, 0x8000, "-0"},
      {fromBits(0x7F800000), 0x7C00, "+inf"},
      {fromBits(0xFF800000), 0xFC00, "-inf"},
      {fromBits(0x00000001), 0x0000, "binary32 subnormal underflows"},
      {fromBits(0x477FE000), 0x7BFF, "65504 from bits"},
  };
  for (const auto &c : cases) {
    uint16_t got = f32ToF16(c.value);
    check(got == c.bits, std::string("f32ToF16 ") + c.what);
    if (got != c.bits)
      std::printf("  expected 0x%04X got 0x%04X\n", c.bits, got);
  }
  uint16_t n = f32ToF16(std::nanf(""));
  check((n & 0x7C00) == 0x7C00 && (n & 0x3FF) != 0, "NaN stays NaN");
  uint16_t sn = f32ToF16(fromBits(0xFF800001)); // signalling NaN, payload in low bits only
  check((sn & 0xFC00) == 0xFC00 && (sn & 0x3FF) != 0, "signalling NaN stays a NaN with its sign");
  check(std::isnan(f16ToF32(0x7E00)) && std::isnan(f16ToF32(0xFC01)), "f16ToF32 NaN");
  check(f16ToF32(0x0001) == fromBits(0x33800000), "f16ToF32 smallest subnormal is 2^-24");
  check(f16ToF32(0x7BFF) == 65504.0f, "f16ToF32 65504");
  check(f16ToF32(0xFC00) == -INFINITY, "f16ToF32 -inf");
  check(toBits(f16ToF32(0x8000)) == 0x80000000u, "f16ToF32 -0");

  // Every encoding decodes exactly and encodes back to itself.
  int decodeBad = 0, roundTripBad = 0;
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    uint16_t b = static_cast<uint16_t>(h);
    float f = f16ToF32(b);
    bool isNaN = (b & 0x7C00) == 0x7C00 && (b & 0x3FF);
    if (isNaN) {
      decodeBad += !std::isnan(f);
      roundTripBad += f32ToF16(f) != (b | 0x200); // quieted, payload kept
      continue;
    }
    bool isInf = (b & 0x7FFF) == 0x7C00;
    double want = isInf ? ((b & 0x8000) ? -INFINITY : INFINITY) : f16Reference(b);
    decodeBad += static_cast<double>(f) != want || std::signbit(f) != bool(b & 0x8000);
    roundTripBad += f32ToF16(f) != b;
  }
  check(decodeBad == 0, "f16ToF32 exact for all 65536 encodings");
  check(roundTripBad == 0, "f32ToF16(f16ToF32(h)) == h for all encodings");

  // Rounding at and next to every midpoint between neighbouring codes (where
  // ties-to-even decides), then random binary32 values of all magnitudes.
  int roundBad = 0;
  long tried = 0;
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    double below = f16Reference(static_cast<uint16_t>(h));
    double above = h == 0x7BFF ? 65536.0 : f16Reference(static_cast<uint16_t>(h + 1));
    float mid = static_cast<float>((below + above) / 2); // exact in binary32
    uint32_t mb = toBits(mid);
    for (uint32_t bits : {mb - 1, mb, mb + 1}) {
      for (uint32_t sign : {0u, 0x80000000u}) {
        float v = fromBits(bits | sign);
        ++tried;
        roundBad += f32ToF16(v) != f16NearestReference(v);
      }
    }
  }
  Rng rng{12345};
  for (int i = 0; i < 400000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng.next());
    if (i & 1) // half of them inside the binary16 range
      bits = (bits & 0x807FFFFF) | ((100 + static_cast<uint32_t>(rng.next() % 45)) << 23);
    float v = fromBits(bits);
    if (std::isnan(v))
      continue;
    ++tried;
    roundBad += f32ToF16(v) != f16NearestReference(v);
  }
  check(roundBad == 0, "f32ToF16 matches the nearest-even search on " + std::to_string(tried) +
                           " values");
}

// ---------------------------------------------------------------------------
// Hand-computed blocks

std::vector<uint8_t> concat(std::vector<uint8_t> a, const std::vector<uint8_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void testQ8_0() {
  // x[j] = j - 16. amax = 16, d = 16/127. 1/127 = sum 2^-7k in binary, so
  // 16/127 = 2^-3 + 2^-10 + 2^-17 + 2^-24 + 2^-31 + ...; binary32 keeps 24
  // bits (down to 2^-26) and the rest (< 2^-30) rounds down:
  //   d = 2^-3 (1 + r + r^2 + r^3), r = 2^-7.
  // f16(d): mantissa bit 2^-7 is 0x008, the rest (r^2 ...) is below half an
  // f16 ulp -> 0x3008 -> bytes 08 30.
  // id = 1/d = 8 (1 - r) / (1 - r^4) = 7.9375 (1 + 2^-28 + ...), which rounds
  // to exactly 7.9375 = 127/16. So q = roundf(k * 127/16), k = j - 16, exact:
  //   k=-16 -127 | -15 -119.06 -119 | -14 -111.13 -111 | -13 -103.19 -103
  //   -12 -95.25 -95 | -11 -87.31 -87 | -10 -79.38 -79 | -9 -71.44 -71
  //   -8 -63.5 -64 (half away from zero) | -7 -55.56 -56 | -6 -47.63 -48
  //   -5 -39.69 -40 | -4 -31.75 -32 | -3 -23.81 -24 | -2 -15.88 -16 | -1 -7.94 -8
  //   0 0 | 1 8 | 2 16 | 3 24 | 4 32 | 5 40 | 6 48 | 7 56 | 8 63.5 -> 64
  //   9 71.44 71 | 10 79.38 79 | 11 87.31 87 | 12 95.25 95 | 13 103.19 103
  //   14 111.13 111 | 15 119.06 119
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j)
    x[j] = static_cast<float>(j - 16);
  expectBytes("q8_0", x,
              {0x08, 0x30, // d
               0x81, 0x89, 0x91, 0x99, 0xA1, 0xA9, 0xB1, 0xB9,  // -127 -119 -111 -103 -95 -87 -79 -71
               0xC0, 0xC8, 0xD0, 0xD8, 0xE0, 0xE8, 0xF0, 0xF8,  // -64 -56 -48 -40 -32 -24 -16 -8
               0x00, 0x08, 0x10, 0x18, 0x20, 0x28, 0x30, 0x38,  // 0 8 16 24 32 40 48 56
               0x40, 0x47, 0x4F, 0x57, 0x5F, 0x67, 0x6F, 0x77}, // 64 71 79 87 95 103 111 119
              "x = j - 16");

  // All zeros: d = 0, id = 0 -> every q = 0.
  expectBytes("q8_0", std::vector<float>(32, 0.0f), std::vector<uint8_t>(34, 0x00), "zeros");

  // One outlier 127 sets d = 127/127 = 1 (f16 0x3C00), id = 1, so q is roundf
  // of the value itself: 0.5 -> 1, -0.5 -> -1, 1.5 -> 2, 2.5 -> 3, -2.5 -> -3
  // (halves away from zero), 0.49999997 -> 0, -126.5 -> -127, 0.25 -> 0.
  std::vector<float> o(32, 0.0f);
  o[0] = 0.5f;
  o[1] = -0.5f;
  o[2] = 1.5f;
  o[3] = 127.0f;
  o[4] = 2.5f;
  o[5] = -2.5f;
  o[6] = fromBits(0x3EFFFFFF); // 0.5 - 2^-25
  o[7] = -126.5f;
  o[8] = 0.25f;
  std::vector<uint8_t> want = {0x00, 0x3C, 0x01, 0xFF, 0x02, 0x7F, 0x03, 0xFD, 0x00, 0x81, 0x00};
  want.resize(34, 0x00);
  expectBytes("q8_0", o, want, "outlier 127, halves away from zero");

  // The scale q8_0 rounds against is the binary32 d, not the f16 one: with
  // amax 16 (id = 7.9375 as above), 7.9997 * 7.9375 = 63.4976 -> 63, while
  // i8g (below) gets 64. Also 1 -> 7.9375 -> 8 and -2.5 -> -19.84 -> -20.
  std::vector<float> s(32, 0.0f);
  s[0] = -16.0f;
  s[1] = 7.9997f;
  s[2] = 1.0f;
  s[3] = -2.5f;
  want = {0x08, 0x30, 0x81, 0x3F, 0x08, 0xEC};
  want.resize(34, 0x00);
  expectBytes("q8_0", s, want, "rounds against the binary32 scale");

  // Two blocks in one row are two independent blocks.
  std::vector<float> two = x;
  two.insert(two.end(), o.begin(), o.end());
  std::vector<uint8_t> first = encode("q8_0", x), second = encode("q8_0", o);
  check(encode("q8_0", two) == concat(first, second), "q8_0 row is blocks back to back");
}

void testQ4_0() {
  // x[j] = (j - 16) / 4: values -4 .. 3.75; the largest magnitude is -4 at
  // j = 0, so max = -4, d = -4 / -8 = 0.5 (f16 0x3800, bytes 00 38), id = 2.
  // x * id + 8.5 = (j - 16)/2 + 8.5 = (j + 1)/2, truncated: q[j] = (j+1) >> 1,
  // except j = 31: 16 -> clamped to 15.
  //   q[0..15]  = 0 1 1 2 2 3 3 4 4 5 5 6 6 7 7 8
  //   q[16..31] = 8 9 9 10 10 11 11 12 12 13 13 14 14 15 15 15
  // byte j = q[j] | q[j + 16] << 4.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j)
    x[j] = static_cast<float>(j - 16) / 4.0f;
  const std::vector<uint8_t> ramp = {0x00, 0x38, 0x80, 0x91, 0x91, 0xA2, 0xA2, 0xB3, 0xB3,
                                     0xC4, 0xC4, 0xD5, 0xD5, 0xE6, 0xE6, 0xF7, 0xF7, 0xF8};
  expectBytes("q4_0", x, ramp, "x = (j - 16) / 4");

  // All zeros: max = 0 and d = 0 / -8 = -0 (f16 0x8000, as ggml writes it),
  // id = 0, 0 + 8.5 -> 8 in both nibbles.
  std::vector<uint8_t> zeros = {0x00, 0x80};
  zeros.resize(18, 0x88);
  expectBytes("q4_0", std::vector<float>(32, 0.0f), zeros, "zeros");

  // Outlier -8 at j = 5: d = 1 (0x3C00), id = 1, q = trunc(x + 8.5) capped at 15:
  //   0.4 -> 8.9 -> 8 | 0.6 -> 9.1 -> 9 | -0.4 -> 8.1 -> 8 | -0.6 -> 7.9 -> 7
  //   7.9 -> 16.4 -> 16 -> 15 | -8 -> 0.5 -> 0
  //   2.5 - 2^-22 -> 10.99999976, which binary32 rounds to 11.0 (spacing
  //     2^-20 there), so 11; exact arithmetic would give 10.
  //   j = 16: 3 -> 11.5 -> 11 | 17: -3 -> 5.5 -> 5 | 20: 6.5 -> 15 | 21: -7.5 -> 1
  //   zeros -> 8.
  std::vector<float> o(32, 0.0f);
  o[0] = 0.4f;
  o[1] = 0.6f;
  o[2] = -0.4f;
  o[3] = -0.6f;
  o[4] = 7.9f;
  o[5] = -8.0f;
  o[6] = fromBits(0x401FFFFF); // 2.5 - 2^-22
  o[16] = 3.0f;
  o[17] = -3.0f;
  o[20] = 6.5f;
  o[21] = -7.5f;
  std::vector<uint8_t> want = {0x00, 0x3C,
                               0xB8,  // q0 8,  q16 11
                               0x59,  // q1 9,  q17 5
                               0x88,  // q2 8,  q18 8
                               0x87,  // q3 7,  q19 8
                               0xFF,  // q4 15, q20 15
                               0x10,  // q5 0,  q21 1
                               0x8B}; // q6 11, q22 8
  want.resize(18, 0x88);
  expectBytes("q4_0", o, want, "outlier -8, clamp, binary32 boundary");

  // Ties on magnitude: the first one wins and keeps its sign.
  // 4 first: max = 4, d = -0.5 (0xB800), id = -2; 4 -> 0.5 -> 0, -4 -> 16.5 -> 15,
  // 1 -> 6.5 -> 6.
  std::vector<float> t(32, 1.0f);
  t[0] = 4.0f;
  t[1] = -4.0f;
  want = {0x00, 0xB8, 0x60, 0x6F};
  want.resize(18, 0x66);
  expectBytes("q4_0", t, want, "tie, positive first");
  // -4 first: d = 0.5, id = 2; -4 -> 0, 4 -> 15, 1 -> 10.5 -> 10.
  t[0] = -4.0f;
  t[1] = 4.0f;
  want = {0x00, 0x38, 0xA0, 0xAF};
  want.resize(18, 0xAA);
  expectBytes("q4_0", t, want, "tie, negative first");

  // No fused multiply-add: max = fl(-8/3) = -11184811 * 2^-22, d = max / -8 =
  // 11184811 * 2^-25 = 0.33333334 (f16: 1.333 * 2^-2, mantissa 341.33 -> 341,
  // 0x3555), id = fl(2^25 / 11184811) = fl(3 - 8.9e-8) = 3.0 (spacing 2^-22).
  // x = 13981010 * 2^-24 (0x3F555552): x * 3 = 2.5 - 10 * 2^-24, a tie between
  // 2.5 - 8 * 2^-24 and 2.5 - 12 * 2^-24 -> the even 2.5 - 2^-21; + 8.5 gives
  // 11 - 2^-21, a tie between 11 - 2^-20 and 11 -> the even 11: q = 11.
  // A fused x * id + 8.5 would round 11 - 10 * 2^-24 once, to 11 - 2^-20: 10.
  // The max itself: -8.0000002 rounds to -8 -> 0.5 -> 0.
  std::vector<float> f(32, 0.0f);
  f[0] = fromBits(0xC02AAAAB);
  f[1] = fromBits(0x3F555552);
  want = {0x55, 0x35, 0x80, 0x8B};
  want.resize(18, 0x88);
  expectBytes("q4_0", f, want, "product rounded before the add (no FMA)");

  // Scale not exact in f16: max = -1.0001, d = 0.12501250 (f16 0x3000 = 0.125),
  // q4_0 rounds against binary32 id = 7.9992: 0.0625 -> 8.99995 -> 8.
  std::vector<float> s(32, 0.0f);
  s[0] = -1.0001f;
  s[1] = 0.0625f;
  want = {0x00, 0x30, 0x80, 0x88};
  want.resize(18, 0x88);
  expectBytes("q4_0", s, want, "rounds against the binary32 scale");
}

void testI8G() {
  // Same ramp as q8_0: d = 16/127 -> f16 0x3008 = 129/1024; i8g rounds against
  // that: id = 1024/129 = 7.93798. k * 1024/129 is never within 0.0039 of a
  // half, so q = round(k * 7.93798): identical to the q8_0 list here
  // (e.g. -16 -> -127.008 -> -127, 8 -> 63.504 -> 64, 9 -> 71.44 -> 71).
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j)
    x[j] = static_cast<float>(j - 16);
  expectBytes("i8g32", x,
              {0x08, 0x30, 0x81, 0x89, 0x91, 0x99, 0xA1, 0xA9, 0xB1, 0xB9, 0xC0, 0xC8, 0xD0, 0xD8,
               0xE0, 0xE8, 0xF0, 0xF8, 0x00, 0x08, 0x10, 0x18, 0x20, 0x28, 0x30, 0x38, 0x40, 0x47,
               0x4F, 0x57, 0x5F, 0x67, 0x6F, 0x77},
              "x = j - 16");
  expectBytes("i8g32", std::vector<float>(32, 0.0f), std::vector<uint8_t>(34, 0x00), "zeros");

  // Against the stored scale: 7.9997 * 7.937984 = 63.5015 -> 64 (q8_0: 63);
  // 1 -> 7.94 -> 8; -2.5 -> -19.84 -> -20.
  std::vector<float> s(32, 0.0f);
  s[0] = -16.0f;
  s[1] = 7.9997f;
  s[2] = 1.0f;
  s[3] = -2.5f;
  std::vector<uint8_t> want = {0x08, 0x30, 0x81, 0x40, 0x08, 0xEC};
  want.resize(34, 0x00);
  expectBytes("i8g32", s, want, "rounds against the f16 scale");

  // Group of 64: x[0] = 127 gives d = 1 exactly, so q[j] = x[j] = j - 32 for
  // j >= 1, one int8 per element after the scale.
  std::vector<float> g(64);
  want = {0x00, 0x3C, 0x7F};
  g[0] = 127.0f;
  for (int j = 1; j < 64; ++j) {
    g[j] = static_cast<float>(j - 32);
    want.push_back(static_cast<uint8_t>(j - 32));
  }
  expectBytes("i8g64", g, want, "group of 64");
  // Two groups of 32 differ from one group of 64: each gets its own scale.
  check(encode("i8g32", g).size() == 68 && encode("i8g64", g).size() == 66,
        "i8g32/i8g64 row sizes");
}

void testI4G() {
  // The q4_0 ramp: d = 0.5 is exact in f16, so i4g32 gives the same bytes.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j)
    x[j] = static_cast<float>(j - 16) / 4.0f;
  expectBytes("i4g32", x,
              {0x00, 0x38, 0x80, 0x91, 0x91, 0xA2, 0xA2, 0xB3, 0xB3, 0xC4, 0xC4, 0xD5, 0xD5, 0xE6,
               0xE6, 0xF7, 0xF7, 0xF8},
              "x = (j - 16) / 4");
  std::vector<uint8_t> zeros = {0x00, 0x80}; // d = -0 as in q4_0
  zeros.resize(18, 0x88);
  expectBytes("i4g32", std::vector<float>(32, 0.0f), zeros, "zeros");

  // Stored scale 0x3000 = 0.125 (from 0.12501250), id = 8: 0.0625 -> 9.0 -> 9
  // (q4_0: 8); -1.0001 -> -8.0008 + 8.5 = 0.4992 -> 0.
  std::vector<float> s(32, 0.0f);
  s[0] = -1.0001f;
  s[1] = 0.0625f;
  std::vector<uint8_t> want = {0x00, 0x30, 0x80, 0x89};
  want.resize(18, 0x88);
  expectBytes("i4g32", s, want, "rounds against the f16 scale");

  // Group of 64, nibbles paired j with j + 32: x[0] = -8 makes d = 1 and
  // x[j] = (j % 16) - 8 integers, so q[j] = j % 16 and byte j = (j % 16) * 0x11.
  std::vector<float> g(64);
  want = {0x00, 0x3C};
  for (int j = 0; j < 64; ++j)
    g[j] = static_cast<float>(j % 16 - 8);
  for (int j = 0; j < 32; ++j)
    want.push_back(static_cast<uint8_t>((j % 16) * 0x11));
  expectBytes("i4g64", g, want, "group of 64");
}

void testF16AndF32Rows() {
  expectBytes("f16", {1.0f, -2.0f, 0.1f, 65520.0f}, {0x00, 0x3C, 0x00, 0xC0, 0x66, 0x2E, 0x00, 0x7C},
              "little-endian halves");
  expectBytes("f32", {1.0f, -2.0f}, {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0},
              "little-endian floats");
}

void testDequantize() {
  // q8_0: d = 0x3C00 (1.0): q = -3, 127, 0 -> -3, 127, 0.
  std::vector<uint8_t> q8 = {0x00, 0x3C, 0xFD, 0x7F};
  q8.resize(34, 0x00);
  std::vector<float> y(32);
  dequantize(spec("q8_0"), q8.data(), 32, y.data());
  check(y[0] == -3.0f && y[1] == 127.0f && y[2] == 0.0f, "q8_0 dequantize");
  // q4_0: d = 0x3800 (0.5): byte 0 = 0x0F -> q0 = 15 -> 3.5, q16 = 0 -> -4.
  std::vector<uint8_t> q4 = {0x00, 0x38, 0x0F};
  q4.resize(18, 0x88);
  dequantize(spec("q4_0"), q4.data(), 32, y.data());
  check(y[0] == 3.5f && y[16] == -4.0f && y[1] == 0.0f, "q4_0 dequantize");
  // i4g64: byte 0 = 0xF0 -> q0 = 0 -> -8d, q32 = 15 -> 7d with d = 2 (0x4000).
  std::vector<uint8_t> i4 = {0x00, 0x40, 0xF0};
  i4.resize(34, 0x88);
  std::vector<float> z(64);
  dequantize(spec("i4g64"), i4.data(), 64, z.data());
  check(z[0] == -16.0f && z[32] == 14.0f && z[1] == 0.0f && z[63] == 0.0f, "i4g64 dequantize");
}

void testNonFinite() {
  // ggml's amax = MAX(amax, fabsf(v)) with MAX(a, b) = a > b ? a : b: a NaN
  // replaces the running value and the next element replaces the NaN, so for
  // 127, 1, 1, NaN, 1 ... (all 1 after) q8_0 sees amax = 1: d = 1/127
  // (binary32 2^-7 (1 + r + r^2 + r^3), r = 2^-7; f16 0x2008 as for 16/127),
  // id = 127 exactly; 127 * 127 = 16129 = 0x3F01 keeps its low byte 0x01 as
  // the int8 cast does on x86-64; 1 -> 127; NaN -> 0.
  std::vector<float> x(32, 1.0f);
  x[0] = 127.0f;
  x[3] = std::nanf("");
  std::vector<uint8_t> want = {0x08, 0x20, 0x01, 0x7F, 0x7F, 0x00};
  want.resize(34, 0x7F);
  expectBytes("q8_0", x, want, "NaN inside the block (ggml's MAX quirk)");
  // A NaN last leaves amax = NaN: d and id are NaN, every code is 0.
  std::vector<float> last(32, 1.0f);
  last[31] = std::nanf("");
  std::vector<uint8_t> b = encode("q8_0", last);
  check(b[0] == 0x00 && b[1] == 0x7E && b == [] {
    std::vector<uint8_t> v = {0x00, 0x7E};
    v.resize(34, 0x00);
    return v;
  }(), "q8_0 NaN last gives a NaN scale and zero codes");
  // i8g ignores the NaN: d = 1 (0x3C00), 1 -> 1, NaN -> 0.
  want = {0x00, 0x3C, 0x7F, 0x01, 0x01, 0x00};
  want.resize(34, 0x01);
  expectBytes("i8g32", x, want, "NaN element encodes as 0");
  b = encode("i4g32", x);
  check((b[2 + 3] & 0x0F) == 8, "i4g32 NaN element decodes to 0");
  // q4_0: NaN never wins |v| > amax; its code is (int8_t)NaN = 0 on x86-64.
  // max = 127, d = -15.875 (exact in f16: 0xCBF0), id = -0.0629921;
  // 127 -> -8 + 8.5 -> 0; 1 -> 8.437 -> 8; NaN -> 0.
  want = {0xF0, 0xCB, 0x80, 0x88, 0x88, 0x80};
  want.resize(18, 0x88);
  expectBytes("q4_0", x, want, "NaN element");
}

// ---------------------------------------------------------------------------
// Random round trips

void testRoundTrip() {
  Rng rng{2024};
  const size_t n = 256 * 64;
  std::vector<float> x(n);
  for (size_t b = 0; b < n / 32; ++b) {
    // Per-block magnitudes from 1e-3 to 1e2 and a few wide outliers.
    double scale = std::pow(10.0, -3.0 + 5.0 * rng.uniform());
    for (size_t j = 0; j < 32; ++j)
      x[b * 32 + j] = static_cast<float>(rng.gauss() * scale);
    if (rng.uniform() < 0.2)
      x[b * 32 + rng.next() % 32] = static_cast<float>(scale * 20.0 * (rng.uniform() - 0.5));
  }

  struct Case {
    const char *name;
    bool fourBit;
  } cases[] = {{"q8_0", false},  {"i8g32", false},  {"i8g64", false}, {"i8g128", false},
               {"i8g256", false}, {"q4_0", true},   {"i4g32", true},  {"i4g64", true},
               {"i4g128", true},  {"i4g256", true}};
  for (const Case &c : cases) {
    FormatSpec s = spec(c.name);
    std::vector<uint8_t> packed(rowBytes(s, n));
    std::vector<float> y(n);
    quantize(s, x.data(), n, packed.data());
    dequantize(s, packed.data(), n, y.data());
    const size_t g = s.group, bb = blockBytes(s);
    const bool ggml = s.format == Format::Q8_0 || s.format == Format::Q4_0;
    // q8_0/q4_0 round against the binary32 d but decode with f16(d), which may
    // be up to 2^-11 d away (2^-25 absolute once f16(d) is subnormal), times up
    // to 128 (8-bit) or 16 (4-bit) steps. i8g/i4g round against the f16 scale
    // itself, so only binary32 noise is added.
    const double steps = c.fourBit ? 16.0 : 128.0;
    const double slack = ggml ? steps / 2048.0 : 1.0 / 4096.0;
    const double absSlack = ggml ? steps * std::ldexp(1.0, -25) : 0.0;
    const double step = c.fourBit ? 1.0 : 0.5;
    double worst = 0.0;
    int bad = 0;
    for (size_t b = 0; b < n / g; ++b) {
      const uint8_t *blk = packed.data() + b * bb;
      double d = std::fabs(static_cast<double>(f16ToF32(static_cast<uint16_t>(blk[0] | blk[1] << 8))));
      for (size_t j = 0; j < g; ++j) {
        double xv = x[b * g + j], err = std::fabs(xv - y[b * g + j]);
        double bound = d * (step + slack) + absSlack + 1e-6 * std::fabs(xv);
        // i4g: only the clamped top code (15) may be a whole step off.
        if (!ggml && c.fourBit) {
          size_t k = j < g / 2 ? j : j - g / 2;
          unsigned q = j < g / 2 ? (blk[2 + k] & 0x0F) : (blk[2 + k] >> 4);
          if (q != 15)
            bound = d * (0.5 + slack) + 1e-6 * std::fabs(xv);
        }
        if (err > bound)
          ++bad;
        if (d > 0 && err / d > worst)
          worst = err / d;
      }
    }
    check(bad == 0, std::string(c.name) + " round-trip error within " +
                        (c.fourBit ? "one step" : "half a step"));
    std::printf("  %-7s worst |x - deq| / d = %.4f\n", c.name, worst);
  }

  // f16: within half an ulp, i.e. 2^-11 relative for normals.
  FormatSpec h = spec("f16");
  std::vector<uint8_t> hp(rowBytes(h, n));
  std::vector<float> hy(n);
  quantize(h, x.data(), n, hp.data());
  dequantize(h, hp.data(), n, hy.data());
  // Half an ulp: 2^-11 relative for normals, 2^-25 absolute for subnormals.
  int bad = 0;
  for (size_t i = 0; i < n; ++i)
    bad += std::fabs(x[i] - hy[i]) > std::max(std::fabs(x[i]) / 2048.0, std::ldexp(1.0, -25));
  check(bad == 0, "f16 round trip within half an ulp");
}

void testRelativeError() {
  Rng rng{7};
  const size_t n = 4096 * 16;
  std::vector<float> x(n);
  for (float &v : x)
    v = static_cast<float>(rng.gauss());
  const char *names[] = {"f32", "f16", "q8_0", "i8g32", "i8g64", "i8g128", "i8g256",
                         "q4_0", "i4g32", "i4g64", "i4g128", "i4g256"};
  double e[12];
  std::printf("  relative RMS error on %zu N(0,1) values:\n", n);
  for (int i = 0; i < 12; ++i) {
    e[i] = relativeRmsError(spec(names[i]), x.data(), n);
    std::printf("    %-7s %.6g\n", names[i], e[i]);
  }
  check(e[0] == 0.0, "f32 is lossless");
  check(e[1] < e[2] && e[2] < e[7], "f16 < q8_0 < q4_0");
  check(e[3] < e[4] && e[4] < e[5] && e[5] < e[6], "i8g error grows with the group");
  check(e[8] < e[9] && e[9] < e[10] && e[10] < e[11], "i4g error grows with the group");
  check(e[6] < e[8], "i8g256 < i4g32");
  // Expected magnitudes: f16 ~2^-11/sqrt(3) relative; 8-bit ~1e-2; 4-bit ~1e-1.
  check(e[1] < 3e-4 && e[2] < 1.5e-2 && e[7] < 0.15, "errors in the expected range");

  std::vector<float> zeros(64, 0.0f);
  check(relativeRmsError(spec("q4_0"), zeros.data(), 64) == 0.0, "zero input has error 0");

  // Chunked accumulation equals the direct computation over an odd length.
  const size_t m = 4096 * 2 + 256;
  FormatSpec s = spec("i4g128");
  std::vector<uint8_t> p(rowBytes(s, m));
  std::vector<float> y(m);
  quantize(s, x.data(), m, p.data());
  dequantize(s, p.data(), m, y.data());
  double num = 0, den = 0;
  for (size_t i = 0; i < m; ++i) {
    num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    den += double(x[i]) * x[i];
  }
  double direct = std::sqrt(num / den), viaApi = relativeRmsError(s, x.data(), m);
  check(std::fabs(direct - viaApi) <= 1e-12 * direct, "relativeRmsError over several chunks");
}

// ---------------------------------------------------------------------------
// The other ggml block formats (bit-exact decoding is cross-checked against an
// independent Python decoder by block_formats_check.py)

void putHalf(std::vector<uint8_t> &b, size_t at, float v) {
  uint16_t h = f32ToF16(v);
  b[at] = static_cast<uint8_t>(h & 0xFF);
  b[at + 1] = static_cast<uint8_t>(h >> 8);
}

void testGgmlBlockFormats() {
  struct {
    const char *name;
    size_t elements, bytes;
  } sizes[] = {{"bf16", 1, 2},     {"q4_1", 32, 20},  {"q5_0", 32, 22},  {"q5_1", 32, 24},
               {"iq4_nl", 32, 18}, {"q2_k", 256, 84}, {"q3_k", 256, 110}, {"q4_k", 256, 144},
               {"q5_k", 256, 176}, {"q6_k", 256, 210}, {"tq2_0", 256, 66}};
  for (const auto &e : sizes) {
    FormatSpec t = spec(e.name);
    check(formatName(t) == e.name, std::string("parse/name round trip ") + e.name);
    check(blockElements(t) == e.elements && blockBytes(t) == e.bytes,
          std::string("block of ") + e.name);
    check(rowBytes(t, 1024) == 1024 / e.elements * e.bytes, std::string("rowBytes of ") + e.name);
  }

  // Hand-made blocks. q4_k: d = 0.5, dmin = 0.25, sub-block 0 scale 3 min 2,
  // sub-block 5 scale 33 (needs the high bits) min 17; codes 7 and 9.
  {
    std::vector<uint8_t> b(144, 0);
    putHalf(b, 0, 0.5f), putHalf(b, 2, 0.25f);
    b[4] = 3, b[8] = 2;                                   // sc0, m0
    b[4 + 9] = (33 & 15) | ((17 & 15) << 4);              // low nibbles of sc5, m5
    b[4 + 1] |= (33 >> 4) << 6, b[4 + 5] |= (17 >> 4) << 6; // their top bits
    b[16 + 0] = 7;                      // element 0: low nibble of qs[0]
    b[16 + 32 + 1] = 9 << 4;            // element 64 + 32 + 1: sub-block 3
    b[16 + 64 + 2] = 9 << 4;            // element 128 + 32 + 2: sub-block 5
    std::vector<float> y(256);
    dequantize(spec("q4_k"), b.data(), 256, y.data());
    check(y[0] == 0.5f * 3 * 7 - 0.25f * 2, "q4_k element 0");
    check(y[1] == -0.25f * 2, "q4_k code 0 gives -dmin * m");
    check(y[162] == 0.5f * 33 * 9 - 0.25f * 17, "q4_k sub-block 5 with 6-bit scale and min");
  }
  // q6_k: d = 0.125, scale of sub-block 9 = -5, element 9 * 16 + 3 = 147 is
  // in half 1, i = 0, l = 19: low nibble of ql[64 + 19], bits 0-1 of qh[32 + 19].
  {
    std::vector<uint8_t> b(210, 0);
    putHalf(b, 208, 0.125f);
    b[192 + 9] = static_cast<uint8_t>(-5);
    b[64 + 19] = 0x0B, b[128 + 32 + 19] = 0x2; // code 0x2B = 43
    std::vector<float> y(256);
    dequantize(spec("q6_k"), b.data(), 256, y.data());
    check(y[147] == 0.125f * -5 * (43 - 32), "q6_k element 147");
    check(y[146] == 0.125f * -5 * -32, "q6_k code 0 gives -32 steps");
  }

  // Round trips of N(0,1) rows: the usual ordering and magnitudes, and exact
  // zeros for all-zero rows.
  Rng rng{11};
  const size_t n = 256 * 64;
  std::vector<float> x(n), zeros(n, 0.0f), back(n);
  for (float &v : x)
    v = static_cast<float>(rng.gauss());
  auto err = [&](const char *name) { return relativeRmsError(spec(name), x.data(), n); };
  std::printf("  relative RMS error on %zu N(0,1) values:\n", n);
  for (const auto &e : sizes)
    std::printf("    %-7s %.6g\n", e.name, err(e.name));
  check(err("q2_k") > err("q3_k") && err("q3_k") > err("q4_k") && err("q4_k") > err("q5_k") &&
            err("q5_k") > err("q6_k") && err("q6_k") > err("q8_0"),
        "k-quant error falls with the bits");
  check(err("q4_1") < err("q4_0") && err("iq4_nl") < err("q4_0") && err("q5_0") < err("q4_1") &&
            err("q5_1") < err("q4_1"),
        "q4_1, iq4_nl below q4_0; five bits below four");
  check(err("bf16") < 4e-3 && err("q6_k") < 0.02 && err("q4_k") < 0.1 && err("q2_k") < 0.4,
        "k-quant errors in the expected range");
  // Ternary values with one scale per 256: the best fit of N(0,1) leaves about
  // half the signal's RMS (0.53 at the optimal threshold).
  check(err("tq2_0") > err("q2_k") && err("tq2_0") < 0.6, "tq2_0 error above q2_k's, below 0.6");
  for (const auto &e : sizes) {
    FormatSpec t = spec(e.name);
    std::vector<uint8_t> p(rowBytes(t, n));
    quantize(t, zeros.data(), n, p.data());
    dequantize(t, p.data(), n, back.data());
    bool zero = true;
    for (float v : back)
      zero = zero && v == 0.0f;
    check(zero, std::string(e.name) + " keeps an all-zero row zero");
  }
}

// ---------------------------------------------------------------------------
// --encode / --decode for the Python cross-check

bool readFile(const char *path, std::vector<uint8_t> &out) {
  FILE *f = std::fopen(path, "rb");
  if (!f)
    return false;
  uint8_t buf[65536];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0)
    out.insert(out.end(), buf, buf + got);
  bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

bool writeFile(const char *path, const void *data, size_t size) {
  FILE *f = std::fopen(path, "wb");
  if (!f)
    return false;
  bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

int codecMain(bool enc, const char *format, const char *in, const char *out) {
  FormatSpec s{Format::F32, 1};
  if (!parseFormat(format, s)) {
    std::fprintf(stderr, "unknown format %s\n", format);
    return 2;
  }
  std::vector<uint8_t> data;
  if (!readFile(in, data)) {
    std::fprintf(stderr, "cannot read %s\n", in);
    return 2;
  }
  const size_t per = (s.format == Format::F32 || s.format == Format::F16) ? 1 : s.group;
  if (enc) {
    size_t n = data.size() / 4;
    if (data.size() % 4 || n % per) {
      std::fprintf(stderr, "%s: %zu bytes is not a whole number of %zu-float groups\n", in,
                   data.size(), per);
      return 2;
    }
    std::vector<float> x(n);
    if (n)
      std::memcpy(x.data(), data.data(), data.size()); // little-endian hosts
    std::vector<uint8_t> q(rowBytes(s, n));
    quantize(s, x.data(), n, q.data());
    return writeFile(out, q.data(), q.size()) ? 0 : 2;
  }
  if (data.size() % blockBytes(s)) {
    std::fprintf(stderr, "%s: not a whole number of %zu-byte blocks\n", in, blockBytes(s));
    return 2;
  }
  size_t n = data.size() / blockBytes(s) * per;
  std::vector<float> y(n);
  dequantize(s, data.data(), n, y.data());
  return writeFile(out, y.data(), n * 4) ? 0 : 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1) {
    std::string mode = argv[1];
    if ((mode == "--encode" || mode == "--decode") && argc == 5)
      return codecMain(mode == "--encode", argv[2], argv[3], argv[4]);
    std::fprintf(stderr, "usage: %s [--encode|--decode FORMAT IN OUT]\n", argv[0]);
    return 2;
  }
  testNamesAndSizes();
  testF16();
  testQ8_0();
  testQ4_0();
  testI8G();
  testI4G();
  testF16AndF32Rows();
  testDequantize();
  testNonFinite();
  testRoundTrip();
  testRelativeError();
  testGgmlBlockFormats();
  return kiln::test::finish();
}
