//===- MeasureCode.cpp - machine code and stack as gcc builds -------------===//
//
// measureCode: compiles the generated folder's model and runtime with gcc for
// the target, then reads the objects' text sections and GCC's call graphs.
//
//===----------------------------------------------------------------------===//

#include "compiler/report/Report.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"

#include <functional>

using namespace kiln;

namespace {

/// Machine-code bytes of an object file: its executable sections.
int64_t textBytes(llvm::StringRef object) {
  auto file = llvm::object::ObjectFile::createObjectFile(object);
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  int64_t bytes = 0;
  for (const llvm::object::SectionRef &section : file->getBinary()->sections())
    if (section.isText())
      bytes += int64_t(section.getSize());
  return bytes;
}

/// The deepest stack over the call graphs of GCC's .ci files: each function's
/// frame plus its deepest callee's, -1 where a cycle or an unbounded frame is
/// reached. Calls through function pointers are not in the graph.
void stackBound(const std::vector<std::string> &graphs, CodeMeasure &m) {
  llvm::StringMap<int64_t> frame; // -1: unbounded
  llvm::StringMap<std::vector<std::string>> callees;
  llvm::Regex node("node: \\{ title: \"([^\"]+)\" label: \"[^\"]*\\\\n([0-9]+) bytes \\(([a-z,]+)\\)");
  llvm::Regex edge("edge: \\{ sourcename: \"([^\"]+)\" targetname: \"([^\"]+)\"");
  for (const std::string &g : graphs)
    for (llvm::StringRef line : llvm::split(g, '\n')) {
      llvm::SmallVector<llvm::StringRef, 4> f;
      if (node.match(line, &f))
        frame[f[1]] = f[3] == "dynamic" ? -1 : std::stoll(f[2].str());
      else if (edge.match(line, &f))
        callees[f[1]].push_back(f[2].str());
    }
  llvm::StringMap<int64_t> depth;
  llvm::StringSet<> open;
  std::function<int64_t(llvm::StringRef)> deepest = [&](llvm::StringRef fn) -> int64_t {
    auto known = depth.find(fn);
    if (known != depth.end())
      return known->second;
    if (!open.insert(fn).second)
      return -1; // recursion
    auto own = frame.find(fn);
    int64_t below = 0, self = own == frame.end() ? 0 : own->second;
    for (const std::string &callee : callees.lookup(fn)) {
      int64_t d = deepest(callee);
      below = d < 0 || below < 0 ? -1 : std::max(below, d);
    }
    open.erase(fn);
    return depth[fn] = self < 0 || below < 0 ? -1 : self + below;
  };
  m.stackBytes = 0;
  for (const auto &f : frame) {
    int64_t d = deepest(f.getKey());
    if (d < 0) {
      m.stackBytes = -1;
      m.stackEntry = f.getKey().str();
      return;
    }
    if (d > m.stackBytes)
      m.stackBytes = d, m.stackEntry = f.getKey().str();
  }
  // A static function's node is named after its file's path: keep the file.
  m.stackEntry = llvm::sys::path::filename(m.stackEntry).str();
}

} // namespace

CodeMeasure kiln::measureCode(llvm::StringRef dir, llvm::StringRef name,
                              llvm::StringRef options, bool sessions) {
  CodeMeasure m;
  auto cc = llvm::sys::findProgramByName("gcc");
  if (!cc) {
    m.note = "no gcc on the PATH";
    return m;
  }
  llvm::SmallString<128> work;
  if (llvm::sys::fs::createUniqueDirectory("kiln-report", work)) {
    m.note = "no scratch directory";
    return m;
  }
  auto path = [&](llvm::StringRef a, llvm::StringRef b, llvm::StringRef c = "") {
    llvm::SmallString<256> p(a);
    llvm::sys::path::append(p, b);
    if (!c.empty())
      llvm::sys::path::append(p, c);
    return std::string(p);
  };
  std::vector<std::pair<std::string, bool>> sources = {
      {name.str() + ".c", true},          {name.str() + "_kernels.c", true},
      {"runtime/src/status.c", false},    {"runtime/src/pack.c", false},
      {"runtime/src/tokenizer.c", false}, {"runtime/src/pretokenize.c", false},
      {"runtime/src/chat.c", false},      {"runtime/src/sampler.c", false}};
  if (sessions) // the page pool's bookkeeping
    sources.push_back({"runtime/src/kv_pages.c", false});
  llvm::SmallVector<llvm::StringRef> flags;
  llvm::SplitString(options, flags);
  std::vector<std::string> graphs;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string object = path(work, "o" + std::to_string(i) + ".o");
    std::vector<std::string> args = {*cc, "-O2", "-std=c99", "-ffp-contract=off",
                                     "-fstack-usage", "-fcallgraph-info=su", "-c",
                                     "-I", dir.str(), "-I", path(dir, "runtime", "include")};
    for (llvm::StringRef f : flags)
      args.push_back(f.str());
    args.insert(args.end(), {path(dir, sources[i].first), "-o", object});
    std::vector<llvm::StringRef> argv(args.begin(), args.end());
    const std::string log = path(work, "log");
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                  llvm::StringRef(log)};
    std::string error;
    if (llvm::sys::ExecuteAndWait(*cc, argv, std::nullopt, redirects, 0, 0, &error) != 0) {
      auto text = llvm::MemoryBuffer::getFile(log);
      m.note = "gcc cannot build " + sources[i].first + " for the target: " +
               (text ? (*text)->getBuffer().take_until([](char c) { return c == '\n'; }).str()
                     : error);
      llvm::sys::fs::remove_directories(work);
      return m;
    }
    (sources[i].second ? m.modelText : m.runtimeText) += textBytes(object);
    if (auto ci = llvm::MemoryBuffer::getFile(path(work, "o" + std::to_string(i) + ".ci")))
      graphs.push_back((*ci)->getBuffer().str());
  }
  llvm::sys::fs::remove_directories(work);
  stackBound(graphs, m);
  m.compiler = "gcc -O2 " + options.str();
  return m;
}
