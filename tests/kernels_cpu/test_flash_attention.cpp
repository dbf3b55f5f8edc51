// Tests of kernels/cpu/flash_attention.h: the tiled forward and backward (fast path and readable
// reference) against the NAIVE attention's double reference (attention.h) at odd lengths, odd tile
// sizes, grouped-query heads and with dropout; 16-bit storage; accumulation into the gradients;
// bitwise determinism across thread counts; the causal tile classification; bad arguments.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "common/platform/errors.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/flash_attention.h"
#include "kernels/cpu/storage.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::random_vector;
using test_util::within_tolerance;

struct Case {
  int64_t B, T, H, Hkv, D, Br, Bc;
};
// Odd T (1, 2, 7, 63, 65, 129, 200), T not a multiple of either tile, tiles of 1 and of T + 5,
// Br ≠ Bc, tile widths that are not whole vectors, GQA (6 heads over 2 and over 1), D ∈ {1, 8,
// 64, 80}, B ∈ {1, 3}.
const Case kCases[] = {
    {1, 1, 1, 1, 1, 64, 64},      {1, 2, 2, 1, 8, 1, 1},      {3, 7, 6, 2, 8, 4, 3},
    {1, 7, 6, 1, 1, 12, 12},      {1, 63, 6, 1, 64, 16, 32},  {1, 65, 6, 2, 64, 64, 64},
    {3, 65, 2, 2, 8, 1, 70},      {1, 129, 6, 2, 80, 32, 17}, {3, 129, 2, 1, 64, 48, 40},
    {1, 200, 6, 2, 64, 205, 205}, {1, 200, 6, 6, 80, 64, 64}, {1, 200, 2, 1, 64, 23, 128},
};

std::string describe(const Case& c) {
  return " B=" + std::to_string(c.B) + " T=" + std::to_string(c.T) + " H=" + std::to_string(c.H) +
         " Hkv=" + std::to_string(c.Hkv) + " D=" + std::to_string(c.D) +
         " Br=" + std::to_string(c.Br) + " Bc=" + std::to_string(c.Bc);
}

// Unit roundoff of the storage: f32 24 significant bits, bf16 8, f16 11.
template <typename A>
double unit_roundoff() {
  if constexpr (std::is_same_v<A, float>) return std::ldexp(1.0, -24);
  if constexpr (std::is_same_v<A, bf16_t>) return std::ldexp(1.0, -8);
  return std::ldexp(1.0, -11);
}

template <typename A>
std::vector<A> to_storage(const std::vector<double>& values) {
  std::vector<A> result(values.size());
  for (size_t i = 0; i < values.size(); i++) result[i] = narrow<A>(static_cast<float>(values[i]));
  return result;
}
template <typename A>
std::vector<double> to_double(const std::vector<A>& values) {
  std::vector<double> result(values.size());
  for (size_t i = 0; i < values.size(); i++) result[i] = static_cast<double>(widen(values[i]));
  return result;
}

// Random inputs already representable in storage A (so the double reference sees exactly what the
// kernel sees): q, k in [-2, 2] (scores up to 4√D, peaked softmax rows), v, dout in [-1, 1], and
// non-zero initial gradients (the backward accumulates).
struct Inputs {
  std::vector<double> q, k, v, dout, dq0, dk0, dv0;
};
template <typename A>
Inputs random_inputs(const Case& c, uint64_t seed) {
  const auto rounded = [](std::vector<double> x) { return to_double(to_storage<A>(x)); };
  const int64_t nq = c.B * c.T * c.H * c.D, nkv = c.B * c.T * c.Hkv * c.D;
  return {rounded(random_vector<double>(nq, seed, -2.0, 2.0)),
          rounded(random_vector<double>(nkv, seed + 1, -2.0, 2.0)),
          rounded(random_vector<double>(nkv, seed + 2)),
          rounded(random_vector<double>(nq, seed + 3)),
          rounded(random_vector<double>(nq, seed + 4)),
          rounded(random_vector<double>(nkv, seed + 5)),
          rounded(random_vector<double>(nkv, seed + 6))};
}

