// Lesson manifests: decoding, ids and targets, selection by exercise or lesson, unknown ids as
// UsageErrors naming the value, and the checkout's own manifests (every file they name exists).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/platform/build_info.h"
#include "common/platform/errors.h"
#include "common/workbook/manifest.h"
#include "common/workbook/verify_rules.h"

namespace vramlab::workbook {
namespace {

using nlohmann::json;

json sample() {
  return json::parse(R"({
    "id": "03", "title": "Mixed precision", "requires": ["cpu"], "binary": "lesson03_mixed",
    "exercises": [
      {"id": "03.1", "title": "one", "requires": ["cpu"], "stub": "exercises/03/a.cpp",
       "reference": "solutions/03/a.cpp", "api": "lessons/03/api/a.h", "tests": ["t.cpp"],
       "test_filter": "A.*", "hints": "exercises/03/hints/a.md",
       "wrong": [{"name": "fp16_accumulate", "file": "solutions/03/wrong/a.patch"}],
       "snippets": [{"file": "exercises/03/a.cpp", "name": "stub"}]},
      {"id": "03.2", "title": "two", "requires": ["cuda"], "stub": "s", "reference": "r", "api": "a"}
    ]})");
}

TEST(Manifest, DecodesEveryKey) {
  const Lesson lesson = parse_lesson_manifest(sample(), "lessons/03-mixed");
  EXPECT_EQ(lesson.id, "03");
  EXPECT_EQ(lesson.binary, "lesson03_mixed");
  ASSERT_EQ(lesson.exercises.size(), 2u);
  const Exercise& ex = lesson.exercises[0];
  EXPECT_EQ(ex.lesson_id, "03");
  EXPECT_EQ(ex.test_filter, "A.*");
  EXPECT_EQ(ex.hints_file, "exercises/03/hints/a.md");
  EXPECT_TRUE(ex.hints.empty());  // load_workbook reads the file
  ASSERT_EQ(ex.wrong.size(), 1u);
  EXPECT_EQ(ex.wrong[0].name, "fp16_accumulate");
  EXPECT_TRUE(ex.wrong[0].is_patch());
  EXPECT_EQ(ex.target_stem(), "ex_03_1");
  EXPECT_EQ(ex.mine_test_target(), "test_ex_03_1_mine");
  EXPECT_EQ(ex.reference_test_target(), "test_ex_03_1_ref");
  EXPECT_EQ(ex.wrong_test_target("fp16_accumulate"), "test_ex_03_1_wrong_fp16_accumulate");
  EXPECT_FALSE(ex.needs_gpu());
  EXPECT_TRUE(lesson.exercises[1].needs_gpu());
  EXPECT_EQ(lesson.exercises[1].test_filter, "*");
}

TEST(Manifest, MalformedManifestsNameTheProblem) {
  json no_stub = sample();
  no_stub["exercises"][0].erase("stub");
  try {
    parse_lesson_manifest(no_stub, "lessons/03-mixed");
    FAIL() << "accepted an exercise without a stub";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("\"stub\""), std::string::npos) << e.what();
  }
  json wrong_lesson = sample();
  wrong_lesson["exercises"][0]["id"] = "04.1";
  EXPECT_THROW(parse_lesson_manifest(wrong_lesson, "lessons/03-mixed"), UsageError);
}

// Found by tests/fuzz/fuzz_manifest: an exercise id holding a NUL (JSON "\u0000") cut the error
// message at the NUL, so the rest of the id and of the sentence never reached the learner.
TEST(Manifest, AnIdWithControlCharactersIsNamedWholeWithThemEscaped) {
  for (const auto& [id, shown] :
       {std::pair<std::string, std::string>{std::string("9\0x.1", 5), "9\\x00x.1"},
        {"9\x1b[2J.1", "9\\x1b[2J.1"},
        {"9\x7f.1", "9\\x7f.1"}}) {
    json bad = sample();
    bad["exercises"][0]["id"] = id;
    try {
      parse_lesson_manifest(bad, "lessons/03-mixed");
      ADD_FAILURE() << "accepted exercise id " << shown;
    } catch (const UsageError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("exercise " + shown + ": the id must start with the lesson id '03.'"),
                std::string::npos)
          << message;
    }
  }
}

