// Gradient checkpointing in the runtime: every activation plan (full spans of any length,
// selective, mixed) gives bitwise the gradients and loss of keeping everything, with dropout on
// too when the re-run forward replays its masks (and not when it draws new ones), frees what it
// says it frees (the store's peak, traced by hand from the layout), and announces the re-run
// forwards to observers. Dropout's own gradients are checked against a directional difference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/dtype/counter_rng.h"
#include "common/estimate/recompute_costs.h"
#include "common/estimate/runtime_activations.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/dropout.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/nn/step_observer.h"
#include "common/recompute/activation_peak.h"
#include "common/recompute/optimal_schedule.h"
#include "common/recompute/recompute_cost.h"
#include "common/recompute/recompute_spec.h"

namespace vramlab::nn {
namespace {

struct StepOutcome {
  double loss = 0.0;
  std::vector<float> grads;  // (numel of the parameters), empty on meta
  int64_t peak_bytes = 0;    // the store's
};

StepOutcome run_step(const ModelConfig& config, int64_t B, int64_t T, std::vector<LayerPolicy> plan,
                     const std::string& device = "cpu", StepObserver* observer = nullptr,
                     DropoutSettings dropout = {}, const std::vector<float>* weights = nullptr,
                     AttentionKind attention = AttentionKind::naive) {
  Runtime runtime(memory::parse_device(device));
  DecoderModel model(runtime, config, 3);
  model.set_dropout(dropout);
  model.set_attention(attention);
  if (weights != nullptr) {
    const memory::TensorView w = model.parameters().values().view();
    std::copy(weights->begin(), weights->end(), w.f32());
  }
  if (observer != nullptr) model.observers().add(*observer);
  std::vector<int32_t> tokens(static_cast<size_t>(B * T)), targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>(stochastic_bits(7, i) % static_cast<uint32_t>(config.vocab));
    targets[i] = static_cast<int32_t>(stochastic_bits(8, i) % static_cast<uint32_t>(config.vocab));
  }
  // cpu memory is host memory and meta runs no kernel, so host vectors serve as inputs.
  const memory::TensorView token_view(tokens.data(), DType::i32, {B, T});
  const memory::TensorView target_view(targets.data(), DType::i32, {B, T});
  SavedActivations saved(runtime, config.layers);
  saved.set_plan(std::move(plan));
  StepOutcome out;
  out.loss = model.forward(saved, token_view, target_view, B, T);
  model.backward(saved, token_view, target_view, B, T);
  EXPECT_EQ(saved.bytes(), 0) << "backward leaves nothing saved";
  out.peak_bytes = saved.peak_bytes();
  if (device != "meta") {
    const memory::TensorView g = model.parameters().grads().view();
    out.grads.assign(g.f32(), g.f32() + g.numel());
  }
  return out;
}

const LayerPolicy kNone{};
const LayerPolicy kSelective{Recompute::selective, false};
const LayerPolicy kStart{Recompute::full, true};
const LayerPolicy kInside{Recompute::full, false};

struct NamedPlan {
  std::string name;
  std::vector<LayerPolicy> plan;
};

// Five layers: one-layer spans, longer spans, every other layer, and a mix.
std::vector<NamedPlan> plans_for_five_layers() {
  return {{"every layer its own span", {kStart, kStart, kStart, kStart, kStart}},
          {"spans 0-1, 2-3, 4", {kStart, kInside, kStart, kInside, kStart}},
          {"one span of all five", {kStart, kInside, kInside, kInside, kInside}},
          {"layers 0, 2, 4", {kStart, kNone, kStart, kNone, kStart}},
          {"selective everywhere", {kSelective, kSelective, kSelective, kSelective, kSelective}},
          {"mixed", {kNone, kStart, kInside, kSelective, kStart}}};
}

// Bitwise: a recomputed tensor is made by the same kernels from the same inputs, so any
// difference is a bug (a wrong input, a stale buffer, a missed accumulation), not rounding.
void expect_bitwise_equal(const StepOutcome& expected, const StepOutcome& actual,
                          const std::string& what) {
  EXPECT_EQ(std::memcmp(&expected.loss, &actual.loss, sizeof(double)), 0)
      << what << ": loss " << actual.loss << " vs " << expected.loss;
  ASSERT_EQ(expected.grads.size(), actual.grads.size()) << what;
  size_t differing = 0, first = 0;
  float max_diff = 0.0f;
  for (size_t i = 0; i < expected.grads.size(); ++i) {
    if (std::memcmp(&expected.grads[i], &actual.grads[i], sizeof(float)) != 0) {
      if (differing++ == 0) first = i;
      max_diff = std::max(max_diff, std::abs(expected.grads[i] - actual.grads[i]));
    }
  }
  EXPECT_EQ(differing, 0u) << what << ": " << differing << " of " << expected.grads.size()
                           << " gradient elements differ, first at " << first << ", max |diff| "
                           << max_diff << " (bitwise equality required)";
}

TEST(Recompute, EveryPlanGivesBitwiseTheGradientsOfKeepingEverythingGpt2) {
  const ModelConfig config = gpt2_config("recompute-gpt2", 5, 24, 3, 37, 16);
  const StepOutcome reference = run_step(config, 2, 11, std::vector<LayerPolicy>(5));
  for (const auto& [name, plan] : plans_for_five_layers())
    expect_bitwise_equal(reference, run_step(config, 2, 11, plan), name);
}

TEST(Recompute, EveryPlanGivesBitwiseTheGradientsOfKeepingEverythingLlama) {
  const ModelConfig config = llama_config("recompute-llama", 5, 32, 4, 2, 40, 29, 16);
  const StepOutcome reference = run_step(config, 3, 7, std::vector<LayerPolicy>(5));
  for (const auto& [name, plan] : plans_for_five_layers())
    expect_bitwise_equal(reference, run_step(config, 3, 7, plan), name);
}

TEST(Recompute, WithDropoutEveryPlanReplayingItsMasksGivesBitwiseTheSameGradients) {
  const ModelConfig config = gpt2_config("recompute-dropout", 5, 24, 3, 37, 16);
  const DropoutSettings dropout{0.2f, 11, true};
  const StepOutcome reference =
      run_step(config, 2, 11, std::vector<LayerPolicy>(5), "cpu", nullptr, dropout);
  const StepOutcome without = run_step(config, 2, 11, std::vector<LayerPolicy>(5));
  EXPECT_NE(reference.loss, without.loss) << "dropout did nothing";
  for (const auto& [name, plan] : plans_for_five_layers())
    expect_bitwise_equal(reference, run_step(config, 2, 11, plan, "cpu", nullptr, dropout), name);
}

// torch.utils.checkpoint's preserve_rng_state=False: the re-run forward draws new masks, so the
// backward differentiates another network than the one whose loss was computed.
TEST(Recompute, ARecomputeThatDrawsNewMasksNoLongerGivesTheGradients) {
  const ModelConfig config = gpt2_config("recompute-redraw", 5, 24, 3, 37, 16);
  const StepOutcome reference = run_step(config, 2, 11, std::vector<LayerPolicy>(5), "cpu", nullptr,
                                         DropoutSettings{0.2f, 11, false});
  const StepOutcome redrawn = run_step(config, 2, 11, {kStart, kStart, kStart, kStart, kStart},
                                       "cpu", nullptr, DropoutSettings{0.2f, 11, false});
  EXPECT_EQ(reference.loss, redrawn.loss) << "the forward itself is the same";
  ASSERT_EQ(reference.grads.size(), redrawn.grads.size());
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < reference.grads.size(); ++i) {
    diff += std::pow(static_cast<double>(reference.grads[i]) - redrawn.grads[i], 2);
    norm += std::pow(static_cast<double>(reference.grads[i]), 2);
  }
  EXPECT_GT(std::sqrt(diff / norm), 0.05) << "new masks must change the gradients";
  // Without checkpointing nothing is re-run, so the flag changes nothing.
  expect_bitwise_equal(reference,
                       run_step(config, 2, 11, std::vector<LayerPolicy>(5), "cpu", nullptr,
                                DropoutSettings{0.2f, 11, true}),
                       "preserve_rng_state without recompute");
}

