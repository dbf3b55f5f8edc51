// SGD and AdamW over a ParameterStore (see optimizer.h).
#include "common/optim/optimizer.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/dtype/counter_rng.h"
#include "common/memory/memory_category.h"
#include "common/platform/errors.h"

namespace vramlab::optim {

void Optimizer::require_hyperparameter(bool ok, const std::string& what, float value) {
  if (!ok) throw UsageError(what + " " + std::to_string(value) + " is out of range");
}

void Optimizer::require_adamw_hyperparameters(const kernels::cpu::AdamWHyperparameters& hp) {
  require_hyperparameter(std::isfinite(hp.learning_rate) && hp.learning_rate > 0, "learning rate",
                         hp.learning_rate);
  require_hyperparameter(hp.beta1 >= 0 && hp.beta1 < 1, "beta1", hp.beta1);
  require_hyperparameter(hp.beta2 >= 0 && hp.beta2 < 1, "beta2", hp.beta2);
  require_hyperparameter(hp.epsilon > 0, "epsilon", hp.epsilon);
  require_hyperparameter(hp.weight_decay >= 0, "weight decay", hp.weight_decay);
}

void Optimizer::require_gradients(const nn::ParameterStore& params) {
  if (params.grads().empty())
    throw std::logic_error("optimizer step without gradients (run backward first)");
}

void Optimizer::step(nn::ParameterStore& params, float grad_multiplier) {
  // The master is made before the moments: when they do not fit, it goes too, so a failed first
  // step leaves the optimizer as it found it (and its bytes free for a retry).
  const bool had_master = !master_.empty();
  try {
    update(params, grad_multiplier);
  } catch (...) {
    if (!had_master) master_ = memory::Tensor();
    throw;
  }
}

memory::Tensor Optimizer::make_state(int64_t numel, const char* name) {
  return runtime_.zeros({numel}, memory::MemoryCategory::optimizer_state, name,
                        precision_.optimizer_states);
}

memory::TensorView Optimizer::updated_values(nn::ParameterStore& params) {
  if (params.sharding() != nn::StoreSharding::none)
    throw UsageError("this optimizer steps whole tensors and cannot update a ZeRO shard");
  if (!precision_.master_weights) return params.values().view();
  if (master_.empty()) {
    master_ = runtime_.allocate({params.numel()}, DType::f32,
                                memory::MemoryCategory::optimizer_state, "master weights");
    runtime_.kernels().cast(master_.view(), params.values().view());
  }
  return master_.view();
}

std::vector<Optimizer::Update> Optimizer::local_updates(nn::ParameterStore& params) {
  const std::vector<nn::LocalRange> ranges = params.local_ranges();
  if (precision_.master_weights && master_.empty()) {
    // The fp32 master of this rank's part only (ZeRO shards it with the other states).
    memory::Tensor master =
        runtime_.allocate({params.local_numel()}, DType::f32,
                          memory::MemoryCategory::optimizer_state, "master weights");
    for (const nn::LocalRange& r : ranges)
      runtime_.kernels().cast(master.view().slice(r.state_offset, {r.values.numel()}), r.values);
    master_ = std::move(master);
  }
  std::vector<Update> updates;
  for (const nn::LocalRange& r : ranges) {
    const int64_t n = r.values.numel();
    updates.push_back(
        master_.empty()
            ? Update{r.values, r.grads, memory::TensorView(), r.state_offset}
            : Update{master_.view().slice(r.state_offset, {n}), r.grads, r.values, r.state_offset});
  }
  return updates;
}

memory::TensorView Optimizer::state_slice(const memory::Tensor& state, const Update& update) {
  return state.view().slice(update.state_offset, {update.values.numel()});
}

nn::ParameterRounding Optimizer::rounding() const {
  return {precision_.stochastic_rounding,
          splitmix64_mix(0x0b5e55ed5eedull + static_cast<uint64_t>(steps_))};
}

nn::ParameterRounding Optimizer::rounding(int64_t first_element) const {
  nn::ParameterRounding r = rounding();
  if (first_element != 0)
    r.seed = splitmix64_mix(r.seed + static_cast<uint64_t>(first_element) * kSplitMix64Gamma);
  return r;
}

nn::UpdateStep Optimizer::update_step(float grad_multiplier, int64_t first_element) const {
  return {.step = steps_, .grad_multiplier = grad_multiplier, .rounding = rounding(first_element)};
}

memory::TensorView Optimizer::working_copy(const nn::ParameterStore& params,
                                           const memory::Tensor& master) {
  return master.empty() ? memory::TensorView() : params.values().view();
}

AdamW::AdamW(nn::Runtime& runtime, const kernels::cpu::AdamWHyperparameters& hp,
             const amp::PrecisionPolicy& precision)
    : Optimizer(runtime, precision), hp_(hp) {
  require_adamw_hyperparameters(hp);
}

void AdamW::update(nn::ParameterStore& params, float grad_multiplier) {
  require_gradients(params);
  const std::vector<Update> updates = local_updates(params);
  if (m_.empty()) {
    // Both or neither: an out-of-memory error on v frees m, so a retry starts clean.
    memory::Tensor m = make_state(params.local_numel(), "adamw.exp_avg");
    memory::Tensor v = make_state(params.local_numel(), "adamw.exp_avg_sq");
    m_ = std::move(m);
    v_ = std::move(v);
  }
  ++steps_;
  for (const Update& u : updates)
    runtime_.kernels().adamw_update(u.values, u.grads, state_slice(m_, u), state_slice(v_, u),
                                    u.working_copy, hp_,
                                    update_step(grad_multiplier, u.first_element));
}

int64_t AdamW::state_bytes() const {
  return m_.bytes() + v_.bytes() + master_.bytes();
}

Sgd::Sgd(nn::Runtime& runtime, const kernels::cpu::SgdHyperparameters& hp,
         const amp::PrecisionPolicy& precision)
    : Optimizer(runtime, precision), hp_(hp) {
  require_hyperparameter(std::isfinite(hp.learning_rate) && hp.learning_rate > 0, "learning rate",
                         hp.learning_rate);
  require_hyperparameter(hp.momentum >= 0 && hp.momentum < 1, "momentum", hp.momentum);
  require_hyperparameter(hp.weight_decay >= 0, "weight decay", hp.weight_decay);
}

void Sgd::update(nn::ParameterStore& params, float grad_multiplier) {
  require_gradients(params);
  const std::vector<Update> updates = local_updates(params);
  if (hp_.momentum > 0 && momentum_buffer_.empty())
    momentum_buffer_ = make_state(params.local_numel(), "sgd.momentum");
  ++steps_;
  for (const Update& u : updates)
    runtime_.kernels().sgd_update(
        u.values, u.grads,
        hp_.momentum > 0 ? state_slice(momentum_buffer_, u) : memory::TensorView(), u.working_copy,
        hp_, update_step(grad_multiplier, u.first_element));
}

int64_t Sgd::state_bytes() const {
  return momentum_buffer_.bytes() + master_.bytes();
}

}  // namespace vramlab::optim
