// Tests of exercise 06.3 (delta = rowsum(dO ∘ O) and dS = P ∘ (dP − delta) of the
// flash-attention backward). They run against your code (`vramlab check 06.3`) and against the
// reference (ctest: test_ex_06_3_ref).
// Expectations: computed here in double from seeded random q, k, v, dO of one causal (batch,
// head): P = softmax(q kᵀ / √d) row by row with the causal mask, O = P v, dP = dO vᵀ. delta must
// equal rowsum(P ∘ dP), the naive backward's term, which the function never sees; every tile of
// dS (tiles at every position, straddling the diagonal or above it, odd sizes) must equal the
// naive softmax backward P ∘ (dP − rowsum(P ∘ dP)); masked entries exactly 0.
// Tolerances: delta 1e-5 + 1e-5·|delta| (a dot product of up to 64 f32 terms of size ≤ 3, and O
// rounded to f32); dS 1e-6 + 1e-5·|dS| (f32 inputs, two roundings).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/06-flash-attention/api/backward_ds.h"

namespace vramlab::lesson06 {
namespace {

using workbook::Comparison;
using workbook::Unit;

// One causal (batch, head) and its backward's dense quantities, in double and in f32.
struct Backward {
  int64_t T = 0, d = 0;
  std::vector<double> p, dp;         // (T, T) P and dP
  std::vector<double> naive_delta;   // (T) rowsum(P ∘ dP)
  std::vector<float> out_f, dout_f;  // (T, d) O and dO as the backward receives them
  std::vector<float> p_f, dp_f;      // (T, T)
};

Backward random_backward(std::mt19937_64& rng, int64_t T, int64_t d, double score_size) {
  Backward b;
  b.T = T;
  b.d = d;
  std::normal_distribution<double> dist(0.0, 1.0);
  auto random = [&](int64_t n) {
    std::vector<double> x(static_cast<size_t>(n));
    for (auto& e : x) e = dist(rng);
    return x;
  };
  const std::vector<double> q = random(T * d), k = random(T * d), v = random(T * d),
                            dout = random(T * d);
  const double scale = score_size / std::sqrt(static_cast<double>(d));
  b.p.assign(static_cast<size_t>(T * T), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> s(static_cast<size_t>(t + 1));
    for (int64_t u = 0; u <= t; ++u) {
      double dot = 0.0;
      for (int64_t i = 0; i < d; ++i) dot += q[t * d + i] * k[u * d + i];
      s[u] = scale * dot;
    }
    const double m = *std::max_element(s.begin(), s.end());
    double l = 0.0;
    for (const double x : s) l += std::exp(x - m);
    for (int64_t u = 0; u <= t; ++u) b.p[t * T + u] = std::exp(s[u] - m) / l;  // above: 0
  }
  b.dp.assign(static_cast<size_t>(T * T), 0.0);
  b.naive_delta.assign(static_cast<size_t>(T), 0.0);
  b.out_f.resize(static_cast<size_t>(T * d));
  b.dout_f.resize(static_cast<size_t>(T * d));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < d; ++i) {
      double o = 0.0;
      for (int64_t u = 0; u < T; ++u) o += b.p[t * T + u] * v[u * d + i];
      b.out_f[t * d + i] = static_cast<float>(o);
      b.dout_f[t * d + i] = static_cast<float>(dout[t * d + i]);
    }
    for (int64_t u = 0; u < T; ++u) {
      double dot = 0.0;
      for (int64_t i = 0; i < d; ++i) dot += dout[t * d + i] * v[u * d + i];
      b.dp[t * T + u] = dot;
      b.naive_delta[t] += b.p[t * T + u] * dot;
    }
  }
  b.p_f.assign(b.p.begin(), b.p.end());
  b.dp_f.assign(b.dp.begin(), b.dp.end());
  return b;
}

std::string shape(const Backward& b) {
  return "T=" + std::to_string(b.T) + " d=" + std::to_string(b.d);
}

// Runs backward_ds_tile over every (query tile, key tile) of the sequence, the delta given in f32.
void check_tiles(Comparison& ds, const Backward& b, int64_t Br, int64_t Bc,
                 const std::vector<float>& delta) {
  const int64_t T = b.T;
  for (int64_t q0 = 0; q0 < T; q0 += Br) {
    for (int64_t k0 = 0; k0 < T; k0 += Bc) {
      const int64_t rows = std::min(Br, T - q0), cols = std::min(Bc, T - k0);
      std::vector<float> p(static_cast<size_t>(rows * cols)), dp(p.size()), got(p.size(), 7.0f);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          p[r * cols + c] = b.p_f[(q0 + r) * T + k0 + c];
          dp[r * cols + c] = b.dp_f[(q0 + r) * T + k0 + c];
        }
      backward_ds_tile(p, dp, delta, rows, cols, TilePosition{q0, k0}, got);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t t = q0 + r, u = k0 + c;
          const double expected = b.p[t * T + u] * (b.dp[t * T + u] - b.naive_delta[t]);
          ds.add(shape(b) + " Br=" + std::to_string(Br) + " Bc=" + std::to_string(Bc) +
                     " tile at (" + std::to_string(q0) + ", " + std::to_string(k0) + ") dS[" +
                     std::to_string(t) + ", " + std::to_string(u) + "]" +
                     (u > t ? " (masked)" : ""),
                 expected, got[r * cols + c]);
        }
    }
  }
}

