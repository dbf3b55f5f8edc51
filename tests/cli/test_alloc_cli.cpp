// `vramlab alloc` never plays what the user typed on the terminal: a trace holding a NUL or an
// escape sequence is refused with one line that shows it escaped, and a trace path with control
// characters is shown escaped in the summary, the out-of-memory report and the exported timeline.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_run.h"

namespace {

namespace fs = std::filesystem;

using Result = vramlab::cli_test::CliResult;
using vramlab::cli_test::count_lines;

class AllocCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vramlab-alloc-cli-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write_trace(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  static Result vramlab(const std::vector<std::string>& args) {
    return vramlab::cli_test::run_vramlab(args);
  }
  static std::string slurp(const fs::path& path) {
    std::ostringstream text;
    text << std::ifstream(path, std::ios::binary).rdbuf();
    return text.str();
  }
  fs::path dir_;
};

bool has_control_character(const std::string& text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n') || byte == 0x7f) return true;
  }
  return false;
}

TEST_F(AllocCli, ATraceWithANulOrAnEscapeIsExit2WithOneEscapedLine) {
  const struct {
    std::string text, shown;
  } cases[] = {
      {std::string("alloc a 1MiB\nalloc b\0c 4096\n", 29), "alloc b\\x00c 4096"},
      {"alloc a 1MiB\nalloc \x1b]0;pwned\x07 4096\n", "alloc \\x1b]0;pwned\\x07 4096"},
  };
  for (const auto& c : cases) {
    const fs::path trace = write_trace("bad.trace", c.text);
    const Result r = vramlab({"alloc", trace.string()});
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << r.out;
    EXPECT_NE(r.out.find("bad.trace:2: control character"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(c.shown), std::string::npos) << r.out;
    EXPECT_FALSE(has_control_character(r.out)) << r.out;
  }
}

TEST_F(AllocCli, APathWithControlCharactersIsShownEscapedEverywhere) {
  const std::string name = "tr\x1b[31mace.trace";
  const fs::path fits = write_trace(name, "alloc a 1MiB category=activation\nfree a\n");
  const Result summary = vramlab({"alloc", fits.string()});
  ASSERT_EQ(summary.exit_code, 0) << summary.out;
  EXPECT_NE(summary.out.find("tr\\x1b[31mace.trace on sim:24GiB"), std::string::npos)
      << summary.out;
  EXPECT_FALSE(has_control_character(summary.out)) << summary.out;

  const fs::path oom = write_trace("o\x1b[2Jom.trace", "alloc big 2GiB\n");
  const Result failed = vramlab({"alloc", oom.string(), "--device", "sim:1GiB", "--export-snapshot",
                                 (dir_ / "oom.html").string()});
  EXPECT_EQ(failed.exit_code, 1) << failed.out;
  EXPECT_NE(failed.out.find("o\\x1b[2Jom.trace:1: out of memory at 'alloc big 2GiB'"),
            std::string::npos)
      << failed.out;
  EXPECT_FALSE(has_control_character(failed.out)) << failed.out;
  const std::string page = slurp(dir_ / "oom.html");
  ASSERT_FALSE(page.empty());
  EXPECT_EQ(page.find('\x1b'), std::string::npos) << "the timeline's title holds a raw escape";

  const Result missing = vramlab({"alloc", (dir_ / "no\x07such.trace").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.out.find("no\\x07such.trace"), std::string::npos) << missing.out;
  EXPECT_FALSE(has_control_character(missing.out)) << missing.out;
}

// What a learner reads comes first; the raw keys wait for --stats (or --json).
TEST_F(AllocCli, DefaultOutputLeadsWithTheSummaryAndCategoriesAndStatsAddsTheKeys) {
  const fs::path trace =
      write_trace("t.trace",
                  "alloc w 3MiB category=parameter\nalloc x 5MiB category=activation\n"
                  "free x\n");
  const Result plain = vramlab({"alloc", trace.string()});
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_LT(count_lines(plain.out), 80) << plain.out;
  EXPECT_NE(plain.out.find("PyTorch CUDA memory summary"), std::string::npos) << plain.out;
  EXPECT_TRUE(std::regex_search(plain.out, std::regex(R"(\n  parameter +3\.00 MiB +3\.00 MiB\n)")))
      << plain.out;
  EXPECT_TRUE(std::regex_search(plain.out, std::regex(R"(\n  activation +0 B +5\.00 MiB\n)")))
      << plain.out;
  EXPECT_EQ(plain.out.find("allocated_bytes.all.current"), std::string::npos) << plain.out;
  const Result stats = vramlab({"alloc", trace.string(), "--stats"});
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  EXPECT_NE(stats.out.find("allocated_bytes.all.current"), std::string::npos) << stats.out;
  EXPECT_LT(stats.out.find("PyTorch CUDA memory summary"),
            stats.out.find("allocated_bytes.all.current"))
      << stats.out;
}

}  // namespace
