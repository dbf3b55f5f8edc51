// Exercise 03.3 — YOUR CODE: the loss weights of gradient accumulation over unequal
// micro-batches, and the split of a batch into micro-batches.
//
// The API and its contract: lessons/03-mixed-precision/api/accumulation_weights.h
// Check:  build/bin/vramlab check 03.3        Stuck:  build/bin/vramlab hint 03.3
#include "lessons/03-mixed-precision/api/accumulation_weights.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson03 {

//! [stub]
std::vector<double> accumulation_loss_weights([[maybe_unused]] const std::vector<int64_t>& tokens) {
  // FILL ME IN (roughly 15 lines): validate the counts with vramlab::UsageError
  // (common/platform/errors.h), then one weight per micro-batch.
  VRAMLAB_NOT_IMPLEMENTED("03.3");
}

std::vector<int64_t> split_micro_batches([[maybe_unused]] int64_t sequences,
                                         [[maybe_unused]] int64_t micro_batches) {
  // FILL ME IN (roughly 10 lines).
  VRAMLAB_NOT_IMPLEMENTED("03.3");
}
//! [stub]

}  // namespace vramlab::lesson03
