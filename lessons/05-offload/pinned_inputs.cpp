// Exercise 05.3's input for a run (see pinned_inputs.h).
#include "lessons/05-offload/pinned_inputs.h"

#include <cstdint>

#include "common/amp/precision_policy.h"
#include "common/dtype/dtype.h"
#include "common/estimate/runtime_activations.h"

namespace vramlab::lesson05 {

OffloadedActivations offloaded_activations(const train::TrainOptions& options,
                                           const recompute::RecomputeSchedule& schedule) {
  const plan::Plan& plan = options.plan;
  const auto element = static_cast<int64_t>(
      dtype_size_bytes(amp::precision_policy(plan.amp.precision, plan.amp.fp32_grads).activations));
  OffloadedActivations forward;
  for (const estimate::SavedActivationSpec& spec : estimate::runtime_saved_activations_per_layer(
           options.model, options.batch, options.seq, plan.attention))
    forward.layer.push_back(
        {spec.name, spec.numel() * (spec.always_f32 ? 4 : element), spec.always_f32});
  for (const recompute::LayerPlan& layer : schedule.layers)
    forward.schedule.push_back(
        {layer.recompute == recompute::LayerRecompute::full        ? BlockRecompute::full
         : layer.recompute == recompute::LayerRecompute::selective ? BlockRecompute::selective
                                                                   : BlockRecompute::none,
         layer.span_start});
  return forward;
}

}  // namespace vramlab::lesson05
