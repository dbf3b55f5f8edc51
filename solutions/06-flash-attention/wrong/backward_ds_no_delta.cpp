// Known-wrong variant of exercise 06.3, kept whole: it rewrites most of the function.
// Mistake: forgets delta: dS = P * dP
// Caught by: BackwardDs.EveryTileOfDSMatchesTheNaiveSoftmaxBackward
#include "lessons/06-flash-attention/api/backward_ds.h"

namespace vramlab::lesson06 {

void backward_delta(std::span<const float> dout, std::span<const float> out, int64_t rows,
                    int64_t head_dim, std::span<float> delta) {
  for (int64_t t = 0; t < rows; ++t) {
    float sum = 0.0f;
    for (int64_t i = 0; i < head_dim; ++i) sum += dout[t * head_dim + i] * out[t * head_dim + i];
    delta[t] = sum;
  }
}

void backward_ds_tile(std::span<const float> p, std::span<const float> dp,
                      [[maybe_unused]] std::span<const float> delta, int64_t rows, int64_t cols,
                      [[maybe_unused]] TilePosition at, std::span<float> ds) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) ds[r * cols + c] = p[r * cols + c] * dp[r * cols + c];
  }
}

}  // namespace vramlab::lesson06