// The naive attention in double: out, lse (logsumexp of each row's scaled scores), the
// probabilities, and the initial gradients plus the backward's.
struct Expected {
  std::vector<double> out, lse, att, dq, dk, dv;
};
Expected naive_reference(const Case& c, const Inputs& in, const AttentionDropout& dropout) {
  const auto [B, T, H, Hkv, D, Br, Bc] = c;
  const auto scores = static_cast<size_t>(B * H * T * T);
  Expected e{std::vector<double>(in.q.size()),
             std::vector<double>(static_cast<size_t>(B * H * T)),
             std::vector<double>(scores),
             in.dq0,
             in.dk0,
             in.dv0};
  std::vector<double> preatt(scores), dpreatt(scores);  // (B, H, T, T) each
  attention_forward_reference<double>(e.out.data(), preatt.data(), e.att.data(), in.q.data(),
                                      in.k.data(), in.v.data(), B, T, H, Hkv, D, dropout);
  for (int64_t row = 0; row < B * H * T; row++) {
    const int64_t t = row % T;
    const double* scores_row = preatt.data() + row * T;  // (T), -inf after t
    const double max_score = *std::max_element(scores_row, scores_row + t + 1);
    double sum = 0.0;
    for (int64_t s = 0; s <= t; s++) sum += std::exp(scores_row[s] - max_score);
    e.lse[static_cast<size_t>(row)] = max_score + std::log(sum);
  }
  attention_backward_reference<double>(e.dq.data(), e.dk.data(), e.dv.data(), dpreatt.data(),
                                       in.dout.data(), in.q.data(), in.k.data(), in.v.data(),
                                       e.att.data(), B, T, H, Hkv, D, dropout);
  return e;
}

// Tolerances of the f32 arithmetic (the fast path computes in f32 whatever the storage), from the
// usual model of rounding errors that add up like a random walk: a sum of n terms is off by about
// √n·u times its terms' size. A score sums D products of size ≤ 4 and is scaled by 1/√D, so it is
// off by ~4·√D·u; exp carries that into the probabilities and the output (a convex combination of
// |v| ≤ 1) as a relative error; lse adds the error of ℓ, a sum of ≤ T terms. A gradient element
// sums T (dq) or T·H/Hkv (dk, dv) terms. The factor 4 on top is the margin; the measured worst
// cases use 4–30% of these; the 16-bit cases are dominated by the one final rounding.
double f32_unit() {
  return std::ldexp(1.0, -24);
}
double out_atol(int64_t D) {
  return 16.0 * std::sqrt(static_cast<double>(D)) * f32_unit();
}
double lse_atol(int64_t D, int64_t T) {
  return 4.0 * (std::sqrt(static_cast<double>(D)) + std::sqrt(static_cast<double>(T))) * f32_unit();
}
double gradient_tol(int64_t terms, double expected) {
  return 8.0 * std::sqrt(static_cast<double>(terms)) * f32_unit() * (1.0 + std::fabs(expected));
}

// Checks a result in storage A: |actual − expected| ≤ atol(i) + u_A·|expected| (the single final
// rounding to A).
template <typename A>
::testing::AssertionResult close_in_storage(const std::string& what, const std::vector<A>& actual,
                                            const std::vector<double>& expected,
                                            const std::function<double(int64_t)>& atol,
                                            const std::string& atol_text) {
  const std::vector<double> got = to_double(actual);
  const double u = std::is_same_v<A, float> ? 0.0 : unit_roundoff<A>();
  return within_tolerance(
      what, got.data(), expected.data(), static_cast<int64_t>(got.size()),
      [&](int64_t i) { return atol(i) + u * std::fabs(expected[static_cast<size_t>(i)]); },
      atol_text + " + u_A·|expected|");
}

