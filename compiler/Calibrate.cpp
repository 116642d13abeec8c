#include "compiler/Calibrate.h"

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
    return fail(llvm::formatv("calibration: {0} needs '{1}' on PATH", what, args[0]));
  std::vector<StringRef> argv(args.begin(), args.end());
  std::optional<StringRef> redirects[] = {StringRef(""), StringRef(log), StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*program, argv, std::nullopt, redirects, 0, 0, &message);
  if (rc != 0)
    return fail(llvm::formatv("calibration: {0} failed ({1}): {2}", what,
                              rc < 0 ? message : "exit " + std::to_string(rc), lastLine(log)));
  return llvm::Error::success();
}

} // namespace

llvm::Error kiln::collectImatrix(StringRef dir, StringRef pack, const Calibration &calibration,
                                 StringRef out) {
  llvm::SmallString<256> build(dir);
  llvm::sys::path::append(build, "build-taps");
  if (llvm::Error e = run("configuring the float build",
                          {"cmake", "-S", dir.str(), "-B", build.str().str(), "-DKILN_TAPS=ON",
                           "-DCMAKE_BUILD_TYPE=Release"},
                          dir, "configure.log"))
    return e;
  unsigned jobs = std::max(1u, llvm::hardware_concurrency().compute_thread_count());
  if (llvm::Error e = run("building the float build",
                          {"cmake", "--build", build.str().str(), "-j", std::to_string(jobs)}, dir,
                          "build.log"))
    return e;
  llvm::SmallString<256> generate(build);
  llvm::sys::path::append(generate, "kiln-generate");
  std::vector<std::string> args = {generate.str().str(), "--pack", pack.str(), "--perplexity",
                                   calibration.text, "--imatrix-out", out.str()};
  if (calibration.ctx > 0)
    args.insert(args.end(), {"--ctx", std::to_string(calibration.ctx)});
  if (calibration.chunks > 0)
    args.insert(args.end(), {"--chunks", std::to_string(calibration.chunks)});
  return run("running the float model over " + calibration.text, args, dir, "run.log");
}