TEST(Manifest, SelectionByExerciseOrLessonAndUnknownIds) {
  Workbook book;
  book.lessons.push_back(parse_lesson_manifest(sample(), "lessons/03-mixed"));
  EXPECT_EQ(book.select("03.2").front()->id, "03.2");
  EXPECT_EQ(book.select("03").size(), 2u);
  EXPECT_EQ(book.select("3").size(), 2u);
  EXPECT_EQ(book.select("03-mixed").size(), 2u);
  EXPECT_EQ(book.all_exercises().size(), 2u);
  try {
    (void)book.exercise("03.9");
    FAIL() << "accepted 03.9";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'03.9'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("03.1, 03.2"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)book.lesson("07"), UsageError);
  EXPECT_THROW((void)book.select("07"), UsageError);
}

TEST(Manifest, TheCheckoutsManifestsAreCompleteAndTheirFilesExist) {
  const std::filesystem::path root = build_info::kSourceDir;
  const Workbook book = load_workbook(root);
  ASSERT_FALSE(book.lessons.empty());
  EXPECT_GE(book.lesson("01").exercises.size(), 3u);
  for (const Exercise* ex : book.all_exercises()) {
    const auto problems = exercise_file_problems(*ex, root);
    EXPECT_TRUE(problems.empty()) << ex->id << ": " << (problems.empty() ? "" : problems.front());
    EXPECT_FALSE(ex->wrong.empty()) << ex->id << " has no known-wrong variant";
  }
}

TEST(Manifest, HintsAreTheSectionsOfTheirMarkdownFileWithItsEscapesUndone) {
  const auto hints = parse_hints_markdown(
      "# Hints for exercise 01.1: title\n\nIntro, not a hint.\n\n"
      "## Hint 1\n\nFirst line\nwraps here.\n\n## Hint 2\n\n"
      "bytes = B\\*T\\*4, a \\<b\\> and `x\\*y` kept.\n\nA second paragraph.\n"
      "## Hint 3\nlast\n",
      "h.md");
  ASSERT_EQ(hints.size(), 3u);
  EXPECT_EQ(hints[0], "First line wraps here.");
  EXPECT_EQ(hints[1], "bytes = B*T*4, a <b> and `x\\*y` kept.\n\nA second paragraph.");
  EXPECT_EQ(hints[2], "last");
  EXPECT_TRUE(parse_hints_markdown("# Only a title\n", "h.md").empty());
  try {
    (void)parse_hints_markdown("## Hint 1\na\n## Hint 3\nc\n", "x/h.md");
    FAIL() << "accepted a skipped level";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("x/h.md"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'## Hint 2'"), std::string::npos) << e.what();
  }
}

// A reference edited under a variant's patch shows up here, in ctest, and not only in verify.
TEST(Manifest, EveryKnownWrongPatchAppliesToItsReference) {
  const std::filesystem::path root = build_info::kSourceDir;
  const std::filesystem::path work =
      std::filesystem::temp_directory_path() / ("vramlab-test-patches-" + std::to_string(getpid()));
  size_t patches = 0;
  const Workbook book = load_workbook(root);
  for (const Exercise* ex : book.all_exercises())
    for (const auto& variant : ex->wrong) {
      patches += variant.is_patch() ? 1 : 0;
      for (const auto& problem : wrong_patch_problems(*ex, variant, root, work))
        ADD_FAILURE() << ex->id << " " << variant.name << ": " << problem;
    }
  std::filesystem::remove_all(work);
  EXPECT_GT(patches, 0u);
}

}  // namespace
}  // namespace vramlab::workbook
