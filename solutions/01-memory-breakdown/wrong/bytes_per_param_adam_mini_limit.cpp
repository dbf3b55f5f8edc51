// Known-wrong variant of exercise 01.1 (kept for `vramlab verify`, never linked into a lesson):
// rejects Adam-mini with one v per parameter (blocks == Psi), an off-by-one at the upper limit.
// The exercise's tests must fail for it.
#include <string>

#include "common/platform/errors.h"
#include "lessons/01-memory-breakdown/api/bytes_per_param.h"

namespace vramlab::lesson01 {

ModelStateBreakdown model_state_breakdown(int64_t parameter_count, estimate::Precision precision,
                                          estimate::Optimizer optimizer,
                                          int64_t adam_mini_v_blocks) {
  using estimate::Optimizer;
  using estimate::Precision;
  const int64_t n = parameter_count;  // Ψ
  if (n <= 0) throw UsageError("parameter count must be > 0, got " + std::to_string(n));
  if (adam_mini_v_blocks < 0 || adam_mini_v_blocks >= n)
    throw UsageError("Adam-mini v blocks must be in [0, " + std::to_string(n) + "], got " +
                     std::to_string(adam_mini_v_blocks));

  const bool mixed = precision == Precision::mixed_fp16 || precision == Precision::mixed_bf16;
  const int64_t working_bytes = precision == Precision::fp32 ? 4 : 2;        // weights, grads
  const int64_t state_element_bytes = precision == Precision::bf16 ? 2 : 4;  // one state element

  ModelStateBreakdown out;
  out.weights_bytes = working_bytes * n;
  out.gradients_bytes = working_bytes * n;
  out.master_weights_bytes = mixed ? 4 * n : 0;
  switch (optimizer) {
    case Optimizer::sgd:
      out.optimizer_state_bytes = 0;
      break;
    case Optimizer::sgd_momentum:
    case Optimizer::lion:  // one state: the momentum
      out.optimizer_state_bytes = state_element_bytes * n;
      break;
    case Optimizer::adamw:  // two states: m and v
      out.optimizer_state_bytes = 2 * state_element_bytes * n;
      break;
    case Optimizer::adamw_8bit: {  // two 1-byte states + one fp32 absmax per block, per state
      const int64_t blocks = (n + kAdam8bitBlockSize - 1) / kAdam8bitBlockSize;
      out.optimizer_state_bytes = 2 * n + 2 * 4 * blocks;
      break;
    }
    case Optimizer::adam_mini:  // m for every parameter, one v per block
      out.optimizer_state_bytes = state_element_bytes * (n + adam_mini_v_blocks);
      break;
    case Optimizer::adafactor:  // rows + cols per matrix: Ψ alone does not say
      throw UsageError("adafactor's state depends on the tensors' shapes, not only on Ψ");
  }
  return out;
}

}  // namespace vramlab::lesson01
