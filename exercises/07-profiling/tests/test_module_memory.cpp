// Tests of exercise 07.2 (memory per module: charged to the allocating module, and the naive
// in-scope net). They run against your code (`vramlab check 07.2`) and against the reference
// (ctest: test_ex_07_2_ref).
// Expectations: recordings written by tests/history_builder.h, which knows for every entry which
// module allocated it and which module scope was open when it happened, because it opened them:
// random ones (nested module scopes, phases, pending frees, reused addresses, allocations live
// before the trace) and hand-made ones (an activation freed by the loss's backward, a module
// running twice, a free outside every module); and the runtime's snapshot::analyse_peak, whose
// by_module groups what was live at the peak by allocating module; and a real training step
// recorded by profile::Profiler, whose totals must equal the allocator's own counters of requested
// bytes. Every value is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/memory_stats.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/profile/profiler.h"
#include "common/snapshot/snapshot_analysis.h"
#include "common/train/trainer.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "exercises/07-profiling/tests/history_builder.h"
#include "lessons/07-profiling/api/module_memory.h"

namespace vramlab::lesson07 {
namespace {

using testing::HistoryBuilder;
using testing::Made;
using workbook::Comparison;
using workbook::Unit;

std::vector<ModuleMemory> expected_rows(const HistoryBuilder& h) {
  std::map<std::string, ModuleMemory> rows;
  auto row = [&rows](const std::string& module) -> ModuleMemory& {
    rows[module].module = module;
    return rows[module];
  };
  for (const Made& m : h.allocated_in_trace()) {
    ++row(m.owner.module).allocations;
    row(m.owner.module).allocated_bytes += m.bytes;
  }
  for (const auto& [address, m] : h.live_at_peak())
    row(m.owner.module).live_at_peak_bytes += m.bytes;
  for (const auto& [module, bytes] : h.freed_by_others()) row(module).freed_by_others_bytes = bytes;
  for (const auto& [module, bytes] : h.scope_net()) row(module).scope_net_bytes = bytes;
  for (const std::string& module : h.free_owners()) row(module);
  std::vector<ModuleMemory> sorted;
  for (const auto& [module, r] : rows) sorted.push_back(r);
  std::sort(sorted.begin(), sorted.end(), [](const ModuleMemory& x, const ModuleMemory& y) {
    if (x.live_at_peak_bytes != y.live_at_peak_bytes)
      return x.live_at_peak_bytes > y.live_at_peak_bytes;
    if (x.allocated_bytes != y.allocated_bytes) return x.allocated_bytes > y.allocated_bytes;
    return x.module < y.module;
  });
  return sorted;
}

std::string shown(const std::string& module) {
  return module.empty() ? "(none)" : module;
}

// Every row's numbers, and the rows' order, against the builder's.
struct ModuleChecks {
  Comparison allocations{"alloc entries per allocating module"};
  Comparison allocated{"bytes allocated per allocating module (never reduced by frees)",
                       Unit::kBytes};
  Comparison live{"bytes live at the peak per allocating module", Unit::kBytes};
  Comparison freed_by_others{"bytes of a module's allocations freed while another module ran",
                             Unit::kBytes};
  Comparison scope_net{"naive in-scope net: allocated minus freed while the module ran",
                       Unit::kBytes};
  std::int64_t orders = 0;
  std::int64_t wrong_orders = 0;
  std::string first_wrong;

