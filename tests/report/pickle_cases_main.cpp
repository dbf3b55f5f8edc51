// report_pickle_cases: writes pairs <name>.json + <name>.pickle (the same value, JSON as text and
// pickled by vramlab::snapshot::encode_pickle) for check_pickle_roundtrip.py, and a realistic
// training snapshot (training_snapshot.pickle) for check_torch_memory_viz.py.
// Run: report_pickle_cases OUTPUT_DIR
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/snapshot/snapshot_pickle.h"
#include "tests/report/example_snapshot.h"

namespace {

using nlohmann::json;

// prefix followed by the decimal number, e.g. numbered("random", 3) == "random3".
std::string numbered(std::string_view prefix, uint64_t number) {
  std::string out(prefix);
  out += std::to_string(number);
  return out;
}

void write_case(const std::string& directory, const std::string& name, const json& value) {
  std::ofstream text(directory + "/" + name + ".json", std::ios::binary);
  text << value.dump();
  vramlab::snapshot::write_snapshot_pickle(value, directory + "/" + name + ".pickle");
}

// A random JSON value (seeded): nested objects/arrays, ints of every width, floats, unicode.
json random_value(std::mt19937_64& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 0 ? 9 : 7));
  switch (kind) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2: {
      const int shift = static_cast<int>(rng() % 64);
      return static_cast<int64_t>(rng()) >> shift;  // every magnitude, both signs
    }
    case 3:
      return static_cast<uint64_t>(rng()) >> (rng() % 64);
    case 4: {
      std::uniform_real_distribution<double> exponent(-300.0, 300.0);
      const double sign = rng() % 2 == 0 ? 1.0 : -1.0;
      return sign * std::pow(10.0, exponent(rng)) * 1.2345678901234567;
    }
    case 5:
    case 6: {
      static const char* kPieces[] = {"a",  "Z",  "é",  "µ",  "→", "显存", "😀",
                                      "\"", "\\", "\n", "\t", " ", "<",    "'"};
      std::string text;
      const size_t length = rng() % 12;
      for (size_t i = 0; i < length; ++i)
        text += kPieces[rng() % (sizeof(kPieces) / sizeof(kPieces[0]))];
      return text;
    }
    case 7: {
      json array = json::array();
      const size_t length = rng() % 6;
      for (size_t i = 0; i < length; ++i) array.push_back(random_value(rng, depth - 1));
      return array;
    }
    default: {
      json object = json::object();
      const size_t length = rng() % 6;
      for (size_t i = 0; i < length; ++i) {
        const std::string key = rng() % 5 == 0 ? "segment_pool_id" : numbered("k", rng() % 100);
        object[key] = random_value(rng, depth - 1);
      }
      return object;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string directory = argv[1];
  try {
    write_case(directory, "scalars",
               json::array({nullptr,
                            true,
                            false,
                            0,
                            1,
                            255,
                            256,
                            65535,
                            65536,
                            -1,
                            -256,
                            INT32_MAX,
                            static_cast<int64_t>(INT32_MAX) + 1,
                            INT32_MIN,
                            static_cast<int64_t>(INT32_MIN) - 1,
                            int64_t{1} << 40,
                            std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::min(),
                            uint64_t{1} << 63,
                            std::numeric_limits<uint64_t>::max(),
                            0.0,
                            -2.5,
                            1e-310,
                            1.7976931348623157e308}));
    write_case(
        directory, "strings",
        json::array({"", "ascii", "µs → 显存 😀", std::string("nul\0inside", 10), "</script>"}));
    json long_list = json::array();
    for (int64_t i = 0; i < 2500; ++i) long_list.push_back(i * 1000003);
    json wide_object = json::object();
    for (int i = 0; i < 1500; ++i) wide_object[numbered("key", static_cast<uint64_t>(i))] = i;
    write_case(directory, "batches", {{"list", long_list}, {"object", wide_object}});
    write_case(directory, "pool_ids",
               {{"segment_pool_id", json::array({0, 0})},
                {"nested",
                 {{"segment_pool_id", json::array({1, 2, 3, 4})}, {"other", json::array({1, 2})}}},
                {"empty", {{"segment_pool_id", json::array()}}},
                {"scalar", {{"segment_pool_id", 7}}}});
    std::mt19937_64 rng(20241121);
    for (int i = 0; i < 40; ++i)
      write_case(directory, numbered("random", static_cast<uint64_t>(i)), random_value(rng, 6));
    vramlab::report::testing::ExampleWorkload workload;
    workload.layer_count = 6;
    workload.step_count = 3;
    workload.end_with_oom = true;
    const json snapshot = vramlab::report::testing::make_example_snapshot(workload);
    write_case(directory, "training_snapshot", snapshot);
    // Special floats have no JSON form: the checker expects exactly this list.
    vramlab::snapshot::write_snapshot_pickle(
        json::array({std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN(), -0.0,
                     std::numeric_limits<double>::denorm_min()}),
        directory + "/special_floats.pickle");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "report_pickle_cases: %s\n", error.what());
    return 1;
  }
  return 0;
}
