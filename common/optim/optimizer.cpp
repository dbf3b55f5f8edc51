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
  // The master (and, offloaded, the host's gradients and parameters) are made before the
  // moments: when they do not fit, those go too, so a failed first step leaves the optimizer as
  // it found it (and its bytes free for a retry).
  const bool first = master_.empty() && host_grads_.empty();
  try {
    if (offloaded()) stage_gradients(params);
    update(params, grad_multiplier);
    if (offloaded()) return_parameters(params);
  } catch (...) {
    if (first) {
      master_ = memory::Tensor();
      host_grads_ = memory::Tensor();
      host_params_ = memory::Tensor();
    }
    throw;
  }
}

void Optimizer::keep_parameters_on(nn::Runtime& parameters) {
  if (steps_ > 0 || !master_.empty())
    throw std::logic_error("keep_parameters_on: the optimizer has stepped already");
  if (!steps_elementwise())
    throw UsageError(
        "this optimizer steps tensor by tensor and cannot keep its states apart "
        "from the parameters (offload supports SGD, AdamW and Lion)");
  parameters_runtime_ = &parameters == &runtime_ ? nullptr : &parameters;
}

// Note [Optimizer offload]
// The host's copy is the truth between steps: the first step copies this rank's parameters to
// the states' runtime (host_params_, in their dtype) and makes the fp32 master from them; every
// step copies the gradients there (host_grads_), updates the master (or, without one, the
// host's copy in place) with the states' runtime's kernels, and copies the host's copy back over
// the parameters. The kernels are the same as without offload and get the same arguments, so
// the parameters come back bitwise as the device's own step would have left them.
void Optimizer::stage_gradients(nn::ParameterStore& params) {
  require_gradients(params);
  const std::vector<nn::LocalRange> ranges = params.local_ranges();
  if (host_grads_.empty()) {
    const DType grad_type = ranges.empty() ? DType::f32 : ranges.front().grads.dtype();
    const DType value_type = ranges.empty() ? DType::f32 : ranges.front().values.dtype();
    memory::Tensor grads = runtime_.allocate({params.local_numel()}, grad_type,
                                             memory::MemoryCategory::gradient, "gradients");
    memory::Tensor values = runtime_.allocate({params.local_numel()}, value_type,
                                              memory::MemoryCategory::parameter, "parameters");
    for (const nn::LocalRange& r : ranges)
      parameters_runtime_->copy_to_host(
          values.view().slice(r.state_offset, {r.values.numel()}).data(), r.values);
    host_grads_ = std::move(grads);
    host_params_ = std::move(values);
  }
  for (const nn::LocalRange& r : ranges)
    parameters_runtime_->copy_to_host(
        host_grads_.view().slice(r.state_offset, {r.grads.numel()}).data(), r.grads);
}

void Optimizer::return_parameters(nn::ParameterStore& params) {
  for (const nn::LocalRange& r : params.local_ranges())
    parameters_runtime_->copy_to_device(
        r.values, host_params_.view().slice(r.state_offset, {r.values.numel()}).data());
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
  std::vector<nn::LocalRange> ranges = params.local_ranges();
  if (offloaded()) {
    // The host's copies stand in for the parameters and gradients (Note [Optimizer offload]).
    for (nn::LocalRange& r : ranges) {
      r.values = host_params_.view().slice(r.state_offset, {r.values.numel()});
      r.grads = host_grads_.view().slice(r.state_offset, {r.grads.numel()});
    }
  }
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
    updates.push_back(master_.empty() ? Update{r.values, r.grads, memory::TensorView(),
                                               r.state_offset, r.first_element}
                                      : Update{master_.view().slice(r.state_offset, {n}), r.grads,
                                               r.values, r.state_offset, r.first_element});
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
