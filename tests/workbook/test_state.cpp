// The learner's state file: a missing file is an empty state, a round trip keeps everything, a
// corrupt file is a UsageError naming it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/platform/errors.h"
#include "common/workbook/state.h"

namespace vramlab::workbook {
namespace {

namespace fs = std::filesystem;

TEST(State, MissingFileIsEmptyAndRoundTripKeepsEverything) {
  const fs::path dir =
      fs::temp_directory_path() / ("vramlab-test-state-" + std::to_string(getpid()));
  const fs::path file = state_path(dir);
  EXPECT_EQ(file, dir / ".vramlab" / "state.json");
  const State empty = load_state(file);
  EXPECT_TRUE(empty.current.empty());
  EXPECT_TRUE(empty.done.empty());
  State s;
  s.current = "01.2";
  s.done = {"01.1", "01.3"};
  s.hints_seen = {{"01.2", 2}};
  save_state(file, s);
  const State back = load_state(file);
  EXPECT_EQ(back.current, "01.2");
  EXPECT_EQ(back.done, s.done);
  EXPECT_EQ(back.hints_seen, s.hints_seen);
  EXPECT_TRUE(back.is_done("01.1"));
  EXPECT_FALSE(back.is_done("01.2"));
  fs::remove_all(dir);
}

TEST(State, CorruptFileIsAUsageErrorNamingIt) {
  const fs::path file =
      fs::temp_directory_path() / ("vramlab-test-state-bad-" + std::to_string(getpid()) + ".json");
  for (const char* text :
       {"{not json", "[1, 2]", R"({"done": [1]})", R"({"hints_seen": {"01.1": "x"}})"}) {
    std::ofstream(file) << text;
    try {
      load_state(file);
      ADD_FAILURE() << "accepted " << text;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    }
  }
  fs::remove(file);
}

}  // namespace
}  // namespace vramlab::workbook
