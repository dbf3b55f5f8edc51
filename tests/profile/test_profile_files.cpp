// Tests of write_profile (common/profile/profile_files.h): the six files of a recording, each
// readable by what reads it (the pickle and the JSON snapshot decode to the recording's snapshot,
// the trace and the tables are the recording's), and a directory that cannot be made is named.
// Run: build/tests/bin/test_profile --gtest_filter='WriteProfile.*'
#include "common/profile/profile_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/platform/errors.h"
#include "common/profile/chrome_trace.h"
#include "common/profile/op_table.h"
#include "common/snapshot/snapshot_pickle.h"
#include "tests/profile/recording_fixture.h"

namespace vramlab::profile {
namespace {

using nlohmann::json;

std::string read_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file) << path;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

class WriteProfile : public ::testing::Test {
 protected:
  // One directory per test and process: ctest runs the tests of this binary in parallel.
  std::filesystem::path root_ = std::filesystem::path(::testing::TempDir()) /
                                ("vramlab_write_profile_" + std::to_string(getpid()) + "_" +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { std::filesystem::remove_all(root_); }
  void TearDown() override { std::filesystem::remove_all(root_); }
};

TEST_F(WriteProfile, WritesSixFilesThatReadBackAsTheRecording) {
  const Recording recording = testing::hand_built_recording();
  const std::string directory = (root_ / "nested" / "rank0").string();
  const ProfileFiles files = write_profile(recording, directory, "step <1> & more");

  for (const std::string& path : {files.snapshot_pickle, files.snapshot_json, files.trace_json,
                                  files.ops_table, files.ops_json, files.timeline_html}) {
    EXPECT_EQ(std::filesystem::path(path).parent_path(), std::filesystem::path(directory)) << path;
    EXPECT_GT(std::filesystem::file_size(path), 0u) << path;
  }
  EXPECT_EQ(std::filesystem::path(files.snapshot_pickle).filename(), "snapshot.pickle");
  EXPECT_EQ(snapshot::read_snapshot_file(files.snapshot_pickle), recording.snapshot);
  EXPECT_EQ(snapshot::read_snapshot_file(files.snapshot_json), recording.snapshot);
  EXPECT_EQ(json::parse(read_text(files.trace_json)), chrome_trace(recording));

  const json ops = json::parse(read_text(files.ops_json));
  EXPECT_EQ(ops.at("by_op"), op_table_json(op_table(recording, OpGrouping::op)));
  EXPECT_EQ(ops.at("by_module"), op_table_json(op_table(recording, OpGrouping::module)));

  // The text table holds both tables, by op first; its first row is the op with the most self
  // bytes (the 5 GiB gradient's matmul_backward).
  const std::string table = read_text(files.ops_table);
  const size_t per_op = table.find("Per op");
  const size_t per_module = table.find("Per module");
  ASSERT_NE(per_op, std::string::npos) << table;
  ASSERT_NE(per_module, std::string::npos) << table;
  EXPECT_LT(per_op, per_module);
  const size_t backward = table.find("matmul_backward");
  EXPECT_LT(backward, per_module) << table;
  EXPECT_LT(backward, table.find("softmax")) << table;

  const std::string html = read_text(files.timeline_html);
  EXPECT_NE(html.find("step &lt;1&gt; &amp; more"), std::string::npos);
  EXPECT_EQ(html.find("step <1>"), std::string::npos);
}

TEST_F(WriteProfile, ReplacesTheFilesOfAnEarlierRun) {
  const Recording recording = testing::hand_built_recording();
  const std::string directory = root_.string();
  std::filesystem::create_directories(root_);
  std::ofstream(root_ / "snapshot.json") << std::string(100000, 'x');
  const ProfileFiles files = write_profile(recording, directory, "again");
  EXPECT_EQ(snapshot::read_snapshot_file(files.snapshot_json), recording.snapshot);
}

TEST_F(WriteProfile, NamesADirectoryItCannotCreate) {
  std::filesystem::create_directories(root_);
  const std::string file = (root_ / "a-file").string();
  std::ofstream(file) << "not a directory";
  for (const std::string& directory : {file, file + "/below"}) {
    try {
      write_profile(testing::hand_built_recording(), directory, "t");
      FAIL() << "wrote into " << directory;
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find(directory), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace vramlab::profile
