// Unit test for compiler/quant/Imatrix.cpp: llama.cpp's importance-matrix
// files in both forms, written here byte by byte from the format's spec with
// known entries; every truncation of one; bad values; Kiln's writer read back;
// the file llama.cpp's llama-imatrix made for model A; and the check against a
// model's tensors.
//
//   imatrix-test A.imatrix.dat tiny-llama-A-f32.gguf

#include "compiler/quant/Imatrix.h"

#include "check.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace kiln;

namespace {

using kiln::test::check;

/// Little-endian bytes of a file under construction.
struct Bytes {
  std::vector<uint8_t> b;
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      b.push_back(uint8_t(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      b.push_back(uint8_t(v >> (8 * i)));
  }
  void f32(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u32(u);
  }
  void raw(const std::string &s) { b.insert(b.end(), s.begin(), s.end()); }
  void gstr(const std::string &s) { // GGUF string: u64 length, bytes
    u64(s.size());
    raw(s);
  }
};

std::string temp(const char *name) {
  llvm::SmallString<128> path;
  llvm::sys::fs::createTemporaryFile(name, "bin", path);
  return std::string(path);
}

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!bytes.empty())
    std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

std::string errorOf(llvm::Expected<Imatrix> m) {
  if (m)
    return "";
  return llvm::toString(m.takeError());
}

/// Two entries: q over 4 calls with sums 4, 8, 0, 2 (means 1, 2, 0, 0.5) and
/// down over no calls (values kept as written), then the trailer.
Bytes legacy(bool trailer) {
  Bytes d;
  d.u32(2);
  d.u32(19);
  d.raw("blk.0.attn_q.weight");
  d.u32(4);
  d.u32(4);
  for (float v : {4.0f, 8.0f, 0.0f, 2.0f})
    d.f32(v);
  d.u32(21);
  d.raw("blk.0.ffn_down.weight");
  d.u32(0);
  d.u32(2);
  d.f32(3.0f);
  d.f32(0.25f);
  if (trailer) {
    d.u32(4);
    d.u32(9);
    d.raw("calib.txt");
  }
  return d;
}

void testLegacy() {
  std::string path = temp("legacy");
  writeBytes(path, legacy(true).b);
  llvm::Expected<Imatrix> m = readImatrix(path);
  check(bool(m), "the legacy form reads: " + (m ? "" : llvm::toString(m.takeError())));
  if (!m)
    return;
  const std::vector<float> *q = m->find("blk.0.attn_q.weight");
  const std::vector<float> *down = m->find("blk.0.ffn_down.weight");
  check(q && *q == std::vector<float>{1, 2, 0, 0.5f}, "legacy: sums over ncall = 4");
  check(down && *down == std::vector<float>{3, 0.25f}, "legacy: ncall 0 keeps the values");
  check(m->chunks == 4 && m->dataset == "calib.txt", "legacy: the trailer");
  check(!m->find("blk.1.attn_q.weight"), "legacy: no entry for another name");

  // Every prefix of the file is an error naming it, but the one that ends
  // where the optional trailer starts.
  std::vector<uint8_t> whole = legacy(true).b;
  size_t bare = legacy(false).b.size(), bad = 0, named = 0;
  for (size_t n = 0; n < whole.size(); ++n) {
    writeBytes(path, std::vector<uint8_t>(whole.begin(), whole.begin() + n));
    std::string e = errorOf(readImatrix(path));
    if (n == bare) {
      check(e.empty(), "legacy without its trailer reads: " + e);
      continue;
    }
    bad += !e.empty();
    named += e.find(path) != std::string::npos;
  }
  check(bad == whole.size() - 1 && named == bad,
        "every truncation is an error naming the file (" + std::to_string(bad) + " of " +
            std::to_string(whole.size() - 1) + ")");

  // A negative or non-finite importance, a name twice.
  for (float v : {-1.0f, NAN, INFINITY}) {
    Bytes d = legacy(true);
    std::memcpy(d.b.data() + 4 + 4 + 19 + 8 + 4, &v, 4); // q's second value
    writeBytes(path, d.b);
    std::string e = errorOf(readImatrix(path));
    check(e.find("column 1") != std::string::npos && e.find("blk.0.attn_q.weight") != std::string::npos,
          "a bad value is an error naming its entry and column: " + e);
  }
  Bytes twice;
  twice.u32(2);
  for (int i = 0; i < 2; ++i) {
    twice.u32(19);
    twice.raw("blk.0.attn_q.weight");
    twice.u32(1);
    twice.u32(1);
    twice.f32(1.0f);
  }
  writeBytes(path, twice.b);
  check(errorOf(readImatrix(path)).find("appears twice") != std::string::npos,
        "a name twice is an error");
  writeBytes(path, {});
  check(errorOf(readImatrix(path)).find("not an importance matrix") != std::string::npos,
        "an empty file is not an importance matrix");
  llvm::sys::fs::remove(path);
}

/// The GGUF form: X.in_sum2 of 4 columns (sums 2, 4, 6, 8 over 2 tokens) and
/// Y.in_sum2 of 2 columns never seen (count 0).
std::vector<uint8_t> ggufImatrix(const char *type) {
  Bytes g;
  g.raw("GGUF");
  g.u32(3);
  g.u64(4); // tensors
  g.u64(3); // metadata
  g.gstr("general.type");
  g.u32(8);
  g.gstr(type);
  g.gstr("imatrix.chunk_count");
  g.u32(4);
  g.u32(2);
  g.gstr("imatrix.datasets");
  g.u32(9);
  g.u32(8);
  g.u64(1);
  g.gstr("calib.txt");
  struct T {
    const char *name;
    uint64_t ne0, ne1;
    std::vector<float> v;
  };
  std::vector<T> tensors = {{"blk.0.attn_q.weight.in_sum2", 4, 1, {2, 4, 6, 8}},
                            {"blk.0.attn_q.weight.counts", 1, 1, {2}},
                            {"blk.0.ffn_up.weight.counts", 1, 1, {0}},
                            {"blk.0.ffn_up.weight.in_sum2", 2, 1, {5, 7}}};
  uint64_t offset = 0;
  for (const T &t : tensors) {
    g.gstr(t.name);
    g.u32(2);
    g.u64(t.ne0);
    g.u64(t.ne1);
    g.u32(0); // F32
    g.u64(offset);
    offset += (t.v.size() * 4 + 31) / 32 * 32;
  }
  while (g.b.size() % 32)
    g.b.push_back(0);
  for (const T &t : tensors) {
    for (float v : t.v)
      g.f32(v);
    while (g.b.size() % 32)
      g.b.push_back(0);
  }
  return g.b;
}

void testGguf() {
  std::string path = temp("gguf");
  writeBytes(path, ggufImatrix("imatrix"));
  llvm::Expected<Imatrix> m = readImatrix(path);
  check(bool(m), "the GGUF form reads: " + (m ? "" : llvm::toString(m.takeError())));
  if (m) {
    const std::vector<float> *q = m->find("blk.0.attn_q.weight");
    const std::vector<float> *up = m->find("blk.0.ffn_up.weight");
    check(q && *q == std::vector<float>{1, 2, 3, 4}, "GGUF: in_sum2 over counts");
    check(up && *up == std::vector<float>{1, 1}, "GGUF: a count of 0 weighs every column alike");
    check(m->chunks == 2 && m->dataset == "calib.txt" && m->columns.size() == 2,
          "GGUF: chunk count, dataset, two entries");
  }
  writeBytes(path, ggufImatrix("model"));
  check(errorOf(readImatrix(path)).find("general.type") != std::string::npos,
        "a GGUF model is not an importance matrix");
  std::vector<uint8_t> cut = ggufImatrix("imatrix");
  cut.resize(cut.size() - 40);
  writeBytes(path, cut);
  std::string e = errorOf(readImatrix(path));
  check(!e.empty() && e.find(path) != std::string::npos, "a truncated GGUF imatrix: " + e);
  llvm::sys::fs::remove(path);
}

void testWriteRead() {
  Imatrix m;
  m.columns["blk.3.ffn_down.weight"] = {0.0f, 1e-3f, 7.5f, 123456.0f};
  m.columns["output.weight"] = {2.0f};
  m.chunks = 185;
  m.dataset = "calib-half1.txt";
  std::string path = temp("write");
  check(!writeImatrix(m, path), "the writer writes");
  llvm::Expected<Imatrix> back = readImatrix(path);
  bool same = back && back->columns.size() == 2 && back->chunks == 185 &&
              back->dataset == "calib-half1.txt";
  for (const auto &[name, values] : m.columns) {
    const std::vector<float> *b = back ? back->find(name) : nullptr;
    same = same && b && b->size() == values.size();
    for (size_t i = 0; same && i < values.size(); ++i)
      same = std::fabs((*b)[i] - values[i]) <= 1e-6f * values[i];
  }
  check(same, "Kiln's writer read back: names, values (to 1e-6), chunks, dataset");
  llvm::sys::fs::remove(path);
}

/// llama-imatrix's file for model A (6 layers, 256 wide, 768 in the
/// feed-forward): its seven matmuls a layer; q, k and v meet the same input,
/// and so do gate and up, so their columns must be equal.
void testLlamaCppFile(const char *path, const char *modelPath) {
  llvm::Expected<Imatrix> m = readImatrix(path);
  check(bool(m), std::string("llama.cpp's file reads: ") + (m ? "" : llvm::toString(m.takeError())));
  if (!m)
    return;
  check(m->columns.size() == 42 && m->chunks == 185 && m->dataset == "calib-half1.txt",
        "A.imatrix.dat: 42 entries over 185 chunks of calib-half1.txt");
  bool shapes = true, shared = true;
  for (int l = 0; l < 6; ++l) {
    auto get = [&](const char *what) {
      return m->find("blk." + std::to_string(l) + "." + what + ".weight");
    };
    for (const char *t : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up"})
      shapes = shapes && get(t) && get(t)->size() == 256;
    shapes = shapes && get("ffn_down") && get("ffn_down")->size() == 768;
    if (shapes)
      shared = shared && *get("attn_q") == *get("attn_k") && *get("attn_q") == *get("attn_v") &&
               *get("ffn_gate") == *get("ffn_up") && *get("attn_q") != *get("ffn_up");
  }
  check(shapes, "A.imatrix.dat: every layer's seven matmuls, 256 or 768 columns");
  check(shared, "A.imatrix.dat: q, k, v alike and gate, up alike (one input each)");

  auto buffer = llvm::MemoryBuffer::getFile(modelPath, false, false);
  if (!buffer) {
    check(false, std::string("cannot read ") + modelPath);
    return;
  }
  llvm::Expected<gguf::File> model = gguf::parse(llvm::ArrayRef(
      reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()), (*buffer)->getBufferSize()));
  if (!model) {
    check(false, llvm::toString(model.takeError()));
    return;
  }
  check(!checkImatrix(*m, *model, path), "A.imatrix.dat fits model A");
  Imatrix other = *m;
  other.columns["blk.0.attn_q.weight"].resize(100);
  std::string e = llvm::toString(checkImatrix(other, *model, "x.dat"));
  check(e.find("x.dat") != std::string::npos && e.find("100 columns") != std::string::npos &&
            e.find("256") != std::string::npos,
        "another width is an error naming the entry and both widths: " + e);
  other = *m;
  other.columns["blk.6.attn_q.weight"] = std::vector<float>(256, 1.0f);
  e = llvm::toString(checkImatrix(other, *model, "x.dat"));
  check(e.find("blk.6.attn_q.weight") != std::string::npos &&
            e.find("another model") != std::string::npos,
        "a tensor the model lacks is an error naming it: " + e);
}

/// Kiln's second moments: q and k share an input of 2 columns, down has 3.
Bytes moments(float offDiagonal = 1.0f, float diagonal = 4.0f) {
  Bytes d;
  d.raw("KILNMOM1");
  d.u32(2);
  const std::string qk = "blk.0.attn_q.weight+blk.0.attn_k.weight";
  d.u32(uint32_t(qk.size()));
  d.raw(qk);
  d.u32(2);
  d.u64(10);
  for (float v : {diagonal, offDiagonal, 9.0f})
    d.f32(v);
  const std::string name = "blk.0.ffn_down.weight";
  d.u32(uint32_t(name.size()));
  d.raw(name);
  d.u32(3);
  d.u64(10);
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f})
    d.f32(v);
  return d;
}

