/// \file
/// \brief An integer typed as text (a list item, a positional argument), read whole and checked
/// against its range, refused in one message that names it. Header-only. Flags that CLI11 parses
/// take flag_checks.h's integer_in instead.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include "common/platform/errors.h"

namespace vramlab::platform {

/// \param name what the text is ("--tp", "PARAMS"). \param text the text.
/// \param lo the range's lower end, included. \param hi its upper end, included.
/// \return the integer. \throws vramlab::UsageError "NAME 'TEXT' must be an integer in [LO, HI]"
/// for text that is not all one integer (sign, digits), beyond 64 bits, or outside the range.
inline int64_t parse_integer_in(std::string_view name, std::string_view text, int64_t lo,
                                int64_t hi) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < lo ||
      value > hi)
    throw UsageError(std::string(name) + " '" + std::string(text) + "' must be an integer in [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return value;
}

}  // namespace vramlab::platform
