/// \file
/// \brief The failure summary of exercise tests: expected and actual values gathered over many
/// random configurations, and one message giving max |diff|, where it occurred and % of the
/// tolerance, or the memory figures when the values are bytes.
///
/// Example (an exercise test):
/// \code
/// workbook::Comparison weights("weights bytes", workbook::Unit::kBytes);
/// for (...) weights.add("psi=7 fp32 adamw", expected, actual);
/// EXPECT_TRUE(weights.passed()) << weights.failure_message();
/// \endcode
/// The message ends with one machine-readable line, `vramlab-summary: {json}`, which
/// `vramlab check` parses (parse_failure_summary) to print the first failure compactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vramlab::workbook {

/// What the compared values are.
enum class Unit {
  kNumber,  ///< plain numbers: the summary gives max |diff| and % of the tolerance.
  kBytes,   ///< byte counts: the summary also gives both memory figures in KiB/MiB/GiB.
};

/// Prefix of the machine-readable line a failure message ends with.
inline constexpr std::string_view kSummaryPrefix = "vramlab-summary: ";

/// Expected-versus-actual values of one quantity over many cases.
///
/// A value passes when |actual - expected| ≤ absolute_tolerance + relative_tolerance·|expected|;
/// NaN passes only against NaN, an infinity only against the same infinity.
///
/// The message names the worst case (largest |diff|) and, when it is another case, the smallest
/// failing one (smallest |expected|): a learner debugs a 1-parameter case more easily than a 70B
/// one. With per_unit("token") and a count passed to add(), it also gives the diff per token,
/// which is usually the term the learner got wrong (e.g. "-4 B per token": one (B,T) tensor).
class Comparison {
 public:
  /// \param quantity what is compared, e.g. "optimizer-state bytes".
  /// \param unit kBytes for byte counts, kNumber otherwise.
  /// \param absolute_tolerance allowed |diff| (0 = exact).
  /// \param relative_tolerance allowed |diff| relative to |expected|.
  /// \throws vramlab::UsageError for a negative or NaN tolerance.
  explicit Comparison(std::string quantity, Unit unit = Unit::kNumber,
                      double absolute_tolerance = 0.0, double relative_tolerance = 0.0);
  /// Records one case.
  /// \param where the case, e.g. "psi=1234567 mixed-bf16 adamw" (shown when it is the worst).
  /// \param expected the value the test derived independently.
  /// \param actual the value the code under test returned.
  void add(std::string where, double expected, double actual);
  /// Records one case whose diff is also reported per unit (see per_unit()): as add(where,
  /// expected, actual), with \p units the number of units in the case (e.g. B·T tokens; ≤ 0: no
  /// per-unit figure).
  void add(std::string where, double expected, double actual, double units);
  /// Names the unit of add()'s units, singular, e.g. "token" or "parameter"; returns *this.
  Comparison& per_unit(std::string name);
  /// Cases recorded by add().
  [[nodiscard]] size_t count() const { return count_; }
  /// Cases outside the tolerance.
  [[nodiscard]] size_t mismatches() const { return mismatches_; }
  /// \return true when every case is within the tolerance (and at least one was recorded).
  [[nodiscard]] bool passed() const { return count_ > 0 && mismatches_ == 0; }
  /// \return the largest |actual - expected| (infinity when a NaN/infinity mismatched).
  [[nodiscard]] double max_abs_diff() const { return max_abs_diff_; }
  /// \return the largest |diff| as a percentage of the case's allowed |diff| (infinity when the
  /// tolerance is 0 and a value differs; 0 when all match exactly).
  [[nodiscard]] double max_percent_of_tolerance() const { return max_percent_of_tolerance_; }
  /// \return the human summary followed by the `vramlab-summary:` line, e.g.
  /// "optimizer-state bytes: 12 of 400 cases wrong; max |diff| 4.00 MiB (4194304) at
  /// 'psi=1048576 mixed-bf16 adamw': expected 12.00 MiB, got 8.00 MiB (exact match required)".
  [[nodiscard]] std::string failure_message() const;

 private:
  std::string quantity_;
  Unit unit_;
  double absolute_tolerance_;
  double relative_tolerance_;
  size_t count_ = 0;
  size_t mismatches_ = 0;
  double max_abs_diff_ = 0.0;
  double max_percent_of_tolerance_ = 0.0;
  std::string worst_where_;
  double worst_expected_ = 0.0;
  double worst_actual_ = 0.0;
  double worst_allowed_ = 0.0;
  double worst_units_ = 0.0;
  std::string per_unit_;
  bool have_smallest_ = false;  // a failing case was recorded
  std::string smallest_where_;
  double smallest_expected_ = 0.0;
  double smallest_actual_ = 0.0;
  double smallest_units_ = 0.0;
};

/// A failure summary read back from a test's failure message.
struct FailureSummary {
  std::string quantity;               ///< what was compared.
  Unit unit = Unit::kNumber;          ///< numbers or bytes.
  size_t count = 0;                   ///< cases compared.
  size_t mismatches = 0;              ///< cases outside the tolerance.
  double max_abs_diff = 0.0;          ///< largest |diff| (infinity for a NaN mismatch).
  std::string where;                  ///< the case with the largest |diff|.
  double expected = 0.0;              ///< expected value there.
  double actual = 0.0;                ///< actual value there.
  double allowed_abs_diff = 0.0;      ///< the tolerance there (0 = exact).
  double percent_of_tolerance = 0.0;  ///< max |diff| as % of the tolerance (infinity if exact).
  std::string per_unit;               ///< the unit of the per-unit diffs ("" when none).
  double diff_per_unit = 0.0;         ///< (actual - expected) / units at the worst case (0: none).
  std::string smallest_where;         ///< the failing case of smallest |expected| ("" when none).
  double smallest_expected = 0.0;     ///< expected value there.
  double smallest_actual = 0.0;       ///< actual value there.
  double smallest_diff_per_unit = 0.0;  ///< (actual - expected) / units there (0: none).
};

/// Finds the `vramlab-summary:` line in a failure message and decodes it.
/// \param failure_message a GoogleTest failure message (any text).
/// \return the summary, or nothing when the message has no (valid) summary line.
std::optional<FailureSummary> parse_failure_summary(std::string_view failure_message);

/// Two sets of names compared: what is missing from and extra in the actual set, so a failure
/// lists names instead of counts.
struct NameSetDiff {
  std::vector<std::string> missing;  ///< expected but not in the actual names, sorted.
  std::vector<std::string> extra;    ///< in the actual names but not expected, sorted.
  bool order_differs = false;        ///< same set, but another order or repeated names.
  /// \return true when the actual names equal the expected ones, in order.
  [[nodiscard]] bool same() const { return missing.empty() && extra.empty() && !order_differs; }
};

/// Compares two lists of names as sets, and their order.
/// \param expected the names the test derived. \param actual the names the code returned.
/// \return the missing and extra names.
NameSetDiff compare_names(const std::vector<std::string>& expected,
                          const std::vector<std::string>& actual);

/// One line for humans, e.g. "missing 2 (ln1, qkv); extra 1 (att)".
/// \param diff a comparison of names. \param actual the actual names, listed when only the order
/// differs. \return the line ("same names" when they match).
std::string describe(const NameSetDiff& diff, const std::vector<std::string>& actual);

/// One line for humans, e.g. "max |diff| 4.00 MiB at 'psi=…': expected 12.00 MiB, got 8.00 MiB
/// (exact match required; 12 of 400 cases wrong)".
/// \param summary a decoded summary. \return the line (no newline).
std::string describe(const FailureSummary& summary);

}  // namespace vramlab::workbook