  void add(const std::string& where, const HistoryBuilder& h, std::mt19937_64& rng) {
    const std::vector<ModuleMemory> want = expected_rows(h);
    const std::vector<ModuleMemory> got = memory_per_module(h.recording(rng));
    std::vector<std::string> want_names, got_names;
    for (const ModuleMemory& r : want) want_names.push_back(shown(r.module));
    for (const ModuleMemory& r : got) got_names.push_back(shown(r.module));
    ++orders;
    const workbook::NameSetDiff diff = workbook::compare_names(want_names, got_names);
    if (!diff.same() && ++wrong_orders == 1)
      first_wrong = where + ": " + workbook::describe(diff, got_names);
    std::map<std::string, ModuleMemory> by_module;
    for (const ModuleMemory& r : got) by_module[r.module] = r;
    for (const ModuleMemory& w : want) {
      const ModuleMemory g = by_module.count(w.module) != 0 ? by_module[w.module] : ModuleMemory{};
      const std::string at = where + ", module " + shown(w.module);
      allocations.add(at, static_cast<double>(w.allocations), static_cast<double>(g.allocations));
      allocated.add(at, static_cast<double>(w.allocated_bytes),
                    static_cast<double>(g.allocated_bytes));
      live.add(at, static_cast<double>(w.live_at_peak_bytes),
               static_cast<double>(g.live_at_peak_bytes));
      freed_by_others.add(at, static_cast<double>(w.freed_by_others_bytes),
                          static_cast<double>(g.freed_by_others_bytes));
      scope_net.add(at, static_cast<double>(w.scope_net_bytes),
                    static_cast<double>(g.scope_net_bytes));
    }
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(allocations);
    VRAMLAB_EXPECT_PASSES(allocated);
    VRAMLAB_EXPECT_PASSES(live);
    VRAMLAB_EXPECT_PASSES(freed_by_others);
    VRAMLAB_EXPECT_PASSES(scope_net);
    EXPECT_EQ(wrong_orders, 0) << "the rows (by live at the peak, allocated, path) differ in "
                               << wrong_orders << " of " << orders
                               << " recordings; first: " << first_wrong;
  }
};

//! [test]
TEST(ModuleMemory, AnActivationFreedByTheLossIsChargedToTheModuleThatMadeIt) {
  std::mt19937_64 rng(721);
  ModuleChecks checks;
  HistoryBuilder h;
  h.start_recording();
  h.enter("blocks.0");
  h.enter("blocks.0.attn");
  const std::uint64_t att = h.alloc(3 << 20, "att");  // saved for backward
  h.exit();
  h.enter("blocks.0.mlp");
  const std::uint64_t fc = h.alloc(1 << 20, "fc");
  h.exit();
  h.exit();
  h.enter("loss");
  h.alloc(1 << 19, "logits");
  h.set_phase("backward");
  h.free(att);  // freed by the loss's backward, not by blocks.0.attn
  h.free(fc);
  h.alloc(5 << 20, "grad_logits");  // the peak: logits and grad_logits only
  h.exit();
  checks.add("att and fc freed inside loss", h, rng);
  checks.expect_passes();
}
//! [test]

TEST(ModuleMemory, RandomRecordingsMatchTheBuildersAttribution) {
  std::mt19937_64 rng(722);
  ModuleChecks checks;
  for (const int before_trace : {0, 5, 30})
    for (const int events : {1, 3, 40, 400, 1500})
      for (const std::int64_t max_bytes : {std::int64_t{777}, std::int64_t{9} << 30})
        for (int trial = 0; trial < 3; ++trial)
          checks.add("random: " + std::to_string(before_trace) + " events before the trace, " +
                         std::to_string(events) + " after, sizes up to " +
                         std::to_string(max_bytes),
                     testing::random_history(rng, before_trace, events, max_bytes), rng);
  checks.expect_passes();
}

TEST(ModuleMemory, AModuleThatRunsTwiceAllocatesTwiceAndAddressesAreReused) {
  std::mt19937_64 rng(723);
  ModuleChecks checks;
  HistoryBuilder h;
  const std::uint64_t weights = h.alloc(4096, "weight");  // outside every module, before the trace
  h.start_recording();
  std::uint64_t address = 0;
  for (int pass = 0; pass < 2; ++pass) {  // e.g. a checkpointed block's forward and its recompute
    h.set_phase(pass == 0 ? "forward" : "backward");
    h.enter("blocks.1");
    h.enter("blocks.1.mlp");
    address = h.alloc(2000, "fc", address);  // the second pass gets the cached block back
    h.exit();
    h.free(address);  // freed by blocks.1 itself, outside blocks.1.mlp
    h.exit();
  }
  h.enter("lm_head");
  h.alloc(1000, "logits", address);  // another module on the same address
  h.exit();
  h.enter("optimizer");
  h.free(weights);  // memory from before the trace, freed inside a module
  h.exit();
  h.free_request(address);  // outside every module; completes after the trace
  checks.add("two passes, reused addresses", h, rng);
  checks.expect_passes();
}

TEST(ModuleMemory, LiveAtThePeakPerModuleIsTheRuntimesByModule) {
  std::mt19937_64 rng(724);
  Comparison live("bytes live at the peak per module, against analyse_peak's by_module",
                  Unit::kBytes);
  for (const int events : {1, 60, 700})
    for (int trial = 0; trial < 6; ++trial) {
      const profile::Recording recording =
          testing::random_history(rng, trial, events, std::int64_t{3} << 32).recording(rng);
      std::map<std::string, std::int64_t> got;
      for (const ModuleMemory& r : memory_per_module(recording))
        if (r.live_at_peak_bytes != 0) got[shown(r.module)] = r.live_at_peak_bytes;
      const snapshot::PeakReport runtime = snapshot::analyse_peak(recording.snapshot);
      std::map<std::string, std::int64_t> want;
      for (const snapshot::ByteGroup& g : runtime.by_module) want[g.key] = g.bytes;
      for (const auto& [module, bytes] : want)
        live.add(std::to_string(events) + " events, module " + module, static_cast<double>(bytes),
                 static_cast<double>(got.count(module) != 0 ? got[module] : 0));
      for (const auto& [module, bytes] : got)
        if (want.count(module) == 0)
          live.add(std::to_string(events) + " events, module " + module + " (not in by_module)",
                   0.0, static_cast<double>(bytes));
    }
  VRAMLAB_EXPECT_PASSES(live);
}

// A real step, profiled: the rows' totals are the allocator's counters over the same stretch, and
// what each module held at the peak is analyse_peak's by_module.
TEST(ModuleMemory, ARealProfiledStepAddsUpToTheAllocatorsCounters) {
  for (const char* name : {"gpt2-mini", "llama-tiny"}) {
    nn::Runtime runtime(memory::parse_device("sim:t4-16g"));
    train::TrainOptions options;
    options.model = model_config_by_name(name);
    options.batch = 2;
    options.seq = 13;
    train::Trainer trainer(runtime, options);
    trainer.step();  // the parameters and optimizer states exist before the recording
    memory::CachingAllocator& allocator = runtime.allocator();
    const memory::DeviceStats before = allocator.stats();
    profile::Profiler profiler(runtime);
    trainer.step();
    const memory::DeviceStats after = allocator.stats();
    const profile::Recording recording = profiler.stop();
    const std::vector<ModuleMemory> rows = memory_per_module(recording);

    std::int64_t allocations = 0, allocated = 0, scope_net = 0, live = 0;
    std::int64_t modules = 0;
    for (const ModuleMemory& r : rows) {
      allocations += r.allocations;
      allocated += r.allocated_bytes;
      scope_net += r.scope_net_bytes;
      live += r.live_at_peak_bytes;
      modules += r.module.empty() ? 0 : 1;
    }
    const auto delta = [](const memory::StatArray& a, const memory::StatArray& b,
                          std::int64_t memory::Stat::*field) {
      return b[memory::kAggregate].*field - a[memory::kAggregate].*field;
    };
    Comparison totals(std::string(name) + ": totals over every module of a real step",
                      Unit::kBytes);
    totals.add(
        "allocations = the allocator's allocation count",
        static_cast<double>(delta(before.allocation, after.allocation, &memory::Stat::allocated)),
        static_cast<double>(allocations));
    totals.add("allocated bytes = the allocator's requested_bytes.allocated",
               static_cast<double>(
                   delta(before.requested_bytes, after.requested_bytes, &memory::Stat::allocated)),
               static_cast<double>(allocated));
    totals.add("in-scope nets = requested_bytes.allocated - requested_bytes.freed",
               static_cast<double>(
                   delta(before.requested_bytes, after.requested_bytes, &memory::Stat::current)),
               static_cast<double>(scope_net));
    totals.add("live at the peak = analyse_peak's peak",
               static_cast<double>(snapshot::analyse_peak(recording.snapshot).peak_bytes),
               static_cast<double>(live));
    VRAMLAB_EXPECT_PASSES(totals);
    EXPECT_GT(modules, 2) << name << ": the step ran in modules (blocks, attention, MLP)";

    std::map<std::string, std::int64_t> got;
    for (const ModuleMemory& r : rows)
      if (r.live_at_peak_bytes != 0) got[shown(r.module)] = r.live_at_peak_bytes;
    Comparison by_module(std::string(name) + ": live at the peak per module, against by_module",
                         Unit::kBytes);
    for (const snapshot::ByteGroup& g : snapshot::analyse_peak(recording.snapshot).by_module)
      by_module.add(g.key, static_cast<double>(g.bytes),
                    static_cast<double>(got.count(g.key) != 0 ? got[g.key] : 0));
    VRAMLAB_EXPECT_PASSES(by_module);
  }
}

TEST(ModuleMemory, RejectsASnapshotWithoutSegmentsNamingTheKey) {
  profile::Recording recording;
  recording.snapshot = {{"device_traces", nlohmann::json::array()}};
  try {
    (void)memory_per_module(recording);
    ADD_FAILURE() << "a snapshot without \"segments\" was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("segments"), std::string::npos)
        << "the message should name segments: " << e.what();
  }
}

}  // namespace
}  // namespace vramlab::lesson07
