// Claims as data: selectors into a lesson's JSON, expressions, templates, the claims file's
// checks, and verdicts computed from a run (held, failed, left out when not measured).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "common/workbook/claim_values.h"
#include "common/workbook/claims.h"

namespace vramlab::workbook {
namespace {

using nlohmann::json;

const json& run() {
  static const json j = json::parse(R"({
    "model": {"name": "custom", "parameter_count": 123456789012},
    "optimizers": [
      {"name": "adamw", "precision": "fp32", "bytes_per_param": 8.0, "seconds": 1.5},
      {"name": "adamw-8bit", "precision": "fp32", "bytes_per_param": 2.03125, "gap": null},
      {"name": "adamw", "precision": "mixed-bf16", "bytes_per_param": 12.0, "ok": true}
    ],
    "points": [{"step": 1}, {"step": 10}, {"step": 20}],
    "tolerance": 0.05
  })");
  return j;
}

TEST(ClaimSelect, KeysFiltersIndexesAndAlternatives) {
  EXPECT_EQ(select(run(), "/model/name"), json("custom"));
  EXPECT_EQ(select(run(), "/model/parameter_count"), json(123456789012));
  EXPECT_EQ(select(run(), "/optimizers[name=adamw]/bytes_per_param"), json(8.0));
  EXPECT_EQ(select(run(), "/optimizers[precision=mixed-bf16,name=adamw]/bytes_per_param"),
            json(12.0));
  EXPECT_EQ(select(run(), "/optimizers[ok=true]/precision"), json("mixed-bf16"));
  EXPECT_EQ(select(run(), "/points/0/step"), json(1));
  EXPECT_EQ(select(run(), "/points/-1/step"), json(20));
  EXPECT_EQ(select(run(), "/points/-3/step"), json(1));
  EXPECT_EQ(select(run(), "/points/-4/step"), std::nullopt);
  EXPECT_EQ(select(run(), "/points/3/step"), std::nullopt);
  EXPECT_EQ(select(run(), "/optimizers[name=lion]/bytes_per_param"), std::nullopt);
  EXPECT_EQ(select(run(), "/nothing/here"), std::nullopt);
  // A null is not a measurement.
  EXPECT_EQ(select(run(), "/optimizers[name=adamw-8bit]/gap"), std::nullopt);
  EXPECT_EQ(select(run(), "/optimizers[name=lion]/bytes_per_param | /tolerance"), json(0.05));
  EXPECT_EQ(select(run(), "/tolerance | /optimizers[name=adamw]/seconds"), json(0.05));
  EXPECT_THROW((void)select(run(), "model/name"), std::invalid_argument);
  EXPECT_THROW((void)select(run(), "/optimizers[name=adamw/seconds"), std::invalid_argument);
  EXPECT_THROW((void)select(run(), "/optimizers[adamw]/seconds"), std::invalid_argument);
  EXPECT_THROW((void)select(run(), "/points/first/step"), std::invalid_argument);
}

TEST(ClaimEvaluate, ArithmeticPrecedenceFunctionsAndComparisons) {
  const ClaimValues v = {{"a", 8.0}, {"b", 2.03125}, {"n", 3}, {"yes", true}, {"s", "text"}};
  EXPECT_DOUBLE_EQ(evaluate("a - b", v), 5.96875);
  EXPECT_DOUBLE_EQ(evaluate("2 + 8 / 256", v), 2.03125);
  EXPECT_DOUBLE_EQ(evaluate("(2 + 8) / 5", v), 2.0);
  EXPECT_DOUBLE_EQ(evaluate("-n * -2", v), 6.0);
  EXPECT_DOUBLE_EQ(evaluate("abs(b - a)", v), 5.96875);
  EXPECT_DOUBLE_EQ(evaluate("min(a, n) + max(a, n)", v), 11.0);
  EXPECT_DOUBLE_EQ(evaluate("1e3 * .5", v), 500.0);
  EXPECT_EQ(evaluate("a >= 8 && b < 2.1", v), 1.0);
  EXPECT_EQ(evaluate("a > 8 || b <= 2", v), 0.0);
  EXPECT_EQ(evaluate("a == 8 && n != 4 && yes", v), 1.0);
  EXPECT_EQ(evaluate("a < 2 + 8", v), 1.0);  // the sum first
  EXPECT_THROW((void)evaluate("missing + 1", v), UnknownName);
  EXPECT_THROW((void)evaluate("s + 1", v), std::invalid_argument);
  EXPECT_THROW((void)evaluate("a +", v), std::invalid_argument);
  EXPECT_THROW((void)evaluate("(a", v), std::invalid_argument);
  EXPECT_THROW((void)evaluate("a b", v), std::invalid_argument);
  EXPECT_THROW((void)evaluate("min(a)", v), std::invalid_argument);
  try {
    (void)evaluate("missing + 1", v);
  } catch (const UnknownName& e) {
    EXPECT_NE(std::string(e.what()).find("'missing'"), std::string::npos);
  }
}

TEST(ClaimEvaluate, RandomSumsAndProductsMatchDoubleArithmetic) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> value(-1e6, 1e6);
  for (int i = 0; i < 200; ++i) {
    const double a = value(rng), b = value(rng), c = value(rng);
    const ClaimValues v = {{"a", a}, {"b", b}, {"c", c}};
    EXPECT_DOUBLE_EQ(evaluate("a + b * c", v), a + b * c);
    EXPECT_DOUBLE_EQ(evaluate("(a - b) / c", v), (a - b) / c);
    EXPECT_EQ(evaluate("a < b", v), a < b ? 1.0 : 0.0);
  }
}

