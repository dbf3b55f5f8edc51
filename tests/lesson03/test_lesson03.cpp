// Lesson 03's measurements on odd shapes: every precision's bytes per category are what the
// storage types say (and the estimator's), the loss-scaling runs skip exactly the inf steps, K
// micro-batches give one batch's gradient with 1/K of its activation peak, the underflow shares
// and histograms count what fp16 does to each value, the round-trip errors are the formats' unit
// roundoffs, and the figures' text does not overlap.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/amp/precision_policy.h"
#include "common/dtype/convert.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/report/svg_plot.h"
#include "lessons/03-mixed-precision/measure_precision.h"
#include "lessons/03-mixed-precision/precision_report.h"

namespace vramlab::lesson03 {
namespace {

RunSettings odd_settings(const std::string& device) {
  RunSettings s;
  s.model = gpt2_config("odd", 3, 48, 3, 301, 37);
  s.batch = 5;
  s.seq = 37;
  s.device = memory::parse_device(device);
  s.seed = 11;
  s.steps = 2;
  return s;
}

int64_t rounded(int64_t bytes) {
  return (bytes + 511) / 512 * 512;
}

const CategoryBytes& category(const ModeRun& run, const std::string& name) {
  for (const CategoryBytes& b : run.bytes)
    if (b.category == name) return b;
  ADD_FAILURE() << "no category " << name;
  static const CategoryBytes none;
  return none;
}

// The bytes follow from the parameter count and the storage types alone: 4 or 2 bytes per
// parameter for the weights and gradients, AdamW's two moments in the state type, plus a 4-byte
// master in the mixed modes. That is the 16 / 16 / 8 bytes per parameter of the lesson's page.
TEST(Lesson03, EveryPrecisionHoldsTheBytesItsStorageTypesSayAndTheEstimatorsOnMeta) {
  RunSettings s = odd_settings("meta");
  const int64_t n = s.model.parameter_count();
  struct Expected {
    amp::Precision precision;
    int64_t weight, state, master;
  };
  for (const Expected e :
       {Expected{amp::Precision::fp32, 4, 4, 0}, Expected{amp::Precision::bf16, 2, 2, 0},
        Expected{amp::Precision::mixed_bf16, 2, 4, 4},
        Expected{amp::Precision::mixed_fp16, 2, 4, 4}}) {
    const std::string name(amp::precision_name(e.precision));
    const ModeRun run = run_mode(s, {name, e.precision, std::nullopt});
    EXPECT_EQ(category(run, "parameter").measured, rounded(e.weight * n)) << name;
    EXPECT_EQ(category(run, "gradient").measured, rounded(e.weight * n)) << name;
    EXPECT_EQ(category(run, "optimizer_state").measured,
              (e.master ? rounded(e.master * n) : 0) + 2 * rounded(e.state * n))
        << name;
    for (const CategoryBytes& b : run.bytes) {
      if (b.estimated >= 0) {
        EXPECT_EQ(b.measured, b.estimated) << name << " " << b.category;
      }
    }
    EXPECT_EQ(run.losses.size(), 2u);
    EXPECT_TRUE(run.last_gradients.empty()) << "meta computes nothing";
  }
}

// 16-bit activations halve the saved bytes only where every saved tensor is 16-bit: the norms'
// statistics and the per-token losses stay fp32, so the ratio is above one half, but not by much.
TEST(Lesson03, SixteenBitActivationsAreSlightlyMoreThanHalfOfFp32s) {
  const RunSettings s = odd_settings("meta");
  const ModeRun fp32 = run_mode(s, {"fp32", amp::Precision::fp32, std::nullopt});
  const ModeRun bf16 = run_mode(s, {"mixed-bf16", amp::Precision::mixed_bf16, std::nullopt});
  const double ratio = static_cast<double>(bf16.activation_peak_bytes) /
                       static_cast<double>(fp32.activation_peak_bytes);
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 0.55);
}

TEST(Lesson03, AStaticScaleThatOverflowsSkipsEveryStepAndNoScalerNeverChecks) {
  RunSettings s = odd_settings("sim:64MiB");
  s.steps = 3;
  const ModeRun overflow =
      run_mode(s, {"static", amp::Precision::mixed_fp16,
                   amp::LossScaleSpec{amp::LossScaleKind::fixed, std::ldexp(1.0, 40)}});
  EXPECT_EQ(overflow.loss_scale_name, "static:1099511627776");
  for (size_t i = 0; i < overflow.losses.size(); ++i) {
    EXPECT_TRUE(overflow.found_inf[i]) << i;
    EXPECT_TRUE(overflow.skipped[i]) << i;
    EXPECT_EQ(overflow.loss_scale[i], std::ldexp(1.0, 40)) << "a static scale never moves";
  }
  // Nothing was stepped: the same weights see a new batch each step, the loss stays near ln V.
  EXPECT_NEAR(overflow.losses.back(), std::log(301.0), 0.3);
  const ModeRun none = run_mode(
      s, {"none", amp::Precision::mixed_fp16, amp::LossScaleSpec{amp::LossScaleKind::none, 1.0}});
  for (size_t i = 0; i < none.losses.size(); ++i) {
    EXPECT_FALSE(none.skipped[i]);
    EXPECT_EQ(none.loss_scale[i], 1.0);
  }
  const ModeRun dynamic = run_mode(s, {"dynamic", amp::Precision::mixed_fp16, std::nullopt});
  EXPECT_EQ(dynamic.loss_scale_name, "dynamic");
  EXPECT_EQ(dynamic.loss_scale.front(), 65536.0) << "GradScaler's init_scale";
  // The gradients are stored scaled: their largest is the scale times fp32-ish values.
  ASSERT_EQ(dynamic.last_gradients.size(), static_cast<size_t>(s.model.parameter_count()));
}

TEST(Lesson03, MicroBatchesGiveOneBatchsGradientWithTheActivationsOfTheLargestMicroBatch) {
  RunSettings s = odd_settings("sim:64MiB");
  s.batch = 6;
  std::vector<float> reference;
  const AccumulationRow one = run_accumulation(s, {6}, {}, &reference);
  ASSERT_FALSE(reference.empty());
  for (const std::vector<int64_t>& split : std::vector<std::vector<int64_t>>{
           {3, 3}, {2, 2, 2}, {1, 1, 1, 1, 1, 1}, {3, 2, 1}, {1, 4, 1}}) {
    const AccumulationRow row = run_accumulation(s, split, reference);
    EXPECT_LT(row.max_rel_diff_grads, 1e-5) << split.size();
    EXPECT_NEAR(row.loss, one.loss, 1e-5 * one.loss);
    const int64_t largest = *std::max_element(split.begin(), split.end());
    // The store's bytes are linear in the micro-batch, up to the per-sequence rounding.
    EXPECT_NEAR(static_cast<double>(row.activation_peak_bytes),
                static_cast<double>(one.activation_peak_bytes) * static_cast<double>(largest) / 6.0,
                0.01 * static_cast<double>(one.activation_peak_bytes));
  }
  // The measure can fail: other weights (another seed) give other gradients.
  RunSettings other = s;
  other.seed = 12;
  EXPECT_GT(run_accumulation(other, {3, 3}, reference).max_rel_diff_grads, 1e-2);
}

TEST(Lesson03, TheUnderflowSharesAreWhatFp16RoundingDoesToEachValue) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> exponent(-40, 3);  // times 2^16 stays below 2^20
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::vector<float> values(4099);  // (n) with signs, zeros and every binade from 2^-40 to 2^3
  for (float& v : values) {
    v = static_cast<float>(std::ldexp(mantissa(rng), exponent(rng)));
    if (rng() % 2) v = -v;
    if (rng() % 17 == 0) v = 0.0f;
  }
  for (const double scale : {1.0, 1024.0, 65536.0}) {
    int64_t nonzero = 0, flushed = 0, subnormal = 0;
    for (const float v : values) {
      if (v == 0.0f) continue;
      ++nonzero;
      const double x = std::abs(static_cast<double>(v) * scale);
      // fp16 rounds to the nearest multiple of 2^-24 below 2^-14: 0 below half of 2^-24 (a tie
      // at exactly half goes to the even 0).
      if (x <= std::ldexp(1.0, -25)) {
        ++flushed;
      } else if (x < std::ldexp(1.0, -14) - std::ldexp(1.0, -25)) {
        ++subnormal;
      }
    }
    EXPECT_DOUBLE_EQ(fp16_flush_share(values, scale),
                     static_cast<double>(flushed) / static_cast<double>(nonzero))
        << scale;
    EXPECT_NEAR(fp16_subnormal_share(values, scale),
                static_cast<double>(subnormal) / static_cast<double>(nonzero), 2e-3)
        << scale;
    const ExponentHistogram h = exponent_histogram(values, scale);
    EXPECT_EQ(h.total, static_cast<int64_t>(values.size()));
    EXPECT_EQ(h.zeros + std::accumulate(h.counts.begin(), h.counts.end(), int64_t{0}), h.total);
    // Each value lands in the bin of its own binade.
    std::vector<int64_t> expected(h.counts.size(), 0);
    for (const float v : values) {
      if (v != 0.0f) {
        ++expected[static_cast<size_t>(std::ilogb(static_cast<double>(v) * scale) -
                                       h.min_exponent)];
      }
    }
    EXPECT_EQ(h.counts, expected) << scale;
  }
  EXPECT_DOUBLE_EQ(zero_share({0.0f, 1.0f, 0.0f, -2.0f}), 0.5);
}

