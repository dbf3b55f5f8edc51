// Exercise 06.2 — YOUR CODE: one tile step of the flash-attention forward, and the final divide.
//
// The API and its contract: lessons/06-flash-attention/api/forward_tile_step.h
// Check:  build/bin/vramlab check 06.2        Stuck:  build/bin/vramlab hint 06.2
#include "lessons/06-flash-attention/api/forward_tile_step.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson06 {

//! [stub]
void forward_tile_step([[maybe_unused]] QueryTileState& state,
                       [[maybe_unused]] std::span<const float> q,
                       [[maybe_unused]] std::span<const float> k,
                       [[maybe_unused]] std::span<const float> v, [[maybe_unused]] int64_t key_rows,
                       [[maybe_unused]] TilePosition at, [[maybe_unused]] float scale) {
  // FILL ME IN (roughly 30 lines): per query row, the tile's masked scores, the new max, then
  // rescale what the row already holds and add this tile's exp(S − m) and exp(S − m) · v.
  VRAMLAB_NOT_IMPLEMENTED("06.2");
}

void forward_tile_finish([[maybe_unused]] const QueryTileState& state,
                         [[maybe_unused]] std::span<float> out,
                         [[maybe_unused]] std::span<float> lse) {
  // FILL ME IN (roughly 12 lines): divide once, and the row's log-sum-exp.
  VRAMLAB_NOT_IMPLEMENTED("06.2");
}
//! [stub]

}  // namespace vramlab::lesson06
