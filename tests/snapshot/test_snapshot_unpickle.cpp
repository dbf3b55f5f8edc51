// Tests of decode_pickle and read_snapshot_file (common/snapshot/snapshot_pickle.h): what the
// encoder writes comes back equal, protocol 4/5 opcodes and the memo behave as CPython's unpickler
// does, and hostile input (truncated, cyclic, exponentially shared, deeply nested, mutated) is a
// UsageError with a byte offset, never a crash. (check_pickle_decode.py decodes Python's pickles.)
// Run: build/tests/bin/test_report --gtest_filter='DecodePickle.*:ReadSnapshotFile.*'
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>

#include "common/platform/errors.h"
#include "common/snapshot/snapshot_pickle.h"
#include "tests/report/example_snapshot.h"
#include "tests/report/report_test_util.h"

namespace vramlab::report {

using snapshot::decode_pickle;
using snapshot::encode_pickle;
using snapshot::read_snapshot_file;
namespace {

using testing::bytes_of;

using nlohmann::json;

// "\x80\x04" + body + "." : a protocol-4 pickle around hand-written opcodes.
std::string proto4(const std::string& body) {
  return bytes_of({0x80, 4}) + body + ".";
}

// The first difference between two JSON values, as a JSON patch operation ("" if equal).
std::string first_difference(const json& expected, const json& actual) {
  const json patch = json::diff(expected, actual);
  return patch.empty() ? "" : patch[0].dump().substr(0, 300);
}

// A random JSON value: every integer width and sign, doubles over the whole exponent range,
// multi-byte UTF-8, lists long enough to cross the encoder's 1000-item batches (near the leaves,
// so the values stay small).
json random_value(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth > 0 ? 9 : 7)) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return static_cast<int64_t>(rng()) >> (rng() % 64);
    case 3:
      return rng() >> (rng() % 64);
    case 4: {
      std::uniform_real_distribution<double> exponent(-307.0, 307.0);
      return (rng() % 2 == 0 ? 1.0 : -1.0) * std::pow(10.0, exponent(rng)) * 1.2345678901234567;
    }
    case 5:
    case 6: {
      static const char* kPieces[] = {"a", "Z", "é", "→", "显存", "😀", "\"", "\\", "\n", " ", "<"};
      std::string text;
      const size_t length = rng() % 5 == 0 ? 200 + rng() % 300 : rng() % 12;
      for (size_t i = 0; i < length; ++i) text += kPieces[rng() % std::size(kPieces)];
      return text;
    }
    case 7: {
      json array = json::array();
      const size_t length = depth <= 2 && rng() % 20 == 0 ? 1000 + rng() % 1500 : rng() % 7;
      for (size_t i = 0; i < length; ++i) array.push_back(random_value(rng, depth - 1));
      return array;
    }
    default: {
      json object = json::object();
      const size_t length = depth <= 2 && rng() % 20 == 0 ? 1000 + rng() % 1200 : rng() % 7;
      for (size_t i = 0; i < length; ++i) {
        const std::string key =
            rng() % 7 == 0 ? "segment_pool_id" : "k" + std::to_string(rng() % (length + 3));
        object[key] = random_value(rng, depth - 1);
      }
      return object;
    }
  }
}

// The message of the UsageError decode_pickle throws ("" and a test failure when none is thrown).
std::string decode_error(const std::string& bytes) {
  try {
    const json value = decode_pickle(bytes);
    ADD_FAILURE() << "decoded without error: " << value.dump().substr(0, 200);
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

void expect_error(const std::string& bytes, const std::string& needle, size_t offset) {
  const std::string message = decode_error(bytes);
  EXPECT_NE(message.find(needle), std::string::npos) << message;
  EXPECT_NE(message.find("at byte " + std::to_string(offset)), std::string::npos) << message;
}

TEST(DecodePickle, RandomValuesRoundTripThroughTheEncoder) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    const json value = random_value(rng, 1 + static_cast<int>(seed % 6));
    const json decoded = decode_pickle(encode_pickle(value));
    ASSERT_EQ(decoded, value) << "seed " << seed << ": " << first_difference(value, decoded);
  }
}