// The gradient with dropout is the derivative of the loss with those masks: along a random
// direction d, (L(θ + hd) − L(θ − hd)) / 2h = ∇L·d. Measured: the truncation error is 2% of the
// value at h = 3e-3 and 0.25% at 1e-3 (it falls as h²); the f32 loss's rounding (~3e-7) adds
// ~0.1% at h = 5e-4, which this test uses with a 0.5% tolerance. A mask regenerated one element
// off in one branch already puts the difference at 3%.
TEST(Recompute, DropoutGradientsAreTheDerivativeOfTheLossWithTheSameMasks) {
  const ModelConfig config = gpt2_config("dropout-gradient", 2, 16, 2, 23, 8);
  const DropoutSettings dropout{0.3f, 5, true};
  for (const auto& plan :
       {std::vector<LayerPolicy>(2), std::vector<LayerPolicy>{kStart, kSelective}}) {
    const StepOutcome at = run_step(config, 2, 7, plan, "cpu", nullptr, dropout);
    Runtime runtime(memory::parse_device("cpu"));
    DecoderModel model(runtime, config, 3);
    const memory::TensorView w = model.parameters().values().view();
    const std::vector<float> theta(w.f32(), w.f32() + w.numel());
    std::vector<float> plus = theta, minus = theta;
    double directional = 0.0;
    const double h = 5e-4;
    for (size_t i = 0; i < theta.size(); ++i) {
      const double d = static_cast<double>(stochastic_bits(99, i)) / 4294967296.0 - 0.5;
      plus[i] = static_cast<float>(theta[i] + h * d);
      minus[i] = static_cast<float>(theta[i] - h * d);
      directional += static_cast<double>(at.grads[i]) * d;
    }
    const double difference = (run_step(config, 2, 7, plan, "cpu", nullptr, dropout, &plus).loss -
                               run_step(config, 2, 7, plan, "cpu", nullptr, dropout, &minus).loss) /
                              (2 * h);
    const double error = std::abs(difference - directional);
    EXPECT_LE(error, 0.005 * std::abs(directional))
        << "directional derivative " << difference << " vs gradient·d " << directional
        << ": |diff| " << error << " (" << 100 * error / (0.005 * std::abs(directional))
        << "% of tolerance)";
  }
}

