// GoogleTest JSON results and child processes: passed/failed/skipped tests, filtered-out tests
// left out, malformed reports rejected; a crash, a timeout and a missing binary are told apart.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/platform/errors.h"
#include "common/workbook/gtest_report.h"
#include "common/workbook/process.h"
#include "common/workbook/verify_rules.h"

namespace vramlab::workbook {
namespace {

namespace fs = std::filesystem;

const char* kReport = R"({
  "tests": 4, "failures": 1,
  "testsuites": [
    {"name": "Suite", "testsuite": [
      {"name": "Passes", "status": "RUN", "result": "COMPLETED"},
      {"name": "Fails", "status": "RUN", "result": "COMPLETED",
       "failures": [{"failure": "a.cpp:3\nfirst", "type": ""}, {"failure": "second", "type": ""}]},
      {"name": "Skips", "status": "RUN", "result": "SKIPPED"},
      {"name": "Disabled", "status": "NOTRUN", "result": "SUPPRESSED"}
    ]}
  ]})";

TEST(GtestReport, ParsesOutcomesAndFailureMessages) {
  const auto tests = parse_gtest_json(kReport);
  ASSERT_EQ(tests.size(), 3u);
  EXPECT_EQ(tests[0].full_name(), "Suite.Passes");
  EXPECT_EQ(tests[0].outcome, TestOutcome::kPassed);
  EXPECT_EQ(tests[1].outcome, TestOutcome::kFailed);
  ASSERT_EQ(tests[1].failures.size(), 2u);
  EXPECT_EQ(tests[1].failures[0], "a.cpp:3\nfirst");
  EXPECT_EQ(tests[2].outcome, TestOutcome::kSkipped);
}

TEST(GtestReport, RunCountsAndAllPassedNeedTests) {
  TestRun run;
  run.status = RunStatus::kCompleted;
  EXPECT_FALSE(run.all_passed());  // no tests is not a pass
  run.tests = parse_gtest_json(kReport);
  EXPECT_EQ(run.passed(), 1u);
  EXPECT_EQ(run.failed(), 1u);
  EXPECT_EQ(run.skipped(), 1u);
  EXPECT_FALSE(run.all_passed());
  ASSERT_NE(run.first_failure(), nullptr);
  EXPECT_EQ(run.first_failure()->name, "Fails");
}

TEST(GtestReport, UndoesGoogleTestsByteWiseEscapingOfUtf8) {
  // GoogleTest writes the three bytes of "—" (E2 80 94) as \u00E2\u0080\u0094.
  const auto tests = parse_gtest_json(R"({"testsuites": [{"name": "S", "testsuite": [{"name": "T",
      "status": "RUN", "failures": [{"failure": "a\n\u00E2\u0080\u0094 b \"q\""},
                                    {"failure": "caf\u00E9"}]}]}]})");
  ASSERT_EQ(tests.size(), 1u);
  EXPECT_EQ(tests[0].failures[0], "a\n\u2014 b \"q\"");
  EXPECT_EQ(tests[0].failures[1], "caf\u00e9");  // not valid UTF-8 as bytes: a real é stays
}

TEST(GtestReport, MalformedReportsAreUsageErrors) {
  EXPECT_THROW(parse_gtest_json("not json"), UsageError);
  EXPECT_THROW(parse_gtest_json("{}"), UsageError);
  EXPECT_THROW(parse_gtest_json(R"({"testsuites": [{"testsuite": [{"status": "RUN"}]}]})"),
               UsageError);
}

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vramlab-test-process-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A shell script acting as a test binary.
  fs::path script(const std::string& name, const std::string& body) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }
  fs::path dir_;
};