TEST(DecodePickle, ASnapshotRoundTrips) {
  for (const size_t layers : {1u, 3u, 12u}) {
    testing::ExampleWorkload workload;
    workload.layer_count = layers;
    workload.seed = layers;
    workload.end_with_oom = layers == 3;
    const json snapshot = testing::make_example_snapshot(workload);
    const json decoded = decode_pickle(encode_pickle(snapshot));
    ASSERT_EQ(decoded, snapshot) << layers << " layers: " << first_difference(snapshot, decoded);
  }
}

TEST(DecodePickle, IntegersOfEveryWidthAndSignRoundTrip) {
  std::vector<json> values;
  for (int bit = 0; bit < 63; ++bit) {
    const int64_t power = int64_t{1} << bit;
    for (const int64_t v : {power, power - 1, power + 1, -power, -power - 1, -power + 1})
      values.emplace_back(v);
  }
  values.emplace_back(std::numeric_limits<int64_t>::min());
  values.emplace_back(std::numeric_limits<int64_t>::max());
  values.emplace_back(uint64_t{1} << 63);
  values.emplace_back(std::numeric_limits<uint64_t>::max());
  for (const json& value : values) {
    const json decoded = decode_pickle(encode_pickle(value));
    EXPECT_EQ(decoded, value) << value.dump() << " came back as " << decoded.dump();
  }
  // uint64 above INT64_MAX stays unsigned; a negative LONG1 stays signed.
  EXPECT_TRUE(
      decode_pickle(encode_pickle(std::numeric_limits<uint64_t>::max())).is_number_unsigned());
  EXPECT_EQ(decode_pickle(encode_pickle(std::numeric_limits<int64_t>::min())).get<int64_t>(),
            std::numeric_limits<int64_t>::min());
}

TEST(DecodePickle, Long1AcceptsRedundantSignBytesAndRejectsWiderValues) {
  // Python writes minimal widths; any width with only sign-extension bytes beyond 8 is the same
  // number.
  EXPECT_EQ(decode_pickle(proto4(bytes_of({0x8A, 0}))), json(0));
  EXPECT_EQ(decode_pickle(proto4(bytes_of({0x8A, 12, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}))),
            json(5));
  EXPECT_EQ(decode_pickle(proto4(
                bytes_of({0x8A, 10, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}))),
            json(-2));
  // 2^64 and -2^63 - 1 need 65 bits.
  expect_error(proto4(bytes_of({0x8A, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1})), "wider than 64 bits", 2);
  expect_error(proto4(bytes_of({0x8A, 9, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF})),
               "wider than 64 bits", 2);
}

TEST(DecodePickle, SpecialFloatsKeepTheirBits) {
  const double values[] = {
      std::numeric_limits<double>::infinity(),   -std::numeric_limits<double>::infinity(),
      std::numeric_limits<double>::quiet_NaN(),  -0.0,
      std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max()};
  for (const double value : values) {
    const json decoded = decode_pickle(encode_pickle(value));
    ASSERT_TRUE(decoded.is_number_float()) << decoded.dump();
    EXPECT_EQ(std::bit_cast<uint64_t>(decoded.get<double>()), std::bit_cast<uint64_t>(value))
        << value;
  }
}

TEST(DecodePickle, Protocol4FramesMemoAndShortStrings) {
  // {"a": [1, "xy"], "b": <the same list>, 7: "é"}: FRAME, MEMOIZE after every container and
  // string, BINGET for the shared list, SHORT_BINUNICODE and BINUNICODE8, an int key.
  const std::string body =
      bytes_of({'}',  0x94, '(', 0x8C, 1,   'a',  0x94, ']', 0x94, '(',  'K',  1,   0x8C,
                2,    'x',  'y', 0x94, 'e', 0x8C, 1,    'b', 0x94, 'h',  2,    'K', 7,
                0x8D, 2,    0,   0,    0,   0,    0,    0,   0,    0xC3, 0xA9, 'u', '.'});
  std::string frame = bytes_of({0x80, 4, 0x95});
  for (int i = 0; i < 8; ++i) frame += static_cast<char>(i == 0 ? body.size() : 0);
  const json decoded = decode_pickle(frame + body);
  const json expected = {{"a", {1, "xy"}}, {"b", {1, "xy"}}, {"7", "é"}};
  EXPECT_EQ(decoded, expected) << decoded.dump();
}

