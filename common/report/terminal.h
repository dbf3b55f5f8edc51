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

/// isatty(stdout); ignores VRAMLAB_COLOR and NO_COLOR (use_colour() applies them).
bool stdout_is_terminal();

/// Decides whether text written to \p stream may carry ANSI colour codes.
///
/// VRAMLAB_COLOR=always forces colour on and VRAMLAB_COLOR=never forces it off (for tests);
/// otherwise colour is used only if \p stream is a terminal, NO_COLOR is unset or empty, and
/// TERM is not "dumb".
/// \throws vramlab::UsageError if VRAMLAB_COLOR is set to anything but "", "always", "never" or
/// "auto".
bool use_colour(FILE* stream);

/// ANSI text styles. Each helper wraps \p text in an escape sequence and a reset when
/// \p enabled, and returns \p text unchanged otherwise.
namespace style {
/// SGR 1.
std::string bold(std::string_view text, bool enabled);
/// SGR 2 (faint; some terminals ignore it).
std::string dim(std::string_view text, bool enabled);
/// SGR 32.
std::string green(std::string_view text, bool enabled);
/// SGR 31.
std::string red(std::string_view text, bool enabled);
/// SGR 33.
std::string yellow(std::string_view text, bool enabled);
/// SGR 36.
std::string cyan(std::string_view text, bool enabled);
}  // namespace style

/// Formats a byte count with binary prefixes, as PyTorch's memory_summary does:
/// "0 B", "512 B", "1.50 KiB", "2.00 MiB", "3.25 GiB", "1.00 TiB", up to EiB.
/// Values below 1 KiB are printed exactly; larger ones with two decimals.
std::string format_bytes(uint64_t bytes);

/// Formats a byte count with decimal (SI) prefixes and three significant digits, for papers and
/// vendors that quote GB: "512 B", "1.50 kB", "31.4 GB", "140 GB", "1.20 TB".
std::string format_bytes_decimal(uint64_t bytes);

/// format_bytes of a signed count, for byte differences and totals that may be negative or
/// unset: a negative count prints as "0 B".
std::string format_bytes_or_zero(int64_t bytes);

/// Formats \p value with \p decimals digits after the point ("%.*f"): 3.14159, 2 -> "3.14".
std::string format_fixed(double value, int decimals);

/// Formats bytes per parameter: two decimals, four below 0.1 (Adam-mini's v, Adafactor's factors:
/// 0.0021 would read 0.00): 12 -> "12.00", 0.00213 -> "0.0021".
std::string format_per_param(double bytes_per_param);

/// Formats a fraction as a percentage: 0.1234 -> "12.3%" (one decimal by default), and with
/// \p plus_sign a leading '+' for zero and above: "+12.3%", "-4.7%" (a change against a baseline).
std::string format_percent(double fraction, int decimals = 1, bool plus_sign = false);

/// Formats a count with thousands separators: 1234567 -> "1,234,567", -42 -> "-42".
std::string format_count(int64_t count);

/// Formats a count with a short decimal suffix and three significant digits, as parameter counts
/// are quoted: 124000000 -> "124M", 6738415616 -> "6.74B", 999 -> "999".
std::string format_count_short(uint64_t count);

/// Formats a duration given in milliseconds for humans: "850 us", "12.3 ms", "4.56 s", "3m 05s",
/// "1h 02m".
/// Negative or NaN prints "--".
std::string format_duration_ms(double duration_ms);

}  // namespace vramlab::report