TEST(ClaimFill, HolesTakeUnitsAndDigits) {
  const ClaimValues v = {{"bpp", 2.03125},  {"bytes", int64_t{56'000'000'000}},
                         {"gap", -0.0123},  {"model", "llama2-7b"},
                         {"count", 1122.0}, {"tiny", 0.00213}};
  EXPECT_EQ(fill("{bpp:.2f} B/param ({model})", v), "2.03 B/param (llama2-7b)");
  EXPECT_EQ(fill("{bytes:bytes_decimal}", v), "56.0 GB");
  EXPECT_EQ(fill("{gap:signed_percent} vs adamw", v), "-1.2% vs adamw");
  EXPECT_EQ(fill("{count:integer} values", v), "1122 values");
  EXPECT_EQ(fill("{tiny:per_param}", v), "0.0021");
  EXPECT_EQ(fill("{tiny:.2e}", v), "2.13e-03");
  EXPECT_EQ(fill("{bytes:.3e} B", v), "5.600e+10 B");
  EXPECT_THROW((void)fill("{model:.2e}", v), std::invalid_argument);
  EXPECT_EQ(fill("no holes", v), "no holes");
  EXPECT_THROW((void)fill("{missing}", v), std::invalid_argument);
  EXPECT_THROW((void)fill("{bpp:furlongs}", v), std::invalid_argument);
  EXPECT_THROW((void)fill("{bpp:.xf}", v), std::invalid_argument);
  EXPECT_THROW((void)fill("{bpp", v), std::invalid_argument);
}

json claims_file(const std::string& claims) {
  return json::parse(R"({"lesson": "99", "claims": )" + claims + "}");
}

TEST(ClaimsFile, RefusesWhatCannotBeEvaluated) {
  const auto bad = [](const std::string& claims) {
    EXPECT_THROW((void)parse_claims(claims_file(claims), "test"), std::invalid_argument) << claims;
  };
  bad(R"([{"claim": "no id", "measured": "x", "verdict": "v"}])");
  bad(R"([{"id": 1, "measured": "x", "verdict": "v"}])");
  bad(R"([{"id": 1, "claim": "c", "verdict": "v"}])");
  bad(R"([{"id": 1, "claim": "c", "measured": "x"}])");
  bad(R"([{"id": 1, "claim": "c", "measured": "x", "verdict": "v", "holds_if": "1",
           "holds": "h", "fails": "f"}])");
  bad(R"([{"id": 1, "claim": "c", "measured": "x", "holds_if": "1", "holds": "h"}])");
  bad(R"([{"id": 1, "claim": "c", "measured": "x", "verdict": "v"},
          {"id": 1, "claim": "d", "measured": "y", "verdict": "w"}])");
  bad(R"([{"id": 1, "claim": "c", "measured": "x", "verdict": "v", "values": {"a": 3}}])");
  EXPECT_THROW((void)parse_claims(json::parse("[]"), "test"), std::invalid_argument);
  EXPECT_EQ(parse_claims(claims_file("[]"), "test").size(), 0u);
}

