// Tests of exercise 03.2 (GradScaler's dynamic loss scale). They run against your code
// (`vramlab check 03.2`) and against the reference (ctest: test_ex_03_2_ref).
// Expectations: scripted runs whose scales follow by hand from PyTorch's defaults (2^16, x2 after
// 2000 clean steps, x0.5 after an overflow); the test's own transcription of PyTorch's
// _amp_update_scale_ kernel (written as the kernel is, with ==) on random configurations, states
// and flag sequences; the runtime's own amp::GradScaler, step by step, on random runs; scales at
// the top of f32's range; bad configurations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/amp/grad_scaler.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/03-mixed-precision/api/scaler_update.h"

namespace vramlab::lesson03 {
namespace {

using workbook::Comparison;
using workbook::Unit;

// PyTorch's kernel, transcribed: the scale and both factors in f32, the tracker compared with ==.
struct KernelState {
  float scale;
  int64_t tracker;
};

void kernel_update(KernelState& s, bool found_inf, const ScalerConfig& c) {
  if (found_inf) {
    s.scale = s.scale * c.backoff_factor;
    s.tracker = 0;
    return;
  }
  const int64_t successful = s.tracker + 1;
  if (successful == c.growth_interval) {
    const float new_scale = s.scale * c.growth_factor;
    if (std::isfinite(new_scale)) s.scale = new_scale;
    s.tracker = 0;
  } else {
    s.tracker = successful;
  }
}

// Compares a whole trace with the kernel's, reporting the first step that differs.
class TraceCheck {
 public:
  TraceCheck()
      : scale_("loss scale of a step (kernel vs yours)", Unit::kNumber),
        skipped_("step skipped (1) or applied (0)", Unit::kNumber),
        steps_("optimizer steps taken", Unit::kNumber),
        final_scale_("scale after the last update", Unit::kNumber),
        final_tracker_("growth_tracker after the last update", Unit::kNumber) {}

  void add(const std::string& run, const std::vector<bool>& flags, const ScalerConfig& config,
           const ScalerTrace& got) {
    KernelState s{config.init_scale, 0};
    std::vector<float> scales;
    int64_t applied = 0;
    for (bool inf : flags) {
      scales.push_back(s.scale);
      applied += inf ? 0 : 1;
      kernel_update(s, inf, config);
    }
    ASSERT_EQ(got.scale.size(), flags.size()) << run << ": one scale per step";
    ASSERT_EQ(got.skipped.size(), flags.size()) << run << ": one skip flag per step";
    size_t i = 0;
    while (i + 1 < flags.size() && got.scale[i] == scales[i]) ++i;
    if (!flags.empty())
      scale_.add(run + " step " + std::to_string(i) + describe_history(flags, i), scales[i],
                 got.scale[i]);
    size_t j = 0;
    while (j + 1 < flags.size() && got.skipped[j] == flags[j]) ++j;
    if (!flags.empty())
      skipped_.add(run + " step " + std::to_string(j) + describe_history(flags, j),
                   flags[j] ? 1 : 0, got.skipped[j] ? 1 : 0);
    steps_.add(run, static_cast<double>(applied), static_cast<double>(got.optimizer_steps));
    final_scale_.add(run, s.scale, got.final_state.scale);
    final_tracker_.add(run, static_cast<double>(s.tracker),
                       static_cast<double>(got.final_state.growth_tracker));
  }

  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(scale_);
    VRAMLAB_EXPECT_PASSES(skipped_);
    VRAMLAB_EXPECT_PASSES(steps_);
    VRAMLAB_EXPECT_PASSES(final_scale_);
    VRAMLAB_EXPECT_PASSES(final_tracker_);
  }

 private:
  // "(after 1500 clean, 1 inf, 499 clean)": the run up to a step, in runs of equal flags.
  static std::string describe_history(const std::vector<bool>& flags, size_t step) {
    std::string out;
    size_t i = 0;
    while (i < step) {
      size_t k = i;
      while (k < step && flags[k] == flags[i]) ++k;
      out += (out.empty() ? "" : ", ") + std::to_string(k - i) + (flags[i] ? " inf" : " clean");
      i = k;
    }
    return " (after " + (out.empty() ? std::string("nothing") : out) + ")";
  }

