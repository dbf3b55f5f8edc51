// The failure summary of exercise tests: pass/fail by tolerance, max |diff| and where, % of the
// tolerance, memory figures for bytes, and the machine-readable line `vramlab check` parses back.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"

namespace vramlab::workbook {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Comparison, ExactBytesReportTheWorstCaseWithMemoryFigures) {
  Comparison c("optimizer-state bytes", Unit::kBytes);
  c.add("psi=10", 80, 80);
  c.add("psi=1048576 adamw", 12.0 * 1048576, 8.0 * 1048576);
  c.add("psi=7 adamw", 84, 56);
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.count(), 3u);
  EXPECT_EQ(c.mismatches(), 2u);
  EXPECT_EQ(c.max_abs_diff(), 4.0 * 1048576);
  const std::string m = c.failure_message();
  EXPECT_NE(m.find("max |diff| 4.00 MiB (4194304 B)"), std::string::npos) << m;
  EXPECT_NE(m.find("at 'psi=1048576 adamw'"), std::string::npos) << m;
  EXPECT_NE(m.find("expected 12.00 MiB (12582912 B), got 8.00 MiB (8388608 B)"), std::string::npos)
      << m;
  EXPECT_NE(m.find("exact match required; 2 of 3 cases wrong"), std::string::npos) << m;
}

TEST(Comparison, PercentOfToleranceUsesAbsolutePlusRelative) {
  Comparison c("loss", Unit::kNumber, 1e-3, 1e-2);
  c.add("a", 10.0, 10.05);  // allowed 0.101, diff 0.05 -> 49.5 %
  c.add("b", 1.0, 1.0165);  // allowed 0.011, diff 0.0165 -> 150 %
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.mismatches(), 1u);
  EXPECT_NEAR(c.max_percent_of_tolerance(), 150.0, 1e-6);
  const auto s = parse_failure_summary(c.failure_message());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->where, "a");  // the largest |diff| (0.05), though "b" is further past its tolerance
  EXPECT_NEAR(s->percent_of_tolerance, 150.0, 1e-6);
  EXPECT_NE(describe(*s).find("150.0% of tolerance"), std::string::npos) << describe(*s);
}

TEST(Comparison, WithinToleranceAndExactPass) {
  Comparison c("x", Unit::kNumber, 0.5);
  c.add("a", 1.0, 1.5);
  c.add("b", -2.0, -2.0);
  EXPECT_TRUE(c.passed());
  EXPECT_NEAR(c.max_percent_of_tolerance(), 100.0, 1e-12);
}

TEST(Comparison, NothingComparedIsNotAPass) {
  Comparison c("x");
  EXPECT_FALSE(c.passed());
  EXPECT_NE(c.failure_message().find("no cases were compared"), std::string::npos);
}

TEST(Comparison, NanAndInfinityOnlyMatchThemselves) {
  Comparison same("x"), different("y");
  same.add("nan", kNaN, kNaN);
  same.add("inf", kInf, kInf);
  EXPECT_TRUE(same.passed());
  different.add("nan vs 1", kNaN, 1.0);
  different.add("inf vs -inf", kInf, -kInf);
  EXPECT_EQ(different.mismatches(), 2u);
  EXPECT_TRUE(std::isinf(different.max_abs_diff()));
  const auto s = parse_failure_summary(different.failure_message());
  ASSERT_TRUE(s.has_value());  // inf and nan survive the JSON line
  EXPECT_TRUE(std::isinf(s->max_abs_diff));
  EXPECT_TRUE(std::isnan(s->expected));
}

TEST(Comparison, SummaryLineRoundTrips) {
  Comparison c("peak bytes", Unit::kBytes);
  c.add("trace \"7\"\n(odd)", 3072, 2560);
  const auto s = parse_failure_summary("some/file.cpp:12\nValue of: passed()\n" +
                                       c.failure_message() + "\ntrailing");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->quantity, "peak bytes");
  EXPECT_EQ(s->unit, Unit::kBytes);
  EXPECT_EQ(s->where, "trace \"7\"\n(odd)");
  EXPECT_EQ(s->expected, 3072);
  EXPECT_EQ(s->actual, 2560);
  EXPECT_EQ(s->max_abs_diff, 512);
  EXPECT_EQ(s->count, 1u);
  EXPECT_EQ(s->mismatches, 1u);
  EXPECT_TRUE(std::isinf(s->percent_of_tolerance));
}

TEST(Comparison, MessagesWithoutASummaryParseToNothing) {
  EXPECT_FALSE(parse_failure_summary("Expected equality of these values").has_value());
  EXPECT_FALSE(parse_failure_summary("vramlab-summary: {not json").has_value());
  EXPECT_FALSE(parse_failure_summary("vramlab-summary: {\"quantity\": 1}").has_value());
}

TEST(Comparison, NamesTheSmallestFailingCaseBesideTheWorst) {
  Comparison c("state bytes", Unit::kBytes);
  c.add("psi=70000000000", 560e9, 280e9);  // worst
  c.add("psi=3", 24, 12);                  // smallest failing
  c.add("psi=1", 8, 8);                    // smaller, but right: not a failing case
  const std::string m = c.failure_message();
  EXPECT_NE(m.find("at 'psi=70000000000'"), std::string::npos) << m;
  EXPECT_NE(m.find("smallest failing case 'psi=3': expected 24 B, got 12 B"), std::string::npos)
      << m;
  const auto s = parse_failure_summary(m);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->smallest_where, "psi=3");
  EXPECT_EQ(s->smallest_expected, 24);
  EXPECT_EQ(s->smallest_actual, 12);
}

