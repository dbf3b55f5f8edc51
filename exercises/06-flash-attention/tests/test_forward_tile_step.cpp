// Tests of exercise 06.2 (one tile step of the flash-attention forward). They run against your
// code (`vramlab check 06.2`) and against the reference (ctest: test_ex_06_2_ref).
// Expectations: computed here in double from the same f32 inputs: after every step, the state of
// each row from the visible keys of the tiles visited so far (m, ℓ, and acc / ℓ, the weighted
// mean of those keys' values); after finish, causal softmax attention of the whole sequence
// (naive: the full (T, T) scores). Seeded random q, k, v; sequence lengths and head sizes that are
// no multiple of the tiles (T = 1 … 131, d = 1 … 64), tiles of 1 row, odd tiles and tiles longer
// than the sequence; tiles in FlashAttention-2's order and shuffled (a tile above the diagonal
// first: rows with no visible key); scores near ±300, where exp without the max overflows.
// Tolerances (f32 scores and sums against double) follow from the error of one f32 score e
// (1e-5 for scores near ±5, 5e-5 near ±600, see kScoreError): m e + 1e-6·|m|; ℓ relative 2e;
// acc / ℓ and out 2e + 2e-5·|value|; lse 2e + 1e-6·|lse|. The reference stays under half of each.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/06-flash-attention/api/forward_tile_step.h"