std::vector<float> f32(const std::vector<double>& x) {
  return std::vector<float>(x.begin(), x.end());
}

//! [test]
TEST(BackwardDs, DeltaFromTheOutputEqualsRowsumOfPTimesDP) {
  std::mt19937_64 rng(631);
  Comparison delta("delta[t] (expected: rowsum(P o dP), the naive backward's)", Unit::kNumber, 1e-5,
                   1e-5);
  const int64_t shapes[][2] = {{1, 1}, {2, 5}, {17, 3}, {50, 64}, {97, 16}};
  for (const auto& [T, d] : shapes) {
    for (const double score_size : {1.0, 8.0}) {
      const Backward b = random_backward(rng, T, d, score_size);
      std::vector<float> got(static_cast<size_t>(T), 7.0f);
      backward_delta(b.dout_f, b.out_f, T, d, got);
      for (int64_t t = 0; t < T; ++t)
        delta.add(shape(b) + " scores x" + std::to_string(static_cast<int>(score_size)) + " row " +
                      std::to_string(t),
                  b.naive_delta[t], got[t]);
    }
  }
  VRAMLAB_EXPECT_PASSES(delta);
}
//! [test]

TEST(BackwardDs, EveryTileOfDSMatchesTheNaiveSoftmaxBackward) {
  std::mt19937_64 rng(632);
  Comparison ds("dS = P o (dP - delta) (expected: the naive softmax backward)", Unit::kNumber, 1e-6,
                1e-5);
  const int64_t shapes[][2] = {{1, 4}, {7, 3}, {33, 8}, {70, 32}};
  const int64_t tiles[][2] = {{1, 1}, {2, 3}, {5, 4}, {16, 16}, {64, 8}, {100, 100}};
  for (const auto& [T, d] : shapes) {
    const Backward b = random_backward(rng, T, d, 2.0);
    for (const auto& [Br, Bc] : tiles) check_tiles(ds, b, Br, Bc, f32(b.naive_delta));
  }
  VRAMLAB_EXPECT_PASSES(ds);
}

TEST(BackwardDs, NearlyOneHotRowsAndTheFirstRowWhoseOnlyKeyIsItself) {
  // Large scores make most of P 0 or 1, where dS is 0; the first query sees only itself: P = 1,
  // delta = dP, so its dS is exactly 0 whatever dP is.
  std::mt19937_64 rng(633);
  Comparison ds("dS of nearly one-hot rows", Unit::kNumber, 1e-6, 1e-5);
  for (const int64_t T : {1, 6, 29}) {
    const Backward b = random_backward(rng, T, 4, 40.0);
    for (const int64_t tile : {1, 3, 8}) check_tiles(ds, b, tile, tile, f32(b.naive_delta));
  }
  VRAMLAB_EXPECT_PASSES(ds);
}

TEST(BackwardDs, DeltaOfRowsWithCancellingTermsAndOfAnEmptyTile) {
  // dO orthogonal to O row by row: delta 0 although every product is large.
  std::mt19937_64 rng(634);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  Comparison delta("delta of rows where dO is orthogonal to O", Unit::kNumber, 1e-5, 1e-5);
  for (const int64_t d : {2, 9, 64}) {
    const int64_t rows = 11;
    std::vector<float> out(static_cast<size_t>(rows * d)), dout(out.size());
    for (int64_t t = 0; t < rows; ++t) {
      for (int64_t i = 0; i < d; i += 2) {
        // pairs (a, b) in O against (b, -a) in dO: every pair's products cancel exactly
        const float a = dist(rng), c = (i + 1 < d) ? dist(rng) : 0.0f;
        out[t * d + i] = a;
        dout[t * d + i] = c;
        if (i + 1 < d) {
          out[t * d + i + 1] = c;
          dout[t * d + i + 1] = -a;
        }
      }
    }
    std::vector<float> got(static_cast<size_t>(rows), 7.0f);
    backward_delta(dout, out, rows, d, got);
    for (int64_t t = 0; t < rows; ++t)
      delta.add("d=" + std::to_string(d) + " row " + std::to_string(t), 0.0, got[t]);
  }
  std::vector<float> none;
  backward_delta(none, none, 0, 8, none);  // zero rows: nothing to write, no crash
  VRAMLAB_EXPECT_PASSES(delta);
}

}  // namespace
}  // namespace vramlab::lesson06
