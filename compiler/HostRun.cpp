#include "compiler/HostRun.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Threading.h"

#include <optional>
#include <vector>

using namespace kiln;
using llvm::StringRef;

namespace {

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The last non-empty line of a log file, for an error message.
std::string lastLine(StringRef log) {
  auto buffer = llvm::MemoryBuffer::getFile(log);
  if (!buffer)
    return "";
  StringRef text = (*buffer)->getBuffer().rtrim();
  return text.substr(text.rfind('\n') + 1).str();
}

/// Runs `args` (the first a program on PATH or a path) with its output in
/// `dir`/`logName`; an error names `what` and the output's last line.
llvm::Error run(StringRef what, std::vector<std::string> args, StringRef dir, StringRef logName) {
  llvm::SmallString<256> log(dir);
  llvm::sys::path::append(log, logName);
  llvm::ErrorOr<std::string> program = llvm::sys::path::is_absolute(args[0])
                                           ? llvm::ErrorOr<std::string>(args[0])
                                           : llvm::sys::findProgramByName(args[0]);
  if (!program)
    return fail(llvm::formatv("{0} needs '{1}' on PATH", what, args[0]));
  std::vector<StringRef> argv(args.begin(), args.end());
  std::optional<StringRef> redirects[] = {StringRef(""), StringRef(log), StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*program, argv, std::nullopt, redirects, 0, 0, &message);
  if (rc != 0)
    return fail(llvm::formatv("{0} failed ({1}): {2}", what,
                              rc < 0 ? message : "exit " + std::to_string(rc), lastLine(log)));
  return llvm::Error::success();
}

} // namespace

llvm::Expected<std::string> kiln::buildWithTaps(StringRef dir, StringRef build) {
  StringRef logDir = llvm::sys::path::parent_path(build);
  if (llvm::Error e = run(("configuring " + build).str(),
                          {"cmake", "-S", dir.str(), "-B", build.str(), "-DKILN_TAPS=ON",
                           "-DCMAKE_BUILD_TYPE=Release"},
                          logDir, "configure.log"))
    return std::move(e);
  unsigned jobs = std::max(1u, llvm::hardware_concurrency().compute_thread_count());
  if (llvm::Error e = run(("building " + build).str(),
                          {"cmake", "--build", build.str(), "-j", std::to_string(jobs)}, logDir,
                          "build.log"))
    return std::move(e);
  llvm::SmallString<256> generate(build);
  llvm::sys::path::append(generate, "kiln-generate");
  return generate.str().str();
}

llvm::Error kiln::runWithTaps(StringRef generate, StringRef pack, const Calibration &text,
                              const std::vector<std::string> &extra, StringRef logDir) {
  std::vector<std::string> args = {generate.str(), "--pack", pack.str(),
                                   text.ids ? "--perplexity-ids" : "--perplexity", text.text};
  if (text.ctx > 0)
    args.insert(args.end(), {"--ctx", std::to_string(text.ctx)});
  if (text.chunks > 0)
    args.insert(args.end(), {"--chunks", std::to_string(text.chunks)});
  args.insert(args.end(), extra.begin(), extra.end());
  return run(("running the model over " + text.text), args, logDir, "run.log");
}
