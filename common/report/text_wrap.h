/// \file
/// \brief Notes under a table: prose broken at spaces into indented lines of a fixed width.
#pragma once

#include <string>

namespace vramlab::report {

/// \p text as lines of at most 88 columns, each indented by two spaces, broken at spaces (a word
/// longer than a line stands alone). \param text one paragraph. \return the lines, each ending
/// in a newline ("" for an empty text).
std::string wrap_note(const std::string& text);

}  // namespace vramlab::report
