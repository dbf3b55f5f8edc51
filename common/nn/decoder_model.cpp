// The decoder-only model: embedding, blocks, final norm, LM head, cross-entropy (see
// decoder_model.h).
#include "common/nn/decoder_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "common/dtype/counter_rng.h"
#include "common/memory/history.h"
#include "common/model/saved_tensor_names.h"
#include "common/platform/errors.h"

namespace vramlab::nn {

namespace {

std::vector<Block> make_blocks(const ParameterStore& params, const ModelConfig& c) {
  std::vector<Block> blocks;
  blocks.reserve(static_cast<size_t>(c.layers));
  for (int64_t l = 0; l < c.layers; ++l) blocks.emplace_back(params, c, l);
  return blocks;
}

bool gpt2(const ModelConfig& c) {
  return c.family == ModelFamily::gpt2;
}

// Standard normal number `index` of stream `seed` (Box-Muller on two counter-based uniforms).
float normal_sample(uint64_t seed, uint64_t index) {
  const uint64_t bits1 = splitmix64_mix(splitmix64_mix(seed) + (2 * index + 1) * kSplitMix64Gamma);
  const uint64_t bits2 = splitmix64_mix(splitmix64_mix(seed) + (2 * index + 2) * kSplitMix64Gamma);
  const double u1 = (static_cast<double>(bits1 >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(bits2 >> 11) * 0x1.0p-53;          // [0, 1)
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

}  // namespace

DecoderModel::DecoderModel(Runtime& runtime, const ModelConfig& config, uint64_t seed)
    : runtime_(runtime),
      config_(config),
      params_(runtime, config.parameters()),
      embedding_(params_, gpt2(config) ? "wte" : "embed",
                 config.learned_position_embeddings ? "wpe" : ""),
      blocks_(make_blocks(params_, config)),
      final_norm_(params_, gpt2(config) ? "lnf" : "normf", saved::lnf, -1),
      lm_head_(params_,
               config.tied_embeddings ? (gpt2(config) ? "wte" : "embed") : "lm_head.weight",
               "lm_head.bias") {
  initialise(seed);
}

void DecoderModel::initialise(uint64_t seed) {
  if (!runtime_.runs_kernels()) return;
  const float residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(config_.layers));
  // The values are computed on the host and copied in chunks: the parameters may be device
  // memory, and a chunk bounds the host memory this needs.
  constexpr int64_t kChunkElements = int64_t{1} << 20;
  std::vector<float> staging;  // (min(numel, kChunkElements))
  for (const ParameterView& view : params_.views()) {
    const float std = view.init == InitKind::residual_normal ? residual_std : 0.02f;
    for (int64_t begin = 0; begin < view.numel; begin += kChunkElements) {
      const int64_t count = std::min(kChunkElements, view.numel - begin);
      staging.resize(static_cast<size_t>(count));
      float* chunk = staging.data();  // (count)
      if (view.init == InitKind::zeros) {
        std::fill(chunk, chunk + count, 0.0f);
      } else if (view.init == InitKind::ones) {
        std::fill(chunk, chunk + count, 1.0f);
      } else {
        const auto first = static_cast<uint64_t>(view.offset + begin);
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < count; ++i)
          chunk[i] = std * normal_sample(seed, first + static_cast<uint64_t>(i));
      }
      runtime_.kernels().copy_to_device(params_.value(view) + begin, chunk,
                                        static_cast<size_t>(count) * sizeof(float));
    }
  }
}

double DecoderModel::forward(SavedActivations& saved, const int32_t* tokens, const int32_t* targets,
                             int64_t B, int64_t T) {
  if (B < 1) throw UsageError("batch size must be >= 1, got " + std::to_string(B));
  if (T < 1 || T > config_.max_seq)
    throw UsageError("sequence length " + std::to_string(T) + " outside [1, " +
                     std::to_string(config_.max_seq) + "] for model '" + config_.name + "'");
  const memory::ContextLabelScope label("forward");
  const int64_t N = B * T;
  const int64_t V = config_.vocab;
  const DeviceBuffer* x = &embedding_.forward(runtime_, saved, tokens, B, T);  // (B, T, C)
  for (const Block& block : blocks_) x = &block.forward(runtime_, saved, x->f32(), B, T);
  const DeviceBuffer& lnf = final_norm_.forward(runtime_, saved, x->f32(), B, T);  // (B, T, C)
  const DeviceBuffer& logits = saved.save(-1, saved::logits, {B, T, V});           // (B, T, V)
  lm_head_.forward(runtime_, logits.f32(), lnf.f32(), N);
  const DeviceBuffer& probs = saved.save(-1, saved::probs, {B, T, V});  // (B, T, V)
  const DeviceBuffer& losses = saved.save(-1, saved::losses, {B, T});   // (B, T)
  DeviceBuffer logsumexp = runtime_.temporary({B, T}, "logsumexp");     // (B, T)
  if (!runtime_.runs_kernels()) return 0.0;
  const KernelBackend& kernels = runtime_.kernels();
  kernels.cross_entropy_forward(losses.f32(), logsumexp.f32(), probs.f32(), logits.f32(), targets,
                                N, V);
  return kernels.sum(losses.f32(), N) / static_cast<double>(N);
}

void DecoderModel::backward(SavedActivations& saved, const int32_t* tokens, const int32_t* targets,
                            int64_t B, int64_t T) {
  const memory::ContextLabelScope label("backward");
  const int64_t N = B * T;
  const int64_t V = config_.vocab;
  const int64_t C = config_.hidden;
  params_.ensure_grads();
  // ∂mean_loss/∂logits = (probs - onehot(target)) / N, written over the saved logits.
  float* dlogits = saved.get(-1, saved::logits).f32();  // (B, T, V)
  if (runtime_.runs_kernels())
    runtime_.kernels().cross_entropy_dlogits(dlogits, saved.get(-1, saved::probs).f32(), targets, N,
                                             V, 1.0f / static_cast<float>(N));
  const float* last =
      blocks_.empty() ? saved.get(-1, saved::encoded).f32()
                      : saved.get(static_cast<int64_t>(blocks_.size()) - 1, saved::residual3).f32();
  DeviceBuffer dresidual =
      runtime_.zeros({B, T, C}, memory::MemoryCategory::temporary, "dresidual");
  {
    DeviceBuffer dlnf = runtime_.zeros({B, T, C}, memory::MemoryCategory::temporary, "dlnf");
    lm_head_.backward(runtime_, dlnf.f32(), dlogits, saved.get(-1, saved::lnf).f32(), N);
    final_norm_.backward(runtime_, saved, dresidual.f32(), dlnf.f32(), last, B, T);
  }
  for (int64_t l = static_cast<int64_t>(blocks_.size()) - 1; l >= 0; --l) {
    const float* x =
        l == 0 ? saved.get(-1, saved::encoded).f32() : saved.get(l - 1, saved::residual3).f32();
    blocks_[static_cast<size_t>(l)].backward(runtime_, saved, x, dresidual.f32(), B, T);
  }
  embedding_.backward(runtime_, dresidual.f32(), tokens, B, T);
  saved.clear();
}

}  // namespace vramlab::nn
