// Exercise 04.2 — YOUR CODE: the ring reduce-scatter and all-gather from send/recv, and the
// all-reduce as the two together.
//
// The API and its contract: lessons/04-zero/api/ring_collectives.h
// Check:  build/bin/vramlab check 04.2        Stuck:  build/bin/vramlab hint 04.2
#include "lessons/04-zero/api/ring_collectives.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson04 {

//! [stub]
void ring_reduce_scatter([[maybe_unused]] dist::Communicator& comm,
                         [[maybe_unused]] std::span<float> buffer) {
  // FILL ME IN (roughly 25 lines): N − 1 steps; at each, which chunk goes right, which comes from
  // the left, and where does it go? Views: memory::TensorView(pointer, DType::f32, {count}).
  VRAMLAB_NOT_IMPLEMENTED("04.2");
}

void ring_all_gather([[maybe_unused]] dist::Communicator& comm,
                     [[maybe_unused]] std::span<float> buffer) {
  // FILL ME IN (roughly 12 lines).
  VRAMLAB_NOT_IMPLEMENTED("04.2");
}

void ring_all_reduce([[maybe_unused]] dist::Communicator& comm,
                     [[maybe_unused]] std::span<float> buffer) {
  // FILL ME IN (2 lines).
  VRAMLAB_NOT_IMPLEMENTED("04.2");
}
//! [stub]

}  // namespace vramlab::lesson04
