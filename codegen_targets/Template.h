#ifndef KILN_CODEGEN_TARGETS_TEMPLATE_H
#define KILN_CODEGEN_TARGETS_TEMPLATE_H

#include "llvm/ADT/StringRef.h"

#include <map>
#include <string>

namespace kiln {

/// Values of a template's `@KEY@` placeholders.
using TemplateValues = std::map<std::string, std::string>;

/// The text of `codegen_targets/templates/<name>` with every `@KEY@` replaced
/// by its value. A placeholder without a value, or a value no placeholder
/// uses, is a bug in the caller and aborts: the templates ship inside the
/// compiler, so they and their callers change together.
std::string fillTemplate(llvm::StringRef name, const TemplateValues &values);

} // namespace kiln

#endif // KILN_CODEGEN_TARGETS_TEMPLATE_H