// Runs the fast forward and backward on storage A for one case and compares with the naive double
// reference. The backward is given the reference's out (rounded to A) and lse (rounded to f32), so
// it is judged on its own error, as the naive backward test does with att.
template <typename A>
void expect_fast_matches_naive(const Case& c, const AttentionDropout& dropout, uint64_t seed) {
  // Named copies, not a structured binding: the lambdas below use them, and clang 14 (the
  // sanitizer build) cannot capture a binding.
  const int64_t B = c.B, T = c.T, H = c.H, Hkv = c.Hkv, D = c.D, Br = c.Br, Bc = c.Bc;
  const FlashTiles tiles{Br, Bc};
  const Inputs in = random_inputs<A>(c, seed);
  const Expected e = naive_reference(c, in, dropout);
  const std::string name = describe(c) + " p=" + std::to_string(dropout.p);
  const auto q = to_storage<A>(in.q), k = to_storage<A>(in.k), v = to_storage<A>(in.v),
             dout = to_storage<A>(in.dout);
  std::vector<A> out(q.size(), narrow<A>(NAN));                 // (B, T, H, D)
  std::vector<float> lse(static_cast<size_t>(B * H * T), NAN);  // (B, H, T)
  flash_attention_forward<A>(out.data(), lse.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D,
                             dropout, tiles);
  // With dropout the output is no longer a convex combination: kept terms are scaled by 1/(1 − p).
  const double keep_scale = 1.0 / (1.0 - dropout.p);
  EXPECT_TRUE(close_in_storage<A>(
      "out" + name, out, e.out, [&](int64_t) { return out_atol(D) * keep_scale; },
      "16·√D·u·keep_scale"));
  // lse = m + log ℓ: the score error plus the relative error of ℓ, a sum of at most T terms.
  const std::vector<double> lse64(lse.begin(), lse.end());
  EXPECT_TRUE(within_tolerance(
      "lse" + name, lse64.data(), e.lse.data(), static_cast<int64_t>(lse64.size()),
      [&](int64_t) { return lse_atol(D, T); }, "4·(√D + √T)·u"));

  auto dq = to_storage<A>(in.dq0), dk = to_storage<A>(in.dk0), dv = to_storage<A>(in.dv0);
  const auto out_ref = to_storage<A>(e.out);
  const std::vector<float> lse_ref(e.lse.begin(), e.lse.end());
  std::vector<float> delta(lse.size(), NAN);  // (B, H, T)
  flash_attention_backward<A>(dq.data(), dk.data(), dv.data(), delta.data(), dout.data(), q.data(),
                              k.data(), v.data(), out_ref.data(), lse_ref.data(), B, T, H, Hkv, D,
                              dropout, tiles);
  // delta = rowsum(dout ∘ out) is computed from out rounded to A: |Δdelta| ≤ u_A·Σ_d|dout·out|,
  // and it enters dS = P·(dP − delta). dq[t] moves by at most scale·|Δdelta_t|·max|k| (row of P
  // sums to 1); dk[s] by scale·max|q|·Σ_t P[t, s]·|Δdelta_t| (a column of P).
  const double u = unit_roundoff<A>(), scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> delta_error(lse.size());  // (B, H, T)
  for (int64_t b = 0; b < B; b++) {
    for (int64_t h = 0; h < H; h++) {
      for (int64_t t = 0; t < T; t++) {
        double sum = 0.0;
        for (int64_t d = 0; d < D; d++) {
          const auto at = static_cast<size_t>(((b * T + t) * H + h) * D + d);
          sum += std::fabs(in.dout[at] * e.out[at]);
        }
        delta_error[static_cast<size_t>((b * H + h) * T + t)] = u * sum;
      }
    }
  }
  const auto max_abs = [](const std::vector<double>& x) {
    double m = 0.0;
    for (double value : x) m = std::max(m, std::fabs(value));
    return m;
  };
  const double max_q = max_abs(in.q), max_k = max_abs(in.k);
  std::vector<double> dk_delta_error(in.k.size());  // (B, T, Hkv, D), the same for every d
  const int64_t group = H / Hkv;
  for (int64_t b = 0; b < B; b++) {
    for (int64_t h = 0; h < H; h++) {
      for (int64_t s = 0; s < T; s++) {
        double column = 0.0;
        for (int64_t t = s; t < T; t++) {
          column += e.att[static_cast<size_t>(((b * H + h) * T + t) * T + s)] *
                    delta_error[static_cast<size_t>((b * H + h) * T + t)];
        }
        for (int64_t d = 0; d < D; d++) {
          dk_delta_error[static_cast<size_t>(((b * T + s) * Hkv + h / group) * D + d)] +=
              scale * max_q * column * keep_scale;
        }
      }
    }
  }
  const int64_t HD = H * D;
  EXPECT_TRUE(close_in_storage<A>(
      "dq" + name, dq, e.dq,
      [&](int64_t i) {
        const int64_t b = i / (T * HD), t = i / HD % T, h = i / D % H;
        return keep_scale * (gradient_tol(T, e.dq[static_cast<size_t>(i)]) +
                             scale * max_k * delta_error[static_cast<size_t>((b * H + h) * T + t)]);
      },
      "8·√T·u·(1 + |expected|)·keep_scale + delta rounding"));
  EXPECT_TRUE(close_in_storage<A>(
      "dk" + name, dk, e.dk,
      [&](int64_t i) {
        return keep_scale * gradient_tol(T * group, e.dk[static_cast<size_t>(i)]) +
               dk_delta_error[static_cast<size_t>(i)];
      },
      "8·√(T·H/Hkv)·u·(1 + |expected|)·keep_scale + delta rounding"));
  EXPECT_TRUE(close_in_storage<A>(
      "dv" + name, dv, e.dv,
      [&](int64_t i) { return keep_scale * gradient_tol(T * group, e.dv[static_cast<size_t>(i)]); },
      "8·√(T·H/Hkv)·u·(1 + |expected|)·keep_scale"));
}

