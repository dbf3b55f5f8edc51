// Known-wrong variant of exercise 06.2 (kept for `vramlab verify`, never linked into a lesson):
// masks with key < query instead of key ≤ query, so no query sees itself (the diagonal).
// The exercise's tests must fail for it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "lessons/06-flash-attention/api/forward_tile_step.h"

namespace vramlab::lesson06 {

namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

}  // namespace

void forward_tile_step(QueryTileState& state, std::span<const float> q, std::span<const float> k,
                       std::span<const float> v, int64_t key_rows, TilePosition at, float scale) {
  const int64_t d = state.head_dim;
  std::vector<float> scores(static_cast<size_t>(key_rows));
  for (int64_t r = 0; r < state.rows; ++r) {
    const int64_t query_position = at.query_start + r;
    float tile_max = kMasked;
    for (int64_t c = 0; c < key_rows; ++c) {
      float s = kMasked;
      if (at.key_start + c < query_position) {
        float dot = 0.0f;
        for (int64_t i = 0; i < d; ++i) dot += q[r * d + i] * k[c * d + i];
        s = scale * dot;
      }
      scores[c] = s;
      tile_max = std::max(tile_max, s);
    }
    const float old_max = state.max[r];
    const float new_max = std::max(old_max, tile_max);
    if (new_max == kMasked) continue;
    const float rescale = std::exp(old_max - new_max);
    float* acc = state.acc.data() + r * d;
    for (int64_t i = 0; i < d; ++i) acc[i] *= rescale;
    float sum = state.sum[r] * rescale;
    for (int64_t c = 0; c < key_rows; ++c) {
      const float p = std::exp(scores[c] - new_max);
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
    for (int64_t i = 0; i < d; ++i) out[r * d + i] = sum > 0.0f ? state.acc[r * d + i] / sum : 0.0f;
    lse[r] = sum > 0.0f ? state.max[r] + std::log(sum) : kMasked;
  }
}

}  // namespace vramlab::lesson06
