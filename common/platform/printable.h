/// \file
/// \brief Text from a file or a command line as it may be shown on a terminal.
#pragma once

#include <string>
#include <string_view>

namespace vramlab::platform {

/// \return whether \p c is a control character: a byte below 0x20, or 0x7f.
[[nodiscard]] bool is_control_character(char c);

/// Text from a trace, a file or a command line as it may be shown on a terminal: every control
/// character (is_control_character) becomes `\xNN`, so a NUL cannot cut a message short and an
/// escape sequence cannot drive the terminal; every other byte (UTF-8 included) is kept.
/// \param text the text as given. \return the text with its control characters escaped.
[[nodiscard]] std::string printable(std::string_view text);

}  // namespace vramlab::platform