TEST(FlashAttention, FastMatchesTheNaiveDoubleReference) {
  uint64_t seed = 100;
  for (const Case& c : kCases) expect_fast_matches_naive<float>(c, {}, seed += 10);
}

TEST(FlashAttention, FastWithDropoutMatchesTheNaiveWithTheSameMask) {
  uint64_t seed = 200;
  for (const Case& c : kCases) {
    expect_fast_matches_naive<float>(c, AttentionDropout{0.1f, 1234, 77}, seed += 10);
  }
}

TEST(FlashAttention, Bf16StorageMatchesTheNaiveDoubleReference) {
  uint64_t seed = 300;
  for (const Case& c : kCases) expect_fast_matches_naive<bf16_t>(c, {}, seed += 10);
  expect_fast_matches_naive<bf16_t>(kCases[7], AttentionDropout{0.1f, 5, 0}, 399);
}

TEST(FlashAttention, F16StorageMatchesTheNaiveDoubleReference) {
  uint64_t seed = 400;
  for (const Case& c : kCases) expect_fast_matches_naive<f16_t>(c, {}, seed += 10);
  expect_fast_matches_naive<f16_t>(kCases[7], AttentionDropout{0.1f, 6, 0}, 499);
}

TEST(FlashAttention, DefaultTilesMatchTheNaiveDoubleReference) {
  const Case c{1, 200, 4, 2, 64, FlashTiles{}.query_rows, FlashTiles{}.key_rows};
  expect_fast_matches_naive<float>(c, {}, 500);
}

