// Running a GoogleTest binary and reading its JSON report (see gtest_report.h).
#include "common/workbook/gtest_report.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "common/platform/errors.h"
#include "common/workbook/process.h"

namespace vramlab::workbook {

namespace fs = std::filesystem;
using nlohmann::json;

size_t TestRun::passed() const {
  size_t n = 0;
  for (const auto& t : tests) n += t.outcome == TestOutcome::kPassed;
  return n;
}

size_t TestRun::failed() const {
  size_t n = 0;
  for (const auto& t : tests) n += t.outcome == TestOutcome::kFailed;
  return n;
}

size_t TestRun::skipped() const {
  size_t n = 0;
  for (const auto& t : tests) n += t.outcome == TestOutcome::kSkipped;
  return n;
}

bool TestRun::all_passed() const {
  return status == RunStatus::kCompleted && !tests.empty() && passed() == tests.size();
}

const TestCaseResult* TestRun::first_failure() const {
  for (const auto& t : tests)
    if (t.outcome == TestOutcome::kFailed) return &t;
  return nullptr;
}

std::string_view run_status_name(RunStatus status) {
  switch (status) {
    case RunStatus::kCompleted:
      return "completed";
    case RunStatus::kCrashed:
      return "crashed";
    case RunStatus::kTimedOut:
      return "timed out";
    case RunStatus::kNotBuilt:
      return "not built";
  }
  return "unknown";
}

namespace {

bool valid_utf8(const std::string& bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    const size_t length = c < 0x80             ? 1
                          : (c & 0xE0) == 0xC0 ? 2
                          : (c & 0xF0) == 0xE0 ? 3
                          : (c & 0xF8) == 0xF0 ? 4
                                               : 0;
    if (length == 0 || (length == 2 && c < 0xC2) || i + length > bytes.size()) return false;
    for (size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(bytes[i + k]) & 0xC0) != 0x80) return false;
    i += length;
  }
  return true;
}

// GoogleTest's JSON writer escapes each byte of a UTF-8 failure message as its own \u00XX code
// point, so "—" arrives as three Latin-1 characters. When every code point of a decoded string is
// below 256 and those bytes form valid UTF-8, they were such bytes: take them back.
std::string repair_utf8(const std::string& text) {
  std::string bytes;
  bool any_high = false;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      bytes += static_cast<char>(c);
      i += 1;
    } else if ((c & 0xE0) == 0xC0 && c <= 0xC3 && i + 1 < text.size()) {
      // U+0080..U+00FF, two bytes in UTF-8.
      bytes +=
          static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3F));
      any_high = true;
      i += 2;
    } else {
      return text;  // a code point above U+00FF: real UTF-8 text, leave it
    }
  }
  return any_high && valid_utf8(bytes) ? bytes : text;
}

}  // namespace

std::vector<TestCaseResult> parse_gtest_json(std::string_view json_text) {
  const json report = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded() || !report.is_object() || !report.contains("testsuites") ||
      !report.at("testsuites").is_array())
    throw UsageError("not a GoogleTest JSON report (no \"testsuites\" list)");
  std::vector<TestCaseResult> tests;
  try {
    for (const auto& suite : report.at("testsuites")) {
      for (const auto& test : suite.value("testsuite", json::array())) {
        if (test.value("status", "RUN") != "RUN") continue;
        TestCaseResult result;
        result.suite = suite.at("name").get<std::string>();
        result.name = test.at("name").get<std::string>();
        for (const auto& failure : test.value("failures", json::array()))
          result.failures.push_back(repair_utf8(failure.value("failure", "")));
        if (!result.failures.empty())
          result.outcome = TestOutcome::kFailed;
        else if (test.value("result", "COMPLETED") == "SKIPPED")
          result.outcome = TestOutcome::kSkipped;
        tests.push_back(std::move(result));
      }
    }
  } catch (const json::exception& e) {
    throw UsageError(std::string("malformed GoogleTest JSON report: ") + e.what());
  }
  return tests;
}

TestRun run_test_binary(const fs::path& binary, const std::string& filter, const fs::path& work_dir,
                        double timeout_seconds) {
  TestRun run;
  if (!fs::exists(binary)) {
    run.detail = binary.string() + " does not exist";
    return run;
  }
  std::error_code error;
  fs::create_directories(work_dir, error);
  const std::string stem = binary.filename().string();
  const fs::path json_path = work_dir / (stem + ".json");
  const fs::path log_path = work_dir / (stem + ".log");
  fs::remove(json_path, error);
  std::vector<std::string> argv = {binary.string(), "--gtest_filter=" + filter,
                                   "--gtest_output=json:" + json_path.string(), "--gtest_color=no"};
  const ProcessResult process = run_process(argv, log_path, timeout_seconds);
  run.seconds = process.seconds;
  run.detail = process.describe();
  if (!process.started) return run;
  if (process.timed_out) {
    run.status = RunStatus::kTimedOut;
    run.output_tail = tail_of_file(log_path, 30);
    return run;
  }
  std::ifstream in(json_path);
  const bool expected_exit =
      process.signal == 0 && (process.exit_code == 0 || process.exit_code == 1);
  if (!in || !expected_exit) {
    run.status = RunStatus::kCrashed;
    run.output_tail = tail_of_file(log_path, 30);
    return run;
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    run.tests = parse_gtest_json(text.str());
    run.status = RunStatus::kCompleted;
  } catch (const UsageError& e) {
    run.status = RunStatus::kCrashed;
    run.detail = e.what();
    run.output_tail = tail_of_file(log_path, 30);
  }
  return run;
}

}  // namespace vramlab::workbook
