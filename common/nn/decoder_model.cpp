// The decoder-only model: embedding, blocks, final norm, LM head, cross-entropy (see
// decoder_model.h).
#include "common/nn/decoder_model.h"

#include "common/model/saved_tensor_names.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "common/dist/communicator.h"
#include "common/dtype/counter_rng.h"
#include "common/memory/history.h"
#include "common/platform/errors.h"

namespace vramlab::nn {

namespace {

std::vector<TransformerLayer> make_blocks(const ParameterStore& params, const ModelConfig& c,
                                          dist::Communicator* tensor_parallel) {
  std::vector<TransformerLayer> blocks;
  blocks.reserve(static_cast<size_t>(c.layers));
  for (int64_t l = 0; l < c.layers; ++l) blocks.emplace_back(params, c, l, tensor_parallel);
  return blocks;
}

// This rank's parameter list; refuses a group that would copy through the meta device's null
// storage.
std::vector<ParameterSpec> rank_parameters(const Runtime& runtime, const ModelConfig& config,
                                           const dist::Communicator* tensor_parallel) {
  if (tensor_parallel != nullptr && runtime.kernel_kind() == KernelKind::meta &&
      tensor_parallel->moves_data())
    throw UsageError(
        "the tensor-parallel group moves data, but the meta device has no storage: call "
        "set_move_data(false) on it");
  return config.parameters(dist::rank_in(tensor_parallel), dist::size_of(tensor_parallel));
}

bool gpt2(const ModelConfig& c) {
  return c.family == ModelFamily::gpt2;
}

// The module names of allocations, as in the parameter names.
const char* embedding_module(const ModelConfig& c) {
  return gpt2(c) ? "wte" : "embed";
}

const char* final_norm_module(const ModelConfig& c) {
  return gpt2(c) ? "lnf" : "normf";
}

// Standard normal number `index` of stream `seed` (Box-Muller on two counter-based uniforms).
float normal_sample(uint64_t seed, uint64_t index) {
  const uint64_t bits1 = splitmix64_mix(splitmix64_mix(seed) + (2 * index + 1) * kSplitMix64Gamma);
  const uint64_t bits2 = splitmix64_mix(splitmix64_mix(seed) + (2 * index + 2) * kSplitMix64Gamma);
  const double u1 = (static_cast<double>(bits1 >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(bits2 >> 11) * 0x1.0p-53;          // [0, 1)
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

// This tensor-parallel rank's part of the model, whole or sharded over the data-parallel ranks.
ParameterStore make_store(Runtime& runtime, const ModelConfig& config,
                          const amp::PrecisionPolicy& precision, const ModelSharding& sharding,
                          const dist::Communicator* tensor_parallel) {
  const std::vector<ParameterSpec> specs = rank_parameters(runtime, config, tensor_parallel);
  if (sharding.sharding == StoreSharding::none)
    return ParameterStore(runtime, specs, precision.parameters, precision.gradients);
  return ParameterStore(runtime, sharding.parameters_on ? *sharding.parameters_on : runtime, specs,
                        precision.parameters, precision.gradients,
                        dist::ShardLayout(specs, sharding.world_size), sharding.rank,
                        sharding.sharding, sharding.parameters_on_nvme);
}

}  // namespace

DecoderModel::DecoderModel(Runtime& runtime, const ModelConfig& config, uint64_t seed,
                           const amp::PrecisionPolicy& precision, const ModelSharding& sharding,
                           dist::Communicator* tensor_parallel)
    : runtime_(runtime),
      config_(config),
      tensor_parallel_(tensor_parallel),
      precision_(precision),
      params_(make_store(runtime, config, precision, sharding, tensor_parallel)),
      embedding_(params_, gpt2(config) ? "wte" : "embed",
                 config.learned_position_embeddings ? "wpe" : ""),
      blocks_(make_blocks(params_, config, tensor_parallel)),
      final_norm_(params_, gpt2(config) ? "lnf" : "normf", saved::lnf, -1),
      lm_head_(params_,
               config.tied_embeddings ? (gpt2(config) ? "wte" : "embed") : "lm_head.weight",
               "lm_head.bias") {
  initialise(seed);
}

void DecoderModel::initialise(uint64_t seed) {
  const float residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(config_.layers));
  // Element i of the whole (t = 1) store is normal sample i of the seed's stream, whatever the
  // chunking; a tensor-parallel rank draws the samples of the elements its part holds, so its
  // weights are its slice of the one-rank model's.
  const std::vector<ParameterSpec> specs =
      config_.parameters(dist::rank_in(tensor_parallel_), dist::size_of(tensor_parallel_));
  std::vector<int64_t> whole_offsets;  // (tensors) of each tensor in the whole model's store
  int64_t whole_offset = 0;
  for (const ParameterSpec& spec : specs) {
    whole_offsets.push_back(whole_offset);
    int64_t whole_numel = 1;
    for (int64_t d : spec.full_shape()) whole_numel *= d;
    whole_offset += whole_numel;
  }
  const auto fill = [&](size_t p) {
    const ParameterSpec& spec = specs[p];
    const ParameterView& view = params_.views()[p];
    const float std = view.init == InitKind::residual_normal ? residual_std : 0.02f;
    const int64_t width = spec.shape.back();  // a row is contiguous in the whole tensor too
    // ZeRO-3: this rank's shard of the tensor only, from element part.first of it.
    const LocalPart part = params_.local_part(view);
    if (part.values.none()) return;
    // The kernels of the memory the shard lives in (the host's, with the parameters offloaded).
    params_.values_runtime().kernels().fill_from_host(part.values, [&](float* chunk, int64_t first,
                                                                       int64_t count) {
      if (view.init == InitKind::zeros) {
        std::fill(chunk, chunk + count, 0.0f);
      } else if (view.init == InitKind::ones) {
        std::fill(chunk, chunk + count, 1.0f);
      } else {
#pragma omp parallel
        {
          int64_t row = -1;
          int64_t row_start = 0;  // index in the whole store of the row's first element
#pragma omp for schedule(static)
          for (int64_t i = 0; i < count; ++i) {
            const int64_t local = part.first + first + i;  // within this rank's tensor
            if (local / width != row) {
              row = local / width;
              row_start = whole_offsets[p] + spec.full_index(row * width);
            }
            chunk[i] = std * normal_sample(seed, static_cast<uint64_t>(row_start + local % width));
          }
        }
      }
    });
  };
  if (!params_.values_on_nvme()) {
    for (size_t p = 0; p < specs.size(); ++p) fill(p);
    return;
  }
  // On NVMe (Note [Parameters on NVMe]): a unit at a time, each written to its file.
  for (size_t u = 0; u < params_.layout().units().size(); ++u) {
    const auto unit = static_cast<int64_t>(u);
    params_.swap_in(unit, false);
    try {
      for (size_t p = 0; p < specs.size(); ++p)
        if (params_.views()[p].unit == unit) fill(p);
    } catch (...) {
      params_.swap_out(unit, false);
      throw;
    }
    params_.swap_out(unit, true);
  }
}

int64_t DecoderModel::tensor_parallel_size() const {
  return dist::size_of(tensor_parallel_);
}

// Note [Chunked cross-entropy]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The loss's (B, T, V) tensors are the largest of a step at a large vocabulary: 32000 × 4096
// tokens × 4 bytes is 0.5 GB for each of the logits and the probabilities the backward needs, and
// fp32 logits at V = 128K and 16K tokens are 8 GiB (the "5-7 GiB spike in cross-entropy" users
// meet). With K chunks the forward makes one slice of N/K rows at a time: its logits, its
// probabilities (scratch: the kernel writes them) and its losses, then frees the two (N/K, V)
// tensors. The backward makes each slice's logits again, then its probabilities, writes the
// logits' gradient over them and accumulates the slice's part of the head's input and weight
// gradients (linear_backward adds). Nothing of size V·B·T is saved: the price is one more
// LM-head matmul (2·N·C·V FLOPs) and softmax per step. Liger-Kernel's fused linear cross-entropy
// and torchtune's chunked cross-entropy do the same trade.

namespace {

// Calls fn(first row, rows) for the K slices of N rows, each ceil(N / K) rows but the last.
template <typename Fn>
void for_each_loss_chunk(int64_t N, int64_t K, Fn fn) {
  const int64_t per = (N + K - 1) / K;
  for (int64_t row = 0; row < N; row += per) fn(row, std::min(per, N - row));
}

}  // namespace

Tensor DecoderModel::chunk_logits(const TensorView& lnf, int64_t row, int64_t rows) {
  const memory::ModuleScope module("lm_head");
  const int64_t C = config_.hidden;
  Tensor logits = runtime_.temporary({rows, config_.vocab}, saved::logits,
                                     precision_.activations);  // (rows, V)
  lm_head_.forward(runtime_, logits.view(), lnf.slice(row * C, {rows, C}), rows);
  return logits;
}

void DecoderModel::set_loss_chunks(int64_t chunks) {
  if (chunks < 1) throw UsageError("--loss-chunks must be >= 1, got " + std::to_string(chunks));
  loss_chunks_ = chunks;
}

void DecoderModel::set_attention(AttentionKind attention) {
  attention_ = attention;
}

void DecoderModel::set_dropout(const DropoutSettings& settings) {
  if (!(settings.p >= 0.0f && settings.p < 1.0f))
    throw UsageError("dropout probability " + std::to_string(settings.p) + " outside [0, 1)");
  if (settings.p > 0.0f && dist::size_of(tensor_parallel_) > 1)
    throw UsageError("dropout probability " + std::to_string(settings.p) +
                     " with tensor parallelism over " +
                     std::to_string(dist::size_of(tensor_parallel_)) +
                     " ranks: dropout is only supported without tensor parallelism");
  dropout_ = settings;
}

LayerDropout DecoderModel::block_dropout(uint64_t offset, int64_t B, int64_t T) const {
  if (dropout_.p == 0.0f) return {};
  return LayerDropout::at(dropout_, offset, B, T, config_.heads, config_.hidden);
}

LayerDropout DecoderModel::draw_block_dropout(SavedActivations& saved, int64_t layer, int64_t B,
                                              int64_t T) {
  if (dropout_.p == 0.0f) return {};
  saved.set_rng_offset(layer, rng_offset_);
  const LayerDropout dropout = block_dropout(rng_offset_, B, T);
  rng_offset_ += LayerDropout::draws(B, T, config_.heads, config_.hidden);
  return dropout;
}

TensorView DecoderModel::layer_input(const SavedActivations& saved, int64_t layer) {
  return layer == 0 ? saved.get(-1, saved::encoded).view()
                    : saved.get(layer - 1, saved::residual3).view();
}

void DecoderModel::drop_by_policy(SavedActivations& saved, int64_t layer) {
  const LayerPolicy& policy = saved.policy(layer);
  switch (policy.recompute) {
    case Recompute::none:
      return;
    case Recompute::selective:
      // Flash attention saved no probabilities: nothing to drop (nor to recompute).
      if (saved.contains(layer, saved::att)) saved.release(layer, saved::att);
      return;
    case Recompute::full:
      // The output stays: it is the next layer's input, and the span's checkpoint if this is
      // the span's last layer. Inside a span the previous output was only this input.
      saved.release_all_except(layer, saved::residual3);
      if (!policy.span_start) saved.release(layer - 1, saved::residual3);
      return;
  }
}

void DecoderModel::recompute_span(SavedActivations& saved, int64_t first, int64_t last, int64_t B,
                                  int64_t T) {
  const memory::PhaseScope phase(memory::TrainingPhase::recompute);
  // The kept output is recomputed with the rest; the layer after it is done with it.
  saved.release(last, saved::residual3);
  saved.unpack_span_input(first);
  for (int64_t l = first; l <= last; ++l) {
    announce_before(StepPhase::recompute_layer, saved, l);
    const LayerDropout dropout = dropout_.preserve_rng_state
                                     ? block_dropout(saved.rng_offset(l), B, T)
                                     : draw_block_dropout(saved, l, B, T);
    blocks_[static_cast<size_t>(l)].forward(runtime_, saved, layer_input(saved, l), B, T, dropout);
    announce_after(StepPhase::recompute_layer, saved, l);
  }
}

double DecoderModel::forward(SavedActivations& saved, const TensorView& tokens,
                             const TensorView& targets, int64_t B, int64_t T) {
  if (B < 1) throw UsageError("batch size must be >= 1, got " + std::to_string(B));
  if (T < 1 || T > config_.max_seq)
    throw UsageError("sequence length " + std::to_string(T) + " outside [1, " +
                     std::to_string(config_.max_seq) + "] for model '" + config_.name + "'");
  // An evaluation's forward keeps its phase (Trainer::evaluate labels it), so a snapshot tells
  // its tensors from a training step's.
  const memory::PhaseScope phase(memory::current_phase() == memory::TrainingPhase::evaluation
                                     ? memory::TrainingPhase::evaluation
                                     : memory::TrainingPhase::forward);
  saved.set_activation_dtype(precision_.activations);
  saved.set_attention(attention_);
  announce_before(StepPhase::forward, saved);
  const int64_t N = B * T;
  const int64_t V = config_.vocab;
  announce_before(StepPhase::forward_embedding, saved);
  const Tensor* x = nullptr;
  {
    const memory::ModuleScope module(embedding_module(config_));
    x = &embedding_.forward(runtime_, saved, tokens, B, T);  // (B, T, C)
  }
  announce_after(StepPhase::forward_embedding, saved);
  for (int64_t l = 0; l < static_cast<int64_t>(blocks_.size()); ++l) {
    announce_before(StepPhase::forward_layer, saved, l);
    x = &blocks_[static_cast<size_t>(l)].forward(runtime_, saved, x->view(), B, T,
                                                 draw_block_dropout(saved, l, B, T));
    drop_by_policy(saved, l);
    if (!grad_enabled_) {
      // No backward will read them: only the output, the next block's input, stays.
      // (A recompute policy may have dropped the previous output already.)
      saved.release_all_except(l, saved::residual3);
      const int64_t before = l > 0 ? l - 1 : -1;
      const std::string_view input = l > 0 ? saved::residual3 : saved::encoded;
      if (saved.contains(before, input)) saved.release(before, input);
    }
    saved.pack_after_forward(l);
    announce_after(StepPhase::forward_layer, saved, l);
  }
  announce_before(StepPhase::forward_head, saved);
  const Tensor& lnf = [&]() -> const Tensor& {
    const memory::ModuleScope module(final_norm_module(config_));
    return final_norm_.forward(runtime_, saved, x->view(), B, T);  // (B, T, C)
  }();
  if (loss_chunks_ > 1) {
    // The head's matmuls and the loss interleave slice by slice, so both run inside the head's
    // phase, where its parameters are gathered (ZeRO-3); the loss phase only sums.
    const Tensor& losses = [&]() -> const Tensor& {
      const memory::ModuleScope module("loss");
      const Tensor& out = saved.save(-1, saved::losses, {B, T}, DType::f32, false);  // (B, T)
      for_each_loss_chunk(N, loss_chunks_, [&](int64_t row, int64_t rows) {
        Tensor logits = chunk_logits(lnf.view(), row, rows);  // (rows, V)
        Tensor probs = runtime_.temporary({rows, V}, "probs chunk", precision_.activations);
        Tensor logsumexp = runtime_.temporary({rows}, "logsumexp");  // (rows)
        runtime_.kernels().cross_entropy_forward(out.view().slice(row, {rows}), logsumexp.view(),
                                                 probs.view(), logits.view(),
                                                 targets.slice(row, {rows}), rows, V);
      });
      return out;
    }();
    saved.pack_after_forward(static_cast<int64_t>(blocks_.size()));
    announce_after(StepPhase::forward_head, saved);
    announce_before(StepPhase::loss, saved);
    const double loss =
        runtime_.kernels().sum(losses.view()) / static_cast<double>(N);  // 0 on meta
    if (!grad_enabled_) release_for_no_grad(saved);
    announce_after(StepPhase::loss, saved);
    announce_after(StepPhase::forward, saved);
    return loss;
  }
  // The logits live only until the loss: its backward needs the probabilities alone, and the
  // gradient of the logits is written over them (PyTorch's cross-entropy likewise keeps only
  // log_softmax's output).
  Tensor logits;  // (B, T, V)
  {
    const memory::ModuleScope module("lm_head");
    logits = runtime_.temporary({B, T, V}, saved::logits, precision_.activations);
    lm_head_.forward(runtime_, logits.view(), lnf.view(), N);
  }
  saved.pack_after_forward(static_cast<int64_t>(blocks_.size()));  // the head read the last output
  announce_after(StepPhase::forward_head, saved);
  announce_before(StepPhase::loss, saved);
  double loss = 0.0;
  {
    const memory::ModuleScope module("loss");
    const Tensor& probs = saved.save(-1, saved::probs, {B, T, V});                    // (B, T, V)
    const Tensor& losses = saved.save(-1, saved::losses, {B, T}, DType::f32, false);  // (B, T)
    Tensor logsumexp = runtime_.temporary({B, T}, "logsumexp");                       // (B, T)
    const KernelBackend& kernels = runtime_.kernels();
    kernels.cross_entropy_forward(losses.view(), logsumexp.view(), probs.view(), logits.view(),
                                  targets, N, V);
    if (kept_outputs_ != nullptr)
      kept_outputs_->push_back(std::move(logits));  // the staged leak: they outlive the step
    logits.reset();
    loss = kernels.sum(losses.view()) / static_cast<double>(N);  // 0 on meta
  }
  if (!grad_enabled_) release_for_no_grad(saved);
  announce_after(StepPhase::loss, saved);
  announce_after(StepPhase::forward, saved);
  return loss;
}

void DecoderModel::release_for_no_grad(SavedActivations& saved) const {
  const auto L = static_cast<int64_t>(blocks_.size());
  if (L > 0 && saved.contains(L - 1, saved::residual3)) saved.release(L - 1, saved::residual3);
  if (L == 0 && saved.contains(-1, saved::encoded)) saved.release(-1, saved::encoded);
  saved.release_all_except(-1, saved::losses);
}

void DecoderModel::backward(SavedActivations& saved, const TensorView& tokens,
                            const TensorView& targets, int64_t B, int64_t T,
                            std::optional<double> loss_gradient) {
  if (!grad_enabled_)
    throw InternalError("backward() after a forward without grad (set_grad_enabled(false))");
  const memory::PhaseScope phase(memory::TrainingPhase::backward);
  announce_before(StepPhase::backward, saved);
  const int64_t N = B * T;
  const int64_t V = config_.vocab;
  const int64_t C = config_.hidden;
  params_.ensure_grads();
  announce_before(StepPhase::backward_head, saved);
  const auto scale = static_cast<float>(loss_gradient.value_or(1.0 / static_cast<double>(N)));
  const bool chunked = loss_chunks_ > 1;
  // ∂objective/∂logits = loss_gradient · (probs - onehot(target)), written over the saved
  // probabilities; loss_gradient is 1/N for this micro-batch's mean loss.
  const TensorView dlogits =
      chunked ? TensorView() : saved.get(-1, saved::probs).view();  // (B, T, V)
  if (!chunked) {
    const memory::ModuleScope module("loss");
    runtime_.kernels().cross_entropy_dlogits(dlogits, dlogits, targets, N, V, scale);
  }
  saved.unpack_for_backward(static_cast<int64_t>(blocks_.size()));  // the head's input
  const TensorView last =
      blocks_.empty()
          ? saved.get(-1, saved::encoded).view()
          : saved.get(static_cast<int64_t>(blocks_.size()) - 1, saved::residual3).view();
  const DType act = precision_.activations;
  Tensor dresidual =
      runtime_.zeros({B, T, C}, memory::MemoryCategory::temporary, "dresidual", act);  // (B,T,C)
  {
    Tensor dlnf;  // (B, T, C)
    {
      const memory::ModuleScope module("lm_head");
      dlnf = runtime_.zeros({B, T, C}, memory::MemoryCategory::temporary, "dlnf", act);
      const TensorView lnf = saved.get(-1, saved::lnf).view();
      if (!chunked) {
        lm_head_.backward(runtime_, dlnf.view(), dlogits, lnf, N);
      } else {
        for_each_loss_chunk(N, loss_chunks_, [&](int64_t row, int64_t rows) {
          Tensor logits = chunk_logits(lnf, row, rows);  // (rows, V), again
          Tensor dchunk = runtime_.temporary({rows, V}, "dlogits chunk", act);
          Tensor losses = runtime_.temporary({rows}, "losses chunk");
          Tensor logsumexp = runtime_.temporary({rows}, "logsumexp");
          const TensorView chunk_targets = targets.slice(row, {rows});
          const KernelBackend& kernels = runtime_.kernels();
          kernels.cross_entropy_forward(losses.view(), logsumexp.view(), dchunk.view(),
                                        logits.view(), chunk_targets, rows, V);
          logits.reset();
          kernels.cross_entropy_dlogits(dchunk.view(), dchunk.view(), chunk_targets, rows, V,
                                        scale);
          lm_head_.backward(runtime_, dlnf.view().slice(row * C, {rows, C}), dchunk.view(),
                            lnf.slice(row * C, {rows, C}), rows);
        });
      }
    }
    const memory::ModuleScope module(final_norm_module(config_));
    final_norm_.backward(runtime_, saved, dresidual.view(), dlnf.view(), last, B, T);
  }
  // The head's tensors are not needed any more (the encoded input stays for the embedding).
  saved.release(-1, saved::lnf);
  for (const std::string& stat : {saved::mean_of(saved::lnf), saved::rstd_of(saved::lnf)})
    if (saved.contains(-1, stat)) saved.release(-1, stat);
  if (!chunked) saved.release(-1, saved::probs);
  saved.release(-1, saved::losses);
  announce_after(StepPhase::backward_head, saved);
  for (int64_t l = static_cast<int64_t>(blocks_.size()) - 1; l >= 0; --l) {
    if (saved.policy(l).recompute == Recompute::full && saved.span_last(l))
      recompute_span(saved, saved.span_first(l), l, B, T);
    saved.unpack_for_backward(l);
    announce_before(StepPhase::backward_layer, saved, l);
    blocks_[static_cast<size_t>(l)].backward(runtime_, saved, layer_input(saved, l),
                                             dresidual.view(), B, T,
                                             block_dropout(saved.rng_offset(l), B, T));
    announce_after(StepPhase::backward_layer, saved, l);
  }
  announce_before(StepPhase::backward_embedding, saved);
  {
    const memory::ModuleScope module(embedding_module(config_));
    embedding_.backward(runtime_, dresidual.view(), tokens, B, T);
  }
  announce_after(StepPhase::backward_embedding, saved);
  saved.clear();
  announce_after(StepPhase::backward, saved);
}

}  // namespace vramlab::nn
