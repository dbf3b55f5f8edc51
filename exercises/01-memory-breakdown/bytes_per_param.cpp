// Exercise 01.1 — YOUR CODE: the model-state bytes of Ψ parameters, split into weights, gradients,
// optimizer states and fp32 master weights, for a precision and an optimizer.
//
// The API and its contract: lessons/01-memory-breakdown/api/bytes_per_param.h
// Check:  build/bin/vramlab check 01.1        Stuck:  build/bin/vramlab hint 01.1
#include "lessons/01-memory-breakdown/api/bytes_per_param.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson01 {

//! [stub]
ModelStateBreakdown model_state_breakdown([[maybe_unused]] int64_t parameter_count,
                                          [[maybe_unused]] estimate::Precision precision,
                                          [[maybe_unused]] estimate::Optimizer optimizer,
                                          [[maybe_unused]] int64_t adam_mini_v_blocks) {
  // FILL ME IN (roughly 30 lines): reject bad input with vramlab::UsageError
  // (common/platform/errors.h), then fill the four fields of a ModelStateBreakdown.
  VRAMLAB_NOT_IMPLEMENTED("01.1");
}
//! [stub]

}  // namespace vramlab::lesson01
