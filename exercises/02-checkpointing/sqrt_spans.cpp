// Exercise 02.1 — YOUR CODE: Chen et al.'s √N spans ("segments" in the paper), and the
// activation peak a split into spans gives when every layer recomputes in full.
//
// The API and its contract: lessons/02-checkpointing/api/sqrt_spans.h
// See it happen:  build/bin/vramlab run 02 (the measured peak of each plan)
// Check:  build/bin/vramlab check 02.1        Stuck:  build/bin/vramlab hint 02.1
#include "lessons/02-checkpointing/api/sqrt_spans.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson02 {

//! [stub]
std::vector<int64_t> sqrt_span_starts([[maybe_unused]] int64_t layers) {
  // FILL ME IN (roughly 10 lines): reject L <= 0 with vramlab::UsageError
  // (common/platform/errors.h), then list the first layer of every span.
  VRAMLAB_NOT_IMPLEMENTED("02.1");
}

int64_t checkpointed_activation_peak([[maybe_unused]] const ChainShape& chain,
                                     [[maybe_unused]] const std::vector<int64_t>& span_starts) {
  // FILL ME IN (roughly 30 lines): validate the chain and the starts, then walk the step's
  // timeline (forward, head, each span's re-run in backward) and keep the highest total.
  VRAMLAB_NOT_IMPLEMENTED("02.1");
}
//! [stub]

}  // namespace vramlab::lesson02
