// The CPU kernels and the CUDA kernels under the SIMT emulator (--kernels cuda-emulated) train the
// same tiny GPT-2 and Llama (GQA, RoPE, SwiGLU, RMSNorm) from the same seed: the gradients of one
// backward agree element-wise, the per-step losses agree, and the sim device's allocator sees the
// same bytes per category (the same buffers are allocated, whichever kernels run).
//
// Tolerances. Both backends compute in f32 and differ only in the order of their sums (warp
// shuffle trees and OpenBLAS blockings against sequential loops), so each reduction over K terms
// differs by at most 2·γ_K ≈ 2·K·u relative to Σ|terms| (u = 2^-24 ≈ 6.0e-8, Higham's bound for
// either order). The longest reductions here are the GEMMs over F ≤ 192 and C = 48, the norms over
// C and the softmax over V = 97: at most 2·192·u ≈ 2.3e-5 per op. A gradient passes through about
// 15 such ops per block in series (norm, qkv, attention, projection, norm, two or three MLP GEMMs,
// their backwards) and 2 blocks plus the head, ~40 ops: first-order accumulation gives a worst-case
// normalized error of 40 · 2.3e-5 ≈ 1e-3 of the tensor's largest gradient. We allow
// kGradientTolerance = 1e-3 of max |grad| per tensor (the op harness's 2e-5 per op, composed).
// The loss is a mean of logsumexp − logit terms, each 1-Lipschitz in the logits' max norm, so its
// relative error is bounded like the logits': ~2γ_K per op over the ~10 ops of a forward ≈ 2e-4 in
// the worst case; kLossRelativeTolerance = 1e-4 (the errors of independent ops do not all align;
// measured: < 1e-7). Six optimizer steps (SGD lr 0.1, AdamW lr 3e-3) carry the gradients' rounding
// differences into the parameters at lr · Δgrad per step, well inside that bound at these sizes.
// Measured maxima (this machine): gradients 5.8e-7 of max |grad|, losses 8e-8 relative.
// Sensitivity: the same run with a ~zero learning rate must differ from the trained losses by more
// than 100x the tolerance, so a backend whose update did nothing or something else would fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/estimate/model_state_memory.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/kernel_backend.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/platform/errors.h"
#include "common/train/synthetic_tokens.h"
#include "common/train/trainer.h"

