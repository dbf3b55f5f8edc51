// TypedTable: each unit's text, the JSON of the keyed fields (raw values, null for nothing and
// non-finite numbers), the Markdown form, and one column list giving both a table and a record.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "common/report/typed_table.h"

namespace vramlab::report {
namespace {

std::string cell(const Value& v, Unit unit, int decimals = -1) {
  return v.format(unit, decimals);
}

TEST(TypedTableValue, EachUnitFormatsItsCells) {
  EXPECT_EQ(cell(int64_t{1536}, Unit::bytes), "1.50 KiB");
  EXPECT_EQ(cell(0, Unit::bytes), "0 B");
  EXPECT_EQ(cell(int64_t{56'000'000'000}, Unit::bytes_decimal), "56.0 GB");
  EXPECT_EQ(cell(int64_t{1'234'567}, Unit::count), "1,234,567");
  EXPECT_EQ(cell(int64_t{-1'234'567}, Unit::integer), "-1234567");
  EXPECT_EQ(cell(0.125, Unit::percent), "12.5%");
  EXPECT_EQ(cell(0.125, Unit::percent, 2), "12.50%");
  EXPECT_EQ(cell(-0.003, Unit::signed_percent), "-0.3%");
  EXPECT_EQ(cell(0.0, Unit::signed_percent), "+0.0%");
  EXPECT_EQ(cell(1.25, Unit::seconds), "1.25 s");
  EXPECT_EQ(cell(16.9, Unit::ratio, 1), "16.9x");
  EXPECT_EQ(cell(3.14159, Unit::fixed, 4), "3.1416");
  EXPECT_EQ(cell(3e-5f, Unit::general), "3e-05");
  EXPECT_EQ(cell(12.0, Unit::per_param), "12.00");
  EXPECT_EQ(cell(0.00213, Unit::per_param), "0.0021");
  EXPECT_EQ(cell(0.0, Unit::per_param), "0.00");
  EXPECT_EQ(cell(true, Unit::text), "yes");
  EXPECT_EQ(cell(false, Unit::text), "no");
  EXPECT_EQ(cell("as is", Unit::bytes), "as is");
  EXPECT_EQ(cell(Value(), Unit::bytes), "-");
  EXPECT_EQ(cell(std::nan(""), Unit::fixed), "-");
  EXPECT_EQ(cell(-std::numeric_limits<double>::infinity(), Unit::percent), "-");
  // An integer unit given a real number rounds it to the nearest whole unit.
  EXPECT_EQ(cell(1535.6, Unit::bytes), "1.50 KiB");
  EXPECT_EQ(cell(2.5e9, Unit::count), "2,500,000,000");
}

TEST(TypedTableUnit, ParsesEveryNameAndRefusesOthersByName) {
  EXPECT_EQ(parse_unit("bytes"), Unit::bytes);
  EXPECT_EQ(parse_unit("signed_percent"), Unit::signed_percent);
  EXPECT_EQ(parse_unit("per_param"), Unit::per_param);
  try {
    (void)parse_unit("furlongs");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'furlongs'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bytes_decimal"), std::string::npos) << e.what();
  }
}

TEST(TypedTableValue, JsonHoldsTheRawValue) {
  // 2^62 + 1 is not a double: a 64-bit count must stay an integer in JSON.
  const int64_t big = (int64_t{1} << 62) + 1;
  EXPECT_EQ(Value(big).json().get<int64_t>(), big);
  EXPECT_TRUE(Value(big).json().is_number_integer());
  EXPECT_TRUE(Value(uint32_t{7}).json().is_number_integer());
  EXPECT_TRUE(Value(0.5).json().is_number_float());
  EXPECT_EQ(Value(0.001f).json().get<double>(), static_cast<double>(0.001f));
  EXPECT_TRUE(Value(true).json().is_boolean());
  EXPECT_EQ(Value("x").json(), "x");
  EXPECT_TRUE(Value().json().is_null());
  EXPECT_TRUE(Value(std::nan("")).json().is_null());
  EXPECT_TRUE(Value(std::numeric_limits<double>::infinity()).json().is_null());
  EXPECT_TRUE(Value().empty());
  EXPECT_FALSE(Value(0).empty());
}

struct RunRow {
  std::string name;
  int64_t bytes = 0;
  double seconds = 0.0;
};

const TypedColumns<RunRow>& run_columns() {
  static const TypedColumns<RunRow> columns = {
      {{"name", "run"}, [](const RunRow& r) { return r.name; }},
      {{"bytes", "bytes", Unit::bytes}, [](const RunRow& r) { return r.bytes; }},
      {{"", "B/elem", Unit::fixed, 3},
       [](const RunRow& r) { return static_cast<double>(r.bytes) / 1000.0; }},
      {{"seconds", "", Unit::seconds}, [](const RunRow& r) { return r.seconds; }},
  };
  return columns;
}

TEST(TypedTable, KeylessFieldsStayOutOfJsonAndHeaderlessOutOfText) {
  const std::vector<RunRow> runs = {{"a|b", 2048, 0.5}, {"c", 0, 1.0}};
  const TypedTable table = table_of(run_columns(), runs);
  EXPECT_EQ(table.row_count(), 2u);
  EXPECT_EQ(table.render(),
            "run     bytes  B/elem\n"
            "---------------------\n"
            "a|b  2.00 KiB   2.048\n"
            "c         0 B   0.000\n");
  EXPECT_EQ(table.markdown(),
            "| run | bytes | B/elem |\n"
            "|---|---:|---:|\n"
            "| a\\|b | 2.00 KiB | 2.048 |\n"
            "| c | 0 B | 0.000 |\n");
  const nlohmann::json j = table.json();
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0], (nlohmann::json{{"name", "a|b"}, {"bytes", 2048}, {"seconds", 0.5}}));
  EXPECT_EQ(j[1], record_json(run_columns(), runs[1]));
}

TEST(TypedTable, RulesShowInTextButAreNotRows) {
  TypedTable table({{"k", "item"}, {"n", "count", Unit::count}});
  table.add_row({"one", 1});
  table.add_rule();
  table.add_row({"total", 1000}, RowStyle::kBold);
  EXPECT_EQ(table.row_count(), 2u);
  EXPECT_EQ(table.render(),
            "item   count\n"
            "------------\n"
            "one        1\n"
            "------------\n"
            "total  1,000\n");
  EXPECT_EQ(table.json().size(), 2u);
  EXPECT_EQ(table.row_json(1)["n"], 1000);
  EXPECT_EQ(table.markdown(), "| item | count |\n|---|---:|\n| one | 1 |\n| total | 1,000 |\n");
  EXPECT_NE(table.render(true).find("\x1b["), std::string::npos);  // the bold total
}

TEST(TypedTable, RandomRowsAgreeAcrossTextJsonAndMarkdown) {
  std::mt19937_64 rng(2026);
  for (int trial = 0; trial < 20; ++trial) {
    std::uniform_int_distribution<int> rows_of(0, 30);
    std::uniform_int_distribution<int64_t> bytes_of(0, int64_t{1} << 50);
    std::vector<RunRow> runs(static_cast<size_t>(rows_of(rng)));
    for (size_t i = 0; i < runs.size(); ++i)
      runs[i] = {"r" + std::to_string(i), bytes_of(rng), static_cast<double>(bytes_of(rng)) / 1e9};
    const TypedTable table = table_of(run_columns(), runs);
    const nlohmann::json j = table.json();
    ASSERT_EQ(j.size(), runs.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      EXPECT_EQ(j[i]["bytes"].get<int64_t>(), runs[i].bytes);
      EXPECT_EQ(j[i]["seconds"].get<double>(), runs[i].seconds);
      EXPECT_EQ(j[i], table.row_json(i));
    }
    const std::string text = table.render(), markdown = table.markdown();
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), static_cast<long>(runs.size() + 2));
    EXPECT_EQ(std::count(markdown.begin(), markdown.end(), '\n'),
              static_cast<long>(runs.size() + 2));
    for (const RunRow& r : runs)
      EXPECT_NE(markdown.find("| " + r.name + " | " + cell(r.bytes, Unit::bytes) + " |"),
                std::string::npos);
  }
}

TEST(TypedTable, RefusesMisshapenRows) {
  EXPECT_THROW(TypedTable(std::vector<Field>{}), std::invalid_argument);
  TypedTable table({{"a", "A"}, {"b", "B"}});
  EXPECT_THROW(table.add_row({1}), std::invalid_argument);
  EXPECT_THROW(table.add_row({1, 2, 3}), std::invalid_argument);
  EXPECT_THROW((void)table.row_json(0), std::out_of_range);
  table.add_row({1, 2});
  EXPECT_NO_THROW((void)table.row_json(0));
  EXPECT_THROW((void)table.row_json(1), std::out_of_range);
}

TEST(TypedTable, JsonOnlyTableRendersNoText) {
  TypedTable table(std::vector<Field>{{"a", ""}});
  table.add_row({1});
  EXPECT_EQ(table.render(), "");
  EXPECT_EQ(table.markdown(), "");
  EXPECT_EQ(table.json(), nlohmann::json::parse(R"([{"a": 1}])"));
}

}  // namespace
}  // namespace vramlab::report
