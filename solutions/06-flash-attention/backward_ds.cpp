// Reference solution of exercise 06.3: delta and dS of the flash-attention backward
// (lessons/06-flash-attention/api/backward_ds.h).
#include "lessons/06-flash-attention/api/backward_ds.h"

namespace vramlab::lesson06 {

//! [reference]
void backward_delta(std::span<const float> dout, std::span<const float> out, int64_t rows,
                    int64_t head_dim, std::span<float> delta) {
  // Σ_u P[t,u]·dP[t,u] = Σ_u P[t,u]·(dO_t · v_u) = dO_t · (Σ_u P[t,u]·v_u) = dO_t · O_t:
  // the row of P and dP the naive backward sums is folded into O, which the forward saved.
  for (int64_t t = 0; t < rows; ++t) {
    float sum = 0.0f;
    for (int64_t i = 0; i < head_dim; ++i) sum += dout[t * head_dim + i] * out[t * head_dim + i];
    delta[t] = sum;
  }
}

void backward_ds_tile(std::span<const float> p, std::span<const float> dp,
                      std::span<const float> delta, int64_t rows, int64_t cols, TilePosition at,
                      std::span<float> ds) {
  for (int64_t r = 0; r < rows; ++r) {
    const float row_delta = delta[at.query_start + r];  // delta belongs to the query row
    for (int64_t c = 0; c < cols; ++c)
      ds[r * cols + c] = p[r * cols + c] * (dp[r * cols + c] - row_delta);
  }
}
//! [reference]

}  // namespace vramlab::lesson06
