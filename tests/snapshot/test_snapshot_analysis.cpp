// Tests of common/snapshot/snapshot_analysis.h: hand-built snapshots whose answers are worked out
// in the comments (peak at an alloc, peak before the first event, allocations live before
// recording, frees of unknown addresses, several devices, PyTorch's own schema), random histories
// checked against a brute-force replay written here, 70B-model sizes, a planted leak found by
// compare_snapshots, and bad or mutated files that must give a UsageError naming the field.
// Run: build/tests/bin/test_profile --gtest_filter='AnalysePeak.*:CompareSnapshots.*'
#include "common/snapshot/snapshot_analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/platform/errors.h"
#include "tests/profile/snapshot_builder.h"

namespace vramlab::profile {

using snapshot::Allocation;
using snapshot::analyse_peak;
using snapshot::ByteGroup;
using snapshot::compare_snapshots;
using snapshot::Growth;
using snapshot::live_allocations;
using snapshot::PeakReport;
namespace {

using nlohmann::json;
using testing::Owner;
using testing::SnapshotBuilder;
constexpr std::uint64_t kMiB = 1 << 20;

const Owner kEmbedding{"embed", "setup", "wte", "parameter", {"Embedding::Embedding", "main"}};
const Owner kAttention{"blocks.0.attn",
                       "forward",
                       "att",
                       "activation",
                       {"attn_fwd", "block_fwd", "model_fwd", "step", "main"}};
const Owner kTemporary{"blocks.0.attn", "forward", "tmp", "temporary", {"softmax", "attn_fwd"}};
const Owner kMlp{"blocks.0.mlp", "forward", "h", "activation", {"mlp_fwd", "block_fwd"}};

// P (1000 B) predates recording; A 3 MiB, B 1 MiB, C 2 MiB, then B freed and D 512 KiB made.
// Allocated: 1000 → +3 MiB (event 0) → +1 MiB (1) → +2 MiB (2) = 1000 + 6 MiB, the peak, reached
// by C's alloc; B's free (events 3, 4) and D (5) stay below it.
json peak_at_an_alloc() {
  SnapshotBuilder builder;
  builder.alloc(0x1000, 1000, kEmbedding);
  builder.start_recording();
  builder.alloc(0x200000, 3 * kMiB, kAttention);
  builder.alloc(0x600000, kMiB, kTemporary);
  builder.alloc(0x800000, 2 * kMiB, kMlp);
  builder.free(0x600000);
  builder.alloc(0xC00000, kMiB / 2, kMlp);
  return builder.snapshot();
}

TEST(AnalysePeak, PeakAtAnAllocNamesItsOwner) {
  const PeakReport report = analyse_peak(peak_at_an_alloc());
  EXPECT_EQ(report.peak_bytes, static_cast<std::int64_t>(1000 + 6 * kMiB));
  EXPECT_EQ(report.peak_event, 2);
  EXPECT_EQ(report.peak_owner.tensor, "h");
  EXPECT_EQ(report.peak_owner.module, "blocks.0.mlp");
  EXPECT_EQ(report.peak_owner.phase, "forward");
  EXPECT_EQ(report.peak_owner.alloc_event, 2);
  EXPECT_EQ(report.peak_owner.bytes, static_cast<std::int64_t>(2 * kMiB));

  ASSERT_EQ(report.live_at_peak.size(), 4u);
  const std::vector<std::string> order = {"att", "h", "tmp", "wte"};  // largest first
  for (std::size_t i = 0; i < order.size(); ++i)
    EXPECT_EQ(report.live_at_peak[i].tensor, order[i]) << "at " << i;
  const Allocation& parameter = report.live_at_peak[3];
  EXPECT_EQ(parameter.alloc_event, -1);  // live before recording
  EXPECT_EQ(parameter.category, "parameter");
  // The label frame is gone; the C++ frames remain, innermost first.
  ASSERT_EQ(report.live_at_peak[0].frames.size(), 5u);
  EXPECT_EQ(report.live_at_peak[0].frames[0].function, "attn_fwd");
  EXPECT_EQ(report.live_at_peak[0].frames[0].file, "src/attn_fwd.cpp");
  EXPECT_EQ(report.live_at_peak[0].frames[0].line, 10);

  ASSERT_EQ(report.by_module.size(), 3u);
  EXPECT_EQ(report.by_module[0].key, "blocks.0.attn");
  EXPECT_EQ(report.by_module[0].bytes, static_cast<std::int64_t>(4 * kMiB));
  EXPECT_EQ(report.by_module[0].count, 2);
  EXPECT_EQ(report.by_module[1].key, "blocks.0.mlp");
  EXPECT_EQ(report.by_module[2].key, "embed");
  EXPECT_EQ(report.by_module[2].bytes, 1000);
  ASSERT_EQ(report.by_phase.size(), 2u);
  EXPECT_EQ(report.by_phase[0].key, "forward");
  EXPECT_EQ(report.by_phase[0].count, 3);
  ASSERT_EQ(report.by_category.size(), 3u);
  EXPECT_EQ(report.by_category[0].key, "activation");
  EXPECT_EQ(report.by_category[0].bytes, static_cast<std::int64_t>(5 * kMiB));
  ASSERT_EQ(report.by_stack.size(), 4u);
  EXPECT_EQ(report.by_stack[0].key, "attn_fwd ← block_fwd ← model_fwd ← step");  // 4 frames
  EXPECT_EQ(report.by_stack[3].key, "Embedding::Embedding ← main");
}

TEST(AnalysePeak, PeakBeforeTheFirstEvent) {
  // A 5 MiB gradient predates recording and the trace only frees it: the peak is the start.
  SnapshotBuilder builder;
  builder.alloc(0x4000, 5 * kMiB, {"head", "backward", "dW", "gradient", {"linear_bwd"}});
  builder.start_recording();
  builder.free(0x4000);
  const PeakReport report = analyse_peak(builder.snapshot());
  EXPECT_EQ(report.peak_bytes, static_cast<std::int64_t>(5 * kMiB));
  EXPECT_EQ(report.peak_event, -1);
  EXPECT_EQ(report.peak_owner.bytes, 0);
  EXPECT_TRUE(report.peak_owner.tensor.empty());
  ASSERT_EQ(report.live_at_peak.size(), 1u);
  // Known only from its free entry, which carries its owner.
  EXPECT_EQ(report.live_at_peak[0].tensor, "dW");
  EXPECT_EQ(report.live_at_peak[0].module, "head");
  EXPECT_EQ(report.live_at_peak[0].alloc_event, -1);
}

TEST(AnalysePeak, FreesOfUnknownAddressesDoNotCountTwice) {
  // Z (7 B) is freed without an alloc: it was live before recording. Y (100 B) is freed twice; the
  // second free finds nothing. Allocated: 7 → 0 → 100 (event 1, the peak) → 0 (event 3) → 0.
  SnapshotBuilder builder;
  builder.start_recording();
  const Owner owner{"m", "forward", "y", "temporary", {}};
  builder.raw(builder.entry("free_completed", 0x9000, 7, owner, -1));
  builder.alloc(0xA000, 100, owner);
  builder.free(0xA000);
  builder.raw(builder.entry("free_completed", 0xA000, 100, owner, -1));
  const PeakReport report = analyse_peak(builder.snapshot());
  EXPECT_EQ(report.peak_bytes, 100);
  EXPECT_EQ(report.peak_event, 1);
  ASSERT_EQ(report.live_at_peak.size(), 1u);
  EXPECT_EQ(report.live_at_peak[0].address, 0xA000u);
  EXPECT_TRUE(live_allocations(builder.snapshot()).empty());
}

// Two devices at the same addresses: each device's trace replays against its own segments.
json two_devices() {
  SnapshotBuilder device0(true, 0);
  device0.start_recording();
  device0.alloc(0x1000, 300, kMlp);
  device0.alloc(0x2000, 200, kMlp);
  device0.free(0x1000);
  SnapshotBuilder device1(true, 1);
  device1.alloc(0x1000, 5000, kEmbedding);
  device1.start_recording();
  device1.alloc(0x2000, 40, kAttention);
  json snapshot = device1.snapshot();
  const json first = device0.snapshot();
  snapshot["device_traces"][0] = first["device_traces"][0];
  for (const json& segment : first["segments"]) snapshot["segments"].push_back(segment);
  return snapshot;
}

TEST(AnalysePeak, EachDeviceReplaysItsOwnTrace) {
  const json snapshot = two_devices();
  const PeakReport first = analyse_peak(snapshot, 0);
  EXPECT_EQ(first.peak_bytes, 500);  // 300 + 200 at event 1
  EXPECT_EQ(first.peak_event, 1);
  const PeakReport second = analyse_peak(snapshot, 1);
  EXPECT_EQ(second.peak_bytes, 5040);
  EXPECT_EQ(second.peak_event, 0);
  EXPECT_EQ(second.live_at_peak.size(), 2u);
  EXPECT_THROW(analyse_peak(snapshot, 2), UsageError);
  const std::vector<Allocation> live = live_allocations(snapshot);
  ASSERT_EQ(live.size(), 3u);  // 200 on device 0; 5000 and 40 on device 1
  EXPECT_EQ(live[0].bytes, 5000);
  EXPECT_EQ(live[0].alloc_event, -1);
  EXPECT_EQ(live[1].bytes, 200);
  EXPECT_EQ(live[1].alloc_event, 1);  // device 0's alloc event
  EXPECT_EQ(live[2].bytes, 40);
  EXPECT_EQ(live[2].alloc_event, 0);  // device 1's alloc event
}

TEST(AnalysePeak, PytorchSnapshotsWithoutExtensionKeys) {
  SnapshotBuilder builder(false);
  builder.start_recording();
  builder.alloc(0x1000, 64, kAttention);
  builder.alloc(0x2000, 32, kMlp);
  const PeakReport report = analyse_peak(builder.snapshot());
  EXPECT_EQ(report.peak_bytes, 96);
  ASSERT_EQ(report.live_at_peak.size(), 2u);
  const Allocation& largest = report.live_at_peak[0];
  EXPECT_TRUE(largest.module.empty());
  EXPECT_TRUE(largest.tensor.empty());
  EXPECT_TRUE(largest.phase.empty());
  EXPECT_TRUE(largest.category.empty());
  ASSERT_EQ(largest.frames.size(), 5u);  // every frame is a real one
  EXPECT_EQ(largest.frames[0].function, "attn_fwd");
  ASSERT_EQ(report.by_module.size(), 1u);
  EXPECT_EQ(report.by_module[0].key, "(none)");
  EXPECT_EQ(report.by_module[0].count, 2);
  EXPECT_EQ(report.by_stack[0].key, "attn_fwd ← block_fwd ← model_fwd ← step");
}

TEST(AnalysePeak, StackKeysNameFunctionsWithoutTheirArguments) {
  // Demangled signatures as Boost.Stacktrace gives them; a Python frame has no argument list.
  SnapshotBuilder builder;
  builder.start_recording();
  builder.alloc(0x1000, 8,
                {"m",
                 "forward",
                 "t",
                 "activation",
                 {"vramlab::nn::Mlp::backward(vramlab::nn::Runtime&, long) const",
                  "run()::{lambda(int)#1}::operator()(int) const",
                  "std::function<void (int)>::operator()", "train_step"}});
  const PeakReport report = analyse_peak(builder.snapshot());
  ASSERT_EQ(report.by_stack.size(), 1u);
  EXPECT_EQ(report.by_stack[0].key,
            "vramlab::nn::Mlp::backward ← run()::{lambda(int)#1}::operator() ← "
            "std::function<void (int)>::operator() ← train_step");
  // The frames themselves keep the full signature.
  EXPECT_EQ(report.live_at_peak[0].frames[0].function,
            "vramlab::nn::Mlp::backward(vramlab::nn::Runtime&, long) const");
}

TEST(AnalysePeak, SeventyBillionParameterSizes) {
  // Mixed-precision Adam on a 70B model: bf16 weights, fp32 master weights and two moments
  // (4 × 280 GB), then a 140 GB bf16 gradient: every tensor is beyond 4 GiB and the sum beyond
  // 2^32 many times over.
  const std::uint64_t parameters = 70'000'000'000ULL;
  SnapshotBuilder builder;
  builder.alloc(0x10000000000ULL, 2 * parameters, {"", "setup", "weights", "parameter", {}});
  builder.start_recording();
  builder.alloc(0x30000000000ULL, 4 * parameters, {"", "setup", "master", "optimizer_state", {}});
  builder.alloc(0x50000000000ULL, 4 * parameters, {"", "optimizer", "m", "optimizer_state", {}});
  builder.alloc(0x70000000000ULL, 4 * parameters, {"", "optimizer", "v", "optimizer_state", {}});
  builder.alloc(0x90000000000ULL, 2 * parameters, {"", "backward", "grad", "gradient", {}});
  builder.free(0x90000000000ULL);
  const PeakReport report = analyse_peak(builder.snapshot());
  EXPECT_EQ(report.peak_bytes, static_cast<std::int64_t>(16 * parameters));
  EXPECT_EQ(report.peak_event, 3);
  EXPECT_EQ(report.peak_owner.bytes, static_cast<std::int64_t>(2 * parameters));
  ASSERT_EQ(report.by_category.size(), 3u);
  EXPECT_EQ(report.by_category[0].key, "optimizer_state");
  EXPECT_EQ(report.by_category[0].bytes, static_cast<std::int64_t>(12 * parameters));
}

// ---- Random histories against a brute-force replay ----

struct Operation {
  bool alloc;
  std::uint64_t address;
  std::uint64_t bytes;
};

// Live requested bytes after applying pre + trace[0..count), recomputed from scratch.
std::vector<std::pair<std::uint64_t, std::uint64_t>> brute_force_live(
    const std::vector<Operation>& pre, const std::vector<Operation>& trace, std::size_t count) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> live;
  const auto apply = [&](const Operation& op) {
    if (op.alloc) {
      live.emplace_back(op.address, op.bytes);
    } else {
      live.erase(std::find_if(live.begin(), live.end(),
                              [&](const auto& item) { return item.first == op.address; }));
    }
  };
  for (const Operation& op : pre) apply(op);
  for (std::size_t i = 0; i < count; ++i) apply(trace[i]);
  std::sort(live.begin(), live.end());
  return live;
}

// (GCC 12 warns falsely on "literal" + std::to_string at -O3.)
std::string numbered(char prefix, std::size_t number) {
  std::string text(1, prefix);
  text += std::to_string(number);
  return text;
}

std::uint64_t sum_of(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& live) {
  std::uint64_t total = 0;
  for (const auto& item : live) total += item.second;
  return total;
}

TEST(AnalysePeak, RandomHistoriesMatchABruteForceReplay) {
  for (const std::size_t operations : {0u, 1u, 17u, 150u, 600u}) {
    for (const std::uint64_t seed : {1u, 2u, 3u}) {
      std::mt19937_64 random(seed * 1000 + operations);
      SnapshotBuilder builder;
      std::vector<Operation> pre;
      std::vector<Operation> trace;          // one per alloc or free (a free is two trace entries)
      std::vector<std::size_t> trace_entry;  // the entry index of each trace operation's effect
      std::vector<std::uint64_t> live;
      std::uint64_t next_address = 0x1000;
      std::size_t entries = 0;
      const std::size_t pre_count = random() % 8;
      for (std::size_t i = 0; i < pre_count + operations; ++i) {
        const bool recording = i >= pre_count;
        if (i == pre_count) builder.start_recording();
        const bool alloc = live.empty() || random() % 3 != 0;
        Operation op{alloc, 0, 0};
        if (alloc) {
          // Odd sizes, page sizes and, one time in eight, a tensor beyond 4 GiB.
          op.bytes = random() % 8 == 0 ? (5ULL << 30) + random() % 1000 : 1 + random() % 100'000;
          op.address = next_address;
          next_address += op.bytes + 512;
          live.push_back(op.address);
          builder.alloc(op.address, op.bytes,
                        {numbered('m', i % 5), "forward", numbered('t', i), "activation", {}});
        } else {
          const std::size_t pick = random() % live.size();
          op.address = live[pick];
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
          builder.free(op.address);
        }
        if (recording) {
          entries += alloc ? 1 : 2;
          trace.push_back(op);
          trace_entry.push_back(entries - 1);  // a free takes effect at its free_completed
        } else {
          pre.push_back(op);
        }
      }
      const PeakReport report = analyse_peak(builder.snapshot());

      std::uint64_t peak = sum_of(brute_force_live(pre, trace, 0));
      std::int64_t peak_event = -1;
      std::size_t peak_count = 0;
      for (std::size_t k = 1; k <= trace.size(); ++k) {
        const std::uint64_t total = sum_of(brute_force_live(pre, trace, k));
        if (total > peak) {
          peak = total;
          peak_event = static_cast<std::int64_t>(trace_entry[k - 1]);
          peak_count = k;
        }
      }
      SCOPED_TRACE(::testing::Message() << "operations " << operations << ", seed " << seed);
      EXPECT_EQ(report.peak_bytes, static_cast<std::int64_t>(peak));
      EXPECT_EQ(report.peak_event, peak_event);
      std::vector<std::pair<std::uint64_t, std::uint64_t>> reported;
      for (const Allocation& allocation : report.live_at_peak)
        reported.emplace_back(allocation.address, static_cast<std::uint64_t>(allocation.bytes));
      std::sort(reported.begin(), reported.end());
      EXPECT_EQ(reported, brute_force_live(pre, trace, peak_count));
      EXPECT_TRUE(std::is_sorted(
          report.live_at_peak.begin(), report.live_at_peak.end(),
          [](const Allocation& a, const Allocation& b) { return a.bytes > b.bytes; }));
      std::int64_t grouped = 0;
      for (const ByteGroup& group : report.by_module) grouped += group.bytes;
      EXPECT_EQ(grouped, report.peak_bytes);
    }
  }
}

// ---- compare_snapshots ----

TEST(CompareSnapshots, FindsAPlantedLeak) {
  // The same model twice; the second run also keeps k loss tensors of 4 B (a step that keeps every
  // step's loss), and its KV cache shrank from 3 blocks to 1.
  const Owner loss{"", "forward", "loss", "activation", {"cross_entropy", "train_step", "main"}};
  const Owner cache{"blocks.1.attn", "forward", "kv", "other", {"attn_fwd"}};
  for (const std::int64_t k : {1, 5, 33}) {
    SnapshotBuilder before;
    SnapshotBuilder after;
    std::uint64_t address = 0x1000;
    for (int layer = 0; layer < 4; ++layer) {
      const Owner weight{"blocks." + std::to_string(layer) + ".mlp",
                         "setup",
                         "w",
                         "parameter",
                         {"Linear::Linear"}};
      before.alloc(address += 0x10000, 4096 + layer, weight);
      after.alloc(address += 0x10000, 4096 + layer, weight);  // other addresses, same owner
    }
    before.alloc(address += 0x10000, 4, loss);
    after.alloc(address += 0x10000, 4, loss);
    for (int i = 0; i < 3; ++i) before.alloc(address += 0x10000, 1000, cache);
    after.alloc(address += 0x10000, 1000, cache);
    for (std::int64_t i = 0; i < k; ++i) after.alloc(address += 0x10000, 4, loss);

    const std::vector<Growth> growth = compare_snapshots(before.snapshot(), after.snapshot());
    ASSERT_EQ(growth.size(), 2u) << "only the leak and the cache changed";
    EXPECT_EQ(growth[0].tensor, "loss");
    EXPECT_EQ(growth[0].count_before, 1);
    EXPECT_EQ(growth[0].count_after, 1 + k);
    EXPECT_EQ(growth[0].bytes_after - growth[0].bytes_before, 4 * k);
    EXPECT_EQ(growth[0].stack, "cross_entropy ← train_step ← main");
    EXPECT_EQ(growth[1].tensor, "kv");  // shrinking owners last
    EXPECT_EQ(growth[1].bytes_after - growth[1].bytes_before, -2000);
  }
}

TEST(CompareSnapshots, APendingFreeIsNotHeld) {
  // Both snapshots hold the same n weights; the second also has m scratch buffers the program
  // freed while a side stream still used them (active_pending_free) and k it still holds. Only
  // the k are growth: the m are the allocator's to release, not the program's to leak.
  const Owner weight{"mlp", "setup", "w", "parameter", {"Linear::Linear"}};
  const Owner scratch{"attn", "forward", "scratch", "activation", {"attn_fwd"}};
  for (const auto& [m, k] : {std::pair{1, 0}, std::pair{3, 2}, std::pair{7, 5}}) {
    SnapshotBuilder before;
    SnapshotBuilder after;
    before.start_recording();
    after.start_recording();
    std::uint64_t address = 0x1000;
    for (int i = 0; i < 3; ++i) {
      before.alloc(address += 0x10000, 4096 + i, weight);
      after.alloc(address += 0x10000, 4096 + i, weight);
    }
    for (int i = 0; i < m + k; ++i) after.alloc(address += 0x10000, 333, scratch);
    for (int i = 0; i < m; ++i) after.free_request(address - 0x10000 * static_cast<unsigned>(i));
    const json snapshot = after.snapshot();
    std::int64_t pending = 0;
    for (const Allocation& a : live_allocations(snapshot)) pending += a.pending_free ? 1 : 0;
    EXPECT_EQ(pending, m) << "live_allocations marks each pending free";
    const std::vector<Growth> growth = compare_snapshots(before.snapshot(), snapshot);
    if (k == 0) {
      EXPECT_TRUE(growth.empty()) << "m=" << m << ": a pending free counted as held";
      continue;
    }
    ASSERT_EQ(growth.size(), 1u) << "m=" << m << " k=" << k;
    EXPECT_EQ(growth[0].tensor, "scratch");
    EXPECT_EQ(growth[0].count_after, k) << "m=" << m << ": pending frees counted as held";
    EXPECT_EQ(growth[0].bytes_after, 333 * k);
  }
}

TEST(CompareSnapshots, IdenticalSnapshotsShowNothing) {
  const json snapshot = peak_at_an_alloc();
  EXPECT_TRUE(compare_snapshots(snapshot, snapshot).empty());
}

// ---- Bad input ----

void expect_usage_error(const json& snapshot, const std::string& needle, std::size_t device = 0) {
  try {
    analyse_peak(snapshot, device);
    ADD_FAILURE() << "expected a UsageError mentioning " << needle;
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
  }
}

TEST(AnalysePeak, BadSnapshotsNameTheField) {
  const json alloc = {{"action", "alloc"}, {"addr", 16}, {"size", 3}};
  expect_usage_error(json::array(), "JSON object");
  expect_usage_error(json::object(), "'segments'");
  expect_usage_error({{"segments", json::array()}}, "'device_traces'");
  expect_usage_error({{"segments", json::array()}, {"device_traces", json::array()}}, "device 0");
  expect_usage_error({{"segments", json::array()}, {"device_traces", {{alloc}}}}, "device 3", 3);
  expect_usage_error({{"segments", json::object()}, {"device_traces", {{alloc}}}}, "'segments'");
  expect_usage_error({{"segments", json::array()}, {"device_traces", {{{{"size", 3}}}}}},
                     "device_traces[0][0].action");
  expect_usage_error(
      {{"segments", json::array()}, {"device_traces", {{{{"action", "alloc"}, {"size", 3}}}}}},
      "device_traces[0][0].addr");
  expect_usage_error(
      {{"segments", json::array()},
       {"device_traces", {{alloc, {{"action", "alloc"}, {"addr", 1}, {"size", -4}}}}}},
      "device_traces[0][1].size");
  expect_usage_error({{"segments", json::array()},
                      {"device_traces", {{{{"action", "alloc"}, {"addr", 1}, {"size", 2.5}}}}}},
                     "device_traces[0][0].size");
  expect_usage_error({{"segments", json::array()},
                      {"device_traces", {{{{"action", "alloc"}, {"addr", 1}, {"size", 1e300}}}}}},
                     "device_traces[0][0].size");
  expect_usage_error({{"segments",
                       {{{"address", 0},
                         {"total_size", 8},
                         {"blocks", {{{"state", "active_allocated"}, {"size", 8}}}}}}},
                      {"device_traces", json::array({json::array()})}},
                     "segments[0].blocks[0].address");
  const std::uint64_t half = 1ULL << 63;
  expect_usage_error({{"segments", json::array()},
                      {"device_traces",
                       {{{{"action", "alloc"}, {"addr", 1}, {"size", half}},
                         {{"action", "alloc"}, {"addr", 2}, {"size", half}}}}}},
                     "overflow");
  EXPECT_THROW(live_allocations(json::object()), UsageError);
  EXPECT_THROW(compare_snapshots(peak_at_an_alloc(), json::array()), UsageError);
}

json random_value(std::mt19937_64& random) {
  switch (random() % 9) {
    case 0:
      return nullptr;
    case 1:
      return -static_cast<std::int64_t>(random() % 100);
    case 2:
      return 1e300;
    case 3:
      return "alloc";
    case 4:
      return json::array({1, "x"});
    case 5:
      return json::object();
    case 6:
      return random();  // up to 2^64 - 1
    case 7:
      return 0.5;
    default:
      return static_cast<std::int64_t>(random() % 4096);
  }
}

TEST(AnalysePeak, MutatedSnapshotsGiveAUsageErrorOrAnAnswer) {
  // Any JSON either replays or is refused with a UsageError: never another exception.
  const json valid = two_devices();
  const json flat = valid.flatten();
  std::vector<std::string> paths;
  for (const auto& [path, value] : flat.items()) paths.push_back(path);
  std::mt19937_64 random(7);
  std::size_t refused = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    json mutated = valid;
    for (std::uint64_t edits = 1 + random() % 3; edits > 0; --edits) {
      const std::string& path = paths[random() % paths.size()];
      json::json_pointer pointer(path);
      if (random() % 4 == 0) pointer = pointer.parent_pointer();
      try {
        mutated[pointer] = random_value(random);
      } catch (const json::exception&) {
        // An earlier edit replaced a parent with a scalar: this path no longer exists.
      }
    }
    try {
      analyse_peak(mutated, random() % 2);
      live_allocations(mutated);
      compare_snapshots(valid, mutated);
    } catch (const UsageError&) {
      ++refused;
    } catch (const std::exception& error) {
      FAIL() << "trial " << trial << ": " << error.what() << "\n" << mutated.dump();
    }
  }
  EXPECT_GT(refused, 0u);  // the mutations do reach the checks
}

}  // namespace
}  // namespace vramlab::profile
