// Phase and module scopes, their listener, and C++ call stacks in the allocator's history: nesting,
// per-thread state, interning of identical call sites, and what the resolved frames leave out.
//   build/tests/bin/test_memory --gtest_filter='TrainingPhase.*' (one of its suites)
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/platform/errors.h"
#include "tests/memory/allocator_test_util.h"

namespace vramlab::memory {
namespace {

using nlohmann::json;
using testing::kGiB;
using testing::make_sim_allocator;

TEST(TrainingPhase, NamesRoundTripAndBadNamesAreRefused) {
  for (const TrainingPhase phase :
       {TrainingPhase::none, TrainingPhase::setup, TrainingPhase::forward, TrainingPhase::backward,
        TrainingPhase::recompute, TrainingPhase::optimizer}) {
    EXPECT_EQ(parse_training_phase(training_phase_name(phase)), phase);
  }
  EXPECT_EQ(training_phase_name(TrainingPhase::recompute), "recompute");
  for (const char* bad : {"", "Forward", "forward ", "optimiser"}) {
    try {
      parse_training_phase(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& error) {
      const std::string quoted = std::string("'").append(bad).append("'");
      EXPECT_NE(std::string(error.what()).find(quoted), std::string::npos) << error.what();
    }
  }
}

TEST(PhaseScope, NestsAndRestoresTheOuterPhase) {
  EXPECT_EQ(current_phase(), TrainingPhase::none);
  {
    PhaseScope backward(TrainingPhase::backward);
    EXPECT_EQ(current_phase(), TrainingPhase::backward);
    {
      PhaseScope recompute(TrainingPhase::recompute);
      EXPECT_EQ(current_phase(), TrainingPhase::recompute);
    }
    EXPECT_EQ(current_phase(), TrainingPhase::backward);
  }
  EXPECT_EQ(current_phase(), TrainingPhase::none);
}

TEST(ModuleScope, PathsNestUnwindAndInternToOneId) {
  EXPECT_EQ(current_module_id(), 0u);
  EXPECT_EQ(module_path(0), "");
  std::uint32_t first_id = 0;
  {
    ModuleScope block("blocks.11");
    {
      ModuleScope attention("attn");
      EXPECT_EQ(module_path(current_module_id()), "blocks.11.attn");
      first_id = current_module_id();
      ModuleScope deeper("qkv.inner");
      EXPECT_EQ(module_path(current_module_id()), "blocks.11.attn.qkv.inner");
    }
    EXPECT_EQ(module_path(current_module_id()), "blocks.11");
  }
  EXPECT_EQ(current_module_id(), 0u);
  // The same path reached in one step or two is the same id.
  ModuleScope whole("blocks.11.attn");
  EXPECT_EQ(current_module_id(), first_id);
}

TEST(ModuleScope, RefusesEmptyAndDottedEnds) {
  for (const char* bad : {"", ".attn", "attn.", "."}) {
    EXPECT_THROW(ModuleScope{bad}, UsageError) << "'" << bad << "'";
    EXPECT_EQ(current_module_id(), 0u) << "a refused scope changed the path";
  }
}

TEST(Scopes, ThreadsKeepSeparatePhasesAndPaths) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->record_history(RecordMode::all);
  PhaseScope main_phase(TrainingPhase::optimizer);
  ModuleScope main_module("optimizer");
  constexpr int kThreads = 4;
  constexpr int kAllocations = 50;
  std::vector<std::thread> threads;
  std::vector<std::string> seen_paths(kThreads);
  std::vector<TrainingPhase> seen_phases(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // A new thread starts outside every scope, whatever the creating thread is in.
      seen_paths[static_cast<size_t>(t)] = module_path(current_module_id());
      seen_phases[static_cast<size_t>(t)] = current_phase();
      PhaseScope phase(t % 2 == 0 ? TrainingPhase::forward : TrainingPhase::backward);
      ModuleScope module("blocks." + std::to_string(t));
      const std::string name = std::string("t").append(std::to_string(t));
      for (int i = 0; i < kAllocations; ++i) {
        ModuleScope inner(i % 2 == 0 ? "attn" : "mlp");
        allocator->free(allocator->malloc(512 * static_cast<size_t>(1 + i + t), 0,
                                          MemoryCategory::temporary, name));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(module_path(current_module_id()), "optimizer");
  EXPECT_EQ(current_phase(), TrainingPhase::optimizer);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(seen_paths[static_cast<size_t>(t)], "") << "thread " << t;
    EXPECT_EQ(seen_phases[static_cast<size_t>(t)], TrainingPhase::none) << "thread " << t;
  }
  int allocs = 0;
  for (const TraceEntry& entry : allocator->trace()) {
    if (entry.action != TraceAction::alloc) continue;
    ++allocs;
    const int t = std::stoi(entry.name.substr(1));
    const std::string block = "blocks." + std::to_string(t);
    EXPECT_TRUE(entry.module == block + ".attn" || entry.module == block + ".mlp")
        << entry.name << " in " << entry.module;
    EXPECT_EQ(entry.phase, t % 2 == 0 ? TrainingPhase::forward : TrainingPhase::backward)
        << entry.name;
  }
  EXPECT_EQ(allocs, kThreads * kAllocations);
}

// Remembers what it hears, as the profiler's spans do.
struct LoggingListener : ScopeListener {
  std::vector<std::string> log;
  void phase_changed(TrainingPhase phase) noexcept override {
    log.push_back("phase " + std::string(training_phase_name(phase)));
  }
  void module_entered(std::uint32_t module_id) noexcept override {
    log.push_back("enter " + module_path(module_id));
  }
  void module_exited(std::uint32_t module_id) noexcept override {
    log.push_back("exit " + module_path(module_id));
  }
};

TEST(ScopeListener, HearsBalancedEntriesAndExitsOnItsThreadOnly) {
  LoggingListener listener;
  ScopeListener* const previous = set_scope_listener(&listener);
  EXPECT_EQ(previous, nullptr);
  {
    PhaseScope forward(TrainingPhase::forward);
    ModuleScope block("blocks.0");
    { ModuleScope attention("attn"); }
    ModuleScope mlp("mlp");
    // Another thread's scopes are its own listener's business.
    std::thread([] {
      PhaseScope other(TrainingPhase::backward);
      ModuleScope module("lm_head");
    }).join();
  }
  EXPECT_EQ(set_scope_listener(previous), &listener);
  { ModuleScope unheard("wte"); }
  const std::vector<std::string> expected = {
      "phase forward",      "enter blocks.0",    "enter blocks.0.attn", "exit blocks.0.attn",
      "enter blocks.0.mlp", "exit blocks.0.mlp", "exit blocks.0",       "phase none"};
  EXPECT_EQ(listener.log, expected);
  int depth = 0;
  for (const std::string& line : listener.log) {
    depth += line.starts_with("enter ") ? 1 : line.starts_with("exit ") ? -1 : 0;
    EXPECT_GE(depth, 0) << line;
  }
  EXPECT_EQ(depth, 0);
}

// Two distinct call sites of the allocator, kept out of line so each has its own return address.
[[gnu::noinline]] Block* allocate_from_site_a(CachingAllocator& allocator) {
  Block* block = allocator.malloc(4096, 0, MemoryCategory::activation, "a");
  asm volatile("" ::: "memory");  // keeps the call from becoming a tail call
  return block;
}

[[gnu::noinline]] Block* allocate_from_site_b(CachingAllocator& allocator) {
  Block* block = allocator.malloc(4096, 0, MemoryCategory::activation, "b");
  asm volatile("" ::: "memory");
  return block;
}

bool names_function(const std::vector<StackFrame>& frames, std::string_view function) {
  for (const StackFrame& frame : frames) {
    if (frame.function.find(function) != std::string::npos) return true;
  }
  return false;
}

TEST(CallStacks, IdenticalCallSitesInternToOneIdAndDifferentOnesDoNot) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->record_history(RecordMode::all, SIZE_MAX, /*cpp_stacks=*/true);
  std::vector<StackId> a_ids;
  std::vector<StackId> b_ids;
  std::size_t interned_after_first = 0;
  for (int i = 0; i < 5; ++i) {
    Block* a = allocate_from_site_a(*allocator);
    Block* b = allocate_from_site_b(*allocator);
    a_ids.push_back(a->stack_id);
    b_ids.push_back(b->stack_id);
    allocator->free(a);
    allocator->free(b);
    if (i == 0) interned_after_first = interned_call_stack_count();
  }
  EXPECT_EQ(interned_call_stack_count(), interned_after_first) << "a known stack was stored again";
  for (int i = 0; i < 5; ++i) {
    EXPECT_NE(a_ids[static_cast<size_t>(i)], 0u);
    EXPECT_EQ(a_ids[static_cast<size_t>(i)], a_ids[0]) << "call " << i;
    EXPECT_EQ(b_ids[static_cast<size_t>(i)], b_ids[0]) << "call " << i;
  }
  EXPECT_NE(a_ids[0], b_ids[0]);

  const std::vector<StackFrame> frames = resolve_call_stack(a_ids[0]);
  ASSERT_FALSE(frames.empty());
  EXPECT_NE(frames[0].function.find("allocate_from_site_a"), std::string::npos)
      << "innermost frame: " << frames[0].function;
  EXPECT_FALSE(names_function(frames, "allocate_from_site_b"));
  EXPECT_FALSE(names_function(frames, "CachingAllocator::"));
  EXPECT_FALSE(names_function(frames, "capture_call_stack"));
  EXPECT_FALSE(names_function(frames, "boost::stacktrace"));
  EXPECT_FALSE(names_function(frames, "__libc_start")) << "the C start-up frames are cut";
  EXPECT_EQ(frames.back().function, "main") << "the stack ends at the test's main";
  EXPECT_TRUE(resolve_call_stack(0).empty());
}

TEST(CallStacks, SnapshotFramesAreTheLabelThenTheCppFrames) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->record_history(RecordMode::all, SIZE_MAX, /*cpp_stacks=*/true);
  PhaseScope phase(TrainingPhase::forward);
  ModuleScope module("blocks.2.attn");
  allocate_from_site_a(*allocator);
  const json snapshot = allocator->snapshot();
  const json& block = snapshot["segments"][0]["blocks"][0];
  ASSERT_GE(block["frames"].size(), 2u) << block["frames"].dump();
  EXPECT_EQ(block["frames"][0], (json{{"filename", "blocks.2.attn"}, {"line", 0}, {"name", "a"}}));
  EXPECT_NE(block["frames"][1]["name"].get<std::string>().find("allocate_from_site_a"),
            std::string::npos)
      << block["frames"][1].dump();
  for (const json& frame : block["frames"]) {
    EXPECT_TRUE(frame.contains("filename") && frame.contains("line") && frame.contains("name"))
        << frame.dump();
  }
  const json& alloc = snapshot["device_traces"][0][1];
  ASSERT_EQ(alloc["action"], "alloc");
  EXPECT_EQ(alloc["frames"], block["frames"]);
}

TEST(CallStacks, OffRecordsNoStackAndOnlyTheLabelFrame) {
  auto allocator = make_sim_allocator(kGiB);
  allocator->record_history(RecordMode::all);  // stacks off
  ModuleScope module("wte");
  Block* block = allocate_from_site_a(*allocator);
  EXPECT_EQ(block->stack_id, 0u);
  const json snapshot = allocator->snapshot();
  EXPECT_EQ(snapshot["segments"][0]["blocks"][0]["frames"].size(), 1u);
  for (const json& entry : snapshot["device_traces"][0]) {
    EXPECT_LE(entry["frames"].size(), 1u) << entry.dump();
  }
  // Stacks asked for with recording off are not captured either.
  allocator->record_history(RecordMode::off, SIZE_MAX, /*cpp_stacks=*/true);
  EXPECT_EQ(allocate_from_site_a(*allocator)->stack_id, 0u);
}

}  // namespace
}  // namespace vramlab::memory
