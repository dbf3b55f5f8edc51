/// \file
/// \brief Terminal facts (is stdout a terminal, may we colour), ANSI style helpers and the
/// number formatting every vramlab table uses (binary byte prefixes, decimal GB, counts).
///
/// Colour follows the workbook's rule: only on a terminal, never when NO_COLOR is set to a
/// non-empty value, never when TERM=dumb. Tests force it with VRAMLAB_COLOR=always|never.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace vramlab::report {

/// \return true when the process's standard output is an interactive terminal.
bool stdout_is_terminal();

/// Decides whether text written to \p stream may carry ANSI colour codes.
///
/// VRAMLAB_COLOR=always forces colour on and VRAMLAB_COLOR=never forces it off (for tests);
/// otherwise colour is used only if \p stream is a terminal, NO_COLOR is unset or empty, and
/// TERM is not "dumb".
/// \param stream the stream about to be written (stdout, stderr, a file).
/// \return true when colour codes should be emitted.
/// \throws vramlab::UsageError if VRAMLAB_COLOR is set to anything but "", "always", "never" or
/// "auto".
bool use_colour(FILE* stream);

/// ANSI text styles. Each helper wraps \p text in an escape sequence and a reset when
/// \p enabled, and returns \p text unchanged otherwise.
namespace style {
/// \param text the text to style. \param enabled whether to emit escape codes. \return styled text.
std::string bold(std::string_view text, bool enabled);
/// \param text the text to style. \param enabled whether to emit escape codes. \return styled text.
std::string dim(std::string_view text, bool enabled);
/// \param text the text to style. \param enabled whether to emit escape codes. \return styled text.
std::string green(std::string_view text, bool enabled);
/// \param text the text to style. \param enabled whether to emit escape codes. \return styled text.
std::string red(std::string_view text, bool enabled);
/// \param text the text to style. \param enabled whether to emit escape codes. \return styled text.
std::string yellow(std::string_view text, bool enabled);
/// \param text the text to style. \param enabled whether to emit escape codes. \return styled text.
std::string cyan(std::string_view text, bool enabled);
}  // namespace style

/// Formats a byte count with binary prefixes, as PyTorch's memory_summary does:
/// "0 B", "512 B", "1.50 KiB", "2.00 MiB", "3.25 GiB", "1.00 TiB", up to EiB.
/// Values below 1 KiB are printed exactly; larger ones with two decimals.
/// \param bytes the byte count.
/// \return the formatted string.
std::string format_bytes(uint64_t bytes);

/// Formats a byte count with decimal (SI) prefixes and three significant digits, for papers and
/// vendors that quote GB: "512 B", "1.50 kB", "31.4 GB", "140 GB", "1.20 TB".
/// \param bytes the byte count.
/// \return the formatted string.
std::string format_bytes_decimal(uint64_t bytes);

/// Formats a count with thousands separators: 1234567 -> "1,234,567", -42 -> "-42".
/// \param count the number to format.
/// \return the formatted string.
std::string format_count(int64_t count);

/// Formats a count with a short decimal suffix and three significant digits, as parameter counts
/// are quoted: 124000000 -> "124M", 6738415616 -> "6.74B", 999 -> "999".
/// \param count the number to format (non-negative).
/// \return the formatted string.
std::string format_count_short(uint64_t count);

/// Formats a duration given in milliseconds for humans: "850 us", "12.3 ms", "4.56 s", "3m 05s",
/// "1h 02m".
/// \param duration_ms the duration in milliseconds (negative or NaN prints "--").
/// \return the formatted string.
std::string format_duration_ms(double duration_ms);

}  // namespace vramlab::report
