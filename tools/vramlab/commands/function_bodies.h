// The function definitions of a C++ source file, for `vramlab solution --diff`: a learner edits the
// bodies of the stub's functions, so the diff against the reference compares those bodies one by
// one instead of two whole files that differ everywhere (comments, includes, helpers).
#pragma once

#include <string>
#include <vector>

namespace vramlab::cli {

/// One function defined at namespace scope.
struct FunctionDefinition {
  std::string name;       ///< the identifier before the parameter list, e.g. "find_peak"
  std::string signature;  ///< the declaration before the body, comments dropped, one line
  std::string body;       ///< the text between the braces, as written
};

/// The functions defined at namespace scope of \p source (in namespaces, not in classes), in order.
/// Comments, string and character literals are skipped, so a brace in them does not count. A
/// brace initializer (`x = {...}`, `T x{...}`) is not a function.
/// \param source the file's text. \return the definitions.
std::vector<FunctionDefinition> function_definitions(const std::string& source);

}  // namespace vramlab::cli