TEST(DecodePickle, AMemoizedContainerIsSharedWithItsLaterItems) {
  // A dict is memoized while empty (as Python's pickler does, before its items), then filled;
  // a later BINGET must see the filled dict. [d, d] where d = {"k": None}:
  const std::string bytes = proto4(
      bytes_of({']', 'q', 0, '(', '}', 'q', 1, 'X', 1, 0, 0, 0, 'k', 'N', 's', 'h', 1, 'e'}));
  EXPECT_EQ(decode_pickle(bytes), json::parse(R"([{"k": null}, {"k": null}])"));
  // LONG_BINPUT / LONG_BINGET at an index past 255.
  const std::string long_memo =
      proto4(bytes_of({']', '(', 'K', 9, 'r', 0x2C, 0x01, 0, 0, 'j', 0x2C, 0x01, 0, 0, 'e'}));
  EXPECT_EQ(decode_pickle(long_memo), json::parse("[9, 9]"));
}

TEST(DecodePickle, TuplesOfEveryOpcodeBecomeArrays) {
  EXPECT_EQ(decode_pickle(proto4(")")), json::array());
  EXPECT_EQ(decode_pickle(proto4(bytes_of({'K', 1, 0x85}))), json::parse("[1]"));
  EXPECT_EQ(decode_pickle(proto4(bytes_of({'K', 1, 'K', 2, 0x86}))), json::parse("[1, 2]"));
  EXPECT_EQ(decode_pickle(proto4(bytes_of({'K', 1, 'K', 2, 'N', 0x87}))),
            json::parse("[1, 2, null]"));
  EXPECT_EQ(decode_pickle(proto4(bytes_of({'(', 'K', 1, 'K', 2, 'K', 3, 'K', 4, 't'}))),
            json::parse("[1, 2, 3, 4]"));
}

// Each prefix is decoded up to where it ends, so the cost is quadratic in the size: every prefix of
// values up to 6 KB, and of a real snapshot every prefix in its first and last 3 KB (the header,
// the segments, the trace's end) and every 11th in between (still every opcode kind, and under
// the sanitizers in seconds).
TEST(DecodePickle, EveryTruncationIsAUsageErrorWithAnOffset) {
  constexpr size_t kSmall = 6000;
  std::vector<std::string> encodings;
  for (uint64_t seed = 1; encodings.size() < 12; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    std::string bytes = encode_pickle(random_value(rng, 3));
    if (bytes.size() <= kSmall) encodings.push_back(std::move(bytes));
  }
  encodings.push_back(bytes_of(
      {0x80, 4, 0x95, 9, 0, 0, 0, 0, 0, 0, 0, '}', 0x94, '(', 0x8C, 1, 'a', 'N', 'u', '.'}));
  testing::ExampleWorkload small;
  small.layer_count = 1;
  small.step_count = 1;
  encodings.push_back(encode_pickle(testing::make_example_snapshot(small)));
  ASSERT_GT(encodings.back().size(), 2 * kSmall);
  size_t prefixes = 0;
  for (const std::string& full : encodings) {
    ASSERT_NO_THROW(decode_pickle(full));
    for (size_t length = 0; length < full.size(); ++length) {
      const bool edge = length < kSmall / 2 || full.size() - length <= kSmall / 2;
      if (!edge && length % 11 != 0) continue;
      ++prefixes;
      try {
        decode_pickle(std::string_view(full).substr(0, length));
        FAIL() << "a prefix of " << length << " of " << full.size() << " bytes decoded";
      } catch (const UsageError& error) {
        const std::string message = error.what();
        if (length > 0 && message.find("at byte ") == std::string::npos)
          FAIL() << "prefix " << length << ": no offset in '" << message << "'";
      }
    }
  }
  std::printf("%zu truncated pickles, each a UsageError with its offset\n", prefixes);
}

