// Exercise 09.3 — YOUR CODE: Adam-mini's partition of a model into v blocks, how many v values
// that leaves, and one step of v per block.
//
// The API and its contract: lessons/09-optimizer-memory/api/adam_mini_partition.h
// Check:  build/bin/vramlab check 09.3        Stuck:  build/bin/vramlab hint 09.3
#include "lessons/09-optimizer-memory/api/adam_mini_partition.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson09 {

//! [stub]
std::vector<VBlockRun> adam_mini_runs([[maybe_unused]] const ModelConfig& model,
                                      [[maybe_unused]] const ParameterSpec& tensor) {
  // FILL ME IN (roughly 20 lines): which kind of tensor is it (its name and shape say), and how
  // many rows make one of its blocks?
  VRAMLAB_NOT_IMPLEMENTED("09.3");
}

int64_t adam_mini_v_count([[maybe_unused]] const ModelConfig& model) {
  // FILL ME IN (roughly 5 lines).
  VRAMLAB_NOT_IMPLEMENTED("09.3");
}

void adam_mini_v_step([[maybe_unused]] std::span<float> v,
                      [[maybe_unused]] std::span<const float> grad,
                      [[maybe_unused]] std::span<const VBlockRun> runs,
                      [[maybe_unused]] float beta2) {
  // FILL ME IN (roughly 20 lines), rejecting a v or grad of the wrong size with
  // vramlab::UsageError (common/platform/errors.h).
  VRAMLAB_NOT_IMPLEMENTED("09.3");
}
//! [stub]

}  // namespace vramlab::lesson09
