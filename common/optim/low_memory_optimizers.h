/// \file
/// \brief The optimizers that keep less state than AdamW's 8 bytes per parameter (lesson 09): Lion
/// (one moment), Adam-mini (one second moment per block), Adafactor (a factored second moment) and
/// 8-bit AdamW (two 1-byte moments with an fp32 absmax per block).
///
/// Lion runs one kernel over the whole store, as AdamW does. The others reduce over blocks or
/// whole tensors, so they step tensor by tensor over the layout of common/optim/state_layout.h.
/// `vramlab estimate` counts the same states from the papers' rules on its own, and the tests
/// check that a run's state_bytes() equals its optimizer-moment bytes exactly. Each optimizer keeps
/// every state of one kind in one block (one allocation), sliced per tensor, so the allocator sees
/// a handful of tensors rather than hundreds. Under mixed precision they step the fp32 master copy
/// and write the 16-bit working copy back, as AdamW does (common/optim/optimizer.h).
#pragma once

#include <cstdint>
#include <vector>

#include "common/model/model_config.h"
#include "common/optim/optimizer.h"
#include "common/optim/state_layout.h"

namespace vramlab::optim {

/// Lion (Chen et al. 2023): the sign of an interpolated momentum; one state, m.
class Lion final : public Optimizer {
 public:
  /// \p runtime must outlive the optimizer. \throws vramlab::UsageError naming a learning rate ≤ 0
  /// or non-finite, betas outside [0, 1), or weight decay < 0.
  Lion(nn::Runtime& runtime, const kernels::cpu::LionHyperparameters& hp,
       const amp::PrecisionPolicy& precision = {});
  /// \return m and the master once they exist, else 0.
  [[nodiscard]] int64_t state_bytes() const override;

 private:
  void update(nn::ParameterStore& params, float grad_multiplier) override;
  [[nodiscard]] bool steps_elementwise() const override { return true; }
  kernels::cpu::LionHyperparameters hp_;
};

/// Adam-mini (Zhang et al. 2024): AdamW's m per parameter, one v per block of the paper's
/// partition (optim::optimizer_state_layout).
class AdamMini final : public Optimizer {
 public:
  /// \p model gives the tensors and heads the partition follows; the store stepped must be its.
  /// \throws vramlab::UsageError as AdamW's constructor, or for an invalid model.
  AdamMini(nn::Runtime& runtime, const ModelConfig& model,
           const kernels::cpu::AdamWHyperparameters& hp,
           const amp::PrecisionPolicy& precision = {});
  /// \throws std::logic_error when \p params is not laid out as the model's parameters.
  /// \return m, v and the master once they exist, else 0.
  [[nodiscard]] int64_t state_bytes() const override;

 private:
  void update(nn::ParameterStore& params, float grad_multiplier) override;
  std::vector<optim::TensorStateLayout> layout_;
  kernels::cpu::AdamWHyperparameters hp_;
  memory::Tensor m_;  // (numel) first moment
  memory::Tensor v_;  // (Σ blocks) one second moment per block, in layout order
};

/// Adafactor (Shazeer & Stern 2018; torch.optim.Adafactor): per matrix a row and a column
/// second-moment factor, per vector a full second moment; no first moment.
class Adafactor final : public Optimizer {
 public:
  /// \p model gives the tensors' shapes. \throws vramlab::UsageError naming a learning rate ≤ 0
  /// or non-finite, beta2_decay ≥ 0, epsilon2 ≤ 0, clip threshold ≤ 0 or weight decay < 0.
  Adafactor(nn::Runtime& runtime, const ModelConfig& model,
            const kernels::cpu::AdafactorHyperparameters& hp,
            const amp::PrecisionPolicy& precision = {});
  /// \throws std::logic_error when \p params is not laid out as the model's parameters.
  /// \return the factors and the master once they exist, else 0.
  [[nodiscard]] int64_t state_bytes() const override;

 private:
  void update(nn::ParameterStore& params, float grad_multiplier) override;
  std::vector<optim::TensorStateLayout> layout_;
  kernels::cpu::AdafactorHyperparameters hp_;
  memory::Tensor variance_;  // (Σ rows + cols, or numel) the factors, tensor after tensor
};

/// 8-bit AdamW (Dettmers et al. 2022; bitsandbytes' AdamW8bit): m and v as 1-byte codes of the
/// dynamic map with an fp32 absmax per block, per tensor; tensors under min_8bit_size (and the
/// embeddings, when asked) keep fp32 m and v.
class AdamW8bit final : public Optimizer {
 public:
  /// \throws vramlab::UsageError as AdamW's constructor, or a block size < 1.
  AdamW8bit(nn::Runtime& runtime, const ModelConfig& model,
            const kernels::cpu::AdamWHyperparameters& hp,
            const plan::EightBitOptions& eight_bit = {},
            const amp::PrecisionPolicy& precision = {});
  /// \throws std::logic_error when \p params is not laid out as the model's parameters.
  /// \return codes, absmax, fp32 states and the master once they exist, else 0.
  [[nodiscard]] int64_t state_bytes() const override;
  /// \return the layout it steps (which tensors are quantized, their blocks).
  [[nodiscard]] const std::vector<optim::TensorStateLayout>& layout() const { return layout_; }
  /// The dequantised m and v of every quantized element, in layout order, copied to the host (for
  /// the lesson's quantisation-error measurement; empty before the first step or on meta).
  struct Dequantized {
    std::vector<float> m;  ///< (Σ quantized numel)
    std::vector<float> v;  ///< (Σ quantized numel)
  };
  /// \return the dequantised states. \throws std::bad_alloc when the host is full.
  [[nodiscard]] Dequantized dequantized_states() const;

 private:
  void update(nn::ParameterStore& params, float grad_multiplier) override;
  std::vector<optim::TensorStateLayout> layout_;
  kernels::cpu::AdamWHyperparameters hp_;
  plan::EightBitOptions eight_bit_;
  memory::Tensor qm_;              // (Σ quantized numel) u8 codes of m, signed map
  memory::Tensor qv_;              // (Σ quantized numel) u8 codes of v, unsigned map
  memory::Tensor absmax_m_;        // (Σ absmax blocks) f32
  memory::Tensor absmax_v_;        // (Σ absmax blocks) f32
  memory::Tensor m32_;             // (Σ fp32 numel) f32 m of the tensors kept in 32 bits
  memory::Tensor v32_;             // (Σ fp32 numel) f32 v
  bool states_allocated_ = false;  // the six above exist (some may be empty: nothing of a kind)
};

}  // namespace vramlab::optim
