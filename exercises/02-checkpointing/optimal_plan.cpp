// Exercise 02.2 — YOUR CODE: the checkpointing plan of least recompute cost whose activation peak
// fits a memory budget.
//
// The API and its contract: lessons/02-checkpointing/api/optimal_plan.h
// See it happen:  build/bin/vramlab run 02 (plans under a budget, run on the runtime)
// Check:  build/bin/vramlab check 02.2        Stuck:  build/bin/vramlab hint 02.2
#include "lessons/02-checkpointing/api/optimal_plan.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson02 {

//! [stub]
CheckpointPlan optimal_checkpoint_plan([[maybe_unused]] const CheckpointChain& chain,
                                       [[maybe_unused]] int64_t budget_bytes) {
  // FILL ME IN (roughly 60 lines): validate the chain (vramlab::UsageError,
  // common/platform/errors.h), then a dynamic program over the layers that decides, left to
  // right, which layers to keep and where spans start and end; rebuild the plan from it.
  VRAMLAB_NOT_IMPLEMENTED("02.2");
}
//! [stub]

}  // namespace vramlab::lesson02