// The store's peak, traced by hand from the layout: F bytes per layer, O its output, A its
// attention probabilities, E the embedding output, H the head's tensors.
TEST(Recompute, TheStorePeakIsWhatThePlanKeeps) {
  const int64_t L = 4, B = 2, T = 8;
  const ModelConfig config = gpt2_config("recompute-peak", L, 16, 2, 97, 16);
  const int64_t F = estimate::runtime_activation_bytes_per_layer(config, B, T, DType::f32);
  const int64_t E = B * T * 16 * 4, O = E, A = B * 2 * T * T * 4;
  const int64_t H = estimate::runtime_activation_bytes_outside_layers(config, B, T, DType::f32) - E;
  ASSERT_GT(H, A) << "the test assumes the head outweighs one layer's probabilities";
  EXPECT_EQ(run_step(config, B, T, std::vector<LayerPolicy>(L), "meta").peak_bytes, E + L * F + H);
  EXPECT_EQ(run_step(config, B, T, std::vector<LayerPolicy>(L, kSelective), "meta").peak_bytes,
            E + L * (F - A) + H);
  // One-layer spans: the end of forward keeps L outputs; the last span's backward re-runs
  // one layer beside L - 1 outputs.
  EXPECT_EQ(run_step(config, B, T, std::vector<LayerPolicy>(L, kStart), "meta").peak_bytes,
            std::max(E + L * O + H, E + (L - 1) * O + F));
  // One span of all layers: the end of forward keeps one output; its backward re-runs all.
  EXPECT_EQ(run_step(config, B, T, {kStart, kInside, kInside, kInside}, "meta").peak_bytes,
            std::max(E + O + H, E + L * F));
  // Meta and a real device keep the same bytes.
  EXPECT_EQ(run_step(config, B, T, {kStart, kInside, kSelective, kNone}, "meta").peak_bytes,
            run_step(config, B, T, {kStart, kInside, kSelective, kNone}, "cpu").peak_bytes);
}

class PhaseRecorder : public StepObserver {
 public:
  void before(const PhaseEvent& e) override {
    if (e.phase == StepPhase::recompute_layer || e.phase == StepPhase::backward_layer)
      phases.push_back(std::string(step_phase_name(e.phase)) + " " + std::to_string(e.layer));
  }
  std::vector<std::string> phases;
};

