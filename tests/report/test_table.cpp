// Tests of common/report/table.h: alignment, rules, colour, display width of UTF-8 and ANSI text.
// Run: build/tests/bin/test_report --gtest_filter='DisplayWidth.*:Table.*'
#include "common/report/table.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/report/terminal.h"

namespace vramlab::report {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

TEST(DisplayWidth, CountsWhatATerminalShows) {
  EXPECT_EQ(display_width(""), 0u);
  EXPECT_EQ(display_width("abc"), 3u);
  EXPECT_EQ(display_width("\x1b[31mabc\x1b[0m"), 3u);
  EXPECT_EQ(display_width("\x1b[1;32mok\x1b[0m"), 2u);
  EXPECT_EQ(display_width("µs"), 2u);         // 2-byte UTF-8
  EXPECT_EQ(display_width("→"), 1u);          // 3-byte UTF-8
  EXPECT_EQ(display_width("显存"), 4u);       // wide CJK
  EXPECT_EQ(display_width("e\xcc\x81"), 1u);  // e + combining acute
  EXPECT_EQ(display_width("\xff\xfe"), 2u);   // malformed bytes count one each
  EXPECT_EQ(display_width("\xe2\x86"), 2u);   // truncated sequence
}

TEST(Table, AlignsLeftAndRightColumns) {
  Table table({{"category"}, {"bytes", Align::kRight}, {"note"}});
  table.add_row({"parameter", "474.70 MiB", "fp32"});
  table.add_row({"activation", "1.00 KiB", ""});
  const std::vector<std::string> lines = lines_of(table.render());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "category         bytes  note");
  EXPECT_EQ(lines[1], "----------------------------");
  EXPECT_EQ(lines[2], "parameter   474.70 MiB  fp32");
  EXPECT_EQ(lines[3], "activation    1.00 KiB");
}

TEST(Table, RandomCellsLineUpOnEveryRow) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const size_t column_count = 1 + rng() % 5;
    std::vector<Column> columns;
    for (size_t c = 0; c < column_count; ++c) {
      std::string header = "h";
      header += std::to_string(c);
      columns.push_back({header, rng() % 2 == 0 ? Align::kLeft : Align::kRight});
    }
    Table table(columns);
    const size_t row_count = rng() % 6;
    std::vector<std::vector<std::string>> rows;
    for (size_t r = 0; r < row_count; ++r) {
      std::vector<std::string> cells;
      for (size_t c = 0; c < column_count; ++c) cells.push_back(std::string(1 + rng() % 12, 'x'));
      table.add_row(cells);
      rows.push_back(cells);
    }
    const std::vector<std::string> lines = lines_of(table.render());
    ASSERT_EQ(lines.size(), 2 + row_count);
    // Every right-aligned column ends at the same offset on every row, so the cell text must end
    // exactly where the header's column ends.
    for (size_t r = 0; r < row_count; ++r) {
      const std::string& line = lines[2 + r];
      EXPECT_NE(line.back(), ' ') << "trailing space in '" << line << "'";
      size_t position = 0;
      for (size_t c = 0; c < column_count; ++c) {
        size_t width = columns[c].header.size();
        for (const auto& row : rows) width = std::max(width, row[c].size());
        const std::string& cell = rows[r][c];
        const size_t start =
            columns[c].align == Align::kRight ? position + width - cell.size() : position;
        EXPECT_EQ(line.substr(start, cell.size()), cell)
            << "row " << r << " col " << c << ": '" << line << "'";
        position += width + 2;
      }
    }
  }
}

TEST(Table, RulesAndRowCount) {
  Table table({{"name"}, {"n", Align::kRight}});
  table.add_row({"a", "1"});
  table.add_rule();
  table.add_row({"total", "1"}, RowStyle::kBold);
  EXPECT_EQ(table.row_count(), 2u);
  const std::vector<std::string> lines = lines_of(table.render(false, 2));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[3], "  --------");
  EXPECT_EQ(lines[4], "  total  1");
}

TEST(Table, ColourStylesHeaderAndRowsButKeepsAlignment) {
  Table table({{"test"}, {"result", Align::kRight}});
  table.add_row({"matmul", style::green("ok", true)});
  table.add_row({"softmax", "FAILED"}, RowStyle::kRed);
  const std::string plain = table.render(false);
  const std::string coloured = table.render(true);
  EXPECT_EQ(plain.find('\x1b'), plain.find("\x1b[32m"));  // only the cell's own code
  EXPECT_NE(coloured.find("\x1b[1mtest"), std::string::npos) << coloured;
  EXPECT_NE(coloured.find("\x1b[31msoftmax"), std::string::npos) << coloured;
  const std::vector<std::string> lines = lines_of(plain);
  EXPECT_EQ(display_width(lines[2]), display_width(lines[3]));
}

TEST(Table, WideCharactersAlign) {
  Table table({{"name"}, {"v", Align::kRight}});
  table.add_row({"显存", "1"});
  table.add_row({"ab", "22"});
  const std::vector<std::string> lines = lines_of(table.render());
  EXPECT_EQ(lines[2], "显存   1");
  EXPECT_EQ(lines[3], "ab    22");
}

TEST(Table, RejectsWrongCellCountNamingBothNumbers) {
  Table table({{"a"}, {"b"}});
  try {
    table.add_row({"only one"});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("1 cells"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("2 columns"), std::string::npos) << error.what();
  }
  EXPECT_THROW(Table(std::vector<Column>{}), std::invalid_argument);
}

TEST(Table, EmptyTableStillHasHeaderAndRule) {
  Table table({{"x"}});
  EXPECT_EQ(table.render(), "x\n-\n");
}

}  // namespace
}  // namespace vramlab::report
