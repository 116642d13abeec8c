// Writes a vocab segment from the JSON that dump_vocab.py produces:
//
//   vocab_segment_tool IN.json OUT.seg
//
// Only encodeVocabSegment is under test here, so the JSON reader handles just
// that fixed shape: one object whose members are a string (model), arrays of
// byte-value arrays (tokens, merges), arrays of numbers (scores, types),
// integers (bos, eos, unk) and booleans (add_*). Unknown members are an error,
// so a typo in a test cannot pass silently.
#include "compiler/pack/VocabSegment.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

struct Parser {
  const std::string &s;
  size_t pos = 0;
  std::string error;

  explicit Parser(const std::string &text) : s(text) {}

  bool fail(const std::string &what) {
    if (error.empty())
      error = what + " at byte " + std::to_string(pos);
    return false;
  }
  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }
  bool peek(char c) {
    skipSpace();
    return pos < s.size() && s[pos] == c;
  }
  bool expect(char c) {
    if (!peek(c))
      return fail(std::string("expected '") + c + "'");
    ++pos;
    return true;
  }
  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (s.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  // ASCII keys and model names only; escapes beyond \" and \\ are not needed.
  bool string(std::string &out) {
    if (!expect('"'))
      return false;
    out.clear();
    while (pos < s.size() && s[pos] != '"') {
      if (s[pos] == '\\') {
        if (++pos >= s.size() || (s[pos] != '"' && s[pos] != '\\'))
          return fail("unsupported string escape");
      }
      out.push_back(s[pos++]);
    }
    return expect('"');
  }

  bool number(double &out) {
    skipSpace();
    if (literal("NaN")) {
      out = NAN;
      return true;
    }
    if (literal("Infinity")) {
      out = INFINITY;
      return true;
    }
    if (literal("-Infinity")) {
      out = -INFINITY;
      return true;
    }
    const char *begin = s.c_str() + pos;
    char *end = nullptr;
    errno = 0;
    out = std::strtod(begin, &end);
    if (end == begin || errno == ERANGE)
      return fail("expected a number");
    pos += size_t(end - begin);
    return true;
  }

  bool integer(long long lo, long long hi, long long &out) {
    double d = 0;
    if (!number(d))
      return false;
    if (!(d >= double(lo) && d <= double(hi)) || std::floor(d) != d)
      return fail("integer out of range");
    out = (long long)d;
    return true;
  }

  bool boolean(bool &out) {
    skipSpace();
    if (literal("true"))
      out = true;
    else if (literal("false"))
      out = false;
    else
      return fail("expected true or false");
    return true;
  }

  // Calls element() for each member of an array.
  template <typename F> bool array(F element) {
    if (!expect('['))
      return false;
    if (peek(']'))
      return expect(']');
    do {
      if (!element())
        return false;
    } while (peek(',') && expect(','));
    return expect(']');
  }

  bool byteStrings(std::vector<std::string> &out) {
    return array([&] {
      std::string bytes;
      bool ok = array([&] {
        long long b = 0;
        if (!integer(0, 255, b))
          return false;
        bytes.push_back(char(b));
        return true;
      });
      out.push_back(std::move(bytes));
      return ok;
    });
  }
};

using Vocab = kiln::VocabSegmentSpec;

bool parseVocab(Parser &p, Vocab &v) {
  if (!p.expect('{'))
    return false;
  if (p.peek('}'))
    return p.expect('}');
  do {
    std::string key;
    if (!p.string(key) || !p.expect(':'))
      return false;
    bool ok;
    if (key == "model") {
      ok = p.string(v.model);
    } else if (key == "tokens") {
      ok = p.byteStrings(v.tokens);
    } else if (key == "merges") {
      ok = p.byteStrings(v.merges);
    } else if (key == "scores") {
      ok = p.array([&] {
        double d = 0;
        if (!p.number(d))
          return false;
        v.scores.push_back(float(d));
        return true;
      });
    } else if (key == "types") {
      ok = p.array([&] {
        long long x = 0;
        if (!p.integer(INT32_MIN, INT32_MAX, x))
          return false;
        v.types.push_back(int32_t(x));
        return true;
      });
    } else if (key == "bos" || key == "eos" || key == "unk") {
      long long x = 0;
      ok = p.integer(-1, INT32_MAX, x);
      (key == "bos" ? v.bos : key == "eos" ? v.eos : v.unk) = int32_t(x);
    } else if (key == "pre" || key == "chat") {
      long long x = 0;
      ok = p.integer(0, UINT32_MAX, x);
      (key == "pre" ? v.pre : v.chat) = uint32_t(x);
    } else if (key == "eog") {
      ok = p.array([&] {
        long long x = 0;
        if (!p.integer(INT32_MIN, INT32_MAX, x))
          return false;
        v.endOfGeneration.push_back(int32_t(x));
        return true;
      });
    } else if (key == "add_bos") {
      ok = p.boolean(v.addBos);
    } else if (key == "add_eos") {
      ok = p.boolean(v.addEos);
    } else if (key == "add_space_prefix") {
      ok = p.boolean(v.addSpacePrefix);
    } else {
      return p.fail("unknown member \"" + key + "\"");
    }
    if (!ok)
      return false;
  } while (p.peek(',') && p.expect(','));
  if (!p.expect('}'))
    return false;
  p.skipSpace();
  return p.pos == p.s.size() || p.fail("trailing bytes");
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IN.json OUT.seg\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open %s\n", argv[0], argv[1]);
    return 1;
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Parser parser(text);
  Vocab v;
  if (!parseVocab(parser, v)) {
    std::fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], parser.error.c_str());
    return 1;
  }
  std::vector<uint8_t> seg = kiln::encodeVocabSegment(v);
  if (seg.empty()) {
    std::fprintf(stderr, "%s: %s: vocabulary rejected by encodeVocabSegment\n", argv[0], argv[1]);
    return 1;
  }
  std::ofstream out(argv[2], std::ios::binary);
  out.write(reinterpret_cast<const char *>(seg.data()), std::streamsize(seg.size()));
  if (!out) {
    std::fprintf(stderr, "%s: cannot write %s\n", argv[0], argv[2]);
    return 1;
  }
  return 0;
}