// Unit roundoff: half the gap between 1 and the next value, 2^-(mantissa bits + 1).
TEST(Lesson03, RoundTripErrorsAreTheFormatsUnitRoundoffs) {
  for (const RoundTripError& e : round_trip_errors(200000, 3)) {
    const int mantissa = e.format == "bf16" ? 7 : 10;
    EXPECT_LE(e.max, std::ldexp(1.0, -(mantissa + 1))) << e.format;
    EXPECT_GT(e.max, std::ldexp(1.0, -(mantissa + 2))) << e.format;
    EXPECT_LT(e.mean, e.max) << e.format;
    EXPECT_GT(e.mean, std::ldexp(1.0, -(mantissa + 4))) << e.format;
  }
}

TEST(Lesson03, FinalLossIsTheMeanOfTheLastTenth) {
  std::vector<double> losses(57);
  std::iota(losses.begin(), losses.end(), 1.0);
  EXPECT_DOUBLE_EQ(final_loss(losses), (53.0 + 54 + 55 + 56 + 57) / 5.0);
  EXPECT_DOUBLE_EQ(final_loss({3.5}), 3.5);
}

TEST(Lesson03, TheFiguresTextDoesNotOverlap) {
  LessonSettings s;
  s.run = odd_settings("sim:64MiB");
  s.run.model = gpt2_config("odd", 1, 24, 3, 61, 9);  // eight modes: keep each step small
  s.run.seq = 9;
  s.run.steps = 4;
  s.overflow_scale = std::ldexp(1.0, 40);
  s.underflow_scale = std::ldexp(1.0, -12);
  s.scale = false;
  const Lesson lesson = run_lesson(s);
  ASSERT_EQ(lesson.runs.size(), 8u);
  ASSERT_EQ(lesson.underflow.size(), 3u);
  ASSERT_EQ(lesson.accumulation.size(), 4u);  // K = 1, 2, 4 and the unequal split (B = 5)
  const Figures f = make_figures(lesson);
  for (const report::SvgFigure* figure : {&f.loss_curves, &f.loss_scale, &f.exponents}) {
    const std::vector<std::string> problems = report::text_layout_problems(*figure);
    EXPECT_TRUE(problems.empty()) << problems.front();
  }
  const FigurePaths paths = write_figures(lesson, LESSON03_FIGURES_TEST_DIR);
  for (const std::string& p : {paths.loss_curves_svg, paths.loss_scale_svg, paths.exponents_svg})
    EXPECT_TRUE(std::filesystem::exists(p)) << p;
}

}  // namespace
}  // namespace vramlab::lesson03