  Comparison scale_, skipped_, steps_, final_scale_, final_tracker_;
};

std::vector<bool> runs(std::initializer_list<std::pair<int, bool>> parts) {
  std::vector<bool> flags;
  for (const auto& [count, inf] : parts) flags.insert(flags.end(), static_cast<size_t>(count), inf);
  return flags;
}

TEST(ScalerUpdate, AnOverflowAtTheFirstStepHalvesTheScaleAndSkipsTheStep) {
  const ScalerConfig defaults;
  const ScalerTrace t = scaler_trace(runs({{1, true}, {3, false}}), defaults);
  ASSERT_EQ(t.scale.size(), 4u);
  ASSERT_EQ(t.skipped.size(), 4u);
  EXPECT_EQ(t.scale[0], 65536.0f) << "the first step runs at init_scale 2^16";
  EXPECT_TRUE(t.skipped[0]) << "a step whose gradients overflowed must not reach the optimizer";
  EXPECT_EQ(t.scale[1], 32768.0f) << "after the overflow the scale is halved";
  EXPECT_FALSE(t.skipped[1]);
  EXPECT_EQ(t.optimizer_steps, 3);
  EXPECT_EQ(t.final_state.scale, 32768.0f);
  EXPECT_EQ(t.final_state.growth_tracker, 3);
}

//! [test]
TEST(ScalerUpdate, GrowsAfterExactly2000CleanStepsAndAnOverflowRestartsTheCount) {
  const ScalerConfig defaults;
  // 1999 clean steps: no growth yet. The 2000th clean step's update doubles the scale, so step
  // 2000 (0-based) is the first to run at 2^17.
  const ScalerTrace a = scaler_trace(runs({{2001, false}}), defaults);
  ASSERT_EQ(a.scale.size(), 2001u);
  EXPECT_EQ(a.scale[1999], 65536.0f) << "step 1999 still runs at 2^16";
  EXPECT_EQ(a.scale[2000], 131072.0f) << "after 2000 clean steps the scale doubles";
  EXPECT_EQ(a.final_state.growth_tracker, 1) << "the tracker restarts at 0 after a growth";
  // A second window: 4000 clean steps grow twice.
  const ScalerTrace b = scaler_trace(runs({{4000, false}}), defaults);
  EXPECT_EQ(b.final_state.scale, 262144.0f) << "4000 clean steps: two growths, 2^18";
  EXPECT_EQ(b.final_state.growth_tracker, 0);
  // An overflow at step 1500 halves the scale and restarts the count: 2000 more clean steps are
  // needed, so 1999 after it do not grow and the 2000th does.
  TraceCheck check;
  for (int after : {1999, 2000, 2001}) {
    const std::vector<bool> flags = runs({{1500, false}, {1, true}, {after, false}});
    check.add("1500 clean, 1 inf, " + std::to_string(after) + " clean", flags, defaults,
              scaler_trace(flags, defaults));
  }
  check.expect_passes();
  const ScalerTrace c = scaler_trace(runs({{1500, false}, {1, true}, {1999, false}}), defaults);
  EXPECT_EQ(c.final_state.scale, 32768.0f) << "1999 clean steps after an overflow: no growth";
  EXPECT_EQ(c.final_state.growth_tracker, 1999);
  EXPECT_EQ(c.optimizer_steps, 1500 + 1999);
}
//! [test]

TEST(ScalerUpdate, IntervalOneGrowsAfterEveryCleanStep) {
  ScalerConfig config;
  config.growth_interval = 1;
  config.init_scale = 1.0f;
  config.growth_factor = 3.0f;
  config.backoff_factor = 0.25f;
  const ScalerTrace t = scaler_trace(runs({{3, false}, {2, true}, {1, false}, {1, false}}), config);
  const std::vector<float> expected = {1.0f, 3.0f, 9.0f, 27.0f, 6.75f, 1.6875f, 5.0625f};
  ASSERT_EQ(t.scale, expected);
  EXPECT_EQ(t.final_state.scale, 15.1875f);
  EXPECT_EQ(t.final_state.growth_tracker, 0);
  const std::vector<bool> skipped = {false, false, false, true, true, false, false};
  EXPECT_EQ(t.skipped, skipped) << "a step that grew the scale still reached the optimizer";
  EXPECT_EQ(t.optimizer_steps, 5);
}

TEST(ScalerUpdate, AScaleThatWouldGrowPastF32sRangeStays) {
  // 2^127 · 2 = 2^128 is inf in f32 (finite in double): the scale stays 2^127, and the
  // tracker still restarts.
  ScalerConfig config;
  config.growth_interval = 3;
  config.init_scale = std::ldexp(1.0f, 126);
  const ScalerTrace t = scaler_trace(runs({{10, false}}), config);
  TraceCheck check;
  check.add("init 2^126, interval 3, 10 clean", runs({{10, false}}), config, t);
  check.expect_passes();
  EXPECT_EQ(t.final_state.scale, std::ldexp(1.0f, 127));
  EXPECT_EQ(t.final_state.growth_tracker, 1);
  // A factor that is not a power of two: 3e38 · 1.5 overflows f32.
  config.init_scale = 3e38f;
  config.growth_factor = 1.5f;
  config.growth_interval = 1;
  const ScalerState s = scaler_update(ScalerState{3e38f, 0}, false, config);
  EXPECT_EQ(s.scale, 3e38f) << "a grown scale of inf must not be kept";
  EXPECT_EQ(s.growth_tracker, 0);
  const ScalerState below = scaler_update(ScalerState{2e38f, 0}, false, config);
  EXPECT_EQ(below.scale, 2e38f * 1.5f) << "2e38 · 1.5 = 3e38 is still finite in f32";
  EXPECT_TRUE(std::isfinite(below.scale));
}

TEST(ScalerUpdate, RandomRunsMatchPyTorchsKernel) {
  std::mt19937_64 rng(0x0321);
  TraceCheck check;
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int run = 0; run < 400; ++run) {
    ScalerConfig config;
    if (run % 4 != 0) {
      config.init_scale = std::ldexp(1.0f + unit(rng), static_cast<int>(rng() % 240) - 120);
      config.growth_factor = 1.0f + 3.0f * unit(rng) + 1e-3f;
      config.backoff_factor = 0.05f + 0.9f * unit(rng);
      config.growth_interval = 1 + static_cast<int64_t>(rng() % (run % 3 == 0 ? 3 : 60));
    }
    // Overflow rates from one in 5000 to one in two; long runs reach f32's limits both ways.
    const float p = run % 5 == 0 ? 0.5f : std::pow(10.0f, -1.0f - 2.7f * unit(rng));
    const size_t steps = 1 + static_cast<size_t>(rng() % (run % 4 == 0 ? 9000 : 600));
    std::vector<bool> flags(steps);
    for (size_t i = 0; i < steps; ++i) flags[i] = unit(rng) < p;
    const std::string name = "run " + std::to_string(run) + " (init " +
                             std::to_string(config.init_scale) + ", growth " +
                             std::to_string(config.growth_factor) + ", backoff " +
                             std::to_string(config.backoff_factor) + ", interval " +
                             std::to_string(config.growth_interval) + ")";
    check.add(name, flags, config, scaler_trace(flags, config));
  }
  check.expect_passes();
}

