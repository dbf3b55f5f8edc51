// Tests of common/snapshot/snapshot_pickle.h at the byte level: each JSON type's opcode and payload
// as CPython's pickletools documents them. (check_pickle_roundtrip.py loads them in Python.)
// Run: build/tests/bin/test_report --gtest_filter='EncodePickle.*:WriteSnapshotPickle.*'
#include "common/snapshot/snapshot_pickle.h"
#include "tests/file_size_limit.h"
#include "tests/temp_dir.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>

#include "tests/report/example_snapshot.h"
#include "tests/report/report_test_util.h"

namespace vramlab::report {

using snapshot::encode_pickle;
using snapshot::write_snapshot_pickle;
namespace {

using testing::bytes_of;

using nlohmann::json;

// The pickle of `value` without the "\x80\x02" header and the final '.'.
std::string body(const json& value) {
  const std::string bytes = encode_pickle(value);
  EXPECT_GE(bytes.size(), 3u);
  EXPECT_EQ(bytes.substr(0, 2), std::string("\x80\x02", 2));
  EXPECT_EQ(bytes.back(), '.');
  return bytes.substr(2, bytes.size() - 3);
}

TEST(EncodePickle, Constants) {
  EXPECT_EQ(body(nullptr), "N");
  EXPECT_EQ(body(true), bytes_of({0x88}));
  EXPECT_EQ(body(false), bytes_of({0x89}));
}

TEST(EncodePickle, IntegersUseTheSmallestOpcode) {
  EXPECT_EQ(body(0), bytes_of({'K', 0}));
  EXPECT_EQ(body(255), bytes_of({'K', 0xFF}));
  EXPECT_EQ(body(256), bytes_of({'M', 0x00, 0x01}));
  EXPECT_EQ(body(65535), bytes_of({'M', 0xFF, 0xFF}));
  EXPECT_EQ(body(65536), bytes_of({'J', 0x00, 0x00, 0x01, 0x00}));
  EXPECT_EQ(body(-1), bytes_of({'J', 0xFF, 0xFF, 0xFF, 0xFF}));
  EXPECT_EQ(body(std::numeric_limits<int32_t>::min()), bytes_of({'J', 0x00, 0x00, 0x00, 0x80}));
  // 2^31 needs a fifth byte so that its top bit is not read as a sign.
  EXPECT_EQ(body(int64_t{1} << 31), bytes_of({0x8A, 5, 0x00, 0x00, 0x00, 0x80, 0x00}));
  EXPECT_EQ(body(-(int64_t{1} << 31) - 1), bytes_of({0x8A, 5, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF}));
  EXPECT_EQ(body(std::numeric_limits<int64_t>::max()),
            bytes_of({0x8A, 8, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}));
  EXPECT_EQ(body(std::numeric_limits<int64_t>::min()),
            bytes_of({0x8A, 8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80}));
  EXPECT_EQ(body(std::numeric_limits<uint64_t>::max()),
            bytes_of({0x8A, 9, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00}));
  EXPECT_EQ(body(uint64_t{1} << 40), bytes_of({0x8A, 6, 0, 0, 0, 0, 0, 0x01}));
}

TEST(EncodePickle, FloatsAreBigEndianDoubles) {
  EXPECT_EQ(body(1.5), bytes_of({'G', 0x3F, 0xF8, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(body(-2.0), bytes_of({'G', 0xC0, 0x00, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(body(std::numeric_limits<double>::infinity()),
            bytes_of({'G', 0x7F, 0xF0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(body(std::numeric_limits<double>::denorm_min()),
            bytes_of({'G', 0, 0, 0, 0, 0, 0, 0, 0x01}));
  EXPECT_EQ(body(-0.0), bytes_of({'G', 0x80, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(EncodePickle, StringsAreLengthPrefixedUtf8) {
  EXPECT_EQ(body(""), bytes_of({'X', 0, 0, 0, 0}));
  EXPECT_EQ(body("µs"), bytes_of({'X', 3, 0, 0, 0, 0xC2, 0xB5, 's'}));
  EXPECT_EQ(body(std::string("a\0b", 3)), bytes_of({'X', 3, 0, 0, 0, 'a', 0, 'b'}));
}

TEST(EncodePickle, InvalidUtf8BytesBecomeReplacementCharacters) {
  // A lone continuation byte, a truncated 3-byte sequence, an encoded surrogate, an overlong '/'.
  EXPECT_EQ(body(std::string("a\x80z")), bytes_of({'X', 5, 0, 0, 0, 'a', 0xEF, 0xBF, 0xBD, 'z'}));
  EXPECT_EQ(body(std::string("\xE2\x86")),
            bytes_of({'X', 6, 0, 0, 0, 0xEF, 0xBF, 0xBD, 0xEF, 0xBF, 0xBD}));
  EXPECT_EQ(body(std::string("\xED\xA0\x80")).substr(1, 4), bytes_of({9, 0, 0, 0}));
  EXPECT_EQ(body(std::string("\xC0\xAF")).substr(1, 4), bytes_of({6, 0, 0, 0}));
  EXPECT_EQ(body(std::string("\xF0\x9F\x98\x80")),
            bytes_of({'X', 4, 0, 0, 0, 0xF0, 0x9F, 0x98, 0x80}));
}

TEST(EncodePickle, ContainersUseMarkAndBatches) {
  EXPECT_EQ(body(json::array()), "]");
  EXPECT_EQ(body(json::object()), "}");
  EXPECT_EQ(body(json::array({1, 2})), bytes_of({']', '(', 'K', 1, 'K', 2, 'e'}));
  EXPECT_EQ(body(json{{"a", nullptr}}), bytes_of({'}', '(', 'X', 1, 0, 0, 0, 'a', 'N', 'u'}));
  // 2500 items: APPENDS after 1000, 2000 and 2500.
  json long_list = json::array();
  for (int i = 0; i < 2500; ++i) long_list.push_back(nullptr);
  const std::string encoded = body(long_list);
  size_t appends = 0;
  size_t marks = 0;
  for (const char c : encoded) {
    appends += c == 'e';
    marks += c == '(';
  }
  EXPECT_EQ(appends, 3u);
  EXPECT_EQ(marks, 3u);
  EXPECT_EQ(encoded.size(), 1 + 2500 + 3 + 3);
}

TEST(EncodePickle, SegmentPoolIdIsATuple) {
  EXPECT_EQ(body(json{{"segment_pool_id", {0, 0}}}), bytes_of({'}', '(', 'X', 15, 0, 0, 0}) +
                                                         "segment_pool_id" +
                                                         bytes_of({'K', 0, 'K', 0, 0x86, 'u'}));
  EXPECT_EQ(body(json{{"segment_pool_id", json::array()}}).substr(22, 1), ")");
  const std::string four = body(json{{"segment_pool_id", {1, 2, 3, 4}}});
  EXPECT_EQ(four.substr(22), bytes_of({'(', 'K', 1, 'K', 2, 'K', 3, 'K', 4, 't', 'u'}));
  // The same array under another key stays a list.
  EXPECT_EQ(body(json{{"pool", {0, 0}}}).substr(11),
            bytes_of({']', '(', 'K', 0, 'K', 0, 'e', 'u'}));
}

TEST(EncodePickle, RejectsBinaryValues) {
  try {
    encode_pickle(json::binary({1, 2, 3}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("3 bytes"), std::string::npos) << error.what();
  }
}

TEST(WriteSnapshotPickle, WritesTheEncodingAndNamesAnUnwritablePath) {
  testing::ExampleWorkload workload;
  const json snapshot = testing::make_example_snapshot(workload);
  const std::string path = ::testing::TempDir() + "vramlab_snapshot.pickle";
  write_snapshot_pickle(snapshot, path);
  std::FILE* file = std::fopen(path.c_str(), "rb");
  ASSERT_NE(file, nullptr);
  std::string contents;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) contents.append(buffer, n);
  std::fclose(file);
  EXPECT_EQ(contents, encode_pickle(snapshot));
  try {
    write_snapshot_pickle(snapshot, "/nonexistent-dir/snap.pickle");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent-dir/snap.pickle"), std::string::npos)
        << error.what();
  }
}

// A write that fails (the disk fills: a file-size limit below the snapshot's size) is an error
// naming the path, and the snapshot already there stays whole; no partial file is left.
TEST(WriteSnapshotPickle, AFailedWriteLeavesTheFileThereAsItWas) {
  testing::ExampleWorkload workload;
  const json snapshot = testing::make_example_snapshot(workload);
  const test_build::TempDir dir;
  const std::string path = dir.path + "/snap.pickle";
  write_snapshot_pickle(json::object({{"segments", json::array()}}), path);
  const auto before = std::filesystem::file_size(path);
  ASSERT_GT(encode_pickle(snapshot).size(), 2 * before);
  {
    const test_build::FileSizeLimit full(before + 1);
    try {
      write_snapshot_pickle(snapshot, path);
      ADD_FAILURE() << "the write went past the file-size limit";
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
    }
  }
  EXPECT_EQ(std::filesystem::file_size(path), before);
  EXPECT_EQ(dir.files(), 1);
}

}  // namespace
}  // namespace vramlab::report
