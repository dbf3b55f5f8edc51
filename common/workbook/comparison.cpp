// The failure summary of exercise tests (see comparison.h).
#include "common/workbook/comparison.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/platform/errors.h"
#include "common/report/terminal.h"

namespace vramlab::workbook {

namespace {

using nlohmann::json;
constexpr double kInf = std::numeric_limits<double>::infinity();

// JSON has no inf/nan: they travel as strings.
json encode(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

double decode(const json& value) {
  if (value.is_number()) return value.get<double>();
  if (value == "inf") return kInf;
  if (value == "-inf") return -kInf;
  return std::numeric_limits<double>::quiet_NaN();
}

std::string format_value(double value, Unit unit) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  if (unit == Unit::kBytes && value >= 0 && value < 9.2e18) {
    const auto bytes = static_cast<uint64_t>(std::llround(value));
    std::snprintf(buffer, sizeof buffer, " (%llu B)", static_cast<unsigned long long>(bytes));
    return report::format_bytes(bytes) + (bytes >= 1024 ? buffer : "");
  }
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

std::string format_diff(double diff, Unit unit) {
  if (unit == Unit::kBytes && std::isfinite(diff) && diff >= 0 && diff < 9.2e18) {
    const auto bytes = static_cast<uint64_t>(std::llround(diff));
    return report::format_bytes(bytes) +
           (bytes >= 1024 ? " (" + std::to_string(bytes) + " B)" : "");
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3g", diff);
  return buffer;
}

std::string format_percent(double percent, double allowed) {
  if (allowed == 0.0) return "exact match required";
  if (std::isinf(percent)) return "inf% of tolerance";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.1f%% of tolerance", percent);
  return buffer;
}

}  // namespace

Comparison::Comparison(std::string quantity, Unit unit, double absolute_tolerance,
                       double relative_tolerance)
    : quantity_(std::move(quantity)),
      unit_(unit),
      absolute_tolerance_(absolute_tolerance),
      relative_tolerance_(relative_tolerance) {
  if (!(absolute_tolerance >= 0.0) || !(relative_tolerance >= 0.0))
    throw UsageError("tolerances must be >= 0, got absolute " + std::to_string(absolute_tolerance) +
                     " and relative " + std::to_string(relative_tolerance));
}

void Comparison::add(std::string where, double expected, double actual) {
  ++count_;
  const double allowed = absolute_tolerance_ + relative_tolerance_ * std::fabs(expected);
  double diff = 0.0;
  bool ok = true;
  if (std::isnan(expected) || std::isnan(actual)) {
    ok = std::isnan(expected) && std::isnan(actual);
    diff = ok ? 0.0 : kInf;
  } else if (std::isinf(expected) || std::isinf(actual)) {
    ok = expected == actual;
    diff = ok ? 0.0 : kInf;
  } else {
    diff = std::fabs(actual - expected);
    ok = diff <= allowed;
  }
  const double percent = diff == 0.0 ? 0.0 : (allowed > 0.0 ? 100.0 * diff / allowed : kInf);
  if (!ok) ++mismatches_;
  if (count_ == 1 || diff > max_abs_diff_) {
    max_abs_diff_ = diff;
    worst_where_ = std::move(where);
    worst_expected_ = expected;
    worst_actual_ = actual;
    worst_allowed_ = allowed;
  }
  if (percent > max_percent_of_tolerance_) max_percent_of_tolerance_ = percent;
}

std::string Comparison::failure_message() const {
  FailureSummary summary;
  summary.quantity = quantity_;
  summary.unit = unit_;
  summary.count = count_;
  summary.mismatches = mismatches_;
  summary.max_abs_diff = max_abs_diff_;
  summary.where = worst_where_;
  summary.expected = worst_expected_;
  summary.actual = worst_actual_;
  summary.allowed_abs_diff = worst_allowed_;
  summary.percent_of_tolerance = max_percent_of_tolerance_;
  const json line = {{"quantity", quantity_},
                     {"unit", unit_ == Unit::kBytes ? "bytes" : "number"},
                     {"count", count_},
                     {"mismatches", mismatches_},
                     {"max_abs_diff", encode(max_abs_diff_)},
                     {"where", worst_where_},
                     {"expected", encode(worst_expected_)},
                     {"actual", encode(worst_actual_)},
                     {"allowed_abs_diff", encode(worst_allowed_)},
                     {"percent_of_tolerance", encode(max_percent_of_tolerance_)}};
  std::string message = quantity_ + ": ";
  if (count_ == 0) message += "no cases were compared; ";
  message += describe(summary) + "\n";
  message +=
      std::string(kSummaryPrefix) + line.dump(-1, ' ', false, json::error_handler_t::replace);
  return message;
}

std::optional<FailureSummary> parse_failure_summary(std::string_view failure_message) {
  const size_t at = failure_message.find(kSummaryPrefix);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = failure_message.substr(at + kSummaryPrefix.size());
  rest = rest.substr(0, rest.find('\n'));
  const json line = json::parse(rest, nullptr, /*allow_exceptions=*/false);
  if (line.is_discarded() || !line.is_object()) return std::nullopt;
  try {
    FailureSummary summary;
    summary.quantity = line.at("quantity").get<std::string>();
    summary.unit = line.at("unit") == "bytes" ? Unit::kBytes : Unit::kNumber;
    summary.count = line.at("count").get<size_t>();
    summary.mismatches = line.at("mismatches").get<size_t>();
    summary.max_abs_diff = decode(line.at("max_abs_diff"));
    summary.where = line.at("where").get<std::string>();
    summary.expected = decode(line.at("expected"));
    summary.actual = decode(line.at("actual"));
    summary.allowed_abs_diff = decode(line.at("allowed_abs_diff"));
    summary.percent_of_tolerance = decode(line.at("percent_of_tolerance"));
    return summary;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::string describe(const FailureSummary& summary) {
  std::string text = "max |diff| " + format_diff(summary.max_abs_diff, summary.unit);
  text += " at '" + summary.where + "': expected " + format_value(summary.expected, summary.unit) +
          ", got " + format_value(summary.actual, summary.unit);
  text += " (" + format_percent(summary.percent_of_tolerance, summary.allowed_abs_diff);
  text += "; " + std::to_string(summary.mismatches) + " of " + std::to_string(summary.count) +
          " cases wrong)";
  return text;
}

}  // namespace vramlab::workbook