TEST_F(ProcessTest, ExitCodeOutputAndTimeout) {
  const auto ok = run_process({"sh", "-c", "echo hello; exit 3"}, dir_ / "out.txt", 10.0);
  EXPECT_TRUE(ok.started);
  EXPECT_EQ(ok.exit_code, 3);
  EXPECT_FALSE(ok.succeeded());
  EXPECT_EQ(tail_of_file(dir_ / "out.txt", 5), "hello\n");
  const auto slow = run_process({"sleep", "20"}, dir_ / "slow.txt", 0.3);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_LT(slow.seconds, 5.0);
  const auto missing = run_process({"/nonexistent/program"}, dir_ / "missing.txt", 5.0);
  EXPECT_FALSE(missing.started);
}

TEST_F(ProcessTest, TestBinaryCrashTimeoutAndMissingAreToldApart) {
  const auto crash = run_test_binary(script("crash", "kill -SEGV $$"), "*", dir_, 10.0);
  EXPECT_EQ(crash.status, RunStatus::kCrashed);
  EXPECT_NE(crash.detail.find("signal 11"), std::string::npos) << crash.detail;
  const auto hang = run_test_binary(script("hang", "sleep 30"), "*", dir_, 0.3);
  EXPECT_EQ(hang.status, RunStatus::kTimedOut);
  const auto none = run_test_binary(dir_ / "absent", "*", dir_, 10.0);
  EXPECT_EQ(none.status, RunStatus::kNotBuilt);
  // Exit code 1 without a report (e.g. a failed static initialiser) is a crash too.
  const auto no_report = run_test_binary(script("noreport", "exit 1"), "*", dir_, 10.0);
  EXPECT_EQ(no_report.status, RunStatus::kCrashed);
}

TEST_F(ProcessTest, TestBinaryReportIsReadFromTheJsonItWrites) {
  // The fake binary writes the report to the path given in --gtest_output=json:PATH.
  std::ofstream(dir_ / "report.json") << kReport;
  const fs::path fake =
      script("fake", "for a in \"$@\"; do case \"$a\" in --gtest_output=json:*) cp '" +
                         (dir_ / "report.json").string() +
                         "' \"${a#--gtest_output=json:}\";; esac; done; exit 1");
  const auto run = run_test_binary(fake, "Suite.*", dir_ / "work", 10.0);
  EXPECT_EQ(run.status, RunStatus::kCompleted) << run.detail;
  EXPECT_EQ(run.tests.size(), 3u);
  EXPECT_EQ(run.failed(), 1u);
}

// `vramlab verify` runs a wrong variant's one test, the one its header names: a real GoogleTest
// binary (pass, fail, then a test that leaves a file) filtered to it runs only it, and the rule
// holds when that test fails and not when the named test is one that passes.
TEST_F(ProcessTest, AWrongVariantRunsOnlyTheTestMeantToCatchIt) {
  const fs::path marker = dir_ / "third-ran";
  ASSERT_EQ(::setenv("VRAMLAB_FIXTURE_RAN", marker.c_str(), 1), 0);
  const auto failing =
      run_test_binary(VRAMLAB_FIXTURE_THREE_TESTS, "Fixture.Fails", dir_ / "f", 30.0);
  const auto passing =
      run_test_binary(VRAMLAB_FIXTURE_THREE_TESTS, "Fixture.Passes", dir_ / "p", 30.0);
  const bool third_ran = fs::exists(marker);
  ::unsetenv("VRAMLAB_FIXTURE_RAN");

  WrongVariant variant;
  variant.name = "any";
  variant.caught_by = "Fixture.Fails";
  ASSERT_EQ(failing.status, RunStatus::kCompleted) << failing.detail << failing.output_tail;
  EXPECT_FALSE(third_ran);
  ASSERT_EQ(failing.tests.size(), 1u);
  EXPECT_EQ(failing.failed(), 1u);
  EXPECT_TRUE(wrong_variant_problems(failing, variant).empty());
  variant.caught_by = "Fixture.Passes";
  ASSERT_EQ(passing.status, RunStatus::kCompleted) << passing.detail << passing.output_tail;
  EXPECT_EQ(wrong_variant_problems(passing, variant).size(), 1u);
}

}  // namespace
}  // namespace vramlab::workbook
