// Exercise 04.4 — YOUR CODE: one rank's parameter, gradient and optimizer-state bytes with ZeRO
// and tensor parallelism together, exact with FSDP's padding.
//
// The API and its contract: lessons/04-zero/api/model_state_per_rank.h
// Check:  build/bin/vramlab check 04.4        Stuck:  build/bin/vramlab hint 04.4
#include "lessons/04-zero/api/model_state_per_rank.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson04 {

//! [stub]
RankModelStateBytes model_state_bytes_per_rank([[maybe_unused]] const ParallelModelStates& states) {
  // FILL ME IN (roughly 35 lines), rejecting bad input with vramlab::UsageError
  // (common/platform/errors.h): what one TP rank holds of each unit, the padded unit and its
  // shard, then bytes per element by precision and by what the stage shards.
  VRAMLAB_NOT_IMPLEMENTED("04.4");
}
//! [stub]

}  // namespace vramlab::lesson04
