// LessonMain: the flag checks every lesson shares, the order of its text output, what --json adds,
// the advice after an out-of-memory error and the exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/memory/oom_error.h"
#include "common/platform/errors.h"
#include "common/workbook/lesson_main.h"

namespace vramlab::workbook {
namespace {

namespace fs = std::filesystem;

// Parses one option with a check; "" when it is accepted, else the error's text.
std::string parse_error(const CLI::Validator& check, const std::string& value, bool real = false) {
  CLI::App app;
  int64_t n = 0;
  double x = 0.0;
  if (real)
    app.add_option("--x", x)->check(check);
  else
    app.add_option("--n", n)->check(check);
  const std::string flag = real ? "--x" : "--n";
  std::vector<std::string> args = {value, flag};  // CLI11 takes them in reverse
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(LessonMainChecks, AtLeastNamesTheMinimumAndTheValue) {
  EXPECT_EQ(parse_error(at_least(1), "1"), "");
  EXPECT_EQ(parse_error(at_least(1), "9223372036854775807"), "");
  EXPECT_EQ(parse_error(at_least(0), "0"), "");
  const std::string zero = parse_error(at_least(1), "0");
  EXPECT_NE(zero.find("--n"), std::string::npos) << zero;
  EXPECT_NE(zero.find("must be >= 1, got 0"), std::string::npos) << zero;
  EXPECT_NE(parse_error(at_least(0), "-3").find("must be >= 0, got -3"), std::string::npos);
  EXPECT_NE(parse_error(at_least(-5), "-9223372036854775808").find("got -9223372036854775808"),
            std::string::npos);
  // Not an integer: CLI11's conversion error, not this check's.
  const std::string word = parse_error(at_least(1), "abc");
  EXPECT_NE(word, "");
  EXPECT_EQ(word.find("must be >="), std::string::npos) << word;
}

TEST(LessonMainChecks, InRangeNamesTheBoundsAndTheValue) {
  for (const char* inside : {"1", "2", "63", "64"})
    EXPECT_EQ(parse_error(in_range(1, 64), inside), "");
  for (const char* outside : {"0", "65", "-1", "9223372036854775807"}) {
    const std::string e = parse_error(in_range(1, 64), outside);
    EXPECT_NE(e.find("must be in [1, 64], got " + std::string(outside)), std::string::npos) << e;
  }
  EXPECT_EQ(parse_error(in_range(-3, -3), "-3"), "");
  const std::string word = parse_error(in_range(1, 64), "4x");
  EXPECT_NE(word, "");
  EXPECT_EQ(word.find("must be in"), std::string::npos) << word;
}

TEST(LessonMainChecks, PositiveFiniteRefusesZeroNegativeAndNonFinite) {
  EXPECT_EQ(parse_error(positive_finite(), "0.001", true), "");
  EXPECT_EQ(parse_error(positive_finite(), "1e30", true), "");
  for (const char* bad : {"0", "-0.5", "-1e-9", "nan", "inf", "-inf"}) {
    const std::string e = parse_error(positive_finite(), bad, true);
    EXPECT_NE(e.find("must be a finite number > 0, got " + std::string(bad)), std::string::npos)
        << bad << ": " << e;
  }
}

class LessonMainRun : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per test: ctest runs the tests as parallel processes, and one of them turns
    // lesson.json into a directory to make the save fail.
    dir_ = fs::path(::testing::TempDir()) /
           ("vramlab-lesson-main-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs a lesson "99" with the given flags; \p lesson makes its output.
  int run(std::vector<std::string> flags, const std::function<LessonOutput(LessonRun&)>& lesson,
          std::string* out, std::string* err) {
    LessonMain main("99", "lesson99_test", "Lesson 99", "a.svg");
    int64_t steps = 1;
    main.app().add_option("--steps", steps)->check(at_least(1));
    flags.insert(flags.begin(), "lesson99_test");
    flags.push_back("--out-dir");
    flags.push_back(dir_.string());
    std::vector<char*> argv;
    for (std::string& f : flags) argv.push_back(f.data());
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    const int code = main.run(static_cast<int>(argv.size()), argv.data(), lesson);
    *out = ::testing::internal::GetCapturedStdout();
    *err = ::testing::internal::GetCapturedStderr();
    return code;
  }

  static LessonOutput output(LessonRun& r) {
    LessonOutput o;
    o.json = {{"lesson", "99"}};
    o.text = "TABLES\n";
    o.figures = {{"a_svg", (r.out_dir() / "a.svg").string()}};
    o.exercises = ExerciseReport{"Exercises:", {{"99.1", true, true, "fine"}}};
    o.next = {{r.command("--steps 2"), "two steps"}, {"vramlab estimate", "the formulas"}};
    return o;
  }

  fs::path dir_;
};

TEST_F(LessonMainRun, TextComesInOneOrder) {
  std::string out, err;
  ASSERT_EQ(run({}, output, &out, &err), 0) << err;
  EXPECT_EQ(out, "TABLES\n\nExercises:\n  99.1 agrees: fine\n\nFigures in " + dir_.string() +
                     ": a.svg\nNext:\n  vramlab run 99 --steps 2   # two steps\n"
                     "  vramlab estimate   # the formulas\n");
  EXPECT_TRUE(fs::is_directory(dir_));
}

TEST_F(LessonMainRun, JsonAddsFiguresAndExercisesAndNoText) {
  std::string out, err;
  bool told_json = false;
  ASSERT_EQ(run(
                {"--json"},
                [&](LessonRun& r) {
                  told_json = r.json();
                  EXPECT_EQ(r.progress_function(), nullptr);
                  return output(r);
                },
                &out, &err),
            0);
  EXPECT_TRUE(told_json);
  EXPECT_EQ(err, "");
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["lesson"], "99");
  EXPECT_EQ(j["figures"]["a_svg"], (dir_ / "a.svg").string());
  ASSERT_EQ(j["exercises"].size(), 1u);
  EXPECT_EQ(j["exercises"][0]["id"], "99.1");
  EXPECT_EQ(out.find("TABLES"), std::string::npos);
}

// A claims file is evaluated against the lesson's own JSON: the verdict follows the measured
// number (both outcomes), lands in --json under "claims" and prints after the lesson's tables.
TEST_F(LessonMainRun, ClaimsAreJudgedOnTheRunsNumbersInTextAndJson) {
  static constexpr std::string_view kClaims = R"({"lesson": "99", "claims": [{
      "id": 7, "claim": "halves it", "values": {"before": "/bytes/0", "after": "/bytes/1"},
      "measured": "{before:bytes} -> {after:bytes}", "holds_if": "after * 2 == before",
      "holds": "holds", "fails": "does not hold"}]})";
  for (const int64_t after : {int64_t{512}, int64_t{700}}) {
    const auto lesson = [&](LessonRun& r) {
      LessonOutput o = output(r);
      o.json["bytes"] = {1024, after};
      o.claims_file = kClaims;
      return o;
    };
    const std::string verdict = after == 512 ? "holds" : "does not hold";
    std::string out, err;
    ASSERT_EQ(run({"--json"}, lesson, &out, &err), 0) << err;
    const nlohmann::json j = nlohmann::json::parse(out);
    ASSERT_EQ(j["claims"].size(), 1u);
    EXPECT_EQ(j["claims"][0]["id"], 7);
    EXPECT_EQ(j["claims"][0]["measured"], after == 512 ? "1.00 KiB -> 512 B" : "1.00 KiB -> 700 B");
    EXPECT_EQ(j["claims"][0]["verdict"], verdict);
    ASSERT_EQ(run({}, lesson, &out, &err), 0) << err;
    const size_t tables = out.find("TABLES\n"), claims = out.find("claims, against these numbers");
    ASSERT_NE(claims, std::string::npos) << out;
    EXPECT_LT(tables, claims);
    EXPECT_LT(out.find(verdict, claims), out.find("Exercises:")) << out;
  }
}

