// Known-wrong variant of exercise 06.3, kept whole: it rewrites most of the function.
// Mistake: computes dS = dP - delta without the factor P, so masked entries get a gradient
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

void backward_ds_tile([[maybe_unused]] std::span<const float> p, std::span<const float> dp,
                      std::span<const float> delta, int64_t rows, int64_t cols, TilePosition at,
                      std::span<float> ds) {
  for (int64_t r = 0; r < rows; ++r) {
    const float row_delta = delta[at.query_start + r];
    for (int64_t c = 0; c < cols; ++c) ds[r * cols + c] = dp[r * cols + c] - row_delta;
  }
}

}  // namespace vramlab::lesson06
