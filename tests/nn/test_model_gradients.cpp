// Finite-difference gradient checks of the whole DecoderModel (GPT-2 and Llama families).
//
// Oracle: central differences, in double, of a double re-implementation of the forward composed
// from the kernels' *_reference<double> functions (tests/nn/reference_model.cpp). With h = 1e-5
// the difference's truncation error is ~h²·|f'''| ≈ 1e-10 and its rounding ~1e-16·loss/h ≈ 3e-11,
// so it is exact to ~1e-9. The runtime computes in f32 (ε = 6e-8): each gradient element sums
// O(100) products through a few layers, so its error is bounded by ~1e-5 of the largest gradient.
// Tolerance per element: 1e-4 · max|g| + 1e-3 · |g_i| — an order of magnitude above that f32
// noise, and orders of magnitude below the error of any missing or mis-signed term.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype/counter_rng.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "tests/nn/reference_model.h"

namespace vramlab::nn {
namespace {

double uniform(uint64_t seed, uint64_t i) {
  return static_cast<double>(stochastic_bits(seed, i)) / 4294967296.0;  // [0, 1)
}

struct GradCheck {
  double max_abs_error = 0.0;
  double max_ratio = 0.0;  // max over elements of |error| / tolerance
  std::string worst;
  double loss_f32 = 0.0;
  double loss_f64 = 0.0;
};

GradCheck check_model(const ModelConfig& config, int64_t B, int64_t T, uint64_t seed) {
  Runtime runtime(memory::parse_device("cpu"));
  DecoderModel model(runtime, config, seed);
  ParameterStore& params = model.parameters();
  // Larger weights than the default init so the softmaxes and GELUs are far from linear.
  std::vector<double> theta(static_cast<size_t>(params.numel()));
  for (const ParameterView& view : params.views()) {
    const bool norm =
        view.name.find("ln") != std::string::npos || view.name.find("norm") != std::string::npos;
    for (int64_t i = 0; i < view.numel; ++i) {
      const double u = uniform(seed, static_cast<uint64_t>(view.offset + i)) - 0.5;
      const double value = norm ? 1.0 + 0.4 * u : 0.8 * u;
      params.value(view).f32()[i] = static_cast<float>(value);
      theta[static_cast<size_t>(view.offset + i)] =
          static_cast<double>(params.value(view).f32()[i]);
    }
  }
  std::vector<int32_t> tokens(static_cast<size_t>(B * T)), targets(static_cast<size_t>(B * T));
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] =
        static_cast<int32_t>(stochastic_bits(seed + 1, i) % static_cast<uint32_t>(config.vocab));
    targets[i] =
        static_cast<int32_t>(stochastic_bits(seed + 2, i) % static_cast<uint32_t>(config.vocab));
  }
  GradCheck result;
  {
    SavedActivations saved(runtime, config.layers);
    // cpu device memory is host memory: the host vectors are the step's inputs.
    const memory::TensorView token_view(tokens.data(), DType::i32, {B, T});
    const memory::TensorView target_view(targets.data(), DType::i32, {B, T});
    result.loss_f32 = model.forward(saved, token_view, target_view, B, T);
    model.backward(saved, token_view, target_view, B, T);
  }
  result.loss_f64 = testing::reference_loss(config, theta, tokens, targets, B, T);
  const double h = 1e-5;
  std::vector<double> numeric(theta.size());
  double max_grad = 0.0;
  for (size_t i = 0; i < theta.size(); ++i) {
    const double saved_value = theta[i];
    theta[i] = saved_value + h;
    const double plus = testing::reference_loss(config, theta, tokens, targets, B, T);
    theta[i] = saved_value - h;
    const double minus = testing::reference_loss(config, theta, tokens, targets, B, T);
    theta[i] = saved_value;
    numeric[i] = (plus - minus) / (2 * h);
    max_grad = std::max(max_grad, std::abs(numeric[i]));
  }
  for (const ParameterView& view : params.views()) {
    for (int64_t i = 0; i < view.numel; ++i) {
      const double expected = numeric[static_cast<size_t>(view.offset + i)];
      const double got = params.grad(view).f32()[i];
      const double error = std::abs(got - expected);
      const double tolerance = 1e-4 * max_grad + 1e-3 * std::abs(expected);
      if (error / tolerance > result.max_ratio) {
        result.max_ratio = error / tolerance;
        result.worst = view.name + "[" + std::to_string(i) + "] analytic " + std::to_string(got) +
                       " numeric " + std::to_string(expected);
      }
      result.max_abs_error = std::max(result.max_abs_error, error);
    }
  }
  return result;
}

void expect_gradients_match(const ModelConfig& config, int64_t B, int64_t T) {
  const GradCheck r = check_model(config, B, T, 7);
  EXPECT_NEAR(r.loss_f32, r.loss_f64, 1e-5 * r.loss_f64)
      << config.name << ": f32 forward vs double";
  EXPECT_LE(r.max_ratio, 1.0) << config.name << ": max |analytic - numeric| = " << r.max_abs_error
                              << ", worst at " << r.worst << " (" << 100.0 * r.max_ratio
                              << "% of its tolerance)";
}

TEST(ModelGradients, Gpt2FamilyMatchesDoubleFiniteDifferences) {
  // 2 layers, C = 16, 2 heads, V = 32, T = 7 of max 8 (the position table's last row unused).
  expect_gradients_match(gpt2_config("gradcheck-gpt2", 2, 16, 2, 32, 8), 2, 7);
}

TEST(ModelGradients, LlamaFamilyWithGroupedQueryAttentionMatchesDoubleFiniteDifferences) {
  // 4 query heads over 2 kv heads (head dim 4), SwiGLU width 24, RoPE, RMSNorm, untied head.
  expect_gradients_match(llama_config("gradcheck-llama", 2, 16, 4, 2, 24, 32, 8), 2, 5);
}

TEST(ModelGradients, LlamaWithAnUnusualRopeBaseMatchesTheReferenceUsingTheSameBase) {
  // θ = 3 rotates the second frequency pair by 3^(-1/2) rad per position instead of 0.01 (θ =
  // 10000), so a runtime that ignored ModelConfig::rope_theta would miss the double forward.
  expect_gradients_match(llama_config("gradcheck-llama-theta", 2, 16, 4, 2, 24, 32, 8, 3.0), 2, 5);
}

TEST(ModelGradients, SingleTokenBatchOfOne) {
  expect_gradients_match(gpt2_config("gradcheck-gpt2-t1", 1, 8, 2, 16, 4), 1, 1);
}

}  // namespace
}  // namespace vramlab::nn