TEST(Recompute, ASpansForwardIsReRunJustBeforeTheBackwardOfItsLastLayer) {
  const ModelConfig config = gpt2_config("recompute-phases", 5, 16, 2, 23, 8);
  PhaseRecorder recorder;
  run_step(config, 1, 4, {kStart, kInside, kNone, kStart, kSelective}, "meta", &recorder);
  const std::vector<std::string> expected = {
      "backward_layer 4",  "recompute_layer 3", "backward_layer 3", "backward_layer 2",
      "recompute_layer 0", "recompute_layer 1", "backward_layer 1", "backward_layer 0"};
  EXPECT_EQ(recorder.phases, expected);
}

}  // namespace
}  // namespace vramlab::nn

namespace vramlab::nn {
namespace {

recompute::RecomputeSchedule schedule_for(const ModelConfig& config, int64_t B, int64_t T,
                                          const std::string& spec) {
  return recompute::make_schedule(recompute::parse_recompute_spec(spec),
                                  estimate::runtime_chain_costs(config, B, T));
}

// Every schedule `--recompute` can name, made by the planner for a 9-layer model, with dropout:
// bitwise the gradients of keeping everything.
TEST(Recompute, EveryNamedScheduleWithDropoutGivesBitwiseTheGradientsOfKeepingEverything) {
  const ModelConfig config = gpt2_config("recompute-named", 9, 24, 3, 37, 16);
  const int64_t B = 2, T = 11;
  const DropoutSettings dropout{0.1f, 3, true};
  const StepOutcome reference =
      run_step(config, B, T, std::vector<LayerPolicy>(9), "cpu", nullptr, dropout);
  const int64_t none_peak = reference.peak_bytes;
  const int64_t sqrt_peak =
      run_step(config, B, T, schedule_for(config, B, T, "sqrt").layers, "meta").peak_bytes;
  const std::vector<std::string> specs = {"full",
                                          "every:2",
                                          "every:4",
                                          "sqrt",
                                          "selective",
                                          "budget:" + std::to_string((none_peak + sqrt_peak) / 2),
                                          "budget:" + std::to_string(sqrt_peak)};
  for (const std::string& spec : specs) {
    const recompute::RecomputeSchedule schedule = schedule_for(config, B, T, spec);
    expect_bitwise_equal(reference,
                         run_step(config, B, T, schedule.layers, "cpu", nullptr, dropout),
                         spec + " (" + recompute::schedule_pattern(schedule) + ")");
  }
}

// The budget schedule, run: its measured peak fits the budget, and no hand schedule that fits the
// same budget (measured) recomputes less.
TEST(Recompute, TheBudgetScheduleFitsItsBudgetAndRecomputesNoMoreThanAnyHandScheduleThatFits) {
  for (const ModelConfig& config : {gpt2_config("budget-gpt2", 12, 64, 4, 97, 64),
                                    llama_config("budget-llama", 10, 64, 4, 2, 96, 97, 64)}) {
    const int64_t B = 2, T = 48;
    const recompute::ChainCosts costs = estimate::runtime_chain_costs(config, B, T);
    std::vector<std::string> hand = {"none", "full", "sqrt", "selective"};
    for (int64_t k = 2; k <= config.layers; ++k) hand.push_back("every:" + std::to_string(k));
    struct Measured {
      std::string spec;
      int64_t peak;
      double cost;
    };
    std::vector<Measured> hand_measured;
    for (const std::string& spec : hand) {
      const auto schedule = schedule_for(config, B, T, spec);
      hand_measured.push_back({spec, run_step(config, B, T, schedule.layers, "meta").peak_bytes,
                               recompute::recompute_cost(costs, schedule)});
    }
    const int64_t least = recompute::least_activation_peak_bytes(costs);
    const int64_t most = hand_measured.front().peak;  // none
    for (int i = 0; i <= 8; ++i) {
      const int64_t budget = least + (most - least) * i / 8;
      const auto schedule = schedule_for(config, B, T, "budget:" + std::to_string(budget));
      const int64_t measured = run_step(config, B, T, schedule.layers, "meta").peak_bytes;
      const double cost = recompute::recompute_cost(costs, schedule);
      EXPECT_LE(measured, budget) << config.name << " " << schedule.name;
      for (const Measured& h : hand_measured) {
        if (h.peak > budget) continue;
        EXPECT_LE(cost, h.cost) << config.name << " budget " << budget << ": "
                                << recompute::schedule_pattern(schedule) << " costs more than "
                                << h.spec << ", which fits too";
      }
    }
  }
}

// ---- flash attention -------------------------------------------------------------------------

// Flash attention computes the same function as the naive kernel in another summation order, so
// the loss and every gradient agree to f32 rounding: within 2e-6 of the largest gradient element
// (measured: at most 3.6e-7 of it, in the GPT-2 case), with dropout on and grouped KV heads.
void expect_flash_matches_naive(const ModelConfig& config, int64_t B, int64_t T,
                                DropoutSettings dropout) {
  const std::vector<LayerPolicy> keep(static_cast<size_t>(config.layers));
  const StepOutcome naive = run_step(config, B, T, keep, "cpu", nullptr, dropout);
  const StepOutcome flash =
      run_step(config, B, T, keep, "cpu", nullptr, dropout, nullptr, AttentionKind::flash);
  EXPECT_NEAR(flash.loss, naive.loss, 1e-6 * std::abs(naive.loss)) << config.name;
  ASSERT_EQ(flash.grads.size(), naive.grads.size());
  float largest = 0.0f, max_diff = 0.0f;
  size_t where = 0;
  for (size_t i = 0; i < naive.grads.size(); ++i) {
    largest = std::max(largest, std::abs(naive.grads[i]));
    const float diff = std::abs(flash.grads[i] - naive.grads[i]);
    if (diff > max_diff) {
      max_diff = diff;
      where = i;
    }
  }
  const float tolerance = 2e-6f * largest;
  EXPECT_LE(max_diff, tolerance) << config.name << ": max |diff| " << max_diff << " at gradient "
                                 << where << " (" << 100.0f * max_diff / tolerance
                                 << "% of tolerance " << tolerance << ")";
}

TEST(FlashAttentionModel, LossAndGradientsMatchNaiveAttentionGpt2) {
  // T = 37 and 70: not multiples of any tile size, and 70 spans more than one 64-row tile.
  expect_flash_matches_naive(gpt2_config("flash-gpt2", 2, 32, 4, 41, 80), 2, 37, {});
  expect_flash_matches_naive(gpt2_config("flash-gpt2-long", 1, 32, 2, 41, 80), 1, 70, {});
}

TEST(FlashAttentionModel, LossAndGradientsMatchNaiveAttentionLlamaWithGroupedKvHeads) {
  expect_flash_matches_naive(llama_config("flash-llama", 2, 48, 6, 2, 40, 29, 80), 2, 67, {});
}

TEST(FlashAttentionModel, WithDropoutTheMasksAreTheNaiveKernels) {
  expect_flash_matches_naive(gpt2_config("flash-dropout", 2, 24, 3, 37, 80), 2, 66,
                             DropoutSettings{0.2f, 11, true});
}

// Under flash attention every plan still gives bitwise the gradients of keeping everything (a
// span's re-run forward runs the same flash kernel), selective recompute has nothing to drop,
// and the store's peak is the planner's model of it with the flash layout.
TEST(FlashAttentionModel, EveryPlanGivesBitwiseTheGradientsAndThePlannersPeak) {
  const ModelConfig config = gpt2_config("flash-recompute", 5, 24, 3, 37, 16);
  const int64_t B = 2, T = 11;
  const StepOutcome reference = run_step(config, B, T, std::vector<LayerPolicy>(5), "cpu", nullptr,
                                         {}, nullptr, AttentionKind::flash);
  const recompute::ChainCosts costs =
      estimate::runtime_chain_costs(config, B, T, DType::f32, AttentionKind::flash);
  for (const auto& [name, plan] : plans_for_five_layers()) {
    const StepOutcome run =
        run_step(config, B, T, plan, "cpu", nullptr, {}, nullptr, AttentionKind::flash);
    expect_bitwise_equal(reference, run, name);
    recompute::RecomputeSchedule schedule;
    schedule.layers = plan;
    EXPECT_EQ(run.peak_bytes, recompute::activation_peak_bytes(costs, schedule)) << name;
  }
  EXPECT_EQ(run_step(config, B, T, {kSelective, kSelective, kSelective, kSelective, kSelective},
                     "cpu", nullptr, {}, nullptr, AttentionKind::flash)
                .peak_bytes,
            reference.peak_bytes)
      << "selective recompute under flash attention keeps everything";
}

}  // namespace
}  // namespace vramlab::nn
