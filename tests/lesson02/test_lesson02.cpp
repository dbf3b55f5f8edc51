// Lesson 02's measurements hold what the lesson says: every schedule's measured activation peak is
// the planner's prediction to the byte (and its replayed timeline is the planner's timeline),
// recomputing changes no gradient bit, the budget row meets its budget at the least recompute of
// any hand schedule that fits it, the largest batch is one that runs while one more does not, and
// the figures' texts neither overlap nor leave the canvas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/estimate/recompute_costs.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/recompute/activation_peak.h"
#include "common/recompute/recompute_spec.h"
#include "common/report/svg_plot.h"
#include "common/report/terminal.h"
#include "lessons/02-checkpointing/checkpoint_report.h"
#include "lessons/02-checkpointing/measure_schedules.h"

namespace vramlab::lesson02 {
namespace {

// An odd shape (7 layers, 3 heads of 16, T = 37, B = 3, a vocabulary that is no power of two) so
// that no size lines up with another by accident, with dropout on.
ModelConfig odd_model() {
  ModelConfig m = model_config_by_name("gpt2-tiny");
  m.name = "odd";
  m.layers = 7;
  m.hidden = 48;
  m.heads = 3;
  m.kv_heads = 3;
  m.ffn_hidden = 4 * 48;
  m.vocab = 301;
  m.max_seq = 64;
  m.validate();
  return m;
}

LessonSettings odd_settings() {
  LessonSettings s;
  s.run.model = odd_model();
  s.run.batch = 3;
  s.run.seq = 37;
  s.run.device = memory::parse_device("sim:1GiB");
  s.run.dropout = 0.1f;
  s.run.seed = 7;
  s.run.steps = 2;
  s.max_batch_device = memory::parse_device("sim:12MiB");
  s.max_batch_limit = 64;
  s.scale = false;
  s.compression = false;  // slow int8 kernels: one compressed run below is enough
  return s;
}

const Lesson& odd_lesson() {
  static const Lesson lesson = run_lesson(odd_settings());
  return lesson;
}

const PolicyRow& row_named(const Lesson& lesson, const std::string& name) {
  for (const PolicyRow& row : lesson.policies)
    if (row.run.name == name) return row;
  throw std::runtime_error("no row " + name);
}

TEST(Lesson02, EveryScheduleOfTheTableIsRunInOrderWithNoneFirstAndTheBudgetLast) {
  const Lesson& lesson = odd_lesson();
  std::vector<std::string> names;
  for (const PolicyRow& row : lesson.policies) names.push_back(row.run.name);
  ASSERT_EQ(names.size(), 7u);
  EXPECT_EQ(names[0], "none");
  EXPECT_EQ(names[5], "selective");
  EXPECT_TRUE(names[6].starts_with("budget:")) << names[6];
  for (const PolicyRow& row : lesson.policies) {
    EXPECT_EQ(row.run.pattern.size(), 7u) << row.run.name;
    EXPECT_EQ(row.run.step_seconds.size(), 2u) << row.run.name;
    EXPECT_GT(row.step_seconds, 0.0) << row.run.name;
    EXPECT_EQ(row.run.losses.size(), 2u) << row.run.name;
    EXPECT_TRUE(std::isfinite(row.run.losses.back()) && row.run.losses.back() > 0.0);
  }
}

TEST(Lesson02, TheMeasuredActivationPeakIsThePlannersPredictionForEverySchedule) {
  const Lesson& lesson = odd_lesson();
  const recompute::ChainCosts chain =
      estimate::runtime_chain_costs(lesson.settings.run.model, 3, 37);
  for (const PolicyRow& row : lesson.policies) {
    // The prediction is recomputed here from the spec, not read back from the run.
    const recompute::RecomputeSchedule schedule =
        recompute::make_schedule(recompute::parse_recompute_spec(row.run.name), chain);
    EXPECT_EQ(row.run.activation_peak_bytes, recompute::activation_peak_bytes(chain, schedule))
        << row.run.name;
    EXPECT_EQ(row.run.predicted_activation_peak_bytes, row.run.activation_peak_bytes)
        << row.run.name;
    EXPECT_EQ(row.run.timeline_peak_bytes, row.run.activation_peak_bytes) << row.run.name;
    EXPECT_EQ(row.run.pattern, recompute::schedule_pattern(schedule)) << row.run.name;
  }
  // The schedules differ: a check that compares a constant with itself would pass all of them.
  EXPECT_LT(row_named(lesson, "full").run.activation_peak_bytes,
            row_named(lesson, "every:2").run.activation_peak_bytes);
  EXPECT_LT(row_named(lesson, "selective").run.activation_peak_bytes,
            row_named(lesson, "none").run.activation_peak_bytes);
}

// The replayed allocator history, phase by phase, is the planner's timeline: each forward layer's
// highest value and what it keeps, and each span's recompute.
TEST(Lesson02, TheMeasuredTimelineIsThePlannersTimeline) {
  const Lesson& lesson = odd_lesson();
  const recompute::ChainCosts chain =
      estimate::runtime_chain_costs(lesson.settings.run.model, 3, 37);
  for (const PolicyRow& row : lesson.policies) {
    const std::vector<recompute::ActivationEvent> events = recompute::activation_timeline(
        chain, recompute::make_schedule(recompute::parse_recompute_spec(row.run.name), chain));
    std::map<std::string, int64_t> predicted;
    for (const recompute::ActivationEvent& e : events) predicted[e.label] = e.bytes;
    std::map<std::string, PhaseSample> measured;
    for (const PhaseSample& s : row.run.timeline) measured[s.label] = s;
    for (int64_t l = 0; l < 7; ++l) {
      const std::string layer = std::to_string(l);
      ASSERT_TRUE(measured.count("forward " + layer)) << row.run.name;
      EXPECT_EQ(measured["forward " + layer].max_bytes, predicted.at("forward layer " + layer))
          << row.run.name << " layer " << l;
      EXPECT_EQ(measured["forward " + layer].end_bytes, predicted.at("layer " + layer + " kept"))
          << row.run.name << " layer " << l;
    }
    EXPECT_EQ(measured["loss"].end_bytes, predicted.at("forward head")) << row.run.name;
    int64_t recomputes = 0;
    for (const recompute::ActivationEvent& e : events) {
      if (!e.label.starts_with("recompute span ")) continue;
      ++recomputes;
      // "recompute span a-b" or "recompute span a": the re-run ends with layer b.
      const std::string range = e.label.substr(std::string("recompute span ").size());
      const std::string last = range.substr(range.find('-') + 1);
      ASSERT_TRUE(measured.count("recompute " + last)) << row.run.name << " " << e.label;
      EXPECT_EQ(measured["recompute " + last].end_bytes, e.bytes) << row.run.name << e.label;
    }
    EXPECT_EQ(recomputes > 0, row.run.pattern.find('F') != std::string::npos) << row.run.name;
    // The embedding's output stays until the step clears the store, after its backward.
    EXPECT_EQ(row.run.timeline.back().end_bytes, chain.before_bytes) << row.run.name;
    EXPECT_EQ(row.run.timeline.back().label, "backward embedding") << row.run.name;
  }
}

TEST(Lesson02, RecomputingChangesNoBitOfTheGradientsOrTheTrainedParameters) {
  const Lesson& lesson = odd_lesson();
  const PolicyRun& none = lesson.policies.front().run;
  ASSERT_FALSE(none.gradients.empty());
  ASSERT_EQ(none.gradients.size(), none.parameters.size());
  for (const PolicyRow& row : lesson.policies) {
    ASSERT_TRUE(row.grads_bitwise_equal.has_value()) << row.run.name;
    EXPECT_TRUE(*row.grads_bitwise_equal) << row.run.name;
    EXPECT_TRUE(bitwise_equal(row.run.gradients, none.gradients)) << row.run.name;
    EXPECT_EQ(row.run.losses, none.losses) << row.run.name;
  }
  // int8 compression does change them: the comparison can say no.
  RunSettings one_step = lesson.settings.run;
  one_step.steps = 1;
  const PolicyRun int8 = run_policy(one_step, recompute::parse_recompute_spec("full"),
                                    nn::ActivationCompression::int8_block);
  EXPECT_FALSE(bitwise_equal(int8.gradients, none.gradients));
  EXPECT_LT(int8.activation_peak_bytes, row_named(lesson, "full").run.activation_peak_bytes);
  EXPECT_EQ(int8.bytes_after_forward, int8.predicted_bytes_after_forward);
  EXPECT_LT(int8.bytes_after_forward, row_named(lesson, "full").run.bytes_after_forward);
  const double error = relative_error(int8.gradients, none.gradients, 0,
                                      static_cast<int64_t>(none.gradients.size()));
  EXPECT_GT(error, 0.0);
  EXPECT_LT(error, 0.1);
}

TEST(Lesson02, TheBudgetRowMeetsItsBudgetWithTheLeastRecomputeOfAnyHandScheduleThatFits) {
  const Lesson& lesson = odd_lesson();
  const PolicyRow& budget = lesson.policies.back();
  ASSERT_TRUE(budget.run.name.starts_with("budget:"));
  EXPECT_LE(budget.run.activation_peak_bytes, lesson.budget_bytes);
  // The default budget is half-way between sqrt and none, so none does not fit it and sqrt does.
  EXPECT_GT(row_named(lesson, "none").run.activation_peak_bytes, lesson.budget_bytes);
  EXPECT_LE(row_named(lesson, "sqrt").run.activation_peak_bytes, lesson.budget_bytes);
  int64_t fitting = 0;
  for (const PolicyRow& row : lesson.policies) {
    if (row.run.activation_peak_bytes > lesson.budget_bytes) continue;
    ++fitting;
    // The same denominator (the model's forward FLOPs): the fractions order as the costs.
    EXPECT_LE(budget.run.recomputed_forward_fraction,
              row.run.recomputed_forward_fraction * (1.0 + 1e-12))
        << row.run.name;
  }
  EXPECT_GE(fitting, 3);
}

TEST(Lesson02, TheLargestBatchRunsOnTheDeviceAndOneMoreDoesNot) {
  const Lesson& lesson = odd_lesson();
  ASSERT_EQ(lesson.max_batch.size(), lesson.policies.size());
  std::map<std::string, int64_t> b;
  RunSettings quick = lesson.settings.run;
  quick.record_timeline = false;
  for (const MaxBatchRow& row : lesson.max_batch) {
    b[row.name] = row.batch;
    ASSERT_GE(row.batch, 1) << row.name;
    ASSERT_LT(row.batch, lesson.settings.max_batch_limit) << row.name;
    ASSERT_TRUE(row.meta_twin_batch.has_value());
    const recompute::RecomputeSpec spec = recompute::parse_recompute_spec(row.name);
    EXPECT_TRUE(step_fits(quick, spec, lesson.settings.max_batch_device, row.batch)) << row.name;
    EXPECT_FALSE(step_fits(quick, spec, lesson.settings.max_batch_device, row.batch + 1))
        << row.name;
  }
  // Where one schedule keeps a subset of what another keeps, it fits at least as large a batch.
  EXPECT_LE(b["none"], b["every:4"]);
  EXPECT_LE(b["every:4"], b["every:2"]);
  EXPECT_LE(b["every:2"], b["full"]);
  EXPECT_LE(b["none"], b["selective"]);
  EXPECT_LT(b["none"], b["full"]);
}

// Against a scan from B = 1 up on a small meta device (nothing computed: fast), for random
// models: the search finds the first failure's predecessor.
TEST(Lesson02, MaxBatchIsTheBatchBeforeTheFirstThatDoesNotFit) {
  std::mt19937 rng(12345);
  const std::vector<std::string> specs = {"none", "full", "sqrt", "selective", "every:3"};
  for (int trial = 0; trial < 6; ++trial) {
    RunSettings s;
    s.model = odd_model();
    s.model.layers = std::uniform_int_distribution<int64_t>(2, 9)(rng);
    s.seq = std::uniform_int_distribution<int64_t>(5, 64)(rng);
    s.record_timeline = false;
    const std::string spec_text = specs[static_cast<size_t>(trial) % specs.size()];
    const recompute::RecomputeSpec spec = recompute::parse_recompute_spec(spec_text);
    const memory::Device device = memory::parse_device(
        "meta:" + std::to_string(std::uniform_int_distribution<int>(6, 20)(rng)) + "MiB");
    int64_t scan = 0;
    while (scan < 200 && step_fits(s, spec, device, scan + 1)) ++scan;
    EXPECT_EQ(max_batch(s, spec, device, 200), scan)
        << spec_text << " L=" << s.model.layers << " T=" << s.seq << " on " << device.name();
  }
  RunSettings s;
  s.model = odd_model();
  s.seq = 8;
  EXPECT_EQ(
      max_batch(s, recompute::parse_recompute_spec("full"), memory::parse_device("meta:64MiB"), 3),
      3);
  EXPECT_EQ(
      max_batch(s, recompute::parse_recompute_spec("none"), memory::parse_device("meta:64KiB"), 50),
      0);
}

TEST(Lesson02, RelativeErrorAndBitwiseEquality) {
  const std::vector<float> b = {3.0f, -4.0f, 0.0f, 1.0f};
  std::vector<float> a = b;
  EXPECT_TRUE(bitwise_equal(a, b));
  EXPECT_EQ(relative_error(a, b, 0, 4), 0.0);
  a[1] = -4.5f;  // ‖a − b‖ = 0.5 over ‖b‖ = √26 on all four; over the first two 0.5 / 5
  EXPECT_FALSE(bitwise_equal(a, b));
  EXPECT_NEAR(relative_error(a, b, 0, 2), 0.1, 1e-12);
  EXPECT_NEAR(relative_error(a, b, 0, 4), 0.5 / std::sqrt(26.0), 1e-12);
  EXPECT_EQ(relative_error(a, b, 2, 1), 0.0);
  // -0.0 and 0.0 compare equal as numbers but not as bits.
  std::vector<float> z = b;
  z[2] = -0.0f;
  EXPECT_FALSE(bitwise_equal(z, b));
  EXPECT_FALSE(bitwise_equal({1.0f}, b));
  EXPECT_THROW((void)relative_error(a, b, 3, 2), std::logic_error);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "  " + line + "\n";
  return out;
}

void expect_clean(const Figures& figures, const std::string& what) {
  for (const auto& [name, figure] : {std::pair{"memory_over_step", &figures.memory_over_step},
                                     std::pair{"tradeoff", &figures.tradeoff}}) {
    EXPECT_GT(figure->text_boxes.size(), 10u) << what << " " << name;
    const std::vector<std::string> problems = report::text_layout_problems(*figure);
    EXPECT_TRUE(problems.empty()) << what << " " << name << ":\n" << joined(problems);
  }
}

// The depth table (on meta, with the scale runs): none and per-layer checkpointing grow by the same
// bytes for every layer added, a sqrt(L)-span schedule with sqrt(L). Depths are squares, so the
// spans tile the model exactly.
TEST(Lesson02, SavedActivationsGrowLinearlyWithDepthExceptUnderSqrtSpans) {
  LessonSettings s = odd_settings();
  s.run.device = memory::parse_device("meta");
  s.max_batch_device = memory::Device{};
  s.scale = true;
  s.meta_model = odd_model();
  s.meta_seq = 37;
  s.depths = {9, 36, 144};
  const Lesson lesson = run_lesson(s);
  ASSERT_EQ(lesson.depth.size(), 9u);
  std::map<std::string, std::vector<int64_t>> peak;
  for (size_t i = 0; i < lesson.depth.size(); ++i) {
    const DepthPoint& d = lesson.depth[i];
    EXPECT_EQ(d.layers, s.depths[i / 3]);
    EXPECT_EQ(d.schedule, std::vector<std::string>({"none", "sqrt", "full"})[i % 3]);
    peak[d.schedule].push_back(d.activation_peak_bytes);
  }
  for (const char* linear : {"none", "full"}) {
    const std::vector<int64_t>& p = peak[linear];
    EXPECT_GT(p[1], p[0]) << linear;
    // 144 - 36 = 4 x (36 - 9) layers more: four times the bytes, to the byte.
    EXPECT_EQ(p[2] - p[1], 4 * (p[1] - p[0])) << linear;
  }
  const std::vector<int64_t>& sqrt = peak["sqrt"];
  for (size_t i = 1; i < 3; ++i) {
    const double growth = static_cast<double>(sqrt[i]) / static_cast<double>(sqrt[i - 1]);
    EXPECT_GT(growth, 1.6) << i;  // four times the layers: about twice the bytes
    EXPECT_LT(growth, 2.4) << i;
  }
  EXPECT_LT(sqrt[2], peak["none"][2] / 4);
}

TEST(Lesson02Figures, NoTextOverlapsAnotherOrLeavesTheCanvas) {
  expect_clean(make_figures(odd_lesson()), "odd shape");
  // The lesson's default model and shape (the committed figures), one step per schedule on meta:
  // the same allocations, so the same timeline, without the kernels.
  LessonSettings s;
  ModelConfig m = model_config_by_name("gpt2-tiny");
  m.layers = 16;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 256;
  s.run.model = m;
  s.run.batch = 8;
  s.run.seq = 128;
  s.run.device = memory::parse_device("meta");
  s.run.steps = 1;
  s.scale = false;
  s.compression = false;
  const Lesson lesson = run_lesson(s);
  expect_clean(make_figures(lesson), "default");
  // Every line of the memory figure is a measured schedule of the table, with its peak.
  const std::string svg = make_figures(lesson).memory_over_step.svg;
  for (const std::string name : {"none", "full", "selective"})
    EXPECT_NE(svg.find(name + " (peak " +
                       report::format_bytes(static_cast<uint64_t>(
                           row_named(lesson, name).run.activation_peak_bytes)) +
                       ")"),
              std::string::npos)
        << name;
}

// librsvg draws what a documentation page or a browser would: a figure that does not render, or
// renders at another size than its canvas, fails here.
TEST(Lesson02Figures, EveryFigureRendersToAPngOfItsCanvasSize) {
  namespace fs = std::filesystem;
  if (std::system("rsvg-convert --version > /dev/null 2>&1") != 0) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && *ci != '\0')
      FAIL() << "rsvg-convert (Debian package librsvg2-bin) is missing, and CI is set: install it";
    GTEST_SKIP() << "rsvg-convert (Debian package librsvg2-bin) is not installed and CI is not "
                    "set; in CI this test fails instead of skipping";
  }
  const fs::path dir = LESSON02_FIGURES_TEST_DIR;
  fs::create_directories(dir);
  const Figures figures = make_figures(odd_lesson());
  for (const auto& [name, figure] : {std::pair{"memory_over_step", &figures.memory_over_step},
                                     std::pair{"tradeoff", &figures.tradeoff}}) {
    const fs::path svg = dir / (std::string(name) + ".svg");
    const fs::path png = dir / (std::string(name) + ".png");
    fs::remove(png);
    report::write_text_file(svg.string(), figure->svg);
    const std::string command =
        "rsvg-convert -o '" + png.string() + "' '" + svg.string() + "' 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    // A PNG starts with its 8-byte signature, then the IHDR chunk: length, "IHDR", width and
    // height as big-endian 32-bit integers.
    std::ifstream in(png, std::ios::binary);
    std::string head(24, '\0');
    in.read(head.data(), 24);
    ASSERT_TRUE(in) << png << " is not a PNG";
    ASSERT_EQ(head.substr(1, 3), "PNG") << png;
    ASSERT_EQ(head.substr(12, 4), "IHDR") << png;
    auto be32 = [&](size_t at) {
      uint32_t v = 0;
      for (size_t k = 0; k < 4; ++k) v = v << 8 | static_cast<unsigned char>(head[at + k]);
      return v;
    };
    EXPECT_EQ(be32(16), static_cast<uint32_t>(std::lround(figure->width))) << png;
    EXPECT_EQ(be32(20), static_cast<uint32_t>(std::lround(figure->height))) << png;
  }
}

}  // namespace
}  // namespace vramlab::lesson02
