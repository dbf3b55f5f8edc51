// DecoderModel::initialise follows each parameter's InitKind: zeros, ones, N(0, 0.02²), and
// N(0, (0.02/√(2L))²) for the projections into the residual stream (GPT-2's scheme).
//
// Oracle: the kinds' definitions. A normal tensor's sample standard deviation over n ≥ 4096
// values is within ~1/√(2n) ≈ 1.1% of σ; the 6% tolerance is far from that noise and far below
// the √6 ≈ 2.45× gap between the two σ at L = 3.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"

namespace vramlab::nn {
namespace {

void expect_values_follow_init_kinds(const ModelConfig& config) {
  Runtime runtime(memory::parse_device("cpu"));
  DecoderModel model(runtime, config, 11);
  const ParameterStore& params = model.parameters();
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config.layers));
  int checked_std = 0;
  for (const ParameterView& view : params.views()) {
    const float* v = params.value(view).f32();  // (numel)
    double sum = 0.0, sum_sq = 0.0;
    int64_t off_constant = 0;
    for (int64_t i = 0; i < view.numel; ++i) {
      sum += v[i];
      sum_sq += static_cast<double>(v[i]) * v[i];
      if (view.init == InitKind::zeros && v[i] != 0.0f) ++off_constant;
      if (view.init == InitKind::ones && v[i] != 1.0f) ++off_constant;
    }
    EXPECT_EQ(off_constant, 0) << config.name << " " << view.name;
    if (view.init != InitKind::normal && view.init != InitKind::residual_normal) continue;
    if (view.numel < 4096) continue;
    const double n = static_cast<double>(view.numel);
    const double mean = sum / n;
    const double std = std::sqrt(sum_sq / n - mean * mean);
    const double expected = view.init == InitKind::residual_normal ? residual_std : 0.02;
    EXPECT_NEAR(std, expected, 0.06 * expected) << config.name << " " << view.name;
    EXPECT_NEAR(mean, 0.0, 5.0 * expected / std::sqrt(n)) << config.name << " " << view.name;
    ++checked_std;
  }
  EXPECT_GT(checked_std, 4) << config.name;
}

TEST(Initialisation, Gpt2ValuesFollowEachParametersInitKind) {
  expect_values_follow_init_kinds(gpt2_config("init-gpt2", 3, 64, 4, 96, 72));
}

TEST(Initialisation, LlamaValuesFollowEachParametersInitKind) {
  expect_values_follow_init_kinds(llama_config("init-llama", 3, 64, 4, 2, 176, 96, 16));
}

TEST(Initialisation, SameSeedGivesBitwiseIdenticalWeights) {
  const ModelConfig config = gpt2_config("init-seed", 2, 32, 2, 50, 16);
  Runtime runtime(memory::parse_device("cpu"));
  DecoderModel a(runtime, config, 5);
  DecoderModel b(runtime, config, 5);
  DecoderModel c(runtime, config, 6);
  const int64_t n = a.parameters().numel();
  const float* va = a.parameters().values().f32();  // (n)
  const float* vb = b.parameters().values().f32();  // (n)
  const float* vc = c.parameters().values().f32();  // (n)
  int64_t equal_ab = 0, equal_ac = 0;
  for (int64_t i = 0; i < n; ++i) {
    equal_ab += va[i] == vb[i] ? 1 : 0;
    equal_ac += va[i] == vc[i] ? 1 : 0;
  }
  EXPECT_EQ(equal_ab, n);
  // Only the constant (zeros/ones) tensors agree across seeds.
  int64_t constant = 0;
  for (const ParameterView& view : a.parameters().views())
    if (view.init == InitKind::zeros || view.init == InitKind::ones) constant += view.numel;
  EXPECT_EQ(equal_ac, constant);
}

}  // namespace
}  // namespace vramlab::nn
