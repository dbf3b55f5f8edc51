// The runtime's chain of blocks for the recompute planner (see recompute_costs.h).
#include "common/estimate/recompute_costs.h"

#include <bit>
#include <cstdint>
#include <limits>
#include <string>

#include "common/estimate/forward_flops.h"
#include "common/estimate/runtime_activations.h"
#include "common/model/checked_int.h"
#include "common/model/saved_tensor_names.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_cost.h"

namespace vramlab::estimate {

recompute::ChainCosts runtime_chain_costs(const ModelConfig& model, int64_t B, int64_t T,
                                          DType dtype, AttentionKind attention) {
  const auto element = static_cast<int64_t>(dtype_size_bytes(dtype));
  const char* what = "activation bytes";
  const int64_t F = runtime_activation_bytes_per_layer(model, B, T, dtype, attention);
  const bool flash = attention == AttentionKind::flash;
  const int64_t probabilities = flash ? 0
                                      : checked_mul(checked_mul(checked_mul(B, model.heads, what),
                                                                checked_mul(T, T, what), what),
                                                    element, what);
  const int64_t hidden = checked_mul(checked_mul(checked_mul(B, T, what), model.hidden, what),
                                     element, what);  // one (B, T, C) tensor
  recompute::ChainCosts costs;
  costs.layers.assign(
      static_cast<size_t>(model.layers),
      recompute::LayerCosts{F, F - probabilities, hidden, block_forward_flops(model, B, T),
                            flash ? 0.0 : attention_scores_flops(model, B, T)});
  costs.before_bytes = hidden;  // the embedding output
  costs.head_bytes = runtime_activation_bytes_outside_layers(model, B, T, dtype) - hidden;
  return costs;
}

namespace {

// Calls \p kept(spec) for every block tensor the store keeps after the forward under \p schedule:
// everything, all but the probabilities, or the last output of a recomputed span.
template <typename Kept>
void for_each_kept_block_tensor(const ModelConfig& model, int64_t B, int64_t T,
                                const recompute::RecomputeSchedule& schedule,
                                AttentionKind attention, Kept kept) {
  const auto specs = runtime_saved_activations_per_layer(model, B, T, attention);
  for (size_t l = 0; l < schedule.layers.size(); ++l) {
    const recompute::LayerPlan& plan = schedule.layers[l];
    const bool span_last = l + 1 == schedule.layers.size() ||
                           schedule.layers[l + 1].recompute != recompute::LayerRecompute::full ||
                           schedule.layers[l + 1].span_start;
    for (const SavedActivationSpec& spec : specs) {
      if (plan.recompute == recompute::LayerRecompute::none ||
          (plan.recompute == recompute::LayerRecompute::selective && spec.name != saved::att) ||
          (plan.recompute == recompute::LayerRecompute::full && span_last &&
           spec.name == saved::residual3))
        kept(spec);
    }
  }
}

}  // namespace

int64_t runtime_bytes_after_forward(const ModelConfig& model, int64_t B, int64_t T,
                                    const recompute::RecomputeSchedule& schedule,
                                    recompute::ActivationCompression compression, DType dtype,
                                    AttentionKind attention) {
  const char* what = "activation bytes";
  int64_t total = runtime_activation_bytes_outside_layers(model, B, T, dtype);
  const auto element = static_cast<int64_t>(dtype_size_bytes(dtype));
  for_each_kept_block_tensor(
      model, B, T, schedule, attention, [&](const SavedActivationSpec& spec) {
        const int64_t bytes = spec.always_f32 ? checked_mul(spec.numel(), 4, what)
                              : compression == recompute::ActivationCompression::none
                                  ? checked_mul(spec.numel(), element, what)
                                  : recompute::compressed_bytes(spec.numel(), compression);
        total = checked_add(total, bytes, what);
      });
  return total;
}

OffloadedActivationBytes runtime_offloaded_activation_bytes(
    const ModelConfig& model, int64_t B, int64_t T, const recompute::RecomputeSchedule& schedule,
    DType dtype, AttentionKind attention) {
  const char* what = "activation bytes";
  OffloadedActivationBytes out;
  out.device = runtime_activation_bytes_outside_layers(model, B, T, dtype);
  const auto element = static_cast<int64_t>(dtype_size_bytes(dtype));
  for_each_kept_block_tensor(
      model, B, T, schedule, attention, [&](const SavedActivationSpec& spec) {
        if (spec.always_f32) {  // the norms' statistics stay (SavedActivations::save's packable)
          out.device = checked_add(out.device, checked_mul(spec.numel(), 4, what), what);
          return;
        }
        const int64_t bytes = checked_mul(spec.numel(), element, what);
        out.host_requested = checked_add(out.host_requested, bytes, what);
        const auto pinned = std::bit_ceil(static_cast<uint64_t>(bytes));
        if (pinned > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          throw UsageError(std::string(what) + ": a pinned block beyond 2^63 bytes");
        out.host_pinned = checked_add(out.host_pinned, static_cast<int64_t>(pinned), what);
      });
  return out;
}

double recomputed_forward_fraction(const ModelConfig& model, int64_t B, int64_t T,
                                   const recompute::RecomputeSchedule& schedule,
                                   AttentionKind attention) {
  return recompute::recompute_cost(runtime_chain_costs(model, B, T, DType::f32, attention),
                                   schedule) /
         model_forward_flops(model, B, T);
}

}  // namespace vramlab::estimate