TEST(DecodePickle, HostileStructuresAreUsageErrors) {
  // A list that holds itself: ] BINPUT 0, BINGET 0, APPEND.
  expect_error(proto4(bytes_of({']', 'q', 0, 'h', 0, 'a'})), "holds itself", 2);
  // Exponential sharing: each tuple holds the previous one twice; 40 levels = 2^40 leaves.
  std::string laughs = bytes_of({'N', 'q', 0});
  for (int level = 0; level < 40; ++level) laughs += bytes_of({'h', 0, 0x86, 'q', 0});
  const std::string expanded = decode_error(proto4(laughs));
  EXPECT_NE(expanded.find("expands to more than"), std::string::npos) << expanded;
  EXPECT_NE(expanded.find("at byte "), std::string::npos) << expanded;
  // Nesting: 1000 levels decode, 1001 do not ([[[...]]]: ] ( ] ( ... ] then an APPENDS per level).
  const auto make_deep = [](size_t depth) {
    std::string out;
    for (size_t i = 0; i + 1 < depth; ++i) out += "](";
    out += "]";
    for (size_t i = 0; i + 1 < depth; ++i) out += "e";
    return out;
  };
  json expected = json::array();
  for (int i = 1; i < 1000; ++i) expected = json::array({expected});
  EXPECT_EQ(decode_pickle(proto4(make_deep(1000))), expected);
  // The innermost list, the 1001st, starts at byte 2 + 2 * 1000.
  expect_error(proto4(make_deep(1001)), "nesting deeper than 1000", 2002);
  // A class reference (GLOBAL) and REDUCE are not plain data.
  expect_error(proto4("cbuiltins\neval\n"), "opcode 0x63", 2);
  expect_error(proto4(bytes_of({'N', 'R'})), "opcode 0x52", 3);
}

TEST(DecodePickle, MalformedStreamsNameWhatAndWhere) {
  expect_error(bytes_of({0x80, 6, 'N', '.'}), "protocol 6", 0);
  expect_error(bytes_of({0x80, 1, 'N', '.'}), "protocol 1", 0);
  expect_error(proto4(bytes_of({'}', 'K', 1, 'a'})), "not a list", 5);
  expect_error(proto4(bytes_of({']', 'K', 1, 'K', 2, 's'})), "not a dict", 7);
  expect_error(proto4(bytes_of({'}', '(', 'K', 1, 'u'})), "odd number", 6);
  expect_error(proto4(bytes_of({'}', 'G', 0, 0, 0, 0, 0, 0, 0, 0, 'N', 's'})),
               "neither str nor int", 13);
  expect_error(proto4(bytes_of({'h', 3})), "memo entry 3", 2);
  expect_error(proto4(bytes_of({'N', 'N'})), "STOP with 2 values", 4);
  expect_error(proto4(bytes_of({'('})), "1 marks", 3);
  expect_error(proto4(bytes_of({'K', 1, '(', 'a'})), "stack underflow", 5);
  expect_error(proto4(bytes_of({'e'})), "no MARK", 2);
  expect_error(proto4(bytes_of({0x95, 9, 0, 0, 0, 0, 0, 0, 0, 'N'})), "a frame of 9 bytes", 2);
  expect_error(bytes_of({0x80, 2, 'N', '.', 'N'}), "1 bytes after STOP", 4);
  EXPECT_NE(decode_error("").find("empty"), std::string::npos);
  // A dict key that is an int becomes its decimal text; a repeated key keeps the last value.
  EXPECT_EQ(decode_pickle(proto4(bytes_of({'}', '(', 'J', 0xFF, 0xFF, 0xFF, 0xFF, 'K', 1, 'J', 0xFF,
                                           0xFF, 0xFF, 0xFF, 'K', 2, 'u'}))),
            json::parse(R"({"-1": 2})"));
}