TEST(ScalerUpdate, MatchesTheRuntimesGradScalerStepByStep) {
  // The runtime's scaler (common/amp/grad_scaler.h) computes in double and rounds every new
  // scale to f32, as PyTorch's fp32 scale tensor holds it. With factors and scales that are f32
  // values a double product of two of them is exact, so its rounding is the f32 product: the two
  // must agree exactly, through underflow to 0 and the cap below f32's infinity.
  std::mt19937_64 rng(0x0323);
  Comparison scale("loss scale of a step (amp::GradScaler vs yours)", Unit::kNumber);
  Comparison skipped("step skipped (1) or applied (0), amp::GradScaler vs yours", Unit::kNumber);
  Comparison tracker("growth_tracker after the run (amp::GradScaler vs yours)", Unit::kNumber);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int run = 0; run < 300; ++run) {
    ScalerConfig config;
    if (run % 3 != 0) {
      config.init_scale = std::ldexp(1.0f + unit(rng), static_cast<int>(rng() % 240) - 120);
      config.growth_factor = run % 2 == 0 ? 2.0f : 1.0f + 3.0f * unit(rng) + 1e-3f;
      config.backoff_factor = run % 5 == 0 ? 0.5f : 0.05f + 0.9f * unit(rng);
      config.growth_interval = 1 + static_cast<int64_t>(rng() % 40);
    }
    const float p = run % 4 == 0 ? 0.3f : std::pow(10.0f, -1.0f - 2.5f * unit(rng));
    std::vector<bool> flags(1 + static_cast<size_t>(rng() % 6000));
    for (size_t i = 0; i < flags.size(); ++i) flags[i] = unit(rng) < p;
    const ScalerTrace got = scaler_trace(flags, config);
    ASSERT_EQ(got.scale.size(), flags.size());
    ASSERT_EQ(got.skipped.size(), flags.size());
    amp::GradScaler runtime(amp::GradScalerOptions{config.init_scale, config.growth_factor,
                                                   config.backoff_factor, config.growth_interval});
    const std::string name = "run " + std::to_string(run) + " (interval " +
                             std::to_string(config.growth_interval) + ") step ";
    size_t i = 0;  // the first step whose scale differs, or the last one
    while (i + 1 < flags.size() && got.scale[i] == static_cast<float>(runtime.scale())) {
      runtime.unscale(flags[i]);
      runtime.update();
      ++i;
    }
    scale.add(name + std::to_string(i), runtime.scale(), got.scale[i]);
    amp::GradScaler again(amp::GradScalerOptions{config.init_scale, config.growth_factor,
                                                 config.backoff_factor, config.growth_interval});
    size_t j = 0;  // the first step whose skip differs, or the last one
    for (;; ++j) {
      again.unscale(flags[j]);
      const bool runtime_skips = !again.should_step();
      again.update();
      if (runtime_skips != got.skipped[j] || j + 1 == flags.size()) {
        skipped.add(name + std::to_string(j), runtime_skips ? 1 : 0, got.skipped[j] ? 1 : 0);
        break;
      }
    }
    if (j + 1 == flags.size())
      tracker.add(name + "end", static_cast<double>(again.growth_tracker()),
                  static_cast<double>(got.final_state.growth_tracker));
  }
  VRAMLAB_EXPECT_PASSES(scale);
  VRAMLAB_EXPECT_PASSES(skipped);
  VRAMLAB_EXPECT_PASSES(tracker);
}

