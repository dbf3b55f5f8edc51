// Known-wrong variant of exercise 06.4 (kept for `vramlab verify`, never linked into a lesson):
// counts T / B_r and T / B_c tiles, dropping the shorter last tile.
// The exercise's tests must fail for it.
#include <algorithm>
#include <string>

#include "common/platform/errors.h"
#include "lessons/06-flash-attention/api/tile_budget.h"

namespace vramlab::lesson06 {

namespace {

void require_at_least(int64_t value, int64_t minimum, const char* name) {
  if (value < minimum)
    throw UsageError(std::string(name) + " must be >= " + std::to_string(minimum) + ", got " +
                     std::to_string(value));
}

int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

int64_t checked_product(int64_t a, int64_t b, const char* what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    throw UsageError(std::string(what) + " does not fit in 64 bits (" + std::to_string(a) + " x " +
                     std::to_string(b) + ")");
  return product;
}

}  // namespace

BlockSizes fa1_block_sizes(int64_t sram_elements, int64_t head_dim) {
  require_at_least(sram_elements, 1, "on-chip memory M (elements)");
  require_at_least(head_dim, 1, "head size d");
  const int64_t rows = ceil_div(sram_elements, checked_product(4, head_dim, "4 d"));
  return BlockSizes{rows, std::min(rows, head_dim)};
}

TileGrid causal_tile_grid(int64_t seq_len, BlockSizes blocks) {
  require_at_least(seq_len, 0, "sequence length T");
  require_at_least(blocks.query_rows, 1, "query tile rows B_r");
  require_at_least(blocks.key_rows, 1, "key tile rows B_c");
  TileGrid grid;
  grid.query_tiles = seq_len / blocks.query_rows;
  grid.key_tiles = seq_len / blocks.key_rows;
  for (int64_t i = 0; i < grid.query_tiles; ++i) {
    const int64_t first = i * blocks.query_rows;
    const int64_t last = std::min(first + blocks.query_rows, seq_len) - 1;
    const int64_t computed = std::min(grid.key_tiles, last / blocks.key_rows + 1);
    const int64_t full = first == seq_len - 1 ? grid.key_tiles : (first + 1) / blocks.key_rows;
    grid.full += full;
    grid.partial += computed - full;
    grid.skipped += grid.key_tiles - computed;
  }
  return grid;
}

int64_t tile_step_working_set_bytes(BlockSizes blocks, int64_t head_dim, int64_t element_bytes) {
  require_at_least(blocks.query_rows, 1, "query tile rows B_r");
  require_at_least(blocks.key_rows, 1, "key tile rows B_c");
  require_at_least(head_dim, 1, "head size d");
  require_at_least(element_bytes, 1, "element bytes");
  const int64_t br = blocks.query_rows, bc = blocks.key_rows, d = head_dim;
  const int64_t inputs = (br * d + 2 * bc * d) * element_bytes;
  const int64_t f32 = (br * d + 2 * br + br * bc) * 4;
  return inputs + f32;
}

AttentionExtraBytes attention_extra_bytes(int64_t batch, int64_t heads, int64_t seq_len,
                                          int64_t element_bytes) {
  require_at_least(batch, 0, "batch B");
  require_at_least(heads, 0, "heads H");
  require_at_least(seq_len, 0, "sequence length T");
  require_at_least(element_bytes, 1, "element bytes");
  const int64_t rows = checked_product(checked_product(batch, heads, "B H"), seq_len, "B H T");
  const int64_t flash = checked_product(rows, 4, "the lse bytes B H T 4");
  const int64_t naive = checked_product(checked_product(rows, seq_len, "B H T T"), element_bytes,
                                        "the probabilities' bytes B H T T bytes");
  return AttentionExtraBytes{naive, flash};
}

}  // namespace vramlab::lesson06
