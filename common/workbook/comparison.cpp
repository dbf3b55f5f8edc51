// The failure summary of exercise tests (see comparison.h).
#include "common/workbook/comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
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

// "+8 B", "-4.00 KiB (4096 B)", "-0.5": the sign says whether the code counted too much or too
// little.
std::string format_signed(double diff, Unit unit) {
  std::string text(1, diff < 0 ? '-' : '+');
  text.append(format_diff(std::fabs(diff), unit));
  return text;
}

std::string join(const std::vector<std::string>& names) {
  constexpr size_t kShown = 12;  // a long list would hide the first line of the message
  std::string text;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > kShown) text += ", … " + std::to_string(names.size() - kShown) + " more";
  return text;
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

Comparison& Comparison::per_unit(std::string name) {
  per_unit_ = std::move(name);
  return *this;
}

void Comparison::add(std::string where, double expected, double actual) {
  add(std::move(where), expected, actual, 0.0);
}

void Comparison::add(std::string where, double expected, double actual, double units) {
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
  if (!ok) {
    ++mismatches_;
    if (!have_smallest_ || std::fabs(expected) < std::fabs(smallest_expected_)) {
      have_smallest_ = true;
      smallest_where_ = where;
      smallest_expected_ = expected;
      smallest_actual_ = actual;
      smallest_units_ = units;
    }
  }
  if (count_ == 1 || diff > max_abs_diff_) {
    max_abs_diff_ = diff;
    worst_where_ = std::move(where);
    worst_expected_ = expected;
    worst_actual_ = actual;
    worst_allowed_ = allowed;
    worst_units_ = units;
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
  const auto per = [this](double expected, double actual, double units) {
    return per_unit_.empty() || !(units > 0) || !std::isfinite(actual - expected)
               ? 0.0
               : (actual - expected) / units;
  };
  summary.per_unit = per_unit_;
  summary.diff_per_unit = per(worst_expected_, worst_actual_, worst_units_);
  // The smallest failing case is news only when it is not the worst one.
  if (have_smallest_ && smallest_where_ != worst_where_) {
    summary.smallest_where = smallest_where_;
    summary.smallest_expected = smallest_expected_;
    summary.smallest_actual = smallest_actual_;
    summary.smallest_diff_per_unit = per(smallest_expected_, smallest_actual_, smallest_units_);
  }
  json line = {{"quantity", quantity_},
               {"unit", unit_ == Unit::kBytes ? "bytes" : "number"},
               {"count", count_},
               {"mismatches", mismatches_},
               {"max_abs_diff", encode(max_abs_diff_)},
               {"where", worst_where_},
               {"expected", encode(worst_expected_)},
               {"actual", encode(worst_actual_)},
               {"allowed_abs_diff", encode(worst_allowed_)},
               {"percent_of_tolerance", encode(max_percent_of_tolerance_)}};
  if (!summary.per_unit.empty()) {
    line["per_unit"] = summary.per_unit;
    line["diff_per_unit"] = encode(summary.diff_per_unit);
  }
  if (!summary.smallest_where.empty()) {
    line["smallest_where"] = summary.smallest_where;
    line["smallest_expected"] = encode(summary.smallest_expected);
    line["smallest_actual"] = encode(summary.smallest_actual);
    line["smallest_diff_per_unit"] = encode(summary.smallest_diff_per_unit);
  }
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
    // Optional: summaries of older test binaries lack them.
    summary.per_unit = line.value("per_unit", std::string());
    if (line.contains("diff_per_unit")) summary.diff_per_unit = decode(line.at("diff_per_unit"));
    summary.smallest_where = line.value("smallest_where", std::string());
    if (!summary.smallest_where.empty()) {
      summary.smallest_expected = decode(line.at("smallest_expected"));
      summary.smallest_actual = decode(line.at("smallest_actual"));
      summary.smallest_diff_per_unit = decode(line.at("smallest_diff_per_unit"));
    }
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
  const auto per = [&summary](double diff) {
    return !summary.per_unit.empty() && diff != 0.0
               ? "; " + format_signed(diff, summary.unit) + " per " + summary.per_unit
               : std::string();
  };
  text += per(summary.diff_per_unit);
  if (!summary.smallest_where.empty())
    text += "; smallest failing case '" + summary.smallest_where + "': expected " +
            format_value(summary.smallest_expected, summary.unit) + ", got " +
            format_value(summary.smallest_actual, summary.unit) +
            per(summary.smallest_diff_per_unit);
  return text;
}

NameSetDiff compare_names(const std::vector<std::string>& expected,
                          const std::vector<std::string>& actual) {
  std::vector<std::string> e = expected, a = actual;
  std::sort(e.begin(), e.end());
  std::sort(a.begin(), a.end());
  NameSetDiff diff;
  std::set_difference(e.begin(), e.end(), a.begin(), a.end(), std::back_inserter(diff.missing));
  std::set_difference(a.begin(), a.end(), e.begin(), e.end(), std::back_inserter(diff.extra));
  diff.order_differs = diff.missing.empty() && diff.extra.empty() && expected != actual;
  return diff;
}

std::string describe(const NameSetDiff& diff, const std::vector<std::string>& actual) {
  if (diff.same()) return "same names";
  if (diff.order_differs)
    return "the right names, in another order (or repeated): got " + join(actual);
  std::string text;
  if (!diff.missing.empty())
    text += "missing " + std::to_string(diff.missing.size()) + " (" + join(diff.missing) + ")";
  if (!diff.extra.empty())
    text += std::string(text.empty() ? "" : "; ") + "extra " + std::to_string(diff.extra.size()) +
            " (" + join(diff.extra) + ")";
  return text;
}

}  // namespace vramlab::workbook