TEST(DecodePickle, InvalidUtf8IsRepairedAsTheEncoderDoes) {
  EXPECT_EQ(decode_pickle(proto4(bytes_of({0x8C, 3, 'a', 0x80, 'z'}))), json("a\xEF\xBF\xBDz"));
}

TEST(DecodePickle, RandomlyMutatedPicklesDecodeOrThrowUsageError) {
  std::mt19937_64 rng(2026);
  testing::ExampleWorkload small;
  small.layer_count = 2;
  small.step_count = 1;
  const std::string snapshot = encode_pickle(testing::make_example_snapshot(small));
  size_t decoded = 0;
  size_t rejected = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    std::string bytes = trial % 2 == 0 ? snapshot : encode_pickle(random_value(rng, 4));
    const size_t mutations = 1 + rng() % 4;
    for (size_t m = 0; m < mutations; ++m) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0:
          bytes[at] = static_cast<char>(rng());
          break;
        case 1:
          bytes.erase(at, 1 + rng() % 8);
          break;
        default: {
          // An opcode that changes the structure (GCC 12 warns falsely on string::insert here).
          std::string longer = bytes.substr(0, at);
          longer += "()]}eutaqhN"[rng() % 11];
          longer.append(bytes, at);
          bytes = std::move(longer);
          break;
        }
      }
      if (bytes.empty()) bytes.push_back(static_cast<char>(0x80));
    }
    try {
      decode_pickle(bytes);
      ++decoded;
    } catch (const UsageError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 500u);  // the mutations did reach the error paths
  std::printf("mutated pickles: %zu decoded, %zu rejected\n", decoded, rejected);
}

class ReadSnapshotFile : public ::testing::Test {
 protected:
  // One directory per test and process: ctest runs the tests of this binary in parallel.
  std::filesystem::path directory_ =
      std::filesystem::path(::testing::TempDir()) /
      ("vramlab_read_snapshot_file_" + std::to_string(getpid()) + "_" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { std::filesystem::create_directories(directory_); }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  std::string write(const std::string& name, const std::string& contents) {
    const std::filesystem::path path = directory_ / name;
    std::ofstream(path, std::ios::binary) << contents;
    return path.string();
  }
  static std::string error_of(const std::string& path) {
    try {
      read_snapshot_file(path);
    } catch (const UsageError& error) {
      return error.what();
    }
    return "no error";
  }
};

TEST_F(ReadSnapshotFile, ReadsAPickleAndJsonAlike) {
  testing::ExampleWorkload workload;
  const json snapshot = testing::make_example_snapshot(workload);
  EXPECT_EQ(read_snapshot_file(write("s.pickle", encode_pickle(snapshot))), snapshot);
  EXPECT_EQ(read_snapshot_file(write("s.json", snapshot.dump())), snapshot);
}

TEST_F(ReadSnapshotFile, NamesThePathOfABadFile) {
  const std::string missing = (directory_ / "missing.pickle").string();
  EXPECT_NE(error_of(missing).find(missing), std::string::npos) << error_of(missing);
  EXPECT_NE(error_of(directory_.string()).find("is a directory"), std::string::npos)
      << error_of(directory_.string());
  const std::string empty = write("empty.pickle", "");
  EXPECT_NE(error_of(empty).find("empty"), std::string::npos) << error_of(empty);
  const std::string text = write("notes.txt", "peak was high\n");
  EXPECT_NE(error_of(text).find("neither a pickle nor JSON"), std::string::npos) << error_of(text);
  const std::string cut = write("cut.pickle", encode_pickle(json{{"a", 1}}).substr(0, 6));
  EXPECT_NE(error_of(cut).find(cut), std::string::npos) << error_of(cut);
  EXPECT_NE(error_of(cut).find("truncated"), std::string::npos) << error_of(cut);
}

}  // namespace
}  // namespace vramlab::report
