// Reference solution of exercise 06.2: one tile step of the flash-attention forward
// (lessons/06-flash-attention/api/forward_tile_step.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "lessons/06-flash-attention/api/forward_tile_step.h"

namespace vramlab::lesson06 {

namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

}  // namespace

//! [reference]
void forward_tile_step(QueryTileState& state, std::span<const float> q, std::span<const float> k,
                       std::span<const float> v, int64_t key_rows, TilePosition at, float scale) {
  const int64_t d = state.head_dim;
  std::vector<float> scores(static_cast<size_t>(key_rows));  // (key_rows) one row of S
  for (int64_t r = 0; r < state.rows; ++r) {
    const int64_t query_position = at.query_start + r;
    float tile_max = kMasked;
    for (int64_t c = 0; c < key_rows; ++c) {
      float s = kMasked;
      if (at.key_start + c <= query_position) {  // a query sees itself: ≤, not <
        float dot = 0.0f;
        for (int64_t i = 0; i < d; ++i) dot += q[r * d + i] * k[c * d + i];
        s = scale * dot;
      }
      scores[c] = s;
      tile_max = std::max(tile_max, s);
    }
    const float old_max = state.max[r];
    const float new_max = std::max(old_max, tile_max);
    // No visible key yet: the row stays (−inf, 0, 0); exp(−inf − (−inf)) would be NaN.
    if (new_max == kMasked) continue;
    // What the row holds was measured from old_max; from new_max it is exp(old_max − new_max) ≤ 1
    // times as large, ℓ and the accumulator alike (0 when old_max is −inf).
    const float rescale = std::exp(old_max - new_max);
    float* acc = state.acc.data() + r * d;
    for (int64_t i = 0; i < d; ++i) acc[i] *= rescale;
    float sum = state.sum[r] * rescale;
    for (int64_t c = 0; c < key_rows; ++c) {
      const float p = std::exp(scores[c] - new_max);  // 0 where masked
      sum += p;
      for (int64_t i = 0; i < d; ++i) acc[i] += p * v[c * d + i];
    }
    state.max[r] = new_max;
    state.sum[r] = sum;
  }
}

void forward_tile_finish(const QueryTileState& state, std::span<float> out, std::span<float> lse) {
  const int64_t d = state.head_dim;
  for (int64_t r = 0; r < state.rows; ++r) {
    const float sum = state.sum[r];
    // FA2 divides once here instead of after every tile: rows · d divisions in all.
    for (int64_t i = 0; i < d; ++i) out[r * d + i] = sum > 0.0f ? state.acc[r * d + i] / sum : 0.0f;
    lse[r] = sum > 0.0f ? state.max[r] + std::log(sum) : kMasked;
  }
}
//! [reference]

}  // namespace vramlab::lesson06
