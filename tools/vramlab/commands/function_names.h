// A C++ function's demangled name without its parameter list, for one-line summaries: the frames
// of a recorded stack are full signatures ("vramlab::nn::Mlp::backward(vramlab::nn::Runtime&,
// ...) const"), too long for a table column; the JSON keeps them whole.
#pragma once

#include <string>
#include <string_view>

namespace vramlab::cli {

/// \return \p function up to its parameter list, with "(…)" in its place ("()" when it has no
/// parameters): the first '(' outside
/// template arguments that does not open "(anonymous namespace)" or follow "operator"; unchanged
/// when there is none.
inline std::string without_parameters(std::string_view function) {
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  int angle_depth = 0;
  for (size_t i = 0; i < function.size(); ++i) {
    const char c = function[i];
    if (c == '<') ++angle_depth;
    if (c == '>' && angle_depth > 0) --angle_depth;
    if (c != '(' || angle_depth > 0) continue;
    if (function.substr(i, kAnonymous.size()) == kAnonymous) {
      i += kAnonymous.size() - 1;
      continue;
    }
    if (function.substr(0, i).ends_with("operator")) {
      i += function.substr(i, 2) == "()" ? 1 : 0;
      continue;
    }
    const bool no_parameters = function.substr(i, 2) == "()";
    return std::string(function.substr(0, i)) + (no_parameters ? "()" : "(…)");
  }
  return std::string(function);
}

}  // namespace vramlab::cli
