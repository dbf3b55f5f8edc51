// Exercise 06.4 — YOUR CODE: flash attention's tile sizes, causal tile counts, working set and
// saved bytes, predicted from the formulas.
//
// The API and its contract: lessons/06-flash-attention/api/tile_budget.h
// Check:  build/bin/vramlab check 06.4        Stuck:  build/bin/vramlab hint 06.4
#include "lessons/06-flash-attention/api/tile_budget.h"
#include "common/workbook/not_implemented.h"

namespace vramlab::lesson06 {

//! [stub]
BlockSizes fa1_block_sizes([[maybe_unused]] int64_t sram_elements,
                           [[maybe_unused]] int64_t head_dim) {
  // FILL ME IN (roughly 6 lines), rejecting bad input with vramlab::UsageError
  // (common/platform/errors.h).
  VRAMLAB_NOT_IMPLEMENTED("06.4");
}

TileGrid causal_tile_grid([[maybe_unused]] int64_t seq_len, [[maybe_unused]] BlockSizes blocks) {
  // FILL ME IN (roughly 20 lines).
  VRAMLAB_NOT_IMPLEMENTED("06.4");
}

int64_t tile_step_working_set_bytes([[maybe_unused]] BlockSizes blocks,
                                    [[maybe_unused]] int64_t head_dim,
                                    [[maybe_unused]] int64_t element_bytes) {
  // FILL ME IN (roughly 8 lines).
  VRAMLAB_NOT_IMPLEMENTED("06.4");
}

AttentionExtraBytes attention_extra_bytes([[maybe_unused]] int64_t batch,
                                          [[maybe_unused]] int64_t heads,
                                          [[maybe_unused]] int64_t seq_len,
                                          [[maybe_unused]] int64_t element_bytes) {
  // FILL ME IN (roughly 15 lines).
  VRAMLAB_NOT_IMPLEMENTED("06.4");
}
//! [stub]

}  // namespace vramlab::lesson06