TEST_F(LessonMainRun, EveryRunSavesItsJsonAndAFailedSaveIsExitOne) {
  std::string out, err;
  ASSERT_EQ(run({}, output, &out, &err), 0) << err;
  const fs::path saved = dir_ / std::string(kLessonRunFile);
  std::ifstream in(saved);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["lesson"], "99");
  EXPECT_EQ(j["exercises"][0]["id"], "99.1");
  // A folder where the file should go: the rename fails; the error names the file, the exit is 1
  // and no partial file is left behind.
  fs::remove(saved);
  fs::create_directory(saved);
  EXPECT_EQ(run({}, output, &out, &err), kExitFailure);
  EXPECT_NE(err.find("cannot save the run's JSON to"), std::string::npos) << err;
  EXPECT_NE(err.find("lesson.json"), std::string::npos) << err;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().string().find(".partial"), std::string::npos) << e.path();
}

TEST_F(LessonMainRun, OutOfMemoryIsExitOneWithTheAdvice) {
  std::string out, err;
  const int code = run(
      {},
      [](LessonRun& r) -> LessonOutput {
        r.on_out_of_memory("sim:64MiB", "--device sim:a100-80g", "a larger simulated GPU");
        throw memory::OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 MiB", {});
      },
      &out, &err);
  EXPECT_EQ(code, kExitFailure);
  EXPECT_EQ(out, "");
  EXPECT_NE(err.find("CUDA out of memory. Tried to allocate 2.00 MiB"), std::string::npos) << err;
  EXPECT_NE(err.find("lesson 99: a run does not fit sim:64MiB. Try:\n  vramlab run 99 --device "
                     "sim:a100-80g   # a larger simulated GPU"),
            std::string::npos)
      << err;
}

