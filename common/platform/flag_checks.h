/// \file
/// \brief CLI11 validators with vramlab's messages: a number outside its range is refused as
/// "--batch: must be >= 1, got 0", and a choice through the parser that defines its spellings
/// ("--precision: unknown precision 'fp16' (expected one of: ...)"), so a flag, a plan file and a
/// library call refuse a value with the same words.
///
/// Text that is not a number at all is left to CLI11's conversion (and, in the lesson binaries
/// and `vramlab`, to workbook::reject_out_of_range_integers, which names an empty value and a
/// number beyond 64 bits): these checks speak only about a number they could read. Header-only;
/// a target that includes it links CLI11.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "common/platform/errors.h"
#include "common/platform/number_text.h"

namespace vramlab::platform {

/// An integer in [\p lo, \p hi]: "must be >= LO, got X" (no upper bound) or "must be in [LO, HI],
/// got X".
inline CLI::Validator integer_in(int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max()) {
  const bool open = hi == std::numeric_limits<int64_t>::max();
  const std::string bounds = open ? ">= " + std::to_string(lo)
                                  : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, bounds](std::string& text) -> std::string {
        int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        const bool read = error == std::errc() && end == text.data() + text.size();
        if (!read || (value >= lo && value <= hi)) return "";
        return "must be " + bounds + ", got " + text;
      },
      // No description: the help shows the flag's text and default, which say the range.
      "");
}

/// A value \p parse accepts; its UsageError is the message. \p choices is shown in `--help`.
template <typename T>
CLI::Validator parsed_by(T (*parse)(std::string_view), const std::string& choices) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          (void)parse(text);
          return "";
        } catch (const UsageError& error) {
          return error.what();
        }
      },
      choices);
}

/// A bandwidth flag's value (GB/s, decimal) in bytes per second: "--link-gbps: must be a bandwidth
/// in GB/s in (0, 1e6], got X". Above 1 PB/s no link or memory exists; the bound also keeps
/// bytes / bandwidth away from denormals.
inline double bandwidth_flag(const char* flag, double gbps) {
  if (!std::isfinite(gbps) || gbps <= 0.0 || gbps > 1e6)
    throw UsageError(std::string(flag) + ": must be a bandwidth in GB/s in (0, 1e6], got " +
                     number_text(gbps));
  return gbps * 1e9;
}

}  // namespace vramlab::platform