TEST(ScalerUpdate, OneUpdateFromRandomStatesMatchesPyTorchsKernel) {
  std::mt19937_64 rng(0x0322);
  Comparison scale("scale after one update", Unit::kNumber);
  Comparison tracker("growth_tracker after one update", Unit::kNumber);
  for (int i = 0; i < 20000; ++i) {
    ScalerConfig config;
    config.growth_interval = 1 + static_cast<int64_t>(rng() % 5);
    if (i % 2 == 0) config.growth_factor = 1.25f + static_cast<float>(rng() % 8);
    const ScalerState state{
        std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 1000.0f,
                   static_cast<int>(rng() % 257) - 130),
        static_cast<int64_t>(rng() % static_cast<uint64_t>(config.growth_interval))};
    const bool inf = rng() % 3 == 0;
    KernelState expected{state.scale, state.growth_tracker};
    kernel_update(expected, inf, config);
    const ScalerState got = scaler_update(state, inf, config);
    const std::string where = "scale " + std::to_string(state.scale) + " tracker " +
                              std::to_string(state.growth_tracker) + " interval " +
                              std::to_string(config.growth_interval) +
                              (inf ? " found_inf" : " clean");
    scale.add(where, expected.scale, got.scale);
    tracker.add(where, static_cast<double>(expected.tracker),
                static_cast<double>(got.growth_tracker));
  }
  VRAMLAB_EXPECT_PASSES(scale);
  VRAMLAB_EXPECT_PASSES(tracker);
}

TEST(ScalerUpdate, RejectsBadConfigurationsNamingTheValue) {
  auto expect_usage_error = [](const std::string& what, const std::string& named, auto call) {
    try {
      call();
      ADD_FAILURE() << "no vramlab::UsageError for " << what;
    } catch (const UsageError& e) {
      if (std::string(e.what()).find(named) == std::string::npos)
        ADD_FAILURE() << what << ": the message should name " << named << ": " << e.what();
    }
  };
  const std::vector<bool> flags = {false, true};
  auto with = [](auto change) {
    ScalerConfig c;
    change(c);
    return c;
  };
  expect_usage_error("growth_interval 0", "0", [&] {
    scaler_trace(flags, with([](ScalerConfig& c) { c.growth_interval = 0; }));
  });
  expect_usage_error("growth_interval -7", "-7", [&] {
    scaler_update(ScalerState{}, false, with([](ScalerConfig& c) { c.growth_interval = -7; }));
  });
  expect_usage_error("growth_factor 1", "1", [&] {
    scaler_trace(flags, with([](ScalerConfig& c) { c.growth_factor = 1.0f; }));
  });
  expect_usage_error("backoff_factor 1.5", "1.5", [&] {
    scaler_trace(flags, with([](ScalerConfig& c) { c.backoff_factor = 1.5f; }));
  });
  expect_usage_error("backoff_factor 0", "0", [&] {
    scaler_update(ScalerState{}, true, with([](ScalerConfig& c) { c.backoff_factor = 0.0f; }));
  });
  expect_usage_error("init_scale -2", "-2", [&] {
    scaler_trace(flags, with([](ScalerConfig& c) { c.init_scale = -2.0f; }));
  });
  expect_usage_error("init_scale inf", "inf", [&] {
    scaler_trace(flags, with([](ScalerConfig& c) {
                   c.init_scale = std::numeric_limits<float>::infinity();
                 }));
  });
  expect_usage_error("a tracker of 2000 with interval 2000", "2000", [&] {
    scaler_update(ScalerState{1.0f, 2000}, false, ScalerConfig{});
  });
  expect_usage_error("a tracker of -1", "-1", [&] {
    scaler_update(ScalerState{1.0f, -1}, false, ScalerConfig{});
  });
  expect_usage_error("a scale of -4", "-4", [&] {
    scaler_update(ScalerState{-4.0f, 0}, false, ScalerConfig{});
  });
}

}  // namespace
}  // namespace vramlab::lesson03
