// profile_trace_cases: writes Chrome traces for check_trace_events.py to validate — the hand-built
// recording of recording_fixture.h with a second thread, and random recordings (span trees on two
// threads, thousands of allocations and frees at random times).
// Run: profile_trace_cases OUTPUT_DIR
#include <cstdio>
#include <exception>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/profile/chrome_trace.h"
#include "tests/profile/recording_fixture.h"

namespace {

using vramlab::memory::TrainingPhase;
using vramlab::profile::Recording;
using vramlab::profile::Span;
using vramlab::profile::SpanKind;
namespace testing = vramlab::profile::testing;

void write(const std::string& path, const nlohmann::json& trace) {
  std::ofstream out(path, std::ios::binary);
  out << trace.dump();
  if (!out) throw std::runtime_error("cannot write " + path);
}

// Children fill [start, end) with gaps; each child may have children of its own.
void add_spans(std::mt19937_64& random, std::vector<Span>& spans, std::int64_t start,
               std::int64_t end, std::int32_t depth, std::int32_t thread) {
  if (depth > 4 || end - start < 8) return;
  std::int64_t at = start + static_cast<std::int64_t>(random() % 4);
  const int children = 1 + static_cast<int>(random() % 4);
  for (int c = 0; c < children && at < end; ++c) {
    const std::int64_t room = end - at;
    const std::int64_t length =
        1 + static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(room));
    const bool kernel = depth >= 2 || random() % 2 == 0;
    std::string name = kernel ? "op" : "blocks.";
    name += std::to_string(random() % 6);
    spans.push_back(testing::make_span(kernel ? SpanKind::kernel : SpanKind::module, name, "",
                                       TrainingPhase::forward, at, at + length, depth, thread));
    add_spans(random, spans, at, at + length, depth + 1, thread);
    at += length + static_cast<std::int64_t>(random() % 3);
  }
}

Recording random_recording(std::uint64_t seed) {
  std::mt19937_64 random(seed);
  Recording recording;
  recording.origin_ns = testing::kOriginNs;
  recording.device = "sim:random";
  const std::int64_t length_ns = 2'000'000;
  for (std::int32_t thread = 0; thread < 2; ++thread)
    add_spans(random, recording.spans, 0, length_ns, 0, thread);
  testing::SnapshotBuilder builder;
  builder.start_recording();
  std::vector<std::uint64_t> live;
  std::uint64_t address = 0x1000;
  std::int64_t time = 0;
  const char* categories[] = {"parameter", "gradient", "activation", "temporary", "input"};
  for (int i = 0; i < 3000; ++i) {
    time += static_cast<std::int64_t>(random() % 700);
    if (live.empty() || random() % 3 != 0) {
      const std::uint64_t bytes = random() % 16 == 0 ? (6ULL << 30) : 1 + random() % 65536;
      builder.alloc(address, bytes, {"m", "forward", "t", categories[random() % 5], {}},
                    testing::kOriginNs + time);
      live.push_back(address);
      address += bytes + 512;
    } else {
      const std::size_t pick = random() % live.size();
      builder.free(live[pick], testing::kOriginNs + time);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
    }
  }
  recording.snapshot = builder.snapshot();
  return recording;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::string directory = argv[1];
    Recording hand_built = testing::hand_built_recording();
    hand_built.spans.push_back(testing::make_span(SpanKind::kernel, "all_reduce", "",
                                                  TrainingPhase::optimizer, 2100, 2600, 0, 1));
    write(directory + "/hand_built.json", vramlab::profile::chrome_trace(hand_built));
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      write(directory + "/random" + std::to_string(seed) + ".json",
            vramlab::profile::chrome_trace(random_recording(seed)));
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "profile_trace_cases: %s\n", error.what());
    return 1;
  }
  return 0;
}