// The readable reference in double differs from the naive double reference only by rounding in
// a different order: relative 1e-12 is a thousand times the double error of these sums.
TEST(FlashAttention, ReferenceInDoubleMatchesTheNaiveDoubleReference) {
  uint64_t seed = 600;
  for (const AttentionDropout& dropout : {AttentionDropout{}, AttentionDropout{0.1f, 9, 3}}) {
    for (const Case& c : kCases) {
      const auto [B, T, H, Hkv, D, Br, Bc] = c;
      const Inputs in = random_inputs<float>(c, seed += 10);
      const Expected e = naive_reference(c, in, dropout);
      const std::string name = describe(c) + " p=" + std::to_string(dropout.p);
      std::vector<double> out(in.q.size(), NAN), lse(static_cast<size_t>(B * H * T), NAN);
      flash_attention_forward_reference<double>(out.data(), lse.data(), in.q.data(), in.k.data(),
                                                in.v.data(), B, T, H, Hkv, D, dropout, {Br, Bc});
      EXPECT_TRUE(test_util::all_close("out" + name, out, e.out, 1e-12, 1e-12));
      EXPECT_TRUE(test_util::all_close("lse" + name, lse, e.lse, 1e-12, 1e-12));
      auto dq = in.dq0, dk = in.dk0, dv = in.dv0;
      std::vector<double> delta(lse.size(), NAN);
      flash_attention_backward_reference<double>(
          dq.data(), dk.data(), dv.data(), delta.data(), in.dout.data(), in.q.data(), in.k.data(),
          in.v.data(), out.data(), lse.data(), B, T, H, Hkv, D, dropout, {Br, Bc});
      EXPECT_TRUE(test_util::all_close("dq" + name, dq, e.dq, 1e-11, 1e-11));
      EXPECT_TRUE(test_util::all_close("dk" + name, dk, e.dk, 1e-11, 1e-11));
      EXPECT_TRUE(test_util::all_close("dv" + name, dv, e.dv, 1e-11, 1e-11));
    }
  }
}

// delta is written (not accumulated) and equals rowsum(dout ∘ out).
TEST(FlashAttention, BackwardWritesDeltaAsTheRowSumOfDoutTimesOut) {
  const Case c{3, 13, 4, 2, 24, 4, 8};
  const auto [B, T, H, Hkv, D, Br, Bc] = c;
  const Inputs in = random_inputs<float>(c, 700);
  const auto q = to_storage<float>(in.q), k = to_storage<float>(in.k), v = to_storage<float>(in.v),
             dout = to_storage<float>(in.dout);
  std::vector<float> out(q.size()), lse(static_cast<size_t>(B * H * T)), delta(lse.size(), 1e30f);
  flash_attention_forward<float>(out.data(), lse.data(), q.data(), k.data(), v.data(), B, T, H, Hkv,
                                 D, {}, {Br, Bc});
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
  flash_attention_backward<float>(dq.data(), dk.data(), dv.data(), delta.data(), dout.data(),
                                  q.data(), k.data(), v.data(), out.data(), lse.data(), B, T, H,
                                  Hkv, D, {}, {Br, Bc});
  std::vector<double> expected(delta.size());
  for (int64_t b = 0; b < B; b++) {
    for (int64_t h = 0; h < H; h++) {
      for (int64_t t = 0; t < T; t++) {
        double sum = 0.0;
        for (int64_t d = 0; d < D; d++) {
          const auto at = static_cast<size_t>(((b * T + t) * H + h) * D + d);
          sum += static_cast<double>(dout[at]) * static_cast<double>(out[at]);
        }
        expected[static_cast<size_t>((b * H + h) * T + t)] = sum;
      }
    }
  }
  // A length-D f32 dot product of terms ≤ 1: error ≤ D·u.
  EXPECT_TRUE(test_util::all_close("delta", delta, expected,
                                   static_cast<double>(D) * std::ldexp(1.0, -24), 0.0));
}

