// Lesson 06's measurements on odd shapes: the attention core's saved bytes and allocator peak are
// the formulas' (B·H·T²·4 naive, B·H·T·4 flash) to the byte on sim and on meta, 64-bit sizes
// included; flash's out, dq, dk, dv equal naive's within the lesson's tolerances; training with
// flash follows naive's losses and saves the estimator's bytes per layer; one Llama 2 7B layer on
// meta holds the seeds' "8 GB per layer"; the JSON has the issue's keys; the figures' text does not
// overlap and the tiling figure draws flash_tile_counts' cells.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/estimate/runtime_activations.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/platform/errors.h"
#include "common/report/svg_plot.h"
#include "kernels/cpu/flash_attention.h"
#include "lessons/06-flash-attention/flash_report.h"
#include "lessons/06-flash-attention/measure_attention.h"

namespace vramlab::lesson06 {
namespace {

const memory::Device kSim = memory::parse_device("sim:2GiB");
const memory::Device kMeta = memory::parse_device("meta");

int64_t rounded(int64_t bytes) {
  return (bytes + 511) / 512 * 512;
}

// The shapes of the tests: GPT-2-like, grouped-query (Llama), an odd head width, two sequences.
std::vector<CoreShape> shapes() {
  return {{1, 8, 8, 64}, {2, 4, 2, 24}, {3, 3, 1, 7}};
}

TEST(Lesson06, SavedBytesAreTheFormulasNaiveQuadraticFlashLinear) {
  for (const CoreShape& s : shapes()) {
    for (const int64_t t : {1, 7, 64, 65, 333}) {
      const CoreRun naive = run_attention_core(kSim, AttentionKind::naive, t, s, 3, false);
      const CoreRun flash = run_attention_core(kSim, AttentionKind::flash, t, s, 3, false);
      EXPECT_EQ(naive.saved_bytes, s.batch * s.heads * t * t * 4) << "T=" << t;
      EXPECT_EQ(flash.saved_bytes, s.batch * s.heads * t * 4) << "T=" << t;
      EXPECT_EQ(naive.scratch_bytes, naive.saved_bytes) << "dpreatt is att's size";
      EXPECT_EQ(flash.scratch_bytes, flash.saved_bytes) << "delta is lse's size";
    }
  }
}

// Every tensor of the op is live in backward; with expandable segments the peak is their sizes.
TEST(Lesson06, PeakIsEveryTensorOfTheOpRoundedTo512BytesOnSimAndMeta) {
  for (const CoreShape& s : shapes()) {
    for (const int64_t t : {1, 65, 200}) {
      for (const AttentionKind kind : {AttentionKind::naive, AttentionKind::flash}) {
        const int64_t q = rounded(s.batch * t * s.heads * s.head_dim * 4);
        const int64_t kv = rounded(s.batch * t * s.kv_heads * s.head_dim * 4);
        const int64_t saved = kind == AttentionKind::naive ? s.batch * s.heads * t * t * 4
                                                           : s.batch * s.heads * t * 4;
        const int64_t expected = 4 * q + 4 * kv + 2 * rounded(saved);
        for (const memory::Device& d : {kSim, kMeta}) {
          const CoreRun run = run_attention_core(d, kind, t, s, 5, false);
          EXPECT_EQ(run.peak_bytes, expected)
              << attention_kind_name(kind) << " T=" << t << " on " << d.name();
          EXPECT_EQ(run.peak_bytes, attention_core_peak_formula(kind, t, s));
        }
      }
    }
  }
}

// At T = 65536 one f32 (B, H, T, T) tensor of 8 heads is 128 GiB: beyond 32-bit byte counts.
TEST(Lesson06, MetaMeasuresLongSequencesBeyond32BitSizes) {
  const CoreShape s;  // B = 1, H = 8, D = 64
  const CoreRun naive = run_attention_core(kMeta, AttentionKind::naive, 65536, s, 1, false);
  EXPECT_EQ(naive.saved_bytes, int64_t{8} * 65536 * 65536 * 4);
  EXPECT_EQ(naive.peak_bytes, attention_core_peak_formula(AttentionKind::naive, 65536, s));
  EXPECT_LT(naive.seconds, 0.0) << "meta runs no kernel and reports no time";
  EXPECT_TRUE(naive.out.empty());
}

TEST(Lesson06, FlashEqualsNaiveWithinTheLessonsTolerances) {
  for (const CoreShape& s : shapes()) {
    for (const int64_t t : {1, 17, 64, 65, 130}) {
      const CoreRun naive = run_attention_core(kSim, AttentionKind::naive, t, s, 7, true);
      const CoreRun flash = run_attention_core(kSim, AttentionKind::flash, t, s, 7, true);
      const auto check = [&](const char* name, const std::vector<float>& a,
                             const std::vector<float>& b, double tolerance) {
        ASSERT_EQ(a.size(), b.size()) << name;
        ASSERT_FALSE(a.empty()) << name;
        size_t worst = 0;
        double diff = 0.0;
        for (size_t i = 0; i < a.size(); ++i) {
          const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
          if (d > diff) diff = d, worst = i;
        }
        EXPECT_EQ(diff, max_abs_diff(a, b)) << name;
        const double allowed = tolerance * std::max(1.0, max_abs(b));
        EXPECT_LE(diff, allowed) << name << " T=" << t << " H=" << s.heads << " Hkv=" << s.kv_heads
                                 << " D=" << s.head_dim << ": max |diff| " << diff << " at element "
                                 << worst << " (" << 100.0 * diff / allowed
                                 << "% of the tolerance)";
      };
      check("out", flash.out, naive.out, kOutTolerance);
      check("dq", flash.dq, naive.dq, kGradTolerance);
      check("dk", flash.dk, naive.dk, kGradTolerance);
      check("dv", flash.dv, naive.dv, kGradTolerance);
    }
  }
}

TEST(Lesson06, DifferentSeedsGiveDifferentInputsTheSameSeedTheSame) {
  const CoreShape s{1, 2, 2, 8};
  const CoreRun a = run_attention_core(kSim, AttentionKind::flash, 33, s, 1, true);
  const CoreRun b = run_attention_core(kSim, AttentionKind::flash, 33, s, 1, true);
  const CoreRun c = run_attention_core(kSim, AttentionKind::flash, 33, s, 2, true);
  EXPECT_EQ(max_abs_diff(a.out, b.out), 0.0);
  EXPECT_GT(max_abs_diff(a.out, c.out), 0.0);
}

TEST(Lesson06, TrainingWithFlashFollowsNaivesLossesAndSavesTheEstimatorsBytes) {
  TrainSettings t;
  t.model = gpt2_config("odd", 2, 48, 3, 61, 40);
  t.batch = 3;
  t.seq = 37;
  t.device = kSim;
  t.seed = 4;
  t.steps = 4;
  const TrainingRun naive = run_training(t, AttentionKind::naive);
  const TrainingRun flash = run_training(t, AttentionKind::flash);
  ASSERT_EQ(naive.losses.size(), 4u);
  ASSERT_EQ(flash.losses.size(), 4u);
  for (size_t i = 0; i < naive.losses.size(); ++i)
    EXPECT_NEAR(flash.losses[i], naive.losses[i], 1e-5 * std::max(1.0, naive.losses[i]))
        << "step " << i + 1;
  EXPECT_EQ(max_loss_diff(naive, flash), max_loss_diff(flash, naive));
  EXPECT_EQ(naive.layer_saved_bytes, naive.layer_saved_estimate);
  EXPECT_EQ(flash.layer_saved_bytes, flash.layer_saved_estimate);
  EXPECT_EQ(naive.layer_attention_saved_bytes, 3 * 3 * 37 * 37 * 4);
  EXPECT_EQ(flash.layer_attention_saved_bytes, 3 * 3 * 37 * 4);
  EXPECT_EQ(naive.layer_saved_bytes - flash.layer_saved_bytes,
            3 * 3 * 37 * 37 * 4 - 3 * 3 * 37 * 4);
}

TEST(Lesson06, OneLlama7bLayerAt8192HoldsEightGibOfProbabilitiesOnMeta) {
  TrainSettings t;
  t.model = model_config_by_name("llama2-7b");
  t.model.max_seq = 8192;
  t.batch = 1;
  t.seq = 8192;
  t.device = kMeta;
  t.steps = 1;
  const TrainingRun naive = run_training(t, AttentionKind::naive);
  const TrainingRun flash = run_training(t, AttentionKind::flash);
  EXPECT_EQ(naive.layer_attention_saved_bytes, int64_t{8} << 30);  // 32 · 8192² · 4
  EXPECT_EQ(flash.layer_attention_saved_bytes, int64_t{1} << 20);  // 32 · 8192 · 4
  EXPECT_EQ(naive.layer_saved_bytes, estimate::runtime_activation_bytes_per_layer(
                                         t.model, 1, 8192, DType::f32, AttentionKind::naive));
  EXPECT_EQ(flash.layer_saved_bytes, estimate::runtime_activation_bytes_per_layer(
                                         t.model, 1, 8192, DType::f32, AttentionKind::flash));
}

LessonSettings small_settings() {
  LessonSettings s;
  s.seqs = {40, 96};
  s.shape = {1, 2, 2, 16};
  s.device = kSim;
  s.naive_max_seq = 40;
  s.training = false;
  s.scale = true;
  s.scale_model = gpt2_config("scale", 2, 64, 4, 97, 128);
  s.scale_seqs = {128};
  s.tiling_seq = 100;
  s.tiles = {32, 16};
  return s;
}

TEST(Lesson06, JsonRowsHaveTheIssuesKeysAndNullWhereNaiveWasNotComputed) {
  const Lesson lesson = run_lesson(small_settings());
  const nlohmann::json j = to_json(lesson);
  ASSERT_EQ(j.at("rows").size(), 2u);
  for (const auto& row : j.at("rows"))
    for (const char* key : {"seq", "naive_peak_bytes", "flash_peak_bytes", "naive_seconds",
                            "flash_seconds", "max_abs_diff_out", "max_abs_diff_grads"})
      EXPECT_TRUE(row.contains(key)) << key;
  const auto& computed = j["rows"][0];
  const auto& meta_only = j["rows"][1];
  EXPECT_EQ(computed["seq"], 40);
  EXPECT_TRUE(computed["naive_seconds"].is_number());
  EXPECT_TRUE(computed["max_abs_diff_out"].is_number());
  EXPECT_EQ(meta_only["seq"], 96);
  EXPECT_TRUE(meta_only["naive_seconds"].is_null());
  EXPECT_TRUE(meta_only["max_abs_diff_grads"].is_null());
  EXPECT_EQ(meta_only["naive_device"], "meta");
  EXPECT_TRUE(meta_only["flash_seconds"].is_number());
  EXPECT_EQ(meta_only["naive_peak_bytes"],
            attention_core_peak_formula(AttentionKind::naive, 96, lesson.settings.shape));
  EXPECT_EQ(j["tiling"]["total"], 4 * 7);  // ⌈100/32⌉ · ⌈100/16⌉
  ASSERT_EQ(j["scale"]["rows"].size(), 1u);
  EXPECT_EQ(j["scale"]["rows"][0]["naive_layer_bytes"],
            j["scale"]["rows"][0]["naive_layer_estimate"]);
}

TEST(Lesson06, RatiosCountTheWholeOpAndTheKernelsOwnBytes) {
  const Lesson lesson = run_lesson(small_settings());
  const SeqRow* row = find_row(lesson, 96);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(find_row(lesson, 97), nullptr);
  // Beyond q, k, v, out and their gradients naive needs 2·B·H·T² floats, flash 2·B·H·T: T times.
  EXPECT_DOUBLE_EQ(extra_ratio(*row), 96.0);
  EXPECT_DOUBLE_EQ(peak_ratio(*row), static_cast<double>(row->naive.peak_bytes) /
                                         static_cast<double>(row->flash.peak_bytes));
}

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(Lesson06, TilingFigureDrawsFlashTileCountsCells) {
  for (const int64_t t : {1, 64, 100, 256, 300}) {
    for (const kernels::cpu::FlashTiles tiles :
         {kernels::cpu::FlashTiles{64, 64}, kernels::cpu::FlashTiles{32, 16}}) {
      const report::SvgFigure f = tiling_figure(t, tiles);
      const kernels::cpu::FlashTileCounts c = kernels::cpu::flash_tile_counts(t, tiles);
      // One cell per tile plus one legend swatch per colour.
      EXPECT_EQ(count_of(f.svg, "fill=\"#1f77b4\""), c.full + 1) << "T=" << t;
      EXPECT_EQ(count_of(f.svg, "fill=\"#ff7f0e\""), c.partial + 1) << "T=" << t;
      EXPECT_EQ(count_of(f.svg, "fill=\"#e8e8e8\""), c.skipped + 1) << "T=" << t;
      EXPECT_EQ(c.full + c.partial + c.skipped, c.total);
      const std::vector<std::string> problems = report::text_layout_problems(f);
      EXPECT_TRUE(problems.empty()) << "T=" << t << ": " << problems.front();
    }
  }
}

TEST(Lesson06, TheFiguresTextDoesNotOverlap) {
  const Lesson lesson = run_lesson(small_settings());
  const Figures figures = make_figures(lesson);
  for (const report::SvgFigure* f : {&figures.memory, &figures.tiling}) {
    const std::vector<std::string> problems = report::text_layout_problems(*f);
    EXPECT_TRUE(problems.empty()) << problems.front();
  }
  EXPECT_NE(figures.memory.svg.find("<polyline"), std::string::npos);
}

TEST(Lesson06, BadSettingsNameTheValue) {
  LessonSettings s = small_settings();
  s.shape.kv_heads = 3;
  s.shape.heads = 4;
  EXPECT_THROW(run_lesson(s), UsageError);
  s = small_settings();
  s.seqs = {0};
  EXPECT_THROW(run_lesson(s), UsageError);
  EXPECT_THROW(run_attention_core(kSim, AttentionKind::flash, 0, CoreShape{}, 1, false),
               UsageError);
  EXPECT_THROW(max_abs_diff({1.0f}, {1.0f, 2.0f}), InternalError);
}

}  // namespace
}  // namespace vramlab::lesson06
