// Exercise 09.2 — YOUR CODE: one Lion step, the optimizer that keeps only a momentum.
//
// The API and its contract: lessons/09-optimizer-memory/api/lion_step.h
// Check:  build/bin/vramlab check 09.2        Stuck:  build/bin/vramlab hint 09.2
#include "lessons/09-optimizer-memory/api/lion_step.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson09 {

//! [stub]
void lion_step([[maybe_unused]] std::span<float> param,
               [[maybe_unused]] std::span<const float> grad,
               [[maybe_unused]] std::span<float> momentum,
               [[maybe_unused]] const kernels::cpu::LionHyperparameters& hp) {
  // FILL ME IN (roughly 15 lines), rejecting spans of different lengths with vramlab::UsageError
  // (common/platform/errors.h): per element the direction, the parameter, then the momentum.
  VRAMLAB_NOT_IMPLEMENTED("09.2");
}
//! [stub]

}  // namespace vramlab::lesson09