// Every output and gradient is the same bits for 1, 2 and 3 threads (no atomics, each tile's sums
// in a fixed order whatever thread computes it).
template <typename A>
std::vector<std::vector<float>> run_flash(const AttentionDropout& dropout) {
  const Case c{2, 77, 6, 2, 40, 16, 24};
  const auto [B, T, H, Hkv, D, Br, Bc] = c;
  const Inputs in = random_inputs<A>(c, 800);
  const auto q = to_storage<A>(in.q), k = to_storage<A>(in.k), v = to_storage<A>(in.v),
             dout = to_storage<A>(in.dout);
  std::vector<A> out(q.size());
  std::vector<float> lse(static_cast<size_t>(B * H * T)), delta(lse.size());
  flash_attention_forward<A>(out.data(), lse.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D,
                             dropout, {Br, Bc});
  auto dq = to_storage<A>(in.dq0), dk = to_storage<A>(in.dk0), dv = to_storage<A>(in.dv0);
  flash_attention_backward<A>(dq.data(), dk.data(), dv.data(), delta.data(), dout.data(), q.data(),
                              k.data(), v.data(), out.data(), lse.data(), B, T, H, Hkv, D, dropout,
                              {Br, Bc});
  const auto as_float = [](const std::vector<A>& x) {
    std::vector<float> result(x.size());
    for (size_t i = 0; i < x.size(); i++) result[i] = widen(x[i]);
    return result;
  };
  return {as_float(out), lse, delta, as_float(dq), as_float(dk), as_float(dv)};
}

template <typename A>
void expect_same_bits_for_any_thread_count(const std::string& what) {
  const AttentionDropout dropout{0.15f, 42, 5};
  const int saved = omp_get_max_threads();
  std::vector<std::vector<std::vector<float>>> runs;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    runs.push_back(run_flash<A>(dropout));
  }
  omp_set_num_threads(saved);
  const char* names[] = {"out", "lse", "delta", "dq", "dk", "dv"};
  for (size_t run = 1; run < runs.size(); run++) {
    for (size_t i = 0; i < runs[0].size(); i++) {
      EXPECT_TRUE(test_util::bitwise_equal(
          what + " " + names[i] + " 1 vs " + std::to_string(run + 1) + " threads", runs[0][i],
          runs[run][i]));
    }
  }
}

TEST(FlashAttention, GivesTheSameBitsForAnyThreadCount) {
  expect_same_bits_for_any_thread_count<float>("f32");
  expect_same_bits_for_any_thread_count<bf16_t>("bf16");
}

// The classification counted tile by tile: skipped when the tile's first key is after its last
// query, full when its last key is at or before its first query.
FlashTileCounts count_tiles_one_by_one(int64_t T, int64_t Br, int64_t Bc) {
  FlashTileCounts counts;
  for (int64_t r0 = 0; r0 < T; r0 += Br) {
    const int64_t r1 = std::min(r0 + Br, T) - 1;
    for (int64_t c0 = 0; c0 < T; c0 += Bc) {
      const int64_t c1 = std::min(c0 + Bc, T) - 1;
      counts.total++;
      if (c0 > r1) {
        counts.skipped++;
      } else if (c1 <= r0) {
        counts.full++;
      } else {
        counts.partial++;
      }
    }
  }
  return counts;
}

void expect_counts(const FlashTileCounts& actual, const FlashTileCounts& expected,
                   const std::string& what) {
  EXPECT_EQ(actual.total, expected.total) << what;
  EXPECT_EQ(actual.full, expected.full) << what;
  EXPECT_EQ(actual.partial, expected.partial) << what;
  EXPECT_EQ(actual.skipped, expected.skipped) << what;
}

TEST(FlashAttention, TileCountsMatchTheTileByTileClassification) {
  for (int64_t T : {0, 1, 2, 7, 63, 64, 65, 129, 200, 1000}) {
    for (int64_t Br : {1, 3, 16, 64, 100}) {
      for (int64_t Bc : {1, 5, 16, 64, 128}) {
        expect_counts(
            flash_tile_counts(T, {Br, Bc}), count_tiles_one_by_one(T, Br, Bc),
            "T=" + std::to_string(T) + " Br=" + std::to_string(Br) + " Bc=" + std::to_string(Bc));
      }
    }
    expect_counts(flash_tile_counts(T, {T + 5, T + 5}), count_tiles_one_by_one(T, T + 5, T + 5),
                  "tiles of T + 5, T=" + std::to_string(T));
  }
}

