// The rules of `vramlab verify`, on synthetic test runs: verify must fail when a stub passes (or
// fails for another reason, or crashes), when a known-wrong variant slips through, when a
// reference fails or skips, and when hints, tests or snippet markers are missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/workbook/not_implemented.h"
#include "common/workbook/verify_rules.h"

namespace vramlab::workbook {
namespace {

namespace fs = std::filesystem;

TestCaseResult test(const std::string& name, TestOutcome outcome, const std::string& failure = "") {
  TestCaseResult t{"Suite", name, outcome, {}};
  if (!failure.empty()) t.failures.push_back(failure);
  return t;
}

TestRun completed(std::vector<TestCaseResult> tests) {
  TestRun run;
  run.status = RunStatus::kCompleted;
  run.tests = std::move(tests);
  return run;
}

const std::string kStubFailure = "C++ exception with description \"" +
                                 not_implemented_message("01.1", "exercises/01/x.cpp", 18) +
                                 "\" thrown in the test body.";

TEST(VerifyRules, AStubFailingEveryTestWithNotImplementedHolds) {
  const auto run = completed({test("A", TestOutcome::kFailed, kStubFailure),
                              test("B", TestOutcome::kFailed, kStubFailure)});
  EXPECT_TRUE(stub_problems(run, "01.1").empty());
}

TEST(VerifyRules, AStubThatPassesATestFailsVerify) {
  const auto run =
      completed({test("A", TestOutcome::kFailed, kStubFailure), test("B", TestOutcome::kPassed)});
  const auto problems = stub_problems(run, "01.1");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("Suite.B"), std::string::npos) << problems[0];
}

TEST(VerifyRules, AStubFailingForAnotherReasonOrAnotherExerciseFailsVerify) {
  EXPECT_EQ(
      stub_problems(completed({test("A", TestOutcome::kFailed, "Expected: 16\nActual: 0")}), "01.1")
          .size(),
      1u);
  // The message must name this exercise: 01.1 is not 01.10, and not 01.2.
  EXPECT_EQ(
      stub_problems(completed({test("A", TestOutcome::kFailed, kStubFailure)}), "01.2").size(), 1u);
  const std::string other = not_implemented_message("01.10", "x.cpp", 1);
  EXPECT_EQ(stub_problems(completed({test("A", TestOutcome::kFailed, other)}), "01.1").size(), 1u);
}

TEST(VerifyRules, ACrashedTimedOutSkippedOrEmptyStubRunFailsVerify) {
  TestRun crashed;
  crashed.status = RunStatus::kCrashed;
  crashed.detail = "killed by signal 11";
  EXPECT_EQ(stub_problems(crashed, "01.1").size(), 1u);
  TestRun timed_out;
  timed_out.status = RunStatus::kTimedOut;
  EXPECT_EQ(stub_problems(timed_out, "01.1").size(), 1u);
  EXPECT_EQ(stub_problems(completed({}), "01.1").size(), 1u);
  EXPECT_EQ(stub_problems(completed({test("A", TestOutcome::kSkipped)}), "01.1").size(), 1u);
}

TEST(VerifyRules, AWrongVariantThatPassesEverythingSlipsThroughAndFailsVerify) {
  const auto slipped =
      completed({test("A", TestOutcome::kPassed), test("B", TestOutcome::kPassed)});
  const auto problems = wrong_variant_problems(slipped, "no_master_copy");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("no_master_copy"), std::string::npos);
  EXPECT_TRUE(wrong_variant_problems(completed({test("A", TestOutcome::kPassed),
                                                test("B", TestOutcome::kFailed, "x")}),
                                     "no_master_copy")
                  .empty());
  TestRun crashed;
  crashed.status = RunStatus::kCrashed;
  EXPECT_EQ(wrong_variant_problems(crashed, "v").size(), 1u);
}

TEST(VerifyRules, AReferenceMustPassEveryTestWithoutSkips) {
  EXPECT_TRUE(reference_problems(completed({test("A", TestOutcome::kPassed)})).empty());
  EXPECT_EQ(reference_problems(
                completed({test("A", TestOutcome::kPassed), test("B", TestOutcome::kFailed, "x")}))
                .size(),
            1u);
  EXPECT_EQ(reference_problems(completed({test("A", TestOutcome::kSkipped)})).size(), 1u);
  EXPECT_EQ(reference_problems(completed({})).size(), 1u);
  TestRun timed_out;
  timed_out.status = RunStatus::kTimedOut;
  EXPECT_EQ(reference_problems(timed_out).size(), 1u);
}

class ExerciseFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vramlab-test-verify-" + std::to_string(getpid()));
    fs::create_directories(root_ / "ex");
    write("ex/stub.cpp", "//! [stub]\nint f();\n//! [stub]\n");
    write("ex/ref.cpp", "int f() { return 1; }\n");
    write("ex/api.h", "int f();\n");
    write("ex/test.cpp", "  //! [test]\n  //! [test]\n");
    write("ex/wrong.cpp", "int f() { return 2; }\n");
    ex_.id = "09.1";
    ex_.stub = "ex/stub.cpp";
    ex_.reference = "ex/ref.cpp";
    ex_.api = "ex/api.h";
    ex_.tests = {"ex/test.cpp"};
    ex_.hints = {"a", "b", "c"};
    ex_.wrong = {{"w", "ex/wrong.cpp", "m"}};
    ex_.snippets = {{"ex/stub.cpp", "stub"}, {"ex/test.cpp", "test"}};
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    std::ofstream(root_ / path) << text;
  }
  fs::path root_;
  Exercise ex_;
};

TEST_F(ExerciseFiles, ACompleteExerciseHolds) {
  const auto problems = exercise_file_problems(ex_, root_);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(snippet_marker_count(root_ / "ex/test.cpp", "test"), 2u);
}

TEST_F(ExerciseFiles, MissingHintsTestsSnippetsOrFilesFailVerify) {
  Exercise two_hints = ex_;
  two_hints.hints.pop_back();
  EXPECT_EQ(exercise_file_problems(two_hints, root_).size(), 1u);
  Exercise empty_hint = ex_;
  empty_hint.hints[1] = "  ";
  EXPECT_EQ(exercise_file_problems(empty_hint, root_).size(), 1u);
  Exercise no_tests = ex_;
  no_tests.tests.clear();
  EXPECT_EQ(exercise_file_problems(no_tests, root_).size(), 1u);
  Exercise no_snippets = ex_;
  no_snippets.snippets.clear();
  EXPECT_EQ(exercise_file_problems(no_snippets, root_).size(), 1u);
  Exercise bad_snippet = ex_;
  bad_snippet.snippets.push_back({"ex/ref.cpp", "reference"});
  EXPECT_EQ(exercise_file_problems(bad_snippet, root_).size(), 1u);
  Exercise missing_wrong = ex_;
  missing_wrong.wrong.push_back({"gone", "ex/gone.cpp", ""});
  EXPECT_EQ(exercise_file_problems(missing_wrong, root_).size(), 1u);
  write("ex/test.cpp", "//! [test]\n");  // one marker only
  EXPECT_EQ(exercise_file_problems(ex_, root_).size(), 1u);
}

}  // namespace
}  // namespace vramlab::workbook
