// Snapshots and history: PyTorch's schema (torch.cuda.memory._snapshot()), block states, trace
// actions and their order, the ring buffer, and vramlab's extension keys (category, module, phase,
// tensor, time_ns, the label frame).
//   build/tests/bin/test_memory --gtest_filter='Snapshot.*:History.*:ExpandableSnapshot.*'
#include <gtest/gtest.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "tests/memory/allocator_test_util.h"

namespace vramlab::memory {
namespace {

using nlohmann::json;
using testing::kGiB;
using testing::kMiB;
using testing::make_meta_allocator;
using testing::make_sim_allocator;

std::vector<std::string> actions_of(const json& snapshot) {
  std::vector<std::string> actions;
  for (const json& entry : snapshot["device_traces"][0]) actions.push_back(entry["action"]);
  return actions;
}

TEST(Snapshot, HasPyTorchsTopLevelKeysAndSegmentFields) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->malloc(1000);
  const json snapshot = allocator->snapshot();
  ASSERT_TRUE(snapshot.contains("segments"));
  ASSERT_TRUE(snapshot.contains("device_traces"));
  ASSERT_TRUE(snapshot.contains("allocator_settings"));
  const json& segment = snapshot["segments"][0];
  for (const char* key :
       {"device", "address", "total_size", "allocated_size", "active_size", "requested_size",
        "stream", "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"}) {
    EXPECT_TRUE(segment.contains(key)) << key;
  }
  EXPECT_EQ(segment["segment_type"], "small");
  EXPECT_EQ(segment["total_size"], 2 * kMiB);
  EXPECT_EQ(segment["allocated_size"], 1024);
  EXPECT_EQ(segment["requested_size"], 1000);
  const json& settings = snapshot["allocator_settings"];
  EXPECT_EQ(settings["max_split_size"], -1);
  EXPECT_EQ(settings["roundup_power2_divisions"].size(), 16u);
  EXPECT_TRUE(settings["roundup_power2_divisions"].contains("32768"));
}

TEST(Snapshot, SegmentsAreSortedAndBlocksTileThem) {
  auto allocator = make_sim_allocator(kGiB);
  for (int i = 0; i < 5; ++i) allocator->malloc(static_cast<std::size_t>(i + 1) * 3 * kMiB);
  allocator->malloc(100);
  const json snapshot = allocator->snapshot();
  std::uint64_t previous = 0;
  for (const json& segment : snapshot["segments"]) {
    const std::uint64_t address = segment["address"];
    EXPECT_GT(address, previous);
    previous = address;
    std::uint64_t cursor = address;
    std::uint64_t total = 0;
    for (const json& block : segment["blocks"]) {
      EXPECT_EQ(block["address"].get<std::uint64_t>(), cursor);
      cursor += block["size"].get<std::uint64_t>();
      total += block["size"].get<std::uint64_t>();
    }
    EXPECT_EQ(total, segment["total_size"].get<std::uint64_t>());
  }
}

TEST(Snapshot, BlockStatesShowAllocatedPendingAndCached) {
  auto allocator = make_sim_allocator(kGiB);
  Block* allocated = allocator->malloc(4096);
  Block* pending = allocator->malloc(4096);
  Block* cached = allocator->malloc(4096);
  allocator->malloc(4096);  // keeps `cached` from merging into the tail
  allocator->record_stream(pending, 1);
  allocator->free(pending);
  allocator->free(cached);
  const json blocks = allocator->snapshot()["segments"][0]["blocks"];
  ASSERT_EQ(blocks.size(), 5u);
  EXPECT_EQ(blocks[0]["address"], allocated->address);
  EXPECT_EQ(blocks[0]["state"], "active_allocated");
  EXPECT_EQ(blocks[1]["state"], "active_pending_free");
  EXPECT_EQ(blocks[2]["state"], "inactive");
  EXPECT_EQ(blocks[3]["state"], "active_allocated");
  EXPECT_EQ(blocks[4]["state"], "inactive");
  EXPECT_EQ(blocks[4]["size"], 2 * kMiB - 4 * 4096);
}

TEST(History, TraceActionsFollowACacheMissAFreeAndAFlush) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->record_history(RecordMode::all);
  Block* a = allocator->malloc(5 * kMiB);
  allocator->free(a);
  allocator->empty_cache();
  const json snapshot = allocator->snapshot();
  EXPECT_EQ(actions_of(snapshot),
            (std::vector<std::string>{"segment_alloc", "alloc", "free_requested", "free_completed",
                                      "segment_free", "snapshot"}));
  const json& trace = snapshot["device_traces"][0];
  EXPECT_EQ(trace[0]["size"], 20 * kMiB);  // segment size
  EXPECT_EQ(trace[1]["size"], 5 * kMiB);   // the request
  for (std::size_t i = 1; i < trace.size(); ++i) {
    EXPECT_GT(trace[i]["time_us"].get<std::int64_t>(), trace[i - 1]["time_us"].get<std::int64_t>());
  }
}