namespace vramlab::lesson06 {
namespace {

using workbook::Comparison;
using workbook::Unit;

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();
// Scores of about ±5 from dot products of up to 64 f32 terms: the reference's worst is 1e-6.
constexpr double kScoreError = 1e-5;
// Scores of about ±600: f32's ulp there is 6e-5.
constexpr double kLargeScoreError = 5e-5;

// One (batch, head) of attention: q, k, v (T, d) row-major in f32.
struct Sequence {
  int64_t T = 0;
  int64_t d = 0;
  std::vector<float> q, k, v;  // (T, d) each
  float scale = 1.0f;
};

Sequence random_sequence(std::mt19937_64& rng, int64_t T, int64_t d, float score_size) {
  Sequence s;
  s.T = T;
  s.d = d;
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (auto* x : {&s.q, &s.k, &s.v}) {
    x->resize(static_cast<size_t>(T * d));
    for (auto& e : *x) e = dist(rng);
  }
  // score_size scales q so that scores reach about ±score_size (1/√d alone gives about ±1).
  for (auto& e : s.q) e *= score_size;
  s.scale = 1.0f / std::sqrt(static_cast<float>(d));
  return s;
}

double score(const Sequence& s, int64_t t, int64_t u) {
  double dot = 0.0;
  for (int64_t i = 0; i < s.d; ++i)
    dot += static_cast<double>(s.q[t * s.d + i]) * static_cast<double>(s.k[u * s.d + i]);
  return static_cast<double>(s.scale) * dot;
}

// The state of query row t over the visible keys among `keys`: m, ℓ and acc / ℓ (d values).
struct RowExpected {
  double max = kMinusInf;
  double sum = 0.0;
  std::vector<double> mean;  // (d) acc / ℓ; 0 when no key is visible
};

RowExpected expected_row(const Sequence& s, int64_t t, const std::vector<int64_t>& keys) {
  RowExpected e;
  e.mean.assign(static_cast<size_t>(s.d), 0.0);
  for (const int64_t u : keys)
    if (u <= t) e.max = std::max(e.max, score(s, t, u));
  if (e.max == kMinusInf) return e;
  for (const int64_t u : keys) {
    if (u > t) continue;
    const double p = std::exp(score(s, t, u) - e.max);
    e.sum += p;
    for (int64_t i = 0; i < s.d; ++i) e.mean[i] += p * s.v[u * s.d + i];
  }
  for (auto& x : e.mean) x /= e.sum;
  return e;
}

// score_error: how far an f32 score may be from the double one (its dot product's rounding);
// every other tolerance follows from it.
struct Checks {
  explicit Checks(double score_error)
      : max("running max m of a row", Unit::kNumber, score_error, 1e-6),
        sum("running sum l of a row", Unit::kNumber, 0.0, 2 * score_error),
        acc("acc / l (expected l): the weighted mean of the visible v", Unit::kNumber,
            2 * score_error, 2e-5),
        out("out = attention(q, k, v), causal", Unit::kNumber, 2 * score_error, 2e-5),
        lse("lse = log sum exp of the visible scores", Unit::kNumber, 2 * score_error, 1e-6) {}
  Comparison max, sum, acc, out, lse;

  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(max);
    VRAMLAB_EXPECT_PASSES(sum);
    VRAMLAB_EXPECT_PASSES(acc);
    VRAMLAB_EXPECT_PASSES(out);
    VRAMLAB_EXPECT_PASSES(lse);
  }
};

// Runs every query tile over the key tiles `order(i)` gives, checking the state after each step
// and the output after finish.
template <typename Order>
void run_sequence(Checks& checks, const Sequence& s, int64_t Br, int64_t Bc,
                  const std::string& name, Order order) {
  const int64_t d = s.d;
  const std::string shape = name + " T=" + std::to_string(s.T) + " d=" + std::to_string(d) +
                            " Br=" + std::to_string(Br) + " Bc=" + std::to_string(Bc);
  for (int64_t q0 = 0; q0 < s.T; q0 += Br) {
    const int64_t rows = std::min(Br, s.T - q0);
    QueryTileState state = start_query_tile(rows, d);
    const std::span<const float> q(s.q.data() + q0 * d, static_cast<size_t>(rows * d));
    std::vector<int64_t> keys_seen;
    for (const int64_t k0 : order(q0, rows)) {
      const int64_t key_rows = std::min(Bc, s.T - k0);
      const std::span<const float> k(s.k.data() + k0 * d, static_cast<size_t>(key_rows * d));
      const std::span<const float> v(s.v.data() + k0 * d, static_cast<size_t>(key_rows * d));
      forward_tile_step(state, q, k, v, key_rows, TilePosition{q0, k0}, s.scale);
      for (int64_t u = k0; u < k0 + key_rows; ++u) keys_seen.push_back(u);
      for (int64_t r = 0; r < rows; ++r) {
        const RowExpected e = expected_row(s, q0 + r, keys_seen);
        const std::string at =
            shape + " query " + std::to_string(q0 + r) + " after key tile at " + std::to_string(k0);
        checks.max.add(at, e.max, state.max[r]);
        checks.sum.add(at, e.sum, state.sum[r]);
        for (int64_t i = 0; i < d; ++i) {
          // Divided by the expected ℓ, so the tolerance is that of a mean of v; 0 when none.
          const double got = e.sum > 0.0 ? state.acc[r * d + i] / e.sum : state.acc[r * d + i];
          checks.acc.add(at + " dim " + std::to_string(i), e.mean[i], got);
        }
      }
    }
    std::vector<float> out(static_cast<size_t>(rows * d)), lse(static_cast<size_t>(rows));
    forward_tile_finish(state, out, lse);
    std::vector<int64_t> all(static_cast<size_t>(s.T));
    std::iota(all.begin(), all.end(), 0);
    for (int64_t r = 0; r < rows; ++r) {
      const RowExpected e = expected_row(s, q0 + r, all);  // naive causal attention of the row
      const std::string at = shape + " query " + std::to_string(q0 + r);
      checks.lse.add(at, e.max + std::log(e.sum), lse[r]);
      for (int64_t i = 0; i < d; ++i)
        checks.out.add(at + " dim " + std::to_string(i), e.mean[i], out[r * d + i]);
    }
  }
}

// FlashAttention-2's order: key tiles from the start up to the last one with a visible key.
auto in_order(int64_t T, int64_t Bc) {
  return [T, Bc](int64_t q0, int64_t rows) {
    std::vector<int64_t> starts;
    for (int64_t k0 = 0; k0 < T && k0 <= q0 + rows - 1; k0 += Bc) starts.push_back(k0);
    return starts;
  };
}

TEST(ForwardTileStep, EveryTileSizeAndOddLengthMatchesNaiveCausalAttention) {
  std::mt19937_64 rng(621);
  Checks checks(kScoreError);
  const int64_t shapes[][2] = {{1, 1}, {5, 3}, {37, 16}, {100, 7}, {131, 64}};
  const int64_t tiles[][2] = {{1, 1}, {2, 3}, {16, 16}, {7, 5}, {64, 32}, {200, 200}};
  for (const auto& [T, d] : shapes) {
    const Sequence s = random_sequence(rng, T, d, 1.0f);
    for (const auto& [Br, Bc] : tiles) run_sequence(checks, s, Br, Bc, "N(0,1)", in_order(T, Bc));
  }
  checks.expect_passes();
}

//! [test]
TEST(ForwardTileStep, KeyTilesInAnyOrderIncludingTilesAboveTheDiagonalFirst) {
  std::mt19937_64 rng(622);
  Checks checks(kScoreError);
  for (const auto& [T, d, Br, Bc] :
       std::vector<std::array<int64_t, 4>>{{9, 4, 3, 2}, {40, 8, 8, 5}, {77, 16, 16, 16}}) {
    const Sequence s = random_sequence(rng, T, d, 1.0f);
    auto shuffled = [&rng, T = T, Bc = Bc](int64_t, int64_t) {
      std::vector<int64_t> starts;  // every key tile, even those the query tile cannot see
      for (int64_t k0 = 0; k0 < T; k0 += Bc) starts.push_back(k0);
      std::shuffle(starts.begin(), starts.end(), rng);
      return starts;
    };
    run_sequence(checks, s, Br, Bc, "shuffled tiles", shuffled);
    auto backwards = [T = T, Bc = Bc](int64_t, int64_t) {
      std::vector<int64_t> starts;  // the last (most masked) tile first: the max rises later
      for (int64_t k0 = ((T - 1) / Bc) * Bc; k0 >= 0; k0 -= Bc) starts.push_back(k0);
      return starts;
    };
    run_sequence(checks, s, Br, Bc, "last tile first", backwards);
  }
  checks.expect_passes();
}
//! [test]

TEST(ForwardTileStep, ScoresNear300NeitherOverflowNorLoseTheSmallTerms) {
  std::mt19937_64 rng(623);
  Checks checks(kLargeScoreError);
  for (const auto& [T, d] : std::vector<std::array<int64_t, 2>>{{23, 5}, {64, 12}}) {
    const Sequence s = random_sequence(rng, T, d, 150.0f);
    for (const int64_t Bc : {1, 4, 9})
      run_sequence(checks, s, 8, Bc, "scores ~ +-300", in_order(T, Bc));
  }
  checks.expect_passes();
}

TEST(ForwardTileStep, ARowWithNoVisibleKeyStaysEmptyAndFinishesAsZeroAndMinusInfinity) {
  std::mt19937_64 rng(624);
  const Sequence s = random_sequence(rng, 12, 3, 1.0f);
  const int64_t d = s.d;
  // Query tile of positions 0 … 3 against the key tile 4 … 11: every score is masked.
  QueryTileState state = start_query_tile(4, d);
  const std::span<const float> q(s.q.data(), 4 * d);
  const std::span<const float> k(s.k.data() + 4 * d, 8 * d), v(s.v.data() + 4 * d, 8 * d);
  forward_tile_step(state, q, k, v, 8, TilePosition{0, 4}, s.scale);
  Comparison empty{"state of a row with no visible key (m, l, acc) and its out", Unit::kNumber};
  for (int64_t r = 0; r < 4; ++r) {
    const std::string at = "query " + std::to_string(r) + " after keys 4..11";
    empty.add(at + " m", kMinusInf, state.max[r]);
    empty.add(at + " l", 0.0, state.sum[r]);
    for (int64_t i = 0; i < d; ++i) empty.add(at + " acc", 0.0, state.acc[r * d + i]);
  }
  std::vector<float> out(static_cast<size_t>(4 * d), 1.0f), lse(4, 1.0f);
  forward_tile_finish(state, out, lse);
  for (int64_t r = 0; r < 4; ++r) {
    empty.add("finish query " + std::to_string(r) + " lse", kMinusInf, lse[r]);
    for (int64_t i = 0; i < d; ++i)
      empty.add("finish query " + std::to_string(r) + " out", 0.0, out[r * d + i]);
  }
  VRAMLAB_EXPECT_PASSES(empty);
}

}  // namespace
}  // namespace vramlab::lesson06