// 64-bit lengths with closed forms: n square tiles give n diagonal (partial) tiles and n(n − 1)/2
// full and skipped ones; tiles of one score have no partial tile (a diagonal score is visible);
// query tiles twice as tall as key tiles straddle the diagonal with two key tiles each.
TEST(FlashAttention, TileCountsAreExactForSixtyFourBitLengths) {
  const int64_t n = int64_t{1} << 31;
  expect_counts(flash_tile_counts(n * 64, {64, 64}), {n * n, n * (n - 1) / 2, n, n * (n - 1) / 2},
                "square tiles");
  const int64_t T = 3'000'000'000;
  expect_counts(flash_tile_counts(T, {1, 1}), {T * T, T * (T + 1) / 2, 0, T * (T - 1) / 2},
                "tiles of 1");
  const int64_t m = int64_t{1} << 30;  // query tiles of 128 rows, key tiles of 64
  expect_counts(flash_tile_counts(m * 128, {128, 64}),
                {2 * m * m, m * (m - 1), 2 * m, 2 * m * m - m * (m - 1) - 2 * m}, "Br = 2·Bc");
  // The same tile grid one row longer: one more query tile row (1 row) and key tile column.
  const int64_t k = 3'000'000;
  expect_counts(flash_tile_counts(k * 1000 + 1, {1000, 1000}),
                {(k + 1) * (k + 1), k * (k - 1) / 2 + (k + 1), k, k * (k - 1) / 2 + k},
                "a last tile of one row");
}

TEST(FlashAttention, RejectsBadArguments) {
  float x = 0.0f;
  float* p = &x;
  const auto forward = [&](int64_t T, int64_t H, int64_t Hkv, const AttentionDropout& dropout,
                           const FlashTiles& tiles) {
    flash_attention_forward<float>(p, p, p, p, p, 1, T, H, Hkv, 1, dropout, tiles);
  };
  EXPECT_THROW(forward(-1, 1, 1, {}, {}), InternalError);
  EXPECT_THROW(forward(1, 4, 3, {}, {}), InternalError);
  EXPECT_THROW(forward(1, 4, 0, {}, {}), InternalError);
  EXPECT_THROW(forward(1, 1, 1, {}, {0, 64}), InternalError);
  EXPECT_THROW(forward(1, 1, 1, {}, {64, -1}), InternalError);
  EXPECT_THROW(forward(1, 1, 1, {1.0f, 0, 0}, {}), InternalError);
  EXPECT_THROW(forward(1, 1, 1, {NAN, 0, 0}, {}), InternalError);
  EXPECT_THROW(flash_attention_backward<float>(p, p, p, p, p, p, p, p, p, p, 1, 1, 4, 3, 1),
               InternalError);
  EXPECT_THROW(
      flash_attention_backward<float>(p, p, p, p, p, p, p, p, p, p, 1, 1, 1, 1, 1, {}, {1, 0}),
      InternalError);
  double y = 0.0;
  double* r = &y;
  EXPECT_THROW(flash_attention_forward_reference<double>(r, r, r, r, r, 1, 1, 1, 1, -2),
               InternalError);
  EXPECT_THROW(flash_attention_backward_reference<double>(r, r, r, r, r, r, r, r, r, r, 1, 1, 2, 1,
                                                          1, {-0.5f, 0, 0}),
               InternalError);
  EXPECT_THROW(flash_tile_counts(-1), InternalError);
  EXPECT_THROW(flash_tile_counts(8, {0, 1}), InternalError);
  // 2^40 rows in tiles of one: 2^80 tiles do not fit in int64.
  EXPECT_THROW(flash_tile_counts(int64_t{1} << 40, {1, 1}), InternalError);
}

}  // namespace
}  // namespace vramlab::kernels::cpu
