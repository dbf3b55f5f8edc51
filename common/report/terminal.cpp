// Terminal detection, ANSI styles and number formatting for every vramlab report.
#include "common/report/terminal.h"

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::report {
namespace {

std::string getenv_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string wrap(std::string_view text, const char* code, bool enabled) {
  if (!enabled) return std::string(text);
  std::string out;
  out.reserve(text.size() + 12);
  out += "\x1b[";
  out += code;
  out += 'm';
  out += text;
  out += "\x1b[0m";
  return out;
}

std::string printf_string(const char* format, double value, const char* unit) {
  std::array<char, 64> buffer{};
  std::snprintf(buffer.data(), buffer.size(), format, value, unit);
  return std::string(buffer.data());
}

// Prints value (already divided by base^unit_index) with `decimals` digits, moving to the next unit
// when rounding would print a full base (so 1023.999 KiB becomes "1.00 MiB", never "1024.00 KiB").
struct ScaledValue {
  double value;
  size_t unit_index;
};

ScaledValue scale(uint64_t bytes, double base, size_t unit_count, double round_limit) {
  double value = static_cast<double>(bytes);
  size_t unit_index = 0;
  while (unit_index + 1 < unit_count && value >= round_limit) {
    value /= base;
    ++unit_index;
  }
  return {value, unit_index};
}

}  // namespace

bool stdout_is_terminal() {
  return isatty(STDOUT_FILENO) == 1;
}

bool use_colour(FILE* stream) {
  const std::string forced = getenv_or_empty("VRAMLAB_COLOR");
  if (forced == "always") return true;
  if (forced == "never") return false;
  if (!forced.empty() && forced != "auto") {
    throw UsageError("VRAMLAB_COLOR='" + forced + "' is not one of always, never, auto");
  }
  if (stream == nullptr) return false;
  const int descriptor = fileno(stream);
  if (descriptor < 0 || isatty(descriptor) != 1) return false;
  if (!getenv_or_empty("NO_COLOR").empty()) return false;
  if (getenv_or_empty("TERM") == "dumb") return false;
  return true;
}

namespace style {
std::string bold(std::string_view text, bool enabled) {
  return wrap(text, "1", enabled);
}
std::string dim(std::string_view text, bool enabled) {
  return wrap(text, "2", enabled);
}
std::string green(std::string_view text, bool enabled) {
  return wrap(text, "32", enabled);
}
std::string red(std::string_view text, bool enabled) {
  return wrap(text, "31", enabled);
}
std::string yellow(std::string_view text, bool enabled) {
  return wrap(text, "33", enabled);
}
std::string cyan(std::string_view text, bool enabled) {
  return wrap(text, "36", enabled);
}
}  // namespace style

std::string format_bytes(uint64_t bytes) {
  static constexpr std::array<const char*, 7> kUnits = {"B",   "KiB", "MiB", "GiB",
                                                        "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  // 1023.995 and above rounds to "1024.00" at two decimals, so it belongs to the next unit.
  const ScaledValue scaled = scale(bytes, 1024.0, kUnits.size(), 1023.995);
  return printf_string("%.2f %s", scaled.value, kUnits[scaled.unit_index]);
}

std::string format_bytes_decimal(uint64_t bytes) {
  static constexpr std::array<const char*, 7> kUnits = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  if (bytes < 1000) return std::to_string(bytes) + " B";
  // Three significant digits: 999.5 and above prints as "1000", so it belongs to the next unit.
  const ScaledValue scaled = scale(bytes, 1000.0, kUnits.size(), 999.5);
  const char* format =
      scaled.value < 9.995 ? "%.2f %s" : (scaled.value < 99.95 ? "%.1f %s" : "%.0f %s");
  return printf_string(format, scaled.value, kUnits[scaled.unit_index]);
}

std::string format_bytes_or_zero(int64_t bytes) {
  return format_bytes(static_cast<uint64_t>(bytes < 0 ? 0 : bytes));
}

std::string format_fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string format_per_param(double bytes_per_param) {
  return format_fixed(bytes_per_param, bytes_per_param > 0.0 && bytes_per_param < 0.1 ? 4 : 2);
}

std::string format_percent(double fraction, int decimals, bool plus_sign) {
  std::string text = plus_sign && fraction >= 0.0 ? "+" : "";
  text += format_fixed(100.0 * fraction, decimals);
  text += '%';
  return text;
}

std::string format_count(int64_t count) {
  const bool negative = count < 0;
  // Magnitude as unsigned so that INT64_MIN does not overflow.
  const uint64_t magnitude =
      negative ? static_cast<uint64_t>(-(count + 1)) + 1 : static_cast<uint64_t>(count);
  const std::string digits = std::to_string(magnitude);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3 + 1);
  if (negative) out += '-';
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_count_short(uint64_t count) {
  static constexpr std::array<const char*, 7> kSuffixes = {"", "K", "M", "B", "T", "P", "E"};
  if (count < 1000) return std::to_string(count);
  const ScaledValue scaled = scale(count, 1000.0, kSuffixes.size(), 999.5);
  const char* format =
      scaled.value < 9.995 ? "%.2f%s" : (scaled.value < 99.95 ? "%.1f%s" : "%.0f%s");
  return printf_string(format, scaled.value, kSuffixes[scaled.unit_index]);
}

std::string format_duration_ms(double duration_ms) {
  if (!(duration_ms >= 0.0) || std::isinf(duration_ms)) return "--";
  if (duration_ms < 1.0) return printf_string("%.0f %s", duration_ms * 1000.0, "us");
  if (duration_ms < 1000.0) {
    return printf_string(duration_ms < 99.95 ? "%.1f %s" : "%.0f %s", duration_ms, "ms");
  }
  const double seconds = duration_ms / 1000.0;
  if (seconds < 59.995) return printf_string("%.2f %s", seconds, "s");
  std::array<char, 64> buffer{};
  const auto whole_seconds = static_cast<uint64_t>(std::llround(seconds));
  if (whole_seconds < 3600) {
    std::snprintf(buffer.data(), buffer.size(), "%llum %02llus",
                  static_cast<unsigned long long>(whole_seconds / 60),
                  static_cast<unsigned long long>(whole_seconds % 60));
  } else {
    std::snprintf(buffer.data(), buffer.size(), "%lluh %02llum",
                  static_cast<unsigned long long>(whole_seconds / 3600),
                  static_cast<unsigned long long>((whole_seconds % 3600) / 60));
  }
  return std::string(buffer.data());
}

}  // namespace vramlab::report