TEST(Comparison, SmallestIsOmittedWhenItIsTheWorstCase) {
  Comparison c("x", Unit::kBytes);
  c.add("only", 1024, 512);
  EXPECT_EQ(c.failure_message().find("smallest failing case"), std::string::npos)
      << c.failure_message();
  EXPECT_TRUE(parse_failure_summary(c.failure_message())->smallest_where.empty());
}

TEST(Comparison, DiffPerUnitIsSignedAndSurvivesTheSummaryLine) {
  Comparison c("layer bytes", Unit::kBytes);
  c.per_unit("token");
  c.add("B=2 T=3", 600, 600, 6);
  c.add("B=4 T=1024", 4096.0 * 100, 4096.0 * 100 - 4096.0 * 16, 4096);  // 16 B/token too few
  c.add("B=1 T=5", 500, 500 - 5 * 16, 5);
  const std::string m = c.failure_message();
  EXPECT_NE(m.find("at 'B=4 T=1024'"), std::string::npos) << m;
  EXPECT_NE(m.find("-16 B per token; smallest failing case 'B=1 T=5'"), std::string::npos) << m;
  const auto s = parse_failure_summary(m);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->per_unit, "token");
  EXPECT_EQ(s->diff_per_unit, -16);
  EXPECT_EQ(s->smallest_diff_per_unit, -16);
  Comparison over("x", Unit::kNumber);
  over.per_unit("element").add("a", 10, 13, 3);
  EXPECT_NE(over.failure_message().find("+1 per element"), std::string::npos)
      << over.failure_message();
}

TEST(Comparison, SummaryLinesWithoutTheNewFieldsStillParse) {
  const auto s = parse_failure_summary(
      "vramlab-summary: {\"quantity\":\"q\",\"unit\":\"number\",\"count\":1,\"mismatches\":1,"
      "\"max_abs_diff\":1,\"where\":\"w\",\"expected\":1,\"actual\":2,"
      "\"allowed_abs_diff\":0,\"percent_of_tolerance\":\"inf\"}");
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->smallest_where.empty());
  EXPECT_TRUE(s->per_unit.empty());
}

TEST(NameSetDiff, ListsMissingAndExtraNames) {
  const NameSetDiff d = compare_names({"a", "b", "qkv"}, {"b", "att", "z"});
  EXPECT_FALSE(d.same());
  EXPECT_EQ(d.missing, (std::vector<std::string>{"a", "qkv"}));
  EXPECT_EQ(d.extra, (std::vector<std::string>{"att", "z"}));
  EXPECT_EQ(describe(d, {"b", "att", "z"}), "missing 2 (a, qkv); extra 2 (att, z)");
  EXPECT_EQ(describe(compare_names({"a"}, {}), {}), "missing 1 (a)");
}

TEST(NameSetDiff, OrderAndRepeatsCount) {
  EXPECT_TRUE(compare_names({"a", "b"}, {"a", "b"}).same());
  EXPECT_TRUE(compare_names({}, {}).same());
  const NameSetDiff swapped = compare_names({"a", "b"}, {"b", "a"});
  EXPECT_TRUE(swapped.order_differs);
  EXPECT_NE(describe(swapped, {"b", "a"}).find("another order"), std::string::npos);
  EXPECT_FALSE(compare_names({"a"}, {"a", "a"}).same());
}

TEST(NameSetDiff, LongListsAreShortened) {
  std::vector<std::string> many;
  for (int i = 0; i < 30; ++i) many.push_back(std::string("t").append(std::to_string(100 + i)));
  const std::string line = describe(compare_names({}, many), many);
  EXPECT_NE(line.find("extra 30 (t100, t101"), std::string::npos) << line;
  EXPECT_NE(line.find("18 more)"), std::string::npos) << line;
}

TEST(Comparison, ExpectPassesReportsOnlyTheComparisonsMessage) {
  Comparison wrong("peak bytes", Unit::kBytes), right("peak bytes", Unit::kBytes);
  wrong.add("trace 3", 3072, 2560);
  right.add("trace 1", 512, 512);
  EXPECT_NONFATAL_FAILURE(VRAMLAB_EXPECT_PASSES(wrong),
                          "peak bytes: max |diff| 512 B at 'trace 3'");
  VRAMLAB_EXPECT_PASSES(right);
  int evaluated = 0;
  const auto once = [&]() -> const Comparison& { return ++evaluated, right; };
  VRAMLAB_EXPECT_PASSES(once());
  EXPECT_EQ(evaluated, 1);
}

TEST(Comparison, NegativeToleranceIsAUsageError) {
  EXPECT_THROW(Comparison("x", Unit::kNumber, -1.0), UsageError);
  EXPECT_THROW(Comparison("x", Unit::kNumber, 0.0, kNaN), UsageError);
}

}  // namespace
}  // namespace vramlab::workbook
