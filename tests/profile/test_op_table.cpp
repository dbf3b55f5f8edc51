// Tests of common/profile/op_table.h on the hand-built recording of recording_fixture.h, whose rows
// are worked out here from its span tree and allocation times: self vs total time and bytes of
// nested spans, a recomputed op counted twice, a recursive op counted once in its totals, kernels
// folded into their module when grouping by module, a 5 GiB allocation, the peak column; then the
// text table (aligned, sorted, limited) and its JSON.
// Run: build/tests/bin/test_profile --gtest_filter='OpTable.*:FormatOpTable.*:OpTableJson.*'
#include "common/profile/op_table.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "common/platform/errors.h"
#include "common/report/table.h"
#include "tests/profile/recording_fixture.h"

namespace vramlab::profile {
namespace {

using testing::hand_built_recording;
using testing::kFiveGiB;

struct Expected {
  SpanKind kind;
  std::int64_t calls;
  std::int64_t self_ns;
  std::int64_t total_ns;
  std::int64_t self_bytes;
  std::int64_t total_bytes;
  std::int64_t peak_bytes;
};

void expect_rows(const std::vector<OpRow>& rows, const std::map<std::string, Expected>& expected) {
  ASSERT_EQ(rows.size(), expected.size());
  for (const OpRow& row : rows) {
    SCOPED_TRACE(row.name);
    const auto it = expected.find(row.name);
    ASSERT_NE(it, expected.end()) << "unexpected row";
    const Expected& want = it->second;
    EXPECT_EQ(row.kind, want.kind);
    EXPECT_EQ(row.calls, want.calls);
    // ns → ms is one division: the nearest double, so the comparison can be exact.
    EXPECT_EQ(row.self_ms, static_cast<double>(want.self_ns) / 1e6);
    EXPECT_EQ(row.total_ms, static_cast<double>(want.total_ns) / 1e6);
    EXPECT_EQ(row.self_bytes, want.self_bytes);
    EXPECT_EQ(row.total_bytes, want.total_bytes);
    EXPECT_EQ(row.peak_bytes, want.peak_bytes);
  }
}

TEST(OpTable, GroupedByOpAsKeyAverages) {
  const std::int64_t five = static_cast<std::int64_t>(kFiveGiB);
  // blocks.*.attn (forward): two calls of 400 ns; self = (400 − 100 − 100) + (400 − 100) = 500;
  // bytes made while innermost: 1000; while open: 1000 + 64 + 4096 + 64.
  // matmul: forward twice and recomputed once, 100 ns each; 3 × 64 B, all live at the peak.
  // blocks.*.attn (recompute): 300 ns, self 200; 2 MiB (freed before the peak) + its matmul's 64.
  // scan: the outer 200 ns once in total; self (200 − 100) + 100; its 10 B counted once in total.
  const std::map<std::string, Expected> expected = {
      {"blocks.*.attn (forward)", {SpanKind::module, 2, 500, 800, 1000, 5224, 1000}},
      {"matmul", {SpanKind::kernel, 3, 300, 300, 192, 192, 192}},
      {"softmax", {SpanKind::kernel, 1, 100, 100, 4096, 4096, 0}},
      {"blocks.*.attn (recompute)", {SpanKind::module, 1, 200, 300, 2 << 20, (2 << 20) + 64, 0}},
      {"blocks.*.attn (backward)", {SpanKind::module, 1, 200, 400, 0, five, 0}},
      {"matmul_backward", {SpanKind::kernel, 1, 200, 200, five, five, five}},
      {"scan", {SpanKind::kernel, 2, 200, 200, 10, 10, 10}},
  };
  const std::vector<OpRow> rows = op_table(hand_built_recording(), OpGrouping::op);
  expect_rows(rows, expected);
  // Sorted by self bytes, then name.
  EXPECT_EQ(rows.front().name, "matmul_backward");
  EXPECT_EQ(rows[1].name, "blocks.*.attn (recompute)");
  EXPECT_EQ(rows.back().name, "blocks.*.attn (backward)");
}

TEST(OpTable, GroupedByModuleFoldsKernelsIntoTheirModule) {
  const std::int64_t five = static_cast<std::int64_t>(kFiveGiB);
  // Kernels are not rows: their time and bytes are their module's own. The 10 B of scan and the
  // 7 B between modules belong to no module.
  const std::map<std::string, Expected> expected = {
      {"blocks.0.attn (forward)", {SpanKind::module, 1, 400, 400, 5160, 5160, 1064}},
      {"blocks.1.attn (forward)", {SpanKind::module, 1, 400, 400, 64, 64, 64}},
      {"blocks.1.attn (recompute)",
       {SpanKind::module, 1, 300, 300, (2 << 20) + 64, (2 << 20) + 64, 64}},
      {"blocks.1.attn (backward)", {SpanKind::module, 1, 400, 400, five, five, five}},
  };
  expect_rows(op_table(hand_built_recording(), OpGrouping::module), expected);
}

TEST(OpTable, EveryAllocationInsideARowSpanIsCountedOnceAsSelf) {
  // Self bytes partition the allocations made inside row spans (all but the 7 B in none).
  std::int64_t self = 0;
  for (const OpRow& row : op_table(hand_built_recording(), OpGrouping::op)) self += row.self_bytes;
  EXPECT_EQ(self, 1000 + 3 * 64 + 4096 + (2 << 20) + static_cast<std::int64_t>(kFiveGiB) + 10);
}

TEST(OpTable, AllocationsWithoutTimesAreRefused) {
  Recording recording = hand_built_recording();
  recording.snapshot["device_traces"][0][0].erase("time_ns");
  try {
    op_table(recording, OpGrouping::op);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("device_traces[0][0].time_ns"), std::string::npos)
        << error.what();
  }
}

TEST(OpTable, ParseSort) {
  EXPECT_EQ(parse_op_sort("self_bytes"), OpSort::self_bytes);
  EXPECT_EQ(parse_op_sort("total_bytes"), OpSort::total_bytes);
  EXPECT_EQ(parse_op_sort("peak_bytes"), OpSort::peak_bytes);
  EXPECT_EQ(parse_op_sort("self_time"), OpSort::self_time);
  EXPECT_EQ(parse_op_sort("total_time"), OpSort::total_time);
  EXPECT_EQ(parse_op_sort("calls"), OpSort::calls);
  try {
    parse_op_sort("self_cuda_memory_usage");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("'self_cuda_memory_usage'"), std::string::npos);
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

TEST(FormatOpTable, AlignedSortedAndLimited) {
  const std::vector<OpRow> rows = op_table(hand_built_recording(), OpGrouping::op);
  const std::string text = format_op_table(rows, OpSort::calls, 0);
  const std::vector<std::string> lines = lines_of(text);
  // Rule, header, rule, 7 rows, rule, total.
  ASSERT_EQ(lines.size(), 12u) << text;
  for (const char* column : {"Name", "Kind", "# of Calls", "Self time", "Total time", "Self Mem",
                             "Total Mem", "Peak Mem"}) {
    EXPECT_NE(lines[1].find(column), std::string::npos) << column;
  }
  // The last column is right-aligned: every header and row line ends at the same width, the
  // rules' width.
  const std::size_t width = report::display_width(lines[1]);
  EXPECT_EQ(lines[0], std::string(width, '-'));
  for (std::size_t i = 3; i < 10; ++i)
    EXPECT_EQ(report::display_width(lines[i]), width) << lines[i];
  EXPECT_EQ(lines[3].rfind("matmul ", 0), 0u) << "3 calls come first: " << lines[3];
  EXPECT_EQ(lines[4].rfind("blocks.*.attn (forward)", 0), 0u) << lines[4];  // 2 calls
  EXPECT_EQ(lines[5].rfind("scan", 0), 0u) << lines[5];                     // 2 calls, then by name
  EXPECT_NE(lines[3].find("192 B"), std::string::npos);
  EXPECT_NE(lines[3].find("0.300 us"), std::string::npos) << "3 × 100 ns";
  EXPECT_EQ(lines.back().rfind("Self time total: ", 0), 0u);

  const std::vector<std::string> limited = lines_of(format_op_table(rows, OpSort::peak_bytes, 2));
  ASSERT_EQ(limited.size(), 8u);
  EXPECT_EQ(limited[3].rfind("matmul_backward", 0), 0u);
  EXPECT_NE(limited[3].find("5.00 GiB"), std::string::npos);
  EXPECT_EQ(limited[4].rfind("blocks.*.attn (forward)", 0), 0u);
  EXPECT_EQ(limited[6], "(5 more rows)");
}

TEST(OpTableJson, OneObjectPerRow) {
  const std::vector<OpRow> rows = op_table(hand_built_recording(), OpGrouping::op);
  const nlohmann::json table = op_table_json(rows);
  ASSERT_EQ(table.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(table[i]["name"], rows[i].name);
    EXPECT_EQ(table[i]["kind"], span_kind_name(rows[i].kind));
    EXPECT_EQ(table[i]["calls"], rows[i].calls);
    EXPECT_EQ(table[i]["self_ms"], rows[i].self_ms);
    EXPECT_EQ(table[i]["total_ms"], rows[i].total_ms);
    EXPECT_EQ(table[i]["self_bytes"], rows[i].self_bytes);
    EXPECT_EQ(table[i]["total_bytes"], rows[i].total_bytes);
    EXPECT_EQ(table[i]["peak_bytes"], rows[i].peak_bytes);
    EXPECT_EQ(table[i].contains("flops"), rows[i].kind == SpanKind::kernel) << rows[i].name;
  }
}

}  // namespace
}  // namespace vramlab::profile