TEST(History, FreeCompletedWaitsForRecordedStreams) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->record_history(RecordMode::all);
  Block* a = allocator->malloc(4096);
  allocator->record_stream(a, 1);
  allocator->free(a);
  EXPECT_EQ(actions_of(allocator->snapshot()),  // no free_completed yet
            (std::vector<std::string>{"segment_alloc", "alloc", "free_requested", "snapshot"}));
  allocator->synchronize();
  allocator->malloc(512);
  const auto actions = actions_of(allocator->snapshot());
  EXPECT_NE(std::find(actions.begin(), actions.end(), "free_completed"), actions.end());
}

TEST(History, OomEntryCarriesDeviceFree) {
  auto allocator = make_meta_allocator(64 * kMiB);
  allocator->record_history(RecordMode::all);
  allocator->malloc(50 * kMiB);
  EXPECT_THROW(allocator->malloc(30 * kMiB), OutOfMemoryError);
  const json trace = allocator->snapshot()["device_traces"][0];
  const json& oom = trace[trace.size() - 2];
  EXPECT_EQ(oom["action"], "oom");
  EXPECT_EQ(oom["device_free"], 14 * kMiB);
  EXPECT_EQ(oom["size"], 30 * kMiB);
  EXPECT_FALSE(oom.contains("addr"));
}

TEST(History, RingBufferKeepsTheNewestEntries) {
  auto allocator = make_meta_allocator(kGiB);
  allocator->record_history(RecordMode::all, 3);
  Block* a = allocator->malloc(5 * kMiB);  // segment_alloc, alloc
  allocator->free(a);                      // free_requested, free_completed
  const std::vector<TraceEntry> trace = allocator->trace();
  ASSERT_EQ(trace.size(), 3u);
  EXPECT_EQ(trace[0].action, TraceAction::alloc);
  EXPECT_EQ(trace[2].action, TraceAction::free_completed);
  EXPECT_EQ(trace[2].time_us, 4);
}

TEST(History, StateModeLabelsLiveBlocksWithoutATrace) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->record_history(RecordMode::state);
  {
    PhaseScope phase(TrainingPhase::forward);
    ModuleScope block("blocks.3");
    ModuleScope attention("attn");
    allocator->malloc(4096, 0, MemoryCategory::activation, "q");
  }
  const json snapshot = allocator->snapshot();
  EXPECT_TRUE(snapshot["device_traces"][0].empty());
  const json& block = snapshot["segments"][0]["blocks"][0];
  EXPECT_EQ(block["category"], "activation");
  EXPECT_EQ(block["module"], "blocks.3.attn");
  EXPECT_EQ(block["phase"], "forward");
  EXPECT_EQ(block["tensor"], "q");
  ASSERT_EQ(block["frames"].size(), 1u) << block["frames"].dump();  // stacks are off
  EXPECT_EQ(block["frames"][0]["filename"], "blocks.3.attn");
  EXPECT_EQ(block["frames"][0]["name"], "q");
  EXPECT_EQ(block["frames"][0]["line"], 0);
  // The free remainder of the segment carries no owner.
  const json& rest = snapshot["segments"][0]["blocks"][1];
  EXPECT_EQ(rest["state"], "inactive");
  EXPECT_EQ(rest["module"], "");
  EXPECT_EQ(rest["phase"], "none");
  EXPECT_EQ(rest["tensor"], "");
  EXPECT_TRUE(rest["frames"].empty());
}

