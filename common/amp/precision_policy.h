/// \file
/// \brief The training precisions and, for each, the storage type of every kind of tensor: the
/// one table the runtime (common/nn), the estimator (common/estimate) and lesson 03 share.
///
/// | precision  | parameters | gradients        | fp32 master | optimizer states | activations |
/// |------------|------------|------------------|-------------|------------------|-------------|
/// | fp32       | f32        | f32              | no          | f32              | f32         |
/// | bf16       | bf16       | bf16             | no          | bf16             | bf16        |
/// | mixed-bf16 | bf16       | bf16 (f32 with --fp32-grads) | yes | f32           | bf16        |
/// | mixed-fp16 | f16        | f16 (f32 with --fp32-grads)  | yes | f32           | f16         |
///
/// "Mixed" is the ZeRO paper's accounting (Rajbhandari et al. 2020, §3.1; DeepSpeed's and
/// Megatron-LM's fp16/bf16 modules): the model holds 16-bit parameters and the optimizer updates
/// an fp32 master copy, then rounds it back. `torch.autocast` differs: it leaves the parameters
/// fp32 and casts them per op (lesson 03's page compares both).
///
/// Inside the 16-bit modes every op follows op_precision_table(): GEMMs take 16-bit inputs and
/// accumulate in fp32; softmax, the norms, the loss and every reduction compute in fp32; what an
/// op stores is 16-bit except the norms' statistics and the per-token losses, which stay fp32.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "common/dtype/dtype.h"
#include "common/plan/techniques.h"

namespace vramlab::amp {

/// The precisions and their names live in the plan's vocabulary (common/plan/techniques.h).
using plan::is_mixed;
using plan::kAllPrecisions;
using plan::parse_precision;
using plan::Precision;
using plan::precision_name;

/// The storage type of every kind of tensor under one precision (the file comment's table).
struct PrecisionPolicy {
  Precision precision = Precision::fp32;  ///< the mode this policy is of
  DType parameters = DType::f32;          ///< the weights the forward reads (the working copy)
  DType gradients = DType::f32;           ///< parameter gradients
  DType activations = DType::f32;         ///< activations, their gradients, what ops save
  DType optimizer_states = DType::f32;    ///< m, v, momentum
  bool master_weights = false;            ///< an fp32 master copy the optimizer updates
  /// The optimizer rounds the 16-bit parameters it updates stochastically (pure bf16 only:
  /// kernels/cpu/optimizer.h's ParameterRounding); nearest-even otherwise.
  bool stochastic_rounding = false;
  /// \return true when nothing is 16-bit.
  [[nodiscard]] bool all_fp32() const { return activations == DType::f32; }
};

/// \param precision the mode. \param fp32_gradients keep fp32 gradients (mixed modes only).
/// \param stochastic_rounding round updated 16-bit parameters stochastically (pure bf16 only:
/// elsewhere the optimizer updates fp32 values).
/// \return the storage types. \throws vramlab::UsageError for fp32 gradients outside mixed modes,
/// or stochastic rounding outside pure bf16.
PrecisionPolicy precision_policy(Precision precision, bool fp32_gradients = false,
                                 bool stochastic_rounding = false);

/// One row of the autocast-like op table.
struct OpPrecision {
  std::string_view op;       ///< e.g. "linear (GEMM)"
  std::string_view inputs;   ///< what it reads, e.g. "16-bit"
  std::string_view compute;  ///< where it accumulates, e.g. "fp32"
  std::string_view stores;   ///< what it writes or saves, e.g. "16-bit; stats fp32"
  std::string_view why;      ///< the reason, in a few words
};

/// The per-op policy of the 16-bit modes, one row per op kind of the runtime (what
/// `torch.autocast`'s lists decide in PyTorch; see the file comment for where ours differs).
std::span<const OpPrecision> op_precision_table();

}  // namespace vramlab::amp
