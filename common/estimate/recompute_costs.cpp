// The runtime's chain of blocks for the recompute planner (see recompute_costs.h).
#include "common/estimate/recompute_costs.h"

#include "common/checkpoint/recompute_cost.h"
#include "common/estimate/forward_flops.h"
#include "common/estimate/runtime_activations.h"
#include "common/model/checked_int.h"

namespace vramlab::estimate {

checkpoint::ChainCosts runtime_chain_costs(const ModelConfig& model, int64_t B, int64_t T,
                                           DType dtype) {
  const auto element = static_cast<int64_t>(dtype_size_bytes(dtype));
  const char* what = "activation bytes";
  const int64_t F = runtime_activation_bytes_per_layer(model, B, T, dtype);
  const int64_t probabilities = checked_mul(
      checked_mul(checked_mul(B, model.heads, what), checked_mul(T, T, what), what), element, what);
  const int64_t hidden = checked_mul(checked_mul(checked_mul(B, T, what), model.hidden, what),
                                     element, what);  // one (B, T, C) tensor
  checkpoint::ChainCosts costs;
  costs.layers.assign(
      static_cast<size_t>(model.layers),
      checkpoint::LayerCosts{F, F - probabilities, hidden, block_forward_flops(model, B, T),
                             attention_scores_flops(model, B, T)});
  costs.before_bytes = hidden;  // the embedding output
  costs.head_bytes = runtime_activation_bytes_outside_layers(model, B, T, dtype) - hidden;
  return costs;
}

double recomputed_forward_fraction(const ModelConfig& model, int64_t B, int64_t T,
                                   const checkpoint::RecomputeSchedule& schedule) {
  return checkpoint::recompute_cost(runtime_chain_costs(model, B, T), schedule) /
         model_forward_flops(model, B, T);
}

}  // namespace vramlab::estimate
