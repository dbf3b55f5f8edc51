// Optimizers over a ParameterStore: AdamW and SGD(momentum) updates against a scalar double
// transcription of torch.optim's formulas, memory categories of states and gradients, and
// gradient release (none) versus zeroing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/amp/precision_policy.h"
#include "common/dist/shard_layout.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"
#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "common/optim/optimizer.h"
#include "common/platform/errors.h"

namespace vramlab::optim {
namespace {

using memory::MemoryCategory;

int64_t category_bytes(nn::Runtime& runtime, MemoryCategory category) {
  return runtime.allocator().category_stats().of(category).current;
}

// A store of two tensors (odd sizes) with seeded values and gradients.
struct Fixture {
  nn::Runtime runtime{memory::parse_device("cpu")};
  nn::ParameterStore params{runtime, {{"a", {3, 7}, 0}, {"b", {5}, -1}}};
  void fill(int step) {
    params.ensure_grads();
    for (int64_t i = 0; i < params.numel(); ++i) {
      if (step == 0) params.values().f32()[i] = 0.1f * static_cast<float>((i * 37) % 11) - 0.5f;
      params.grads().f32()[i] = 0.05f * static_cast<float>(((i + step) * 13) % 9) - 0.2f;
    }
  }
};

TEST(AdamW, ThreeStepsMatchTorchFormulaInDouble) {
  Fixture f;
  kernels::cpu::AdamWHyperparameters hp;
  hp.learning_rate = 0.01f;
  hp.weight_decay = 0.1f;
  AdamW adamw(f.runtime, hp);
  const int64_t n = f.params.numel();
  std::vector<double> p(static_cast<size_t>(n)), m(p.size(), 0.0), v(p.size(), 0.0);
  for (int step = 0; step < 3; ++step) {
    f.fill(step);
    if (step == 0)
      for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = f.params.values().f32()[i];
    adamw.step(f.params);
    for (int64_t i = 0; i < n; ++i) {
      const auto s = static_cast<size_t>(i);
      const double g = f.params.grads().f32()[i];
      const int t = step + 1;
      p[s] *= 1.0 - 0.01 * 0.1;
      m[s] = 0.9 * m[s] + 0.1 * g;
      v[s] = 0.999 * v[s] + 0.001 * g * g;
      const double m_hat = m[s] / (1 - std::pow(0.9, t)), v_hat = v[s] / (1 - std::pow(0.999, t));
      p[s] -= 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8);
    }
  }
  double max_diff = 0.0;
  for (int64_t i = 0; i < n; ++i)
    max_diff = std::max(max_diff, std::abs(p[static_cast<size_t>(i)] - f.params.values().f32()[i]));
  EXPECT_LT(max_diff, 1e-6) << "max |f32 - double| over " << n << " parameters";
  EXPECT_EQ(adamw.steps(), 3);
  EXPECT_EQ(adamw.state_bytes(), 8 * n);
  EXPECT_GE(category_bytes(f.runtime, MemoryCategory::optimizer_state), 8 * n);
}

TEST(Sgd, MomentumMatchesTorchFormulaInDouble) {
  Fixture f;
  Sgd sgd(f.runtime, {.learning_rate = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f});
  const int64_t n = f.params.numel();
  std::vector<double> p(static_cast<size_t>(n)), buf(p.size(), 0.0);
  for (int step = 0; step < 3; ++step) {
    f.fill(step);
    if (step == 0)
      for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = f.params.values().f32()[i];
    sgd.step(f.params);
    for (int64_t i = 0; i < n; ++i) {
      const auto s = static_cast<size_t>(i);
      const double g = f.params.grads().f32()[i] + 0.01 * p[s];
      buf[s] = 0.9 * buf[s] + g;
      p[s] -= 0.1 * buf[s];
    }
  }
  double max_diff = 0.0;
  for (int64_t i = 0; i < n; ++i)
    max_diff = std::max(max_diff, std::abs(p[static_cast<size_t>(i)] - f.params.values().f32()[i]));
  EXPECT_LT(max_diff, 1e-6);
  EXPECT_EQ(sgd.state_bytes(), 4 * n);
}

TEST(Sgd, WithoutMomentumHoldsNoState) {
  Fixture f;
  Sgd sgd(f.runtime, {.learning_rate = 0.1f});
  f.fill(0);
  const float before = f.params.values().f32()[4];
  const float grad = f.params.grads().f32()[4];
  sgd.step(f.params);
  EXPECT_FLOAT_EQ(f.params.values().f32()[4], before - 0.1f * grad);
  EXPECT_EQ(sgd.state_bytes(), 0);
  EXPECT_EQ(category_bytes(f.runtime, MemoryCategory::optimizer_state), 0);
}

TEST(Optimizer, GradientsAreReleasedToNoneOrZeroed) {
  Fixture f;
  f.fill(0);
  EXPECT_GE(category_bytes(f.runtime, MemoryCategory::gradient), 4 * f.params.numel());
  Optimizer::zero_grad(f.params, false);
  EXPECT_FALSE(f.params.grads().empty());
  for (int64_t i = 0; i < f.params.numel(); ++i) ASSERT_EQ(f.params.grads().f32()[i], 0.0f) << i;
  Optimizer::zero_grad(f.params, true);
  EXPECT_TRUE(f.params.grads().empty());
  EXPECT_EQ(category_bytes(f.runtime, MemoryCategory::gradient), 0);
  AdamW adamw(f.runtime, {});
  EXPECT_THROW(adamw.step(f.params), std::logic_error);
}

// ZeRO steps each unit's shard as a range of its own, and the kernels draw stochastic rounding from
// the index within the call: unless each range starts a stream of its own (LocalRange::
// first_element), two units with the same values and gradients round every element alike.
TEST(Optimizer, EveryZeroRangeRoundsStochasticallyFromAStreamOfItsOwn) {
  const ModelConfig model = gpt2_config("tiny", 2, 12, 2, 29, 7);  // blocks.0 and .1: same size
  const amp::PrecisionPolicy precision = amp::precision_policy(amp::Precision::bf16, false, true);
  nn::Runtime runtime(memory::parse_device("cpu"));
  for (const int64_t rank : {0, 1}) {
    nn::ParameterStore store(runtime, model.parameters(), precision.parameters, precision.gradients,
                             dist::ShardLayout(model.parameters(), 2), rank,
                             nn::StoreSharding::optimizer_states);
    store.ensure_grads();
    // 1 − 0.01 · bf16(0.3) = 0.99699: between the bf16 neighbours 1 − 2⁻⁸ and 1, rounded up with
    // probability 0.23.
    std::vector<float> ones(static_cast<size_t>(store.numel()), 1.0f);   // (numel)
    std::vector<float> grads(static_cast<size_t>(store.numel()), 0.3f);  // (numel)
    runtime.kernels().cast(store.values().view(),
                           memory::TensorView(ones.data(), DType::f32, {store.numel()}));
    runtime.kernels().cast(store.grads().view(),
                           memory::TensorView(grads.data(), DType::f32, {store.numel()}));
    Sgd sgd(runtime, {.learning_rate = 0.01f}, precision);
    sgd.step(store);
    const std::vector<nn::LocalRange> ranges = store.local_ranges();
    ASSERT_EQ(ranges.size(), 4u);  // embedding, blocks.0, blocks.1, head
    const memory::TensorView a = ranges[1].values, b = ranges[2].values;  // (shard) bf16
    ASSERT_EQ(a.numel(), b.numel());
    const auto* a_bits = static_cast<const uint16_t*>(a.data());
    const auto* b_bits = static_cast<const uint16_t*>(b.data());
    int64_t differ = 0, up = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      differ += a_bits[i] != b_bits[i] ? 1 : 0;
      up += a_bits[i] == 0x3F80 ? 1 : 0;  // bf16 1.0
    }
    // Independent streams differ in 2p(1 − p) ≈ 36% of the elements; one stream in none.
    EXPECT_GT(differ, a.numel() / 5) << "rank " << rank << ": " << differ << " of " << a.numel();
    EXPECT_GT(up, a.numel() / 10) << "rank " << rank;
    EXPECT_LT(up, a.numel() / 2) << "rank " << rank;
  }
}

