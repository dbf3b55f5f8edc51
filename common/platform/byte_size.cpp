// Sizes with a unit (see byte_size.h).
#include "common/platform/byte_size.h"

#include <charconv>
#include <cmath>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::platform {

std::uint64_t parse_size_bytes(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    double bytes;
  };
  static constexpr Unit kUnits[] = {
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
      {"B", 1.0},
  };
  for (const Unit& unit : kUnits) {
    if (text.size() <= unit.suffix.size() || !text.ends_with(unit.suffix)) continue;
    std::string_view number = text.substr(0, text.size() - unit.suffix.size());
    double value = 0.0;
    auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value,
                                        std::chars_format::fixed);
    if (error != std::errc() || end != number.data() + number.size() || !std::isfinite(value) ||
        value <= 0.0 || value * unit.bytes > 9.2e18) {
      break;
    }
    const double bytes = std::floor(value * unit.bytes);
    if (bytes < 1.0) break;
    return static_cast<std::uint64_t>(bytes);
  }
  throw UsageError(
      "invalid size '" + std::string(text) +
      "' (expected a positive number and a unit: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
}

}  // namespace vramlab::platform
