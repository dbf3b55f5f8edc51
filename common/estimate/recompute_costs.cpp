// The runtime's chain of blocks for the recompute planner (see recompute_costs.h).
#include "common/estimate/recompute_costs.h"

#include <algorithm>
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
                                          DType dtype, AttentionKind attention,
                                          int64_t loss_chunks) {
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
  costs.head_bytes =
      runtime_activation_bytes_outside_layers(model, B, T, dtype, loss_chunks) - hidden;
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

// The store's bytes through one step with every packable tensor offloaded, in the runtime's order
// (DecoderModel::forward and backward, SavedActivations' pack_after_forward, unpack_for_backward,
// unpack_span_input; prefetched tensors count from their prefetch): the largest of them.
int64_t offloaded_device_peak(const ModelConfig& model, int64_t B, int64_t T,
                              const recompute::RecomputeSchedule& schedule, DType dtype,
                              AttentionKind attention, int64_t loss_chunks) {
  const char* what = "activation bytes";
  const auto element = static_cast<int64_t>(dtype_size_bytes(dtype));
  const auto bytes_of = [&](const SavedActivationSpec& spec) {
    return checked_mul(spec.numel(), spec.always_f32 ? int64_t{4} : element, what);
  };
  // One layer: everything (F), its attention probabilities, norm statistics and output.
  int64_t F = 0, att = 0, stats = 0, out = 0;
  for (const SavedActivationSpec& spec :
       runtime_saved_activations_per_layer(model, B, T, attention)) {
    const int64_t b = bytes_of(spec);
    F = checked_add(F, b, what);
    if (spec.name == saved::att) att = b;
    if (spec.always_f32) stats = checked_add(stats, b, what);
    if (spec.name == saved::residual3) out = b;
  }
  int64_t encoded = 0, head_norm = 0, head_loss = 0;
  for (const SavedActivationSpec& spec :
       runtime_saved_activations_outside_layers(model, B, T, loss_chunks)) {
    const int64_t b = bytes_of(spec);
    if (spec.name == saved::encoded) {
      encoded = b;
    } else if (spec.name == saved::probs || spec.name == saved::losses) {
      head_loss = checked_add(head_loss, b, what);
    } else {
      head_norm = checked_add(head_norm, b, what);  // lnf and its statistics
    }
  }
  const std::vector<recompute::LayerPlan>& plans = schedule.layers;
  const auto L = static_cast<int64_t>(plans.size());
  using recompute::LayerRecompute;
  const auto full = [&](int64_t l) { return plans[l].recompute == LayerRecompute::full; };
  const auto span_last = [&](int64_t l) {
    return l + 1 == L || !full(l + 1) || plans[l + 1].span_start;
  };
  const auto span_first = [&](int64_t l) {
    while (l > 0 && !plans[l].span_start) --l;
    return l;
  };
  // What a layer keeps after its forward, and of it what stays on the device (its statistics).
  const auto kept = [&](int64_t l) {
    if (full(l)) return out;
    return plans[l].recompute == LayerRecompute::selective ? F - att : F;
  };
  // What the layer packs besides its output, and what prefetch_layer brings back of it.
  const auto packed_rest = [&](int64_t l) { return full(l) ? int64_t{0} : kept(l) - stats - out; };
  int64_t bytes = encoded, peak = bytes;
  const auto add = [&](int64_t b) {
    bytes = checked_add(bytes, b, what);
    peak = std::max(peak, bytes);
  };
  for (int64_t l = 0; l < L; ++l) {
    add(F);
    bytes -= F - kept(l);  // drop_by_policy
    const bool input_released = full(l) && !plans[l].span_start;
    if (input_released) bytes -= out;
    bytes -= packed_rest(l);                     // pack_after_forward(l): the layer's tensors
    if (l > 0 && !input_released) bytes -= out;  // and its input
  }
  add(head_norm);
  if (L > 0) bytes -= out;  // the head packs the last output
  add(head_loss);
  // Backward: the head brings the last layer's output back and prefetches the rest of the layer.
  const auto bring_back_before = [&](int64_t l) {  // unpack_for_backward(l + 1) for layer l
    add(out);                                      // its output, unpacked
    add(packed_rest(l));                           // prefetch_layer(l)
    if (full(l) && span_last(l) && span_first(l) > 0) add(out);  // its span's input
  };
  if (L > 0) bring_back_before(L - 1);
  bytes -= head_norm + head_loss;
  for (int64_t l = L - 1; l >= 0; --l) {
    if (full(l) && span_last(l)) {
      bytes -= out;  // the span's last output, recomputed with the rest
      for (int64_t k = span_first(l); k <= l; ++k) add(F);
    }
    if (l > 0) {
      // The input is back already when a span recomputed it or prefetched it as its input.
      if (full(l)) {
        add(0);
        add(packed_rest(l - 1));
        if (full(l - 1) && span_last(l - 1) && span_first(l - 1) > 0) add(out);
      } else {
        bring_back_before(l - 1);
      }
    }
    bytes -= full(l) ? F : kept(l);  // release_layer(l) after its backward
  }
  return peak;
}

}  // namespace

int64_t runtime_bytes_after_forward(const ModelConfig& model, int64_t B, int64_t T,
                                    const recompute::RecomputeSchedule& schedule,
                                    recompute::ActivationCompression compression, DType dtype,
                                    AttentionKind attention, int64_t loss_chunks) {
  const char* what = "activation bytes";
  int64_t total = runtime_activation_bytes_outside_layers(model, B, T, dtype, loss_chunks);
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
    DType dtype, AttentionKind attention, int64_t loss_chunks) {
  const char* what = "activation bytes";
  OffloadedActivationBytes out;
  out.device = runtime_activation_bytes_outside_layers(model, B, T, dtype, loss_chunks);
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
  out.device_peak = offloaded_device_peak(model, B, T, schedule, dtype, attention, loss_chunks);
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
