// Exercise 06.3 — YOUR CODE: the flash-attention backward's delta = rowsum(dO ∘ O) and dS.
//
// The API and its contract: lessons/06-flash-attention/api/backward_ds.h
// Check:  build/bin/vramlab check 06.3        Stuck:  build/bin/vramlab hint 06.3
#include "lessons/06-flash-attention/api/backward_ds.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson06 {

//! [stub]
void backward_delta([[maybe_unused]] std::span<const float> dout,
                    [[maybe_unused]] std::span<const float> out, [[maybe_unused]] int64_t rows,
                    [[maybe_unused]] int64_t head_dim, [[maybe_unused]] std::span<float> delta) {
  // FILL ME IN (roughly 6 lines).
  VRAMLAB_NOT_IMPLEMENTED("06.3");
}

void backward_ds_tile([[maybe_unused]] std::span<const float> p,
                      [[maybe_unused]] std::span<const float> dp,
                      [[maybe_unused]] std::span<const float> delta, [[maybe_unused]] int64_t rows,
                      [[maybe_unused]] int64_t cols, [[maybe_unused]] TilePosition at,
                      [[maybe_unused]] std::span<float> ds) {
  // FILL ME IN (roughly 5 lines): which delta belongs to entry (r, c) of this tile?
  VRAMLAB_NOT_IMPLEMENTED("06.3");
}
//! [stub]

}  // namespace vramlab::lesson06
