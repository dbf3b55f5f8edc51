/// \file
/// \brief Optimizers over a ParameterStore: SGD (with momentum) and AdamW, fp32 states allocated
/// lazily at the first step (as PyTorch does) with the category optimizer_state.
///
/// The store keeps every parameter in one block, so a step is one elementwise kernel call over
/// all parameters through the Runtime's kernels; on the meta device only the states are allocated.
#pragma once

#include <cstdint>

#include "common/memory/tensor.h"
#include "common/nn/parameter_store.h"
#include "common/nn/runtime.h"
#include "kernels/cpu/optimizer.h"

namespace vramlab::optim {

/// The interface of every optimizer.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// Applies one update from the current gradients.
  /// \param params the model's store (gradients must exist).
  /// \throws std::logic_error without gradients; memory::OutOfMemoryError when the first step
  /// cannot allocate the states.
  virtual void step(nn::ParameterStore& params) = 0;
  /// \return bytes of optimizer state currently held (numel × 4 per state tensor).
  [[nodiscard]] virtual int64_t state_bytes() const = 0;
  /// Counts calls to step(); AdamW's bias correction uses it as its 1-based step.
  [[nodiscard]] int64_t steps() const { return steps_; }

  /// Clears the gradients (PyTorch's optimizer.zero_grad). \p set_to_none frees the gradient
  /// block instead of zeroing it (the default since PyTorch 2.0), which returns its memory until
  /// the next backward.
  static void zero_grad(nn::ParameterStore& params, bool set_to_none) {
    params.zero_grad(set_to_none);
  }

 protected:
  int64_t steps_ = 0;  ///< steps taken so far
};

/// AdamW (torch.optim.AdamW semantics): exp_avg and exp_avg_sq, fp32, 8 bytes per parameter.
class AdamW final : public Optimizer {
 public:
  /// \p runtime holds the states and must outlive the optimizer.
  /// \throws vramlab::UsageError naming a learning rate ≤ 0 or non-finite, betas outside [0, 1),
  /// epsilon ≤ 0, or weight decay < 0.
  AdamW(nn::Runtime& runtime, const kernels::cpu::AdamWHyperparameters& hp);
  void step(nn::ParameterStore& params) override;
  /// \return 8 × numel once the states exist, else 0.
  [[nodiscard]] int64_t state_bytes() const override;

 private:
  nn::Runtime& runtime_;
  kernels::cpu::AdamWHyperparameters hp_;
  memory::Tensor m_;  // (numel) first moment
  memory::Tensor v_;  // (numel) second moment
};

/// SGD with momentum (torch.optim.SGD, dampening 0): 4 bytes per parameter with momentum, 0
/// without.
class Sgd final : public Optimizer {
 public:
  /// \param runtime holds the state; must outlive the optimizer. \param learning_rate > 0.
  /// \param momentum in [0, 1). \param weight_decay ≥ 0, an L2 term added to the gradient.
  /// \param nesterov has no effect with momentum 0.
  /// \throws vramlab::UsageError naming a bad value.
  Sgd(nn::Runtime& runtime, float learning_rate, float momentum = 0.0f, float weight_decay = 0.0f,
      bool nesterov = false);
  void step(nn::ParameterStore& params) override;
  /// \return 4 × numel once the momentum buffer exists, else 0.
  [[nodiscard]] int64_t state_bytes() const override;

 private:
  nn::Runtime& runtime_;
  float learning_rate_;
  float momentum_;
  float weight_decay_;
  bool nesterov_;
  memory::Tensor momentum_buffer_;  // (numel), only with momentum > 0
};

}  // namespace vramlab::optim