TEST(Optimizer, BadHyperparametersNameTheValue) {
  nn::Runtime runtime(memory::parse_device("cpu"));
  kernels::cpu::AdamWHyperparameters hp;
  hp.learning_rate = -1.0f;
  EXPECT_THROW(AdamW(runtime, hp), UsageError);
  hp.learning_rate = 1e-3f;
  hp.beta2 = 1.0f;
  EXPECT_THROW(AdamW(runtime, hp), UsageError);
  EXPECT_THROW(Sgd(runtime, {.learning_rate = 0.1f, .momentum = 1.5f}), UsageError);
  try {
    Sgd(runtime, {.learning_rate = std::nanf("")});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("nan"), std::string::npos) << e.what();
  }
}

TEST(Optimizer, MetaDeviceAllocatesStatesWithoutTouchingThem) {
  nn::Runtime runtime(memory::parse_device("meta"));
  nn::ParameterStore params(runtime, {{"w", {1 << 20, 1 << 10}, 0}});  // 4 GiB of parameters
  params.ensure_grads();
  AdamW adamw(runtime, {});
  adamw.step(params);
  EXPECT_EQ(adamw.state_bytes(), int64_t{8} << 30);
  EXPECT_EQ(category_bytes(runtime, MemoryCategory::optimizer_state), int64_t{8} << 30);
  EXPECT_EQ(category_bytes(runtime, MemoryCategory::parameter), int64_t{4} << 30);
}

}  // namespace
}  // namespace vramlab::optim
