// The `--recompute` forms: parsing and printing (see recompute_spec.h).
#include "common/plan/recompute_spec.h"

#include <charconv>
#include <optional>
#include <string>

#include "common/platform/byte_size.h"
#include "common/platform/errors.h"

namespace vramlab::plan {

namespace {

constexpr std::string_view kForms =
    "none, full, every:K (K ≥ 1), sqrt, selective or budget:BYTES (e.g. budget:20GiB)";

UsageError bad_spec(std::string_view text, const std::string& why) {
  return UsageError("invalid recompute schedule '" + std::string(text) + "'" +
                    (why.empty() ? "" : ": " + why) + " (expected " + std::string(kForms) + ")");
}

// A whole-string non-negative integer, or nothing.
std::optional<int64_t> parse_integer(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

RecomputeSpec parse_recompute_spec(std::string_view text) {
  using Kind = RecomputeSpec::Kind;
  if (text == "none") return {Kind::none, 0, 0};
  if (text == "full") return {Kind::full, 0, 0};
  if (text == "sqrt") return {Kind::sqrt, 0, 0};
  if (text == "selective") return {Kind::selective, 0, 0};
  if (text.starts_with("every:")) {
    const std::string_view k = text.substr(6);
    const std::optional<int64_t> value = parse_integer(k);
    if (!value || *value < 1) {
      throw bad_spec(text, "K '" + std::string(k) + "' is not an integer ≥ 1");
    }
    return {Kind::every, *value, 0};
  }
  if (text.starts_with("budget:")) {
    const std::string_view bytes = text.substr(7);
    if (const std::optional<int64_t> value = parse_integer(bytes)) {
      if (*value < 1) throw bad_spec(text, "the budget must be at least 1 byte");
      return {Kind::budget, 0, *value};
    }
    try {
      // parse_size_bytes() refuses sizes beyond 9.2e18, so the value fits in int64.
      return {Kind::budget, 0, static_cast<int64_t>(platform::parse_size_bytes(bytes))};
    } catch (const UsageError&) {
      throw bad_spec(text, "'" + std::string(bytes) +
                               "' is not a size in bytes (an integer, or a number with a unit: "
                               "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
    }
  }
  throw bad_spec(text, "");
}

std::string to_string(const RecomputeSpec& spec) {
  using Kind = RecomputeSpec::Kind;
  switch (spec.kind) {
    case Kind::none:
      return "none";
    case Kind::full:
      return "full";
    case Kind::every:
      return "every:" + std::to_string(spec.every);
    case Kind::sqrt:
      return "sqrt";
    case Kind::selective:
      return "selective";
    case Kind::budget:
      break;
  }
  static constexpr struct {
    const char* suffix;
    int64_t bytes;
  } kUnits[] = {{"TiB", int64_t{1} << 40},
                {"GiB", int64_t{1} << 30},
                {"MiB", int64_t{1} << 20},
                {"KiB", int64_t{1} << 10}};
  for (const auto& unit : kUnits) {
    if (spec.budget_bytes > 0 && spec.budget_bytes % unit.bytes == 0) {
      return "budget:" + std::to_string(spec.budget_bytes / unit.bytes) + unit.suffix;
    }
  }
  return "budget:" + std::to_string(spec.budget_bytes);
}

}  // namespace vramlab::plan