TEST(ClaimsFile, VerdictsComeFromTheRun) {
  const std::vector<Claim> claims = parse_claims(claims_file(R"([
    {"id": 108, "claim": "12 B/param mixed",
     "values": {"bpp": "/optimizers[precision=mixed-bf16,name=adamw]/bytes_per_param"},
     "measured": "{bpp:.2f} B/param", "holds_if": "abs(bpp - 12) < 0.005",
     "holds": "holds", "fails": "does not hold: {bpp:.2f}"},
    {"id": 110, "claim": "8-bit: 1 B/param",
     "values": {"bpp": "/optimizers[name=adamw-8bit]/bytes_per_param"},
     "measured": "{bpp:.2f} B/param", "holds_if": "bpp < 1.5",
     "holds": "holds", "fails": "does not hold: {bpp:.2f}"},
    {"id": 111, "claim": "saves",
     "values": {"a": "/optimizers[name=adamw]/bytes_per_param",
                "e": "/optimizers[name=adamw-8bit]/bytes_per_param",
                "gap": "/optimizers[name=adamw-8bit]/gap"},
     "derived": {"saved": "a - e", "gap_percent": "100 * gap"},
     "measured": ["{saved:.2f} saved, gap {gap_percent:.1f}%", "{saved:.2f} saved"],
     "verdict": "fixed"},
    {"id": 117, "claim": "Lion", "values": {"bpp": "/optimizers[name=lion]/bytes_per_param"},
     "measured": "{bpp:.2f}", "holds_if": "bpp < 9", "holds": "holds", "fails": "no"},
    {"id": 118, "claim": "rule on an unmeasured value",
     "values": {"a": "/optimizers[name=adamw]/bytes_per_param",
                "l": "/optimizers[name=lion]/bytes_per_param"},
     "measured": "{a:.2f}", "holds_if": "l < a", "holds": "holds", "fails": "no"}
  ])"),
                                                 "test");
  const std::vector<ClaimResult> results = evaluate_claims(claims, run());
  ASSERT_EQ(results.size(), 3u);  // 117 and 118 need lion, which this run did not train
  EXPECT_EQ(results[0].id, 108);
  EXPECT_EQ(results[0].measured, "12.00 B/param");
  EXPECT_EQ(results[0].verdict, "holds");
  EXPECT_EQ(results[0].held, true);
  EXPECT_EQ(results[1].verdict, "does not hold: 2.03");
  EXPECT_EQ(results[1].held, false);
  EXPECT_EQ(results[2].measured, "5.97 saved");  // the gap was null: the second template
  EXPECT_EQ(results[2].verdict, "fixed");
  EXPECT_EQ(results[2].held, std::nullopt);
  const json table = report::table_of(claim_columns(), results).json();
  EXPECT_EQ(table[1], (json{{"id", 110},
                            {"claim", "8-bit: 1 B/param"},
                            {"measured", "2.03 B/param"},
                            {"verdict", "does not hold: 2.03"}}));
}

// A derived value may use another whichever comes first in the file (JSON objects keep no order:
// "a_cut" sorts before the "z_" names it reads), and one that reads an unmeasured value stays
// unset without hiding the rest.
TEST(ClaimsFile, DerivedValuesMayUseEachOtherInAnyOrder) {
  const std::vector<Claim> claims = parse_claims(claims_file(R"([
    {"id": 1, "claim": "chain",
     "values": {"a": "/optimizers[name=adamw]/bytes_per_param",
                "e": "/optimizers[name=adamw-8bit]/bytes_per_param",
                "l": "/optimizers[name=lion]/bytes_per_param"},
     "derived": {"a_cut": "z_first / z_second", "z_first": "a * 2", "z_second": "z_third + 1",
                 "z_third": "e - 1", "b_lion": "l * 2"},
     "measured": ["{a_cut:.4f} {b_lion:.1f}", "{a_cut:.4f}"], "holds_if": "a_cut > 1",
     "holds": "holds", "fails": "no"}
  ])"),
                                                 "test");
  const std::vector<ClaimResult> results = evaluate_claims(claims, run());
  ASSERT_EQ(results.size(), 1u);
  const double a = run()["optimizers"][0]["bytes_per_param"].get<double>();
  const double e = run()["optimizers"][1]["bytes_per_param"].get<double>();
  char expected[32];
  std::snprintf(expected, sizeof expected, "%.4f", a * 2 / (e - 1 + 1));
  EXPECT_EQ(results[0].measured, expected);
  EXPECT_EQ(results[0].held, a * 2 / e > 1);
}

TEST(ClaimsFile, AMalformedSelectorNamesItsClaim) {
  const std::vector<Claim> claims = parse_claims(
      claims_file(R"([{"id": 42, "claim": "c", "values": {"a": "no-slash"}, "measured": "{a}",
                       "verdict": "v"}])"),
      "test");
  try {
    (void)evaluate_claims(claims, run());
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("claim 42"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vramlab::workbook
