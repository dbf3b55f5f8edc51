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

// Found by tests/fuzz/fuzz_state: get<int>() of a level of 1e30 was undefined behaviour (UBSan:
// outside the range of int), 2^32 wrapped to 0, and a level near INT_MAX overflowed when `vramlab
// hint` added one. A level is an integer from 0 to 1000; anything else names the file and the
// level.
TEST(State, HintLevelOutsideZeroToAThousandIsAUsageErrorNamingIt) {
  const fs::path file = fs::temp_directory_path() /
                        ("vramlab-test-state-level-" + std::to_string(getpid()) + ".json");
  for (const std::string level : {"1e30", "-1e30", "2.5", "4294967296", "2147483647", "-1",
                                  "18446744073709551615", "1001", "true", "null"}) {
    std::ofstream(file) << R"({"hints_seen": {"01.1": )" << level << "}}";
    try {
      load_state(file);
      ADD_FAILURE() << "accepted hint level " << level;
    } catch (const UsageError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(file.string()), std::string::npos) << message;
      EXPECT_NE(message.find("hint level"), std::string::npos) << message;
    }
  }
  for (const int level : {0, 1, 3, 1000}) {
    std::ofstream(file) << R"({"hints_seen": {"01.1": )" << level << "}}";
    EXPECT_EQ(load_state(file).hints_seen.at("01.1"), level);
  }
  fs::remove(file);
}

}  // namespace
}  // namespace vramlab::workbook
