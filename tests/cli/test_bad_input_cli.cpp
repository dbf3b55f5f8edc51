// Bad input on the command line, one test per class of finding of tests/cli/walk_bad_input.py
// (issue #20), so a regression is caught without the whole walk: a value is rejected in exactly
// one line that names it (control characters as \xNN), before any progress line, and nothing a
// user typed reaches the terminal raw, not even in an accepted run's "Figures in" line.
//
// Oracle: the contract itself (exit 2, one line, the value as typed, escaped as
// platform::printable documents), checked on the process's whole output.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_run.h"

namespace {

namespace fs = std::filesystem;
using vramlab::cli_test::CliResult;

// Control characters a terminal would act on (every byte below 0x20 but the newline, and 0x7f).
std::string raw_controls(const std::string& text) {
  std::string found;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n') || byte == 0x7f) found += c;
  }
  return found;
}

size_t lines_in(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Exit 2 and exactly one line (stdout and stderr together: nothing on stdout, no progress line
// on stderr before the error) that holds \p shown, with no raw control character.
void expect_one_line_naming(const CliResult& r, const std::string& shown) {
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(lines_in(r.out), 1u) << "expected one line, got:\n" << r.out;
  EXPECT_NE(r.out.find(shown), std::string::npos) << "'" << shown << "' not named in:\n" << r.out;
  EXPECT_EQ(raw_controls(r.out), "") << r.out;
}

// The lesson binaries this build has, with arguments that make an accepted run short (the
// smallest model on meta or a small sim device, no at-scale tables).
const std::map<std::string, std::vector<std::string>>& small_runs() {
  static const std::map<std::string, std::vector<std::string>> runs = {
      {"lesson01", {"--batch", "1", "--seq", "8", "--device", "meta"}},
      {"lesson02",
       {"--batch", "1", "--seq", "8", "--steps", "1", "--layers", "2", "--max-batch-device", "none",
        "--no-scale", "--no-compression"}},
      {"lesson03",
       {"--batch", "1", "--seq", "8", "--steps", "1", "--layers", "1", "--hidden", "16", "--heads",
        "2", "--vocab", "32", "--no-scale", "--no-accumulation"}},
      {"lesson04",
       {"--batch", "1", "--seq", "8", "--steps", "1", "--ranks", "2", "--simulated", "--no-scale"}},
      {"lesson05",
       {"--batch", "1", "--seq", "8", "--steps", "2", "--sweep-model", "gpt2-124m", "--sweep-seq",
        "64", "--links", "8", "--no-scale", "--dpu-steps", "3", "--dpu-from", "2"}},
      {"lesson06", {"--seqs", "16", "--batch", "1", "--no-training", "--no-scale"}},
      {"lesson07", {"--batch", "1", "--seq", "8", "--steps", "2", "--no-scale"}},
      {"lesson09",
       {"--batch", "1", "--seq", "8", "--steps", "1", "--optimizers", "sgd", "--no-scale"}},
  };
  return runs;
}

std::vector<std::string> lesson_binaries() {
  std::vector<std::string> binaries;
  std::istringstream list(VRAMLAB_LESSON_BINARY_PATHS);
  for (std::string path; std::getline(list, path, ':');)  // a list as PATH does it
    if (!path.empty()) binaries.push_back(path);
  return binaries;
}

std::string lesson_key(const std::string& binary) {
  const std::string name = fs::path(binary).filename().string();
  return name.substr(0, name.find('_'));
}

class BadInputCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vramlab-bad-input-cli-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "empty-build");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(BadInputCli, EveryLessonShowsAnOutDirWithControlCharactersEscaped) {
  const std::vector<std::string> binaries = lesson_binaries();
  ASSERT_FALSE(binaries.empty());
  for (const std::string& binary : binaries) {
    SCOPED_TRACE(binary);
    const auto small = small_runs().find(lesson_key(binary));
    ASSERT_NE(small, small_runs().end())
        << "a new lesson binary: add its short run to small_runs() in this test";
    const fs::path out_dir = dir_ / (lesson_key(binary) + "\ttab\x1b[31mred");
    std::vector<std::string> argv = {binary, "--out-dir", out_dir.string()};
    argv.insert(argv.end(), small->second.begin(), small->second.end());
    const CliResult r = vramlab::cli_test::run_command(argv, 300.0);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(raw_controls(r.out), "") << r.out;
    EXPECT_NE(r.out.find(lesson_key(binary) + "\\x09tab\\x1b[31mred"), std::string::npos)
        << "the figures' folder is not shown escaped:\n"
        << r.out;
    EXPECT_TRUE(fs::is_directory(out_dir)) << "the folder itself keeps its real name";
  }
}

TEST_F(BadInputCli, AnOutDirThatCannotBeAFolderIsOneLineBeforeAnyProgress) {
  std::ofstream(dir_ / "a-file") << "not a folder\n";
  const std::string bad = (dir_ / "a-file" / "x\ty").string();
  for (const std::string& binary : lesson_binaries()) {
    SCOPED_TRACE(binary);
    // The lesson's default run (no small arguments): a check after the work would take minutes
    // and print progress lines first.
    const CliResult r = vramlab::cli_test::run_command({binary, "--out-dir", bad}, 120.0);
    expect_one_line_naming(r, "a-file/x\\x09y");
    EXPECT_NE(r.out.find("--out-dir"), std::string::npos) << r.out;
  }
}

TEST_F(BadInputCli, ALessonJsonWithANonUtf8OutDirIsStillJson) {
  const std::string binary = lesson_binaries().front();
  const auto& small = small_runs().at(lesson_key(binary));
  std::vector<std::string> argv = {binary, "--json", "--out-dir", (dir_ / "caf\xff").string()};
  argv.insert(argv.end(), small.begin(), small.end());
  const CliResult r = vramlab::cli_test::run_command(argv, 300.0);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const size_t start = r.out.find('{');
  ASSERT_NE(start, std::string::npos) << r.out;
  EXPECT_TRUE(nlohmann::json::accept(r.out.substr(start))) << r.out;
}

TEST_F(BadInputCli, VerifyAndRunNameAnEmptyBuildDirBeforeTheirProgressLine) {
  const std::string empty = (dir_ / "empty-build").string();
  expect_one_line_naming(vramlab::cli_test::run_vramlab({"verify", "01", "--build-dir", empty}),
                         "no configured build in '" + empty + "'");
  expect_one_line_naming(vramlab::cli_test::run_vramlab({"run", "01", "--build-dir", empty}),
                         "no configured build in '" + empty + "'");
}

TEST_F(BadInputCli, AWordWhereARequiredPositionalGoesIsNamed) {
  // CLI11 would answer "trace is required" and never name what was typed.
  expect_one_line_naming(vramlab::cli_test::run_vramlab({"alloc", "-inf"}),
                         "unexpected argument '-inf'");
  expect_one_line_naming(vramlab::cli_test::run_vramlab({"hint", "-x\x1b"}),
                         "unexpected argument '-x\\x1b'");
  expect_one_line_naming(vramlab::cli_test::run_vramlab({"run", "-inf"}), "'-inf'");
}

TEST_F(BadInputCli, AFloatBeyondAFloatsRangeIsNamedAsTyped) {
  // Stored in a float, 1e308 would become inf and the message would name inf.
  for (const std::string value : {"1e308", "-3.5e38", "1e999"})
    expect_one_line_naming(vramlab::cli_test::run_vramlab({"train", "--lr", value}),
                           "'" + value + "'");
  for (const std::string& binary : lesson_binaries())
    if (lesson_key(binary) == "lesson02")
      expect_one_line_naming(vramlab::cli_test::run_command({binary, "--dropout", "1e308"}),
                             "'1e308'");
  // At the edge: 3e38 is inside a float's range, so the option's own check names it.
  expect_one_line_naming(
      vramlab::cli_test::run_vramlab({"train", "--model", "gpt2-tiny", "--dropout", "3e38"}),
      "got 3e+38");
}

TEST_F(BadInputCli, AnEmptyNumberAndANegativeUnsignedAreRefusedNotDefaulted) {
  expect_one_line_naming(vramlab::cli_test::run_vramlab({"train", "--batch", ""}),
                         "--batch: an empty value is not a number");
  expect_one_line_naming(vramlab::cli_test::run_vramlab({"train", "--dropout", ""}),
                         "--dropout: an empty value is not a number");
  for (const std::string value : {"-1", "-9223372036854775809"})
    expect_one_line_naming(vramlab::cli_test::run_vramlab({"train", "--seed", value}),
                           "'" + value + "' is negative");
  for (const std::string& binary : lesson_binaries())
    expect_one_line_naming(vramlab::cli_test::run_command({binary, "--seed", "-1"}),
                           "'-1' is negative");
}

}  // namespace