namespace vramlab::train {
namespace {

using nn::KernelKind;

constexpr double kGradientTolerance = 1e-3;      // of max |grad| per parameter tensor
constexpr double kLossRelativeTolerance = 1e-4;  // of the loss

// Odd sizes: C = 48 (D = 12), T = 13, B = 2, V = 97.
ModelConfig tiny_gpt2() {
  return gpt2_config("tiny-gpt2", 2, 48, 4, 97, 13);
}

ModelConfig tiny_llama() {
  return llama_config("tiny-llama", 2, 48, 4, 2, 67, 97, 13);
}

struct Gradients {
  double loss = 0.0;
  std::vector<float> values;  // (numel) every gradient, layout order
};

// One forward and backward of `config` on a fresh sim device with the given kernels.
Gradients one_backward(const ModelConfig& config, KernelKind kernels, uint64_t seed) {
  const int64_t B = 2, T = 13;
  nn::Runtime runtime(memory::parse_device("sim:t4-16g"), kernels);
  nn::DecoderModel model(runtime, config, seed);
  SyntheticTokenStream data(config.vocab, 4, seed);
  std::vector<int32_t> host_tokens(static_cast<size_t>(B * T));   // (B, T)
  std::vector<int32_t> host_targets(static_cast<size_t>(B * T));  // (B, T)
  data.next_batch(host_tokens.data(), host_targets.data(), B, T);
  const memory::Tensor tokens =
      runtime.allocate({B, T}, DType::i32, memory::MemoryCategory::input, "tokens");
  const memory::Tensor targets =
      runtime.allocate({B, T}, DType::i32, memory::MemoryCategory::input, "targets");
  runtime.copy_to_device(tokens, host_tokens.data());
  runtime.copy_to_device(targets, host_targets.data());
  nn::SavedActivations saved(runtime, config.layers);
  Gradients out;
  out.loss = model.forward(saved, tokens.view(), targets.view(), B, T);
  model.backward(saved, tokens.view(), targets.view(), B, T);
  const memory::Tensor& grads = model.parameters().grads();
  out.values.resize(static_cast<size_t>(grads.numel()));
  runtime.copy_to_host(out.values.data(), grads);
  return out;
}

void expect_same_gradients(const ModelConfig& config) {
  const Gradients cpu = one_backward(config, KernelKind::cpu, 11);
  const Gradients emulated = one_backward(config, KernelKind::cuda_emulated, 11);
  EXPECT_NEAR(emulated.loss, cpu.loss, kLossRelativeTolerance * cpu.loss);
  ASSERT_EQ(cpu.values.size(), emulated.values.size());
  // Layout of the gradients: the parameter views of a meta-device model (no memory needed).
  nn::Runtime meta(memory::parse_device("meta"));
  nn::DecoderModel layout(meta, config, 11);
  for (const nn::ParameterView& view : layout.parameters().views()) {
    double max_ref = 0.0, max_diff = 0.0;
    int64_t worst = 0;
    for (int64_t i = 0; i < view.numel; ++i) {
      const auto k = static_cast<size_t>(view.offset + i);
      ASSERT_TRUE(std::isfinite(cpu.values[k]) && std::isfinite(emulated.values[k]))
          << view.name << "[" << i << "]: cpu " << cpu.values[k] << ", cuda-emulated "
          << emulated.values[k];
      max_ref = std::max(max_ref, std::fabs(static_cast<double>(cpu.values[k])));
      const double diff = std::fabs(static_cast<double>(cpu.values[k]) - emulated.values[k]);
      if (diff > max_diff) {
        max_diff = diff;
        worst = i;
      }
    }
    // Tensors every token reaches have gradients; a zero tensor would make the check vacuous.
    ASSERT_GT(max_ref, 0.0) << view.name << " has an all-zero gradient";
    const double allowed = kGradientTolerance * max_ref;
    const auto k = static_cast<size_t>(view.offset + worst);
    EXPECT_LE(max_diff, allowed) << view.name << ": max |diff| " << max_diff << " at [" << worst
                                 << "] (cpu " << cpu.values[k] << ", cuda-emulated "
                                 << emulated.values[k] << "), " << 100.0 * max_diff / allowed
                                 << "% of the tolerance " << allowed;
  }
}

TEST(KernelBackends, Gpt2GradientsAgreeElementwise) {
  expect_same_gradients(tiny_gpt2());
}

TEST(KernelBackends, LlamaGradientsAgreeElementwise) {
  expect_same_gradients(tiny_llama());
}

struct Run {
  std::vector<double> losses;
  MemoryReport memory;
};

Run train(const ModelConfig& config, KernelKind kernels, const std::string& optimizer,
          float learning_rate) {
  TrainOptions o;
  o.model = config;
  o.batch = 2;
  o.seq = 13;
  o.seed = 5;
  o.plan.optimizer.name = estimate::parse_optimizer(optimizer);
  o.plan.optimizer.learning_rate = learning_rate;
  nn::Runtime runtime(memory::parse_device("sim:t4-16g"), kernels);
  EXPECT_EQ(runtime.kernel_kind(), kernels);
  Trainer trainer(runtime, o);
  Run run;
  for (int s = 0; s < 6; ++s) run.losses.push_back(trainer.step().loss);
  run.memory = trainer.memory_report();
  return run;
}

void expect_same_training(const ModelConfig& config, const std::string& optimizer) {
  const float learning_rate = optimizer == "sgd-momentum" ? 0.1f : 3e-3f;
  const Run cpu = train(config, KernelKind::cpu, optimizer, learning_rate);
  const Run emulated = train(config, KernelKind::cuda_emulated, optimizer, learning_rate);
  // The same batches with (almost) no update: how far training moved the losses.
  const Run frozen = train(config, KernelKind::cpu, optimizer, learning_rate * 1e-9f);
  double moved = 0.0;
  for (size_t s = 0; s < cpu.losses.size(); ++s) {
    const double allowed = kLossRelativeTolerance * cpu.losses[s];
    const double diff = std::fabs(emulated.losses[s] - cpu.losses[s]);
    EXPECT_LE(diff, allowed) << "step " << s + 1 << ": cpu " << cpu.losses[s] << ", cuda-emulated "
                             << emulated.losses[s] << ", |diff| " << diff << " = "
                             << 100.0 * diff / allowed << "% of the tolerance";
    moved = std::max(moved, std::fabs(cpu.losses[s] - frozen.losses[s]) / allowed);
  }
  // An update that did nothing (or something else) on one side would show up as a difference this
  // large: the test can fail.
  EXPECT_GT(moved, 100.0) << "training moved the losses by only " << moved
                          << "x the tolerance, so agreeing losses would prove little";
  for (const memory::MemoryCategory category : memory::kAllMemoryCategories) {
    const auto c = static_cast<size_t>(category);
    EXPECT_EQ(cpu.memory.peak_bytes[c], emulated.memory.peak_bytes[c])
        << "peak of " << memory::category_name(category);
    EXPECT_EQ(cpu.memory.current_bytes[c], emulated.memory.current_bytes[c])
        << "current of " << memory::category_name(category);
  }
  EXPECT_GT(cpu.memory.peak_bytes[static_cast<size_t>(memory::MemoryCategory::activation)], 0);
  EXPECT_EQ(cpu.memory.peak_total_bytes, emulated.memory.peak_total_bytes);
  EXPECT_EQ(cpu.memory.reserved_peak_bytes, emulated.memory.reserved_peak_bytes);
}

TEST(KernelBackends, Gpt2TrainsTheSameWithSgd) {
  expect_same_training(tiny_gpt2(), "sgd-momentum");
}

TEST(KernelBackends, LlamaTrainsTheSameWithSgd) {
  expect_same_training(tiny_llama(), "sgd-momentum");
}

TEST(KernelBackends, Gpt2TrainsTheSameWithAdamW) {
  expect_same_training(tiny_gpt2(), "adamw");
}

TEST(KernelBackends, LlamaTrainsTheSameWithAdamW) {
  expect_same_training(tiny_llama(), "adamw");
}

TEST(KernelBackends, DefaultsAndNames) {
  EXPECT_EQ(nn::Runtime(memory::parse_device("cpu")).kernel_kind(), KernelKind::cpu);
  EXPECT_EQ(nn::Runtime(memory::parse_device("sim:t4-16g")).kernel_kind(), KernelKind::cpu);
  EXPECT_EQ(nn::Runtime::default_kernel_kind(memory::parse_device("cuda:1")), KernelKind::cuda);
  EXPECT_EQ(nn::Runtime(memory::parse_device("cpu"), KernelKind::cuda_emulated).kernel_kind(),
            KernelKind::cuda_emulated);
  for (const KernelKind kind : {KernelKind::cpu, KernelKind::cuda_emulated, KernelKind::cuda})
    EXPECT_EQ(nn::parse_kernel_kind(nn::kernel_kind_name(kind)), kind);
}

// Each bad value is named in the one-line message.
void expect_usage_error(const std::string& device, const std::string& kernels,
                        const std::string& named) {
  try {
    nn::Runtime runtime(memory::parse_device(device), nn::parse_kernel_kind(kernels));
    ADD_FAILURE() << device << " with kernels " << kernels << " was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
  }
}

TEST(KernelBackends, BadCombinationsAreUsageErrorsNamingTheValue) {
  expect_usage_error("meta", "cuda-emulated", "kernels 'cuda-emulated'");
  expect_usage_error("cuda:0", "cpu", "kernels 'cpu'");
  expect_usage_error("cuda:0", "cuda-emulated", "kernels 'cuda-emulated'");
  expect_usage_error("sim:t4-16g", "cuda", "kernels 'cuda'");
  expect_usage_error("cpu", "cuda", "kernels 'cuda'");
  expect_usage_error("cpu", "gpu", "'gpu'");
  expect_usage_error("cpu", "", "''");
}

}  // namespace
}  // namespace vramlab::train