TEST_F(LessonMainRun, OutOfMemoryAdviceInTheLessonsOwnWordsFollowsPyTorchsMessage) {
  std::string out, err;
  const int code = run(
      {},
      [](LessonRun& r) -> LessonOutput {
        r.on_out_of_memory("sim:64MiB", "--device sim:a100-80g", "a larger simulated GPU");
        r.on_out_of_memory("lesson 99: too big.\nTry:\n  one\n  two\n");
        throw memory::OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 MiB", {});
      },
      &out, &err);
  EXPECT_EQ(code, kExitFailure);
  EXPECT_EQ(out, "");
  const size_t pytorch = err.find("CUDA out of memory. Tried to allocate 2.00 MiB");
  ASSERT_NE(pytorch, std::string::npos) << err;
  EXPECT_NE(err.find("\n\nlesson 99: too big.\nTry:\n  one\n  two\n", pytorch), std::string::npos)
      << err;
  EXPECT_EQ(err.find("a larger simulated GPU"), std::string::npos)
      << err;  // the advice replaces it
}

TEST_F(LessonMainRun, BadInputIsExitTwoInOneLine) {
  std::string out, err;
  bool ran = false;
  const auto lesson = [&](LessonRun& r) {
    ran = true;
    return output(r);
  };
  EXPECT_EQ(run({"--steps", "0"}, lesson, &out, &err), kExitUsage);
  EXPECT_FALSE(ran);
  EXPECT_EQ(err, "lesson99_test: error: --steps: must be >= 1, got 0\n");
  EXPECT_EQ(run({"--bogus"}, lesson, &out, &err), kExitUsage);
  EXPECT_NE(err.find("--bogus"), std::string::npos);
  EXPECT_EQ(
      run(
          {}, [](LessonRun&) -> LessonOutput { throw UsageError("--x is wrong"); }, &out, &err),
      kExitUsage);
  EXPECT_EQ(err, "lesson99_test: error: --x is wrong\n");
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace vramlab::workbook
