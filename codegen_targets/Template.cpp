#include "codegen_targets/Template.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <set>

using namespace kiln;

namespace {

struct EmbeddedFile {
  const char *path;
  const char *text;
};
#include "codegen_targets/Templates.inc"

bool isKeyChar(char c) { return llvm::isAlnum(c) || c == '_'; }

} // namespace

std::string kiln::fillTemplate(llvm::StringRef name, const TemplateValues &values) {
  llvm::StringRef text;
  for (const EmbeddedFile &f : kTemplates)
    if (llvm::StringRef(f.path).ends_with(("/" + name).str()))
      text = f.text;
  if (text.empty())
    llvm::report_fatal_error(llvm::Twine("no template ") + name);
  std::string out;
  std::set<std::string> used;
  while (!text.empty()) {
    size_t at = text.find('@');
    out += text.take_front(at).str();
    if (at == llvm::StringRef::npos)
      break;
    text = text.drop_front(at + 1);
    size_t end = text.find('@');
    llvm::StringRef key = text.take_front(end);
    if (end == llvm::StringRef::npos || key.empty() || !llvm::all_of(key, isKeyChar)) {
      out += '@';
      continue;
    }
    auto it = values.find(key.str());
    if (it == values.end())
      llvm::report_fatal_error(llvm::Twine("template ") + name + ": no value for @" + key + "@");
    out += it->second;
    used.insert(it->first);
    text = text.drop_front(end + 1);
  }
  for (const auto &[key, value] : values)
    if (!used.count(key))
      llvm::report_fatal_error(llvm::Twine("template ") + name + ": no @" + key + "@");
  return out;
}
