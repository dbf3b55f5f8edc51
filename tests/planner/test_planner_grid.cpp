// The planner on a grid of models x devices x GPU counts: every plan it chooses runs on meta
// devices of the preset without running out of memory, its reserved peak within the predicted
// one; brute force over the same candidates finds no fitting plan of lower predicted time; the
// binding constraint and the runner-up say what the candidates say; and when nothing fits, the
// shortfall's GPU count is the first that does.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/memory/oom_error.h"
#include "common/planner/plan_run.h"
#include "common/planner/search.h"
#include "common/platform/errors.h"

namespace vramlab::planner {
namespace {

struct GridRow {
  const char* model;
  const char* device;
  int64_t gpus;
  int64_t seq;
  int64_t global_batch;
  int64_t host_ram_gib;  // 0: no limit
  bool all_optimizers;
  bool int8_activations = false;  // the search may store saved activations in int8
};

Problem problem_of(const GridRow& row) {
  Problem p;
  p.model = model_config_by_name(row.model);
  p.seq = row.seq;
  p.global_batch = row.global_batch;
  p.machine.device = memory::parse_device(std::string("meta:") + row.device);
  p.machine.gpus = row.gpus;
  p.machine.host_ram_bytes = row.host_ram_gib << 30;
  // Several GPUs multiply the space by their tensor-parallel degrees: those rows search mixed
  // bf16 and three recompute schedules (the single-GPU rows search the whole space), so that the
  // search and its brute force stay quick under the sanitizers.
  if (row.gpus > 2) {
    p.space.precisions = {plan::Precision::mixed_bf16};
    p.space.recomputes = {plan::RecomputeSpec{},
                          plan::RecomputeSpec{plan::RecomputeSpec::Kind::selective, 0, 0},
                          plan::RecomputeSpec{plan::RecomputeSpec::Kind::full, 0, 0}};
  }
  if (row.int8_activations)
    p.space.compressions = {plan::ActivationCompression::none, plan::ActivationCompression::int8,
                            plan::ActivationCompression::int8_block};
  if (row.all_optimizers)
    p.space.optimizers = {plan::Optimizer::adamw, plan::Optimizer::adamw_8bit,
                          plan::Optimizer::lion, plan::Optimizer::adam_mini,
                          plan::Optimizer::adafactor};
  return p;
}

// Every candidate the runtime runs, priced: what a brute force sees.
std::vector<Priced> brute_force(const Problem& problem) {
  std::vector<Priced> priced;
  for (const Candidate& c : enumerate_candidates(problem)) {
    if (!is_runnable(problem.model, problem.seq, c)) continue;
    priced.push_back(price(problem, c));
  }
  return priced;
}

std::string gib(int64_t bytes) {
  return memory::format_size(static_cast<uint64_t>(bytes));
}

class PlannerGrid : public ::testing::TestWithParam<GridRow> {};

TEST_P(PlannerGrid, ChoosesTheCheapestFittingPlanAndItRunsWithinThePrediction) {
  const Problem problem = problem_of(GetParam());
  const SearchResult r = search_plans(problem);
  ASSERT_TRUE(r.chosen.has_value()) << "nothing fits " << GetParam().model;
  const Priced& chosen = *r.chosen;
  const auto capacity = static_cast<int64_t>(problem.machine.device.spec.capacity_bytes);

  const MeasuredRun run = run_plan(problem, chosen.candidate);
  ASSERT_TRUE(run.fits) << run.out_of_memory;
  EXPECT_LE(run.reserved_bytes, capacity);
  EXPECT_LE(run.peak_bytes, run.reserved_bytes);
  // The prediction bounds what the run reserved.
  EXPECT_LE(run.reserved_bytes, chosen.memory.device_peak);
  std::printf(
      "  %s on %lld x %s: predicted %s, measured peak %s reserved %s; %.3f s predicted, "
      "%.3f s on the clock\n",
      GetParam().model, static_cast<long long>(problem.machine.gpus), GetParam().device,
      gib(chosen.memory.device_peak).c_str(), gib(run.peak_bytes).c_str(),
      gib(run.reserved_bytes).c_str(), chosen.time.total(), run.step_seconds);

  const std::vector<Priced> all = brute_force(problem);
  EXPECT_EQ(static_cast<int64_t>(all.size()), r.runnable);
  int64_t fitting = 0;
  bool faster_overflows_device = false, faster_overflows_host = false;
  std::optional<Priced> runner_up;
  for (const Priced& p : all) {
    if (p.fits()) {
      ++fitting;
      EXPECT_GE(p.time.total(), chosen.time.total()) << "a cheaper plan fits";
      if (!same_techniques(p.candidate, chosen.candidate) &&
          (!runner_up || p.time.total() < runner_up->time.total()))
        runner_up = p;
    }
    if (p.time.total() < chosen.time.total()) {
      EXPECT_FALSE(p.fits());
      faster_overflows_device = faster_overflows_device || !p.fits_device;
      faster_overflows_host = faster_overflows_host || !p.fits_host;
    }
  }
  EXPECT_EQ(fitting, r.fitting);
  const Binding expected = faster_overflows_device && faster_overflows_host ? Binding::both
                           : faster_overflows_device                        ? Binding::device_memory
                           : faster_overflows_host                          ? Binding::host_memory
                                                                            : Binding::none;
  EXPECT_EQ(r.binding, expected);
  ASSERT_EQ(runner_up.has_value(), r.runner_up.has_value());
  if (runner_up) {
    EXPECT_DOUBLE_EQ(r.runner_up->time.total(), runner_up->time.total());
  }
}

// The tutorials' recipes and the sizes around them.
INSTANTIATE_TEST_SUITE_P(
    ModelsDevicesGpus, PlannerGrid,
    ::testing::Values(GridRow{"gpt2-124m", "t4-16g", 1, 1024, 8, 0, false},
                      GridRow{"gpt2-1.5b", "rtx4090-24g", 1, 1024, 8, 0, false},
                      GridRow{"llama2-7b", "rtx4090-24g", 1, 2048, 16, 0, true},
                      GridRow{"llama2-7b", "rtx4090-24g", 1, 2048, 16, 128, false},
                      GridRow{"llama2-7b", "a100-40g", 4, 4096, 16, 0, false},
                      GridRow{"llama2-13b", "a100-80g", 8, 4096, 32, 256, false},
                      GridRow{"llama2-70b", "a100-80g", 8, 4096, 8, 0, false},
                      GridRow{"llama3-8b", "h100-80g", 2, 8192, 4, 0, true},
                      GridRow{"gpt2-1.5b", "t4-16g", 1, 1024, 8, 0, false, true}),
    [](const ::testing::TestParamInfo<GridRow>& row) {
      std::string name =
          std::string(row.param.model) + "_" + row.param.device + "_x" +
          std::to_string(row.param.gpus) +
          (row.param.host_ram_gib > 0 ? "_host" + std::to_string(row.param.host_ram_gib) + "GiB"
                                      : "") +
          (row.param.all_optimizers ? "_anyOptimizer" : "") +
          (row.param.int8_activations ? "_int8" : "");
      for (char& c : name)
        if (c == '-' || c == '.') c = '_';
      return name;
    });

TEST(PlannerShortfall, NamesTheDeviceHostAndGpuCountThatWouldFit) {
  Problem problem = problem_of({"llama2-7b", "rtx4090-24g", 1, 2048, 16, 64, false});
  // The shortfall searches again at 2, 4, 8, ... GPUs: a narrow space keeps that quick.
  problem.space.precisions = {plan::Precision::mixed_bf16};
  problem.space.attentions = {plan::AttentionKind::flash};
  problem.space.loss_chunks = {1};
  const SearchResult r = search_plans(problem);
  ASSERT_FALSE(r.chosen.has_value());
  ASSERT_TRUE(r.shortfall.has_value());
  const Shortfall& s = *r.shortfall;
  int64_t least = std::numeric_limits<int64_t>::max();
  for (const Priced& p : brute_force(problem)) least = std::min(least, p.memory.device_peak);
  EXPECT_EQ(s.least_device_bytes, least);
  // The device could hold a plan, but none of those fits the host: the shortfall names its RAM.
  EXPECT_LE(s.least_device_bytes, static_cast<int64_t>(problem.machine.device.spec.capacity_bytes));
  // The smallest preset that holds the least any plan needs.
  std::string smallest;
  for (const memory::DevicePreset& preset : memory::device_presets())
    if (smallest.empty() && preset.capacity_bytes >= static_cast<uint64_t>(s.least_device_bytes))
      smallest = preset.name;
  EXPECT_EQ(s.larger_preset, smallest);
  EXPECT_GT(s.least_host_bytes, problem.machine.host_ram_bytes);
  problem.machine.host_ram_bytes = s.least_host_bytes;
  EXPECT_TRUE(search_plans(problem).chosen.has_value()) << "with the host RAM it names";
  problem.machine.host_ram_bytes = s.least_host_bytes - 1;
  EXPECT_FALSE(search_plans(problem).chosen.has_value()) << "with a byte less";
  problem.machine.host_ram_bytes = int64_t{64} << 30;
  ASSERT_GT(s.gpus_that_fit, 1);
  problem.machine.gpus = s.gpus_that_fit;
  EXPECT_TRUE(search_plans(problem).chosen.has_value()) << s.gpus_that_fit << " GPUs";
  problem.machine.gpus = s.gpus_that_fit / 2;
  EXPECT_FALSE(search_plans(problem).chosen.has_value()) << s.gpus_that_fit / 2 << " GPUs";
}

TEST(PlannerBadInput, NamesTheValue) {
  Problem problem = problem_of({"gpt2-124m", "t4-16g", 1, 1024, 8, 0, false});
  problem.seq = 4096;
  EXPECT_THROW(
      {
        try {
          (void)search_plans(problem);
        } catch (const UsageError& e) {
          EXPECT_NE(std::string(e.what()).find("--seq 4096"), std::string::npos) << e.what();
          throw;
        }
      },
      UsageError);
  problem.seq = 1024;
  problem.global_batch = 0;
  EXPECT_THROW((void)search_plans(problem), UsageError);
  problem.global_batch = 8;
  problem.machine.device = memory::parse_device("meta:16GiB");  // a capacity without rates
  EXPECT_THROW((void)search_plans(problem), UsageError);
}

}  // namespace
}  // namespace vramlab::planner
