// Tests of exercise 02.1 (√N spans and the activation peak they give). They run against your
// code (`vramlab check 02.1`) and against the reference (ctest: test_ex_02_1_ref).
// The check is the runtime itself: real models (GPT-2 124M, Llama 2-7B at T = 4096, GPT-2 355M
// and small random ones) run one training step on the meta device with your spans as the
// activation plan, and the saved-activations store's measured peak is the expected value. The
// chain's sizes F, O, E and H are read from the store after a forward pass that keeps everything.
// Synthetic chains with arbitrary sizes are checked against the test's own event-by-event
// timeline of the same step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/memory/device.h"
#include "common/memory/tensor_view.h"
#include "common/model/model_config.h"
#include "common/model/saved_tensor_names.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/02-checkpointing/api/sqrt_spans.h"

namespace vramlab::lesson02 {
namespace {

using workbook::Comparison;
using workbook::Unit;

std::string describe(const std::vector<int64_t>& starts) {
  std::string s = "starts {";
  for (size_t j = 0; j < starts.size() && j < 12; ++j) {
    if (j > 0) s += ',';
    s += std::to_string(starts[j]);
  }
  if (starts.size() > 12) s += ", ... " + std::to_string(starts.size()) + " in all";
  s += '}';
  return s;
}

std::string describe(const ChainShape& c) {
  return "L=" + std::to_string(c.layers) + " F=" + std::to_string(c.layer_bytes) +
         " O=" + std::to_string(c.output_bytes) + " E=" + std::to_string(c.before_bytes) +
         " H=" + std::to_string(c.head_bytes);
}

// The smallest k with k·k ≥ L, by the test's own search.
int64_t smallest_k_covering(int64_t layers) {
  auto k = static_cast<uint64_t>(std::sqrt(static_cast<long double>(layers)));
  const auto L = static_cast<uint64_t>(layers);
  while (k > 0 && (k - 1) * (k - 1) >= L) --k;
  while (k * k < L) ++k;
  return static_cast<int64_t>(k);
}

// One step of the runtime on meta, every layer recomputed in full, a span at each start.
struct Step {
  nn::Runtime runtime{memory::parse_device("meta")};
  ModelConfig config;
  int64_t batch, seq;
  std::vector<int32_t> tokens;  // (B, T); meta reads no element
  Step(ModelConfig c, int64_t B, int64_t T)
      : config(std::move(c)), batch(B), seq(T), tokens(static_cast<size_t>(B * T), 0) {}
  memory::TensorView view() { return memory::TensorView(tokens.data(), DType::i32, {batch, seq}); }
};

int64_t measured_peak(const ModelConfig& config, int64_t B, int64_t T,
                      const std::vector<int64_t>& starts) {
  Step step(config, B, T);
  nn::DecoderModel model(step.runtime, config, 1);
  nn::SavedActivations saved(step.runtime, config.layers);
  std::vector<nn::LayerPolicy> plan(static_cast<size_t>(config.layers));
  for (auto& p : plan) p = nn::LayerPolicy{nn::Recompute::full, false};
  for (int64_t s : starts) plan[static_cast<size_t>(s)].span_start = true;
  saved.set_plan(plan);
  model.forward(saved, step.view(), step.view(), B, T);
  model.backward(saved, step.view(), step.view(), B, T);
  return saved.peak_bytes();
}

// F, O, E and H as the store holds them after a forward pass that keeps everything.
ChainShape measured_chain(const ModelConfig& config, int64_t B, int64_t T) {
  Step step(config, B, T);
  nn::DecoderModel model(step.runtime, config, 1);
  nn::SavedActivations store(step.runtime, config.layers);
  model.forward(store, step.view(), step.view(), B, T);
  ChainShape chain;
  chain.layers = config.layers;
  std::vector<int64_t> per_layer(static_cast<size_t>(config.layers), 0);
  for (const nn::SavedActivationInfo& info : store.list()) {
    if (info.layer < 0) {
      (info.name == saved::encoded ? chain.before_bytes : chain.head_bytes) += info.bytes;
    } else {
      per_layer[static_cast<size_t>(info.layer)] += info.bytes;
      if (info.layer == 0 && info.name == saved::residual3) chain.output_bytes = info.bytes;
    }
  }
  chain.layer_bytes = per_layer.front();
  for (int64_t bytes : per_layer)
    EXPECT_EQ(bytes, chain.layer_bytes) << config.name << ": the test assumes identical layers";
  store.clear();
  return chain;
}

// The test's own model: the store's total after every event of the step, and its maximum.
int64_t timeline_peak(const ChainShape& c, const std::vector<int64_t>& starts) {
  std::vector<bool> is_start(static_cast<size_t>(c.layers), false);
  for (int64_t s : starts) is_start[static_cast<size_t>(s)] = true;
  int64_t live = c.before_bytes, peak = live;
  for (int64_t l = 0; l < c.layers; ++l) {
    live += c.layer_bytes;  // the layer saves everything while it runs
    peak = std::max(peak, live);
    live -= c.layer_bytes - c.output_bytes;  // keeps its output
    if (!is_start[static_cast<size_t>(l)])
      live -= c.output_bytes;  // the previous one was its input
  }
  live += c.head_bytes;
  peak = std::max(peak, live);
  live -= c.head_bytes;
  for (size_t j = starts.size(); j-- > 0;) {
    const int64_t end = j + 1 < starts.size() ? starts[j + 1] : c.layers;
    live -= c.output_bytes;                     // the checkpoint goes
    live += (end - starts[j]) * c.layer_bytes;  // the re-run saves every layer
    peak = std::max(peak, live);
    live -= (end - starts[j]) * c.layer_bytes;  // each layer's backward frees it
  }
  EXPECT_EQ(live, c.before_bytes) << "the test's timeline must end where it started";
  return peak;
}

std::vector<int64_t> every_k(int64_t layers, int64_t k) {
  std::vector<int64_t> starts;
  for (int64_t s = 0; s < layers; s += k) starts.push_back(s);
  return starts;
}

std::vector<int64_t> random_starts(std::mt19937_64& rng, int64_t layers) {
  std::vector<int64_t> starts = {0};
  const double p = std::uniform_real_distribution<double>(0.05, 0.9)(rng);
  for (int64_t l = 1; l < layers; ++l)
    if (std::bernoulli_distribution(p)(rng)) starts.push_back(l);
  return starts;
}

// One span, L one-layer spans, √N (the test's k), every 2 and 3, and two random ones.
std::vector<std::vector<int64_t>> span_splits(int64_t layers, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return {{0},
          every_k(layers, 1),
          every_k(layers, smallest_k_covering(layers)),
          every_k(layers, 2),
          every_k(layers, 3),
          random_starts(rng, layers),
          random_starts(rng, layers)};
}

void expect_runtime_peaks(const ModelConfig& config, int64_t B, int64_t T, Comparison& peak,
                          uint64_t seed) {
  const ChainShape chain = measured_chain(config, B, T);
  for (const std::vector<int64_t>& starts : span_splits(config.layers, seed))
    peak.add(config.name + " B=" + std::to_string(B) + " T=" + std::to_string(T) + " " +
                 describe(starts),
             static_cast<double>(measured_peak(config, B, T, starts)),
             static_cast<double>(checkpointed_activation_peak(chain, starts)));
}

TEST(SqrtSpans, SpansOfCeilSqrtLLayers) {
  Comparison count("number of spans", Unit::kNumber), start("span start");
  std::vector<int64_t> lengths;
  for (int64_t L = 1; L <= 1200; ++L) lengths.push_back(L);
  // Just below, at and just above perfect squares, up to 10^12 layers (10^6 spans).
  for (int64_t k : {int64_t{2}, int64_t{37}, int64_t{1000}, int64_t{65537}, int64_t{1'000'000}})
    for (int64_t d : {-1, 0, 1}) lengths.push_back(k * k + d);
  for (int64_t L : lengths) {
    const int64_t k = smallest_k_covering(L);
    const int64_t expected_count = (L + k - 1) / k;
    const std::vector<int64_t> got = sqrt_span_starts(L);
    count.add("L=" + std::to_string(L) + " (k=" + std::to_string(k) + ")",
              static_cast<double>(expected_count), static_cast<double>(got.size()));
    // The first start that differs, or the last one when none does.
    size_t j = 0;
    while (j + 1 < got.size() && got[j] == static_cast<int64_t>(j) * k) ++j;
    if (!got.empty())
      start.add("L=" + std::to_string(L) + " span " + std::to_string(j),
                static_cast<double>(static_cast<int64_t>(j) * k), static_cast<double>(got[j]));
  }
  VRAMLAB_EXPECT_PASSES(count);
  VRAMLAB_EXPECT_PASSES(start);
}

//! [test]
TEST(SqrtSpans, PeakIsWhatTheRuntimeMeasuresForGpt2_124M) {
  Comparison peak("activation peak (measured on meta vs yours)", Unit::kBytes);
  expect_runtime_peaks(model_config_by_name("gpt2-124m"), 4, 1024, peak, 0x0201);
  expect_runtime_peaks(model_config_by_name("gpt2-124m"), 1, 77, peak, 0x0202);
  VRAMLAB_EXPECT_PASSES(peak);
}
//! [test]

TEST(SqrtSpans, PeakIsWhatTheRuntimeMeasuresForLlama2_7BAtT4096) {
  // One layer saves more than 2 GiB here: the sums need 64 bits.
  Comparison peak("activation peak (measured on meta vs yours)", Unit::kBytes);
  expect_runtime_peaks(model_config_by_name("llama2-7b"), 1, 4096, peak, 0x0203);
  VRAMLAB_EXPECT_PASSES(peak);
}

TEST(SqrtSpans, PeakIsWhatTheRuntimeMeasuresForGpt2_355M) {
  // 24 layers: √N gives k = 5, four spans of five layers and one of four.
  Comparison peak("activation peak (measured on meta vs yours)", Unit::kBytes);
  expect_runtime_peaks(model_config_by_name("gpt2-355m"), 2, 512, peak, 0x0204);
  VRAMLAB_EXPECT_PASSES(peak);
}

TEST(SqrtSpans, PeakIsWhatTheRuntimeMeasuresForRandomSmallModels) {
  std::mt19937_64 rng(0x0205);
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Comparison peak("activation peak (measured on meta vs yours)", Unit::kBytes);
  for (int trial = 0; trial < 16; ++trial) {
    const int64_t heads = pick(1, 4), hidden = heads * 8 * pick(1, 4), seq = pick(1, 64);
    const int64_t layers = pick(1, 20), vocab = pick(17, 3000);
    const ModelConfig config =
        trial % 2 == 0
            ? gpt2_config("gpt2-random", layers, hidden, heads, vocab, seq)
            : llama_config("llama-random", layers, hidden, heads, heads, 3 * hidden, vocab, seq);
    expect_runtime_peaks(config, pick(1, 5), seq, peak, 0x0205'0000 + static_cast<uint64_t>(trial));
  }
  VRAMLAB_EXPECT_PASSES(peak);
}

TEST(SqrtSpans, PeakOfRandomChainsFollowsTheStepsTimeline) {
  // Sizes the runtime never produces: outputs as large as the layer or empty, no head or a head
  // larger than everything, tens of GiB per layer.
  std::mt19937_64 rng(0x0206);
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Comparison peak("activation peak (timeline vs yours)", Unit::kBytes);
  for (int trial = 0; trial < 400; ++trial) {
    ChainShape c;
    c.layers = pick(1, trial < 300 ? 12 : 300);
    c.layer_bytes = pick(0, trial % 3 == 0 ? (int64_t{1} << 36) : 5000);
    const int64_t kind = pick(0, 3);
    c.output_bytes = kind == 0 ? 0 : (kind == 1 ? c.layer_bytes : pick(0, c.layer_bytes));
    c.before_bytes = pick(0, 3) == 0 ? 0 : pick(0, c.layer_bytes + 1);
    c.head_bytes = pick(0, 2) == 0 ? 0 : pick(0, c.layers * c.layer_bytes + 7);
    const std::vector<int64_t> starts = trial % 5 == 0
                                            ? every_k(c.layers, smallest_k_covering(c.layers))
                                            : random_starts(rng, c.layers);
    peak.add(describe(c) + " " + describe(starts), static_cast<double>(timeline_peak(c, starts)),
             static_cast<double>(checkpointed_activation_peak(c, starts)));
  }
  VRAMLAB_EXPECT_PASSES(peak);
}

TEST(SqrtSpans, SqrtStartsGiveTheRuntimesPeakOnLlama2_13B) {
  // Your own spans, run: 40 layers at T = 2048 in ⌈√40⌉ = 7-layer spans.
  const ModelConfig config = model_config_by_name("llama2-13b");
  const std::vector<int64_t> starts = sqrt_span_starts(config.layers);
  Comparison peak("activation peak of your √N plan (measured vs yours)", Unit::kBytes);
  peak.add(
      "llama2-13b B=1 T=2048 " + describe(starts),
      static_cast<double>(measured_peak(config, 1, 2048, starts)),
      static_cast<double>(checkpointed_activation_peak(measured_chain(config, 1, 2048), starts)));
  VRAMLAB_EXPECT_PASSES(peak);
  EXPECT_EQ(starts, every_k(40, 7));
}

TEST(SqrtSpans, APeakThatOverflowsInt64Throws) {
  const ChainShape c{4, int64_t{1} << 62, 1, 0, 0};
  EXPECT_THROW(checkpointed_activation_peak(c, {0}), UsageError)
      << "4 layers of 2^62 bytes re-run together pass 2^63";
}

TEST(SqrtSpans, RejectsBadInputNamingTheValue) {
  struct Bad {
    ChainShape chain;
    std::vector<int64_t> starts;
    std::string named;
  };
  const ChainShape ok{6, 100, 10, 5, 50};
  const Bad cases[] = {
      {{0, 100, 10, 5, 50}, {0}, "0"},
      {{-3, 100, 10, 5, 50}, {0}, "-3"},
      {{6, -100, 0, 5, 50}, {0}, "-100"},
      {{6, 100, 10, -5, 50}, {0}, "-5"},
      {{6, 100, 10, 5, -50}, {0}, "-50"},
      {{6, 100, 101, 5, 50}, {0}, "101"},
      {ok, {}, "0"},
      {ok, {1, 3}, "1"},
      {ok, {0, 4, 2}, "2"},
      {ok, {0, 2, 2}, "2"},
      {ok, {0, 6}, "6"},
      {ok, {0, -4}, "-4"},
  };
  for (const Bad& bad : cases) {
    try {
      checkpointed_activation_peak(bad.chain, bad.starts);
      ADD_FAILURE() << "no vramlab::UsageError for " << describe(bad.chain) << " "
                    << describe(bad.starts);
    } catch (const UsageError& e) {
      if (std::string(e.what()).find(bad.named) == std::string::npos)
        ADD_FAILURE() << "the message should name " << bad.named << ": " << e.what();
    }
  }
  for (int64_t layers : {int64_t{0}, int64_t{-7}}) {
    try {
      sqrt_span_starts(layers);
      ADD_FAILURE() << "no vramlab::UsageError for sqrt_span_starts(" << layers << ")";
    } catch (const UsageError& e) {
      if (std::string(e.what()).find(std::to_string(layers)) == std::string::npos)
        ADD_FAILURE() << "the message should name " << layers << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace vramlab::lesson02
