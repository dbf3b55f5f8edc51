// The rules of `vramlab verify`, on synthetic test runs: verify must fail when a stub passes (or
// fails for another reason, or crashes), when a known-wrong variant passes the test meant to
// catch it or its patch no longer applies, when a reference fails or skips, and when hints, tests,
// snippet markers or a variant's header are missing.
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

WrongVariant variant(const std::string& name, const std::string& caught_by) {
  WrongVariant w;
  w.name = name;
  w.file = "solutions/01/wrong/x_" + name + ".patch";
  w.mistake = "forgets the master copy";
  w.caught_by = caught_by;
  return w;
}

// The run is filtered to the variant's own test: it must have run and failed.
TEST(VerifyRules, AWrongVariantMustFailTheTestMeantToCatchIt) {
  const WrongVariant w = variant("no_master_copy", "Suite.A");
  EXPECT_TRUE(wrong_variant_problems(completed({test("A", TestOutcome::kFailed, "x")}), w).empty());
  const auto slipped = wrong_variant_problems(completed({test("A", TestOutcome::kPassed)}), w);
  ASSERT_EQ(slipped.size(), 1u);
  EXPECT_NE(slipped[0].find("no_master_copy"), std::string::npos) << slipped[0];
  EXPECT_NE(slipped[0].find("Suite.A"), std::string::npos) << slipped[0];
  EXPECT_NE(slipped[0].find("forgets the master copy"), std::string::npos) << slipped[0];
  // A test name the binary does not have runs nothing: named, with the file that names it.
  const auto unknown = wrong_variant_problems(completed({}), w);
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_NE(unknown[0].find(w.file), std::string::npos) << unknown[0];
  EXPECT_EQ(wrong_variant_problems(completed({test("A", TestOutcome::kSkipped)}), w).size(), 1u);
  TestRun crashed;
  crashed.status = RunStatus::kCrashed;
  EXPECT_EQ(wrong_variant_problems(crashed, w).size(), 1u);
  TestRun timed_out;
  timed_out.status = RunStatus::kTimedOut;
  EXPECT_EQ(wrong_variant_problems(timed_out, w).size(), 1u);
}

TEST(VerifyRules, AWrongVariantsHeaderGivesItsMistakeAndItsTest) {
  const auto patch = parse_wrong_variant_header(
      "Mistake: takes the shard size as floor(n/N), so the last n mod N elements belong to no\n"
      "  rank\n"
      "Caught by: ShardRanges.EveryUnit\n"
      "\n"
      "--- a.cpp\n"
      "+++ a.cpp (wrong)\n"
      "-Mistake: not a header line\n",
      /*is_patch=*/true);
  EXPECT_EQ(patch.mistake,
            "takes the shard size as floor(n/N), so the last n mod N elements belong to no rank");
  EXPECT_EQ(patch.caught_by, "ShardRanges.EveryUnit");
  const auto source = parse_wrong_variant_header(
      "// Known-wrong variant of exercise 06.3, kept whole.\n"
      "// Mistake: computes dS = dP - delta\n"
      "//   without the factor P\n"
      "// Caught by: BackwardDs.EveryTile\n"
      "#include <x>\n"
      "// Caught by: Not.This\n",
      /*is_patch=*/false);
  EXPECT_EQ(source.mistake, "computes dS = dP - delta without the factor P");
  EXPECT_EQ(source.caught_by, "BackwardDs.EveryTile");
  const auto none = parse_wrong_variant_header("--- a.cpp\nMistake: after the diff\n", true);
  EXPECT_TRUE(none.mistake.empty());
  EXPECT_TRUE(none.caught_by.empty());
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
    write("ex/hints.md", "## Hint 1\na\n## Hint 2\nb\n## Hint 3\nc\n");
    ex_.hints_file = "ex/hints.md";
    ex_.hints = {"a", "b", "c"};
    ex_.wrong = {variant("w", "Suite.A")};
    ex_.wrong[0].file = "ex/wrong.cpp";
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
  Exercise no_hints_file = ex_;
  no_hints_file.hints_file = "ex/gone.md";
  EXPECT_EQ(exercise_file_problems(no_hints_file, root_).size(), 1u);
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
  missing_wrong.wrong.push_back(variant("gone", "Suite.A"));
  missing_wrong.wrong.back().file = "ex/gone.cpp";
  EXPECT_EQ(exercise_file_problems(missing_wrong, root_).size(), 1u);
  Exercise untested_wrong = ex_;
  untested_wrong.wrong[0].caught_by.clear();
  EXPECT_EQ(exercise_file_problems(untested_wrong, root_).size(), 1u);
  Exercise unexplained_wrong = ex_;
  unexplained_wrong.wrong[0].mistake.clear();
  EXPECT_EQ(exercise_file_problems(unexplained_wrong, root_).size(), 1u);
  write("ex/test.cpp", "//! [test]\n");  // one marker only
  EXPECT_EQ(exercise_file_problems(ex_, root_).size(), 1u);
}

// The drift signal: a patch applies while the reference keeps its context, and stops applying
// (no fuzz) once a line it touches or leans on changes. A whole-file variant has no patch.
TEST_F(ExerciseFiles, APatchThatNoLongerAppliesToItsReferenceIsNamed) {
  write("ex/ref.cpp", "int g() { return 0; }\n\nint f() {\n  return 1;\n}\n");
  write("ex/wrong.patch",
        "Mistake: returns 2\nCaught by: Suite.A\n\n"
        "--- ex/ref.cpp\n+++ ex/ref.cpp (wrong)\n@@ -3,3 +3,3 @@\n int f() {\n-  return 1;\n"
        "+  return 2;\n }\n");
  WrongVariant w = variant("two", "Suite.A");
  w.file = "ex/wrong.patch";
  const fs::path work = root_ / "work";
  EXPECT_TRUE(wrong_patch_problems(ex_, w, root_, work).empty());
  // An edit elsewhere only moves the hunk: it still applies.
  write("ex/ref.cpp", "int h();\nint g() { return 0; }\n\nint f() {\n  return 1;\n}\n");
  EXPECT_TRUE(wrong_patch_problems(ex_, w, root_, work).empty());
  // The line it changes has changed: it no longer applies, and the file is named.
  write("ex/ref.cpp", "int g() { return 0; }\n\nint f() {\n  return 1 + 0;\n}\n");
  const auto drifted = wrong_patch_problems(ex_, w, root_, work);
  ASSERT_EQ(drifted.size(), 1u);
  EXPECT_NE(drifted[0].find("ex/wrong.patch no longer applies"), std::string::npos) << drifted[0];
  // A context line has changed: without fuzz that is drift too.
  write("ex/ref.cpp", "int g() { return 0; }\n\nint f(void) {\n  return 1;\n}\n");
  EXPECT_EQ(wrong_patch_problems(ex_, w, root_, work).size(), 1u);
  // Nothing was written beside the reference (no .orig, no .rej).
  EXPECT_FALSE(fs::exists(root_ / "ex/ref.cpp.orig"));
  EXPECT_FALSE(fs::exists(root_ / "ex/ref.cpp.rej"));
  WrongVariant whole = variant("whole", "Suite.A");
  whole.file = "ex/wrong.cpp";
  EXPECT_TRUE(wrong_patch_problems(ex_, whole, root_, work).empty());
}

}  // namespace
}  // namespace vramlab::workbook
