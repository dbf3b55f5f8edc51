// The NOT IMPLEMENTED error of exercise stubs: its exact message, the file made relative to the
// repository, and the line the macro captures.
#include <gtest/gtest.h>

#include <string>

#include "common/platform/build_info.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::workbook {
namespace {

TEST(NotImplemented, MessageNamesTheExerciseFileLineAndHintCommand) {
  EXPECT_EQ(
      not_implemented_message("02.1", "exercises/02-x/recompute.cpp", 42),
      "NOT IMPLEMENTED YET: exercise 02.1 (exercises/02-x/recompute.cpp:42) \u2014 edit this file; "
      "vramlab hint 02.1");
}

TEST(NotImplemented, PathsInsideTheRepositoryBecomeRelative) {
  const std::string root = build_info::kSourceDir;
  EXPECT_EQ(repository_relative_path(root + "/exercises/01-a/x.cpp"), "exercises/01-a/x.cpp");
  EXPECT_EQ(repository_relative_path("/elsewhere/x.cpp"), "/elsewhere/x.cpp");
  EXPECT_EQ(repository_relative_path("relative/x.cpp"), "relative/x.cpp");
  // Relative to a build directory one or two levels inside the repository (ccache's base_dir).
  EXPECT_EQ(repository_relative_path("../exercises/01-a/x.cpp"), "exercises/01-a/x.cpp");
  EXPECT_EQ(repository_relative_path("../../exercises/01-a/x.cpp"), "exercises/01-a/x.cpp");
  // A sibling folder that merely starts with the root's name is not inside it.
  EXPECT_EQ(repository_relative_path(root + "-other/x.cpp"), root + "-other/x.cpp");
}

TEST(NotImplemented, MacroThrowsWithThisFileAndLine) {
  long expected_line = 0;
  try {
    expected_line = __LINE__ + 1;
    VRAMLAB_NOT_IMPLEMENTED("07.3");
  } catch (const NotImplementedError& e) {
    EXPECT_EQ(e.exercise_id(), "07.3");
    EXPECT_EQ(e.file(), "tests/workbook/test_not_implemented.cpp");
    EXPECT_EQ(e.line(), expected_line);
    EXPECT_EQ(std::string(e.what()).rfind(std::string(kNotImplementedMarker) + "07.3 (", 0), 0u)
        << e.what();
    return;
  }
  FAIL() << "VRAMLAB_NOT_IMPLEMENTED did not throw";
}

}  // namespace
}  // namespace vramlab::workbook
