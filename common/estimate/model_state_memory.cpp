// Model-state bytes per precision and optimizer (ZeRO's 2Ψ + 2Ψ + KΨ, generalised).
#include "common/estimate/model_state_memory.h"

#include <string>

#include "common/estimate/optimizer_state_counts.h"
#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab::estimate {

int64_t activation_element_bytes(Precision precision) {
  return precision == Precision::fp32 ? 4 : 2;
}

ModelStateBytes model_state_bytes(int64_t parameter_count, const ModelStateOptions& options) {
  const int64_t n = parameter_count;
  if (n <= 0) throw UsageError("parameter count must be positive, got " + std::to_string(n));
  if (options.quantization_block_size <= 0)
    throw UsageError("quantization block size must be positive, got " +
                     std::to_string(options.quantization_block_size));
  if (options.adam_mini_v_blocks < 0)
    throw UsageError("Adam-mini v blocks must be non-negative, got " +
                     std::to_string(options.adam_mini_v_blocks));
  const bool mixed = is_mixed(options.precision);
  if (options.fp32_gradients && !mixed)
    throw UsageError("fp32 gradients only apply to mixed precision, not '" +
                     std::string(precision_name(options.precision)) + "'");

  const int64_t working_bytes = options.precision == Precision::fp32 ? 4 : 2;
  const int64_t state_element_bytes = options.precision == Precision::bf16 ? 2 : 4;
  ModelStateBytes out;
  out.parameters = checked_mul(n, working_bytes, "parameter bytes");
  out.gradients = checked_mul(n, options.fp32_gradients ? 4 : working_bytes, "gradient bytes");
  out.master_weights = mixed ? checked_mul(n, 4, "master weight bytes") : 0;
  const char* what = "optimizer state bytes";
  switch (options.optimizer) {
    case Optimizer::sgd:
      out.optimizer_moments = 0;
      break;
    case Optimizer::sgd_momentum:
    case Optimizer::lion:
      out.optimizer_moments = checked_mul(n, state_element_bytes, what);
      break;
    case Optimizer::adamw:
      out.optimizer_moments = checked_mul(checked_mul(n, 2, what), state_element_bytes, what);
      break;
    case Optimizer::adamw_8bit: {
      // Two 1-byte states, and per state one fp32 absmax for every block of B elements; tensors
      // kept in fp32 hold two 4-byte states.
      const int64_t fp32 = options.eight_bit_fp32_elements;
      if (fp32 < 0 || fp32 > n)
        throw UsageError("8-bit fp32 elements must be in [0, " + std::to_string(n) + "], got " +
                         std::to_string(fp32));
      const int64_t blocks = options.eight_bit_absmax_blocks >= 0
                                 ? options.eight_bit_absmax_blocks
                                 : ceil_div(n, options.quantization_block_size);
      out.optimizer_moments = checked_add(
          checked_add(checked_mul(n - fp32, 2, what), checked_mul(blocks, 8, what), what),
          checked_mul(fp32, 8, what), what);
      break;
    }
    case Optimizer::adafactor:
      if (options.adafactor_state_elements <= 0)
        throw UsageError(
            "adafactor's state depends on the tensors' shapes: name a model (--model) rather "
            "than a parameter count");
      out.optimizer_moments =
          checked_mul(options.adafactor_state_elements, state_element_bytes, what);
      break;
    case Optimizer::adam_mini:
      out.optimizer_moments =
          checked_mul(checked_add(n, options.adam_mini_v_blocks, what), state_element_bytes, what);
      break;
  }
  return out;
}

int64_t adam_mini_v_blocks(const ModelConfig& model) {
  return optimizer_state_counts(model).adam_mini_v;
}

}  // namespace vramlab::estimate
