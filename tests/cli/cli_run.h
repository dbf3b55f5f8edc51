// Runs a command-line program the way a learner does, for the tests in tests/cli: through the
// workbook's process runner, with a time limit (a hung command fails its test instead of blocking
// the suite), stdout and stderr captured together and in order.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/workbook/process.h"

namespace vramlab::cli_test {

struct CliResult {
  int exit_code = -1;    // -1: did not start, timed out or died of a signal
  double seconds = 0.0;  // wall time
  std::string out;       // stdout and stderr, in order
};

inline CliResult run_command(const std::vector<std::string>& argv, double timeout_seconds = 60.0) {
  static std::atomic<int> runs{0};
  const std::filesystem::path output =
      std::filesystem::temp_directory_path() /
      ("vramlab_cli_test_" + std::to_string(getpid()) + "_" + std::to_string(runs++) + ".txt");
  const workbook::ProcessResult run = workbook::run_process(argv, output, timeout_seconds);
  std::ostringstream text;
  text << std::ifstream(output, std::ios::binary).rdbuf();
  std::filesystem::remove(output);
  return {run.started && !run.timed_out && run.signal == 0 ? run.exit_code : -1, run.seconds,
          text.str()};
}

inline std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// \return the number of '\n' in \p text.
inline int count_lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

#ifdef VRAMLAB_CLI_PATH  // the test targets of tests/cli (vramlab_add_cli_test) define it
// `vramlab ARGS...` (the binary this test target was built against).
inline CliResult run_vramlab(const std::vector<std::string>& args, double timeout_seconds = 60.0) {
  std::vector<std::string> argv = {VRAMLAB_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, timeout_seconds);
}
#endif

// Every line of \p out that is a JSON object, parsed: a `--json` run prints one per step (or
// trial), then its summary; stderr lines in between are skipped.
inline std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.front() == '{') lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// The last of json_lines(\p out): a `--json` run's summary.
inline nlohmann::json last_json_line(const std::string& out) {
  std::vector<nlohmann::json> lines = json_lines(out);
  if (lines.empty()) throw std::runtime_error("no line of JSON in the output: " + out);
  return std::move(lines.back());
}

}  // namespace vramlab::cli_test
