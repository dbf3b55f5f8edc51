// The training precisions, their storage types and the op table (see precision_policy.h).
#include "common/amp/precision_policy.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "common/platform/errors.h"

namespace vramlab::amp {

namespace {

// Why each op computes where it does: fp32 accumulation is what keeps a 16-bit dot product of
// thousands of terms accurate (Micikevicius et al. 2018, §3.3), and reductions (mean, variance,
// softmax's sum, the loss) lose the most when their partial sums are rounded.
constexpr OpPrecision kOps[] = {
    {"linear (GEMM)", "16-bit", "fp32", "16-bit", "the FLOPs: 16-bit halves the bytes moved"},
    {"attention QK^T, AV", "16-bit", "fp32", "16-bit scores and probabilities",
     "dot products over D accumulate in fp32"},
    {"softmax", "fp32 scores (never rounded)", "fp32", "16-bit probabilities",
     "exp and the row sum overflow or lose mass in 16-bit"},
    {"layernorm, rmsnorm", "16-bit", "fp32", "16-bit output; mean, rstd fp32",
     "variance of C terms needs fp32"},
    {"gelu, swiglu, residual add, rope, dropout", "16-bit", "fp32", "16-bit",
     "elementwise: one rounding per output"},
    {"embedding", "16-bit table", "fp32", "16-bit", "a gather plus the position add"},
    {"cross-entropy", "16-bit logits", "fp32", "16-bit probabilities; losses fp32",
     "logsumexp over the vocabulary"},
    {"parameter gradients", "16-bit", "fp32 within a kernel", "gradient type (16-bit or fp32)",
     "--fp32-grads keeps accumulation across micro-batches exact"},
    {"loss scaler check", "gradient type", "fp64 sum of squares", "found_inf, norm",
     "inf/NaN anywhere skips the step"},
    {"optimizer", "gradient type x 1/scale", "fp32", "fp32 master, m, v; 16-bit working copy",
     "updates smaller than a 16-bit ulp survive in the master"},
};

}  // namespace

PrecisionPolicy precision_policy(Precision precision, bool fp32_gradients,
                                 bool stochastic_rounding) {
  if (fp32_gradients && !is_mixed(precision))
    throw UsageError("fp32 gradients only apply to mixed precision, not '" +
                     std::string(precision_name(precision)) + "'");
  if (stochastic_rounding && precision != Precision::bf16)
    throw UsageError("stochastic rounding applies to pure bf16, where the optimizer writes 16-bit "
                     "parameters; '" + std::string(precision_name(precision)) +
                     "' updates fp32 values");
  PrecisionPolicy p;
  p.precision = precision;
  p.stochastic_rounding = stochastic_rounding;
  switch (precision) {
    case Precision::fp32:
      break;
    case Precision::bf16:
      p.parameters = p.gradients = p.activations = p.optimizer_states = DType::bf16;
      break;
    case Precision::mixed_bf16:
    case Precision::mixed_fp16: {
      const DType half = precision == Precision::mixed_bf16 ? DType::bf16 : DType::f16;
      p.parameters = p.activations = half;
      p.gradients = fp32_gradients ? DType::f32 : half;
      p.master_weights = true;
      break;
    }
  }
  return p;
}

std::span<const OpPrecision> op_precision_table() { return kOps; }

}  // namespace vramlab::amp