TEST(History, OffModeRecordsNoFramesButKeepsTheOwner) {
  auto allocator = make_sim_allocator(kGiB);
  PhaseScope phase(TrainingPhase::setup);
  ModuleScope module("wte");
  allocator->malloc(4096, 0, MemoryCategory::parameter, "w");
  const json block = allocator->snapshot()["segments"][0]["blocks"][0];
  EXPECT_TRUE(block["frames"].empty());
  EXPECT_EQ(block["category"], "parameter");
  EXPECT_EQ(block["module"], "wte");
  EXPECT_EQ(block["phase"], "setup");
  EXPECT_EQ(block["tensor"], "w");
}

TEST(History, TraceEntriesCarryOwnerAndSteadyClockTime) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->record_history(RecordMode::all);
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  const std::int64_t before_ns = now_ns();
  Block* block = nullptr;
  {
    PhaseScope phase(TrainingPhase::backward);
    ModuleScope module("blocks.0.mlp");
    block = allocator->malloc(3 * kMiB + 7, 0, MemoryCategory::temporary, "dfch");
  }
  allocator->free(block);  // outside the scopes: the free keeps the allocation's owner
  const std::int64_t after_ns = now_ns();
  const std::vector<TraceEntry> trace = allocator->trace();
  ASSERT_EQ(trace.size(), 4u);  // segment_alloc, alloc, free_requested, free_completed
  for (const TraceEntry& entry : trace) {
    EXPECT_EQ(entry.module, "blocks.0.mlp") << trace_action_name(entry.action);
    EXPECT_EQ(entry.phase, TrainingPhase::backward) << trace_action_name(entry.action);
    EXPECT_EQ(entry.name, "dfch");
    EXPECT_EQ(entry.stack, 0u);
    EXPECT_GE(entry.time_ns, before_ns);
    EXPECT_LE(entry.time_ns, after_ns);
  }
  for (std::size_t i = 1; i < trace.size(); ++i) EXPECT_GE(trace[i].time_ns, trace[i - 1].time_ns);
  const json entries = allocator->snapshot()["device_traces"][0];
  for (const json& entry : entries) {
    ASSERT_TRUE(entry.contains("time_ns")) << entry.dump();
    if (entry["action"] == "snapshot") continue;
    EXPECT_EQ(entry["module"], "blocks.0.mlp");
    EXPECT_EQ(entry["phase"], "backward");
    EXPECT_EQ(entry["tensor"], "dfch");
    EXPECT_EQ(entry["category"], "temporary");
    ASSERT_EQ(entry["frames"].size(), 1u);
    EXPECT_EQ(entry["frames"][0]["filename"], "blocks.0.mlp");
  }
}

TEST(ExpandableSnapshot, OneSegmentPerMappedRange) {
  auto allocator = make_sim_allocator(kGiB, "expandable_segments:True");
  allocator->record_history(RecordMode::all);
  allocator->malloc(30 * kMiB);
  const json snapshot = allocator->snapshot();
  ASSERT_EQ(snapshot["segments"].size(), 1u);
  EXPECT_EQ(snapshot["segments"][0]["is_expandable"], true);
  EXPECT_EQ(snapshot["segments"][0]["total_size"], 40 * kMiB);
  EXPECT_EQ(actions_of(snapshot), (std::vector<std::string>{"segment_map", "alloc", "snapshot"}));
  EXPECT_EQ(snapshot["device_traces"][0][0]["size"], 40 * kMiB);
}

}  // namespace
}  // namespace vramlab::memory
