// Exercise 06.1 — YOUR CODE: the online softmax of one row of scores, block by block.
//
// The API and its contract: lessons/06-flash-attention/api/online_softmax.h
// Check:  build/bin/vramlab check 06.1        Stuck:  build/bin/vramlab hint 06.1
#include "lessons/06-flash-attention/api/online_softmax.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson06 {

//! [stub]
SoftmaxStats online_softmax_step([[maybe_unused]] SoftmaxStats running,
                                 [[maybe_unused]] std::span<const float> block) {
  // FILL ME IN (roughly 10 lines): the new max, then the sum of the old scores and the block's,
  // both measured from the new max. Keep a row that is still all −inf free of NaN.
  VRAMLAB_NOT_IMPLEMENTED("06.1");
}

OnlineSoftmax online_softmax([[maybe_unused]] std::span<const float> scores,
                             [[maybe_unused]] int64_t block_size) {
  // FILL ME IN (roughly 12 lines): reject a bad block_size with vramlab::UsageError
  // (common/platform/errors.h), step over the blocks recording the statistics after each, then
  // the log-sum-exp.
  VRAMLAB_NOT_IMPLEMENTED("06.1");
}
//! [stub]

}  // namespace vramlab::lesson06