void testMoments() {
  std::string path = temp("moments");
  writeBytes(path, moments().b);
  llvm::Expected<Imatrix> m = readImatrix(path);
  check(bool(m), "a moments file reads: " + (m ? "" : llvm::toString(m.takeError())));
  if (!m)
    return;
  const std::vector<float> *q = m->findMoments("blk.0.attn_q.weight");
  const std::vector<float> *k = m->findMoments("blk.0.attn_k.weight");
  const std::vector<float> *down = m->findMoments("blk.0.ffn_down.weight");
  check(q && *q == std::vector<float>{4, 1, 1, 9} && q == k,
        "moments: q and k share their input's square matrix");
  check(down && *down == std::vector<float>{1, 2, 3, 2, 4, 5, 3, 5, 6},
        "moments: the upper triangle mirrored");
  const std::vector<float> *qi = m->find("blk.0.attn_k.weight");
  const std::vector<float> *di = m->find("blk.0.ffn_down.weight");
  check(qi && *qi == std::vector<float>{4, 9} && di && *di == std::vector<float>{1, 4, 6},
        "moments: the diagonal is the importance");

  std::vector<uint8_t> whole = moments().b;
  size_t bad = 0, named = 0;
  for (size_t n = 0; n < whole.size(); ++n) {
    writeBytes(path, std::vector<uint8_t>(whole.begin(), whole.begin() + n));
    std::string e = errorOf(readImatrix(path));
    bad += !e.empty();
    named += e.find(path) != std::string::npos;
  }
  whole.push_back(0);
  writeBytes(path, whole);
  std::string extra = errorOf(readImatrix(path));
  check(bad == whole.size() - 1 && named == bad && extra.find("after the last") != std::string::npos,
        "moments: every truncation and a byte too many are errors naming the file (" +
            std::to_string(bad) + " of " + std::to_string(whole.size() - 2) + "): " + extra);
  struct Bad {
    Bytes bytes;
    const char *says;
  } cases[] = {{moments(NAN), "holds nan"}, {moments(1.0f, -4.0f), "is -4"}};
  for (Bad &c : cases) {
    writeBytes(path, c.bytes.b);
    std::string e = errorOf(readImatrix(path));
    check(e.find(path) != std::string::npos && e.find(c.says) != std::string::npos,
          std::string("moments with a bad value: ") + e);
  }
  // A tensor named twice.
  Bytes twice;
  twice.raw("KILNMOM1");
  twice.u32(2);
  for (int i = 0; i < 2; ++i) {
    twice.u32(3);
    twice.raw("a.w");
    twice.u32(1);
    twice.u64(1);
    twice.f32(1.0f);
  }
  writeBytes(path, twice.b);
  std::string e = errorOf(readImatrix(path));
  check(e.find("'a.w' appears twice") != std::string::npos, "moments: a name twice: " + e);
  llvm::sys::fs::remove(path);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s A.imatrix.dat model.gguf\n", argv[0]);
    return 2;
  }
  testLegacy();
  testGguf();
  testWriteRead();
  testMoments();
  testLlamaCppFile(argv[1], argv[2]);
  return kiln::test::finish();
}
