// Tests of exercise 06.1 (the online softmax of one row). They run against your code
// (`vramlab check 06.1`) and against the reference (ctest: test_ex_06_1_ref).
// Expectations: computed here in double from the prefix of the row each block ends: m is the
// exact maximum, ℓ = Σ exp(s − m) and lse = m + log ℓ. Rows: seeded random scores at several
// offsets (around 0, +1000 and −1000), rising and falling rows (the max moves at every block or
// never), random and causal −inf masks, leading all-masked blocks, all-masked and empty rows;
// block sizes 1, odd ones, the row's length ± 1 and far beyond it.
// Tolerances (f32 arithmetic): m exact; ℓ relative 4e-6 (about 67 f32 ulps; the reference's worst
// over these rows is 6e-7, sums of up to 1000 terms ≤ 1 rescaled at every block); lse 4e-6
// absolute (the log of ℓ's relative error) plus one ulp of lse (2.5e-5 at 1000 is half an ulp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/06-flash-attention/api/online_softmax.h"

namespace vramlab::lesson06 {
namespace {

using workbook::Comparison;
using workbook::Unit;

constexpr float kMasked = -std::numeric_limits<float>::infinity();

// The statistics of scores[0, end) in double: (m, ℓ, lse).
struct Expected {
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0.0;
  double lse = -std::numeric_limits<double>::infinity();
};

Expected expected_prefix(const std::vector<float>& scores, size_t end) {
  Expected e;
  for (size_t i = 0; i < end; ++i) e.max = std::max(e.max, static_cast<double>(scores[i]));
  if (e.max == -std::numeric_limits<double>::infinity()) return e;
  for (size_t i = 0; i < end; ++i) e.sum += std::exp(static_cast<double>(scores[i]) - e.max);
  e.lse = e.max + std::log(e.sum);
  return e;
}

// The comparisons of every test: the max, the sum, the lse and the number of blocks.
struct RowChecks {
  Comparison max{"running max m after a block", Unit::kNumber};
  Comparison sum{"running sum l = sum exp(s - m) after a block", Unit::kNumber, 0.0, 4e-6};
  Comparison lse{"row log-sum-exp", Unit::kNumber, 4e-6, 1.2e-7};
  Comparison blocks{"number of blocks (length of after_block)", Unit::kNumber};

  void add(const std::string& row, const std::vector<float>& scores, int64_t block_size) {
    const OnlineSoftmax got = online_softmax(scores, block_size);
    const auto n = static_cast<int64_t>(scores.size());
    const int64_t expected_blocks = n == 0 ? 0 : (n - 1) / block_size + 1;
    const std::string where =
        row + " n=" + std::to_string(n) + " block=" + std::to_string(block_size);
    blocks.add(where, static_cast<double>(expected_blocks),
               static_cast<double>(got.after_block.size()));
    const int64_t compared = std::min<int64_t>(expected_blocks, got.after_block.size());
    for (int64_t j = 0; j < compared; ++j) {
      const auto end = static_cast<size_t>(std::min(n, (j + 1) * block_size));
      const Expected e = expected_prefix(scores, end);
      const std::string at = where + " after block " + std::to_string(j);
      max.add(at, e.max, got.after_block[j].max);
      sum.add(at, e.sum, got.after_block[j].sum);
    }
    lse.add(where, expected_prefix(scores, scores.size()).lse, got.lse);
  }

  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(blocks);
    VRAMLAB_EXPECT_PASSES(max);
    VRAMLAB_EXPECT_PASSES(sum);
    VRAMLAB_EXPECT_PASSES(lse);
  }
};

std::vector<float> normal_row(std::mt19937_64& rng, int64_t n, float mean, float stddev) {
  std::normal_distribution<float> dist(mean, stddev);
  std::vector<float> row(static_cast<size_t>(n));
  for (auto& s : row) s = dist(rng);
  return row;
}

std::vector<int64_t> block_sizes_for(int64_t n) {
  std::vector<int64_t> sizes = {1, 2, 3, 7, 16, 64, n + 1, 1000};
  if (n > 1) sizes.push_back(n - 1);
  if (n > 0) sizes.push_back(n);
  return sizes;
}

TEST(OnlineSoftmax, RandomRowsInEveryBlockSizeIncludingOneAndLongerThanTheRow) {
  std::mt19937_64 rng(601);
  RowChecks checks;
  for (const int64_t n : {1, 2, 5, 31, 64, 100, 257, 1000}) {
    for (const float stddev : {1.0f, 6.0f}) {
      const std::vector<float> row = normal_row(rng, n, 0.0f, stddev);
      for (const int64_t block : block_sizes_for(n))
        checks.add("N(0," + std::to_string(static_cast<int>(stddev)) + ")", row, block);
    }
  }
  checks.expect_passes();
}

TEST(OnlineSoftmax, ScoresNear1000AndNearMinus1000NeitherOverflowNorUnderflow) {
  std::mt19937_64 rng(602);
  RowChecks checks;
  for (const float mean : {1000.0f, -1000.0f, 90.0f, -120.0f}) {
    for (const int64_t n : {1, 3, 50, 129}) {
      const std::vector<float> row = normal_row(rng, n, mean, 3.0f);
      for (const int64_t block : {int64_t{1}, int64_t{4}, int64_t{16}, n})
        checks.add("N(" + std::to_string(static_cast<int>(mean)) + ",3)", row, block);
    }
  }
  checks.expect_passes();
}

//! [test]
TEST(OnlineSoftmax, RisingRowsRescaleAtEveryBlockAndFallingRowsNever) {
  std::mt19937_64 rng(603);
  RowChecks checks;
  for (const int64_t n : {7, 40, 301}) {
    std::vector<float> row = normal_row(rng, n, -2.0f, 4.0f);
    std::sort(row.begin(), row.end());
    for (const int64_t block : {1, 3, 8, 50}) checks.add("rising", row, block);
    std::reverse(row.begin(), row.end());
    for (const int64_t block : {1, 3, 8, 50}) checks.add("falling", row, block);
  }
  checks.expect_passes();
}
//! [test]

TEST(OnlineSoftmax, MaskedScoresAddNothingIncludingLeadingAllMaskedBlocks) {
  std::mt19937_64 rng(604);
  std::bernoulli_distribution masked(0.3);
  RowChecks checks;
  for (const int64_t n : {1, 6, 33, 200}) {
    std::vector<float> random_mask = normal_row(rng, n, -1.0f, 2.0f);
    for (auto& s : random_mask)
      if (masked(rng)) s = kMasked;
    // A causal row: query t sees keys 0 … t, the rest is masked.
    std::vector<float> causal = normal_row(rng, n, 0.5f, 2.0f);
    std::fill(causal.begin() + (n + 1) / 2, causal.end(), kMasked);
    // Masked first: the running max stays −inf for whole blocks, then finite scores arrive.
    std::vector<float> leading = normal_row(rng, n, -3.0f, 2.0f);
    std::fill(leading.begin(), leading.begin() + (2 * n) / 3, kMasked);
    for (const int64_t block : block_sizes_for(n)) {
      checks.add("random 30% masked", random_mask, block);
      checks.add("causal row", causal, block);
      checks.add("leading masked", leading, block);
    }
  }
  checks.expect_passes();
}

TEST(OnlineSoftmax, AllMaskedAndEmptyRowsGiveMinusInfinityMaxZeroSumAndMinusInfinityLse) {
  RowChecks checks;
  for (const int64_t n : {1, 4, 17}) {
    const std::vector<float> row(static_cast<size_t>(n), kMasked);
    for (const int64_t block : {int64_t{1}, int64_t{3}, n, n + 5})
      checks.add("all masked", row, block);
  }
  checks.add("empty", {}, 1);
  checks.add("empty", {}, 8);
  checks.expect_passes();
}

TEST(OnlineSoftmax, OneStepFromAnyRunningStateIncludingEmptyAndMaskedBlocks) {
  std::mt19937_64 rng(605);
  std::uniform_real_distribution<float> max_dist(-20.0f, 20.0f);
  std::uniform_real_distribution<float> sum_dist(1.0f, 50.0f);
  Comparison max{"m after one step", Unit::kNumber};
  Comparison sum{"l after one step", Unit::kNumber, 0.0, 4e-6};
  for (int trial = 0; trial < 200; ++trial) {
    // The running state stands for earlier scores: m and ℓ ≥ 1 (the max's own term is 1).
    SoftmaxStats running{max_dist(rng), sum_dist(rng)};
    const char* kind = "finite state";
    if (trial % 10 == 0) {
      running = SoftmaxStats{};
      kind = "no scores yet";
    }
    std::vector<float> block = normal_row(rng, trial % 13, max_dist(rng), 3.0f);
    if (trial % 7 == 3) std::fill(block.begin(), block.end(), kMasked);
    double block_max = -std::numeric_limits<double>::infinity();
    for (const float s : block) block_max = std::max(block_max, static_cast<double>(s));
    const double m = std::max(static_cast<double>(running.max), block_max);
    double l = 0.0;
    if (m > -std::numeric_limits<double>::infinity()) {
      l = running.sum == 0.0f ? 0.0 : running.sum * std::exp(running.max - m);
      for (const float s : block) l += std::exp(static_cast<double>(s) - m);
    }
    const SoftmaxStats got = online_softmax_step(running, block);
    const std::string where = std::string(kind) + " m=" + std::to_string(running.max) +
                              " l=" + std::to_string(running.sum) + " block of " +
                              std::to_string(block.size()) + " with max " +
                              std::to_string(block_max) + " (trial " + std::to_string(trial) + ")";
    max.add(where, m, got.max);
    sum.add(where, l, got.sum);
  }
  VRAMLAB_EXPECT_PASSES(max);
  VRAMLAB_EXPECT_PASSES(sum);
}

TEST(OnlineSoftmax, RejectsABlockSizeBelowOneNamingTheValue) {
  const std::vector<float> row = {1.0f, 2.0f, 3.0f};
  for (const int64_t bad : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::min()}) {
    try {
      online_softmax(row, bad);
      ADD_FAILURE() << "online_softmax accepted block_size " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos)
          << "the message should name the value " << bad << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace vramlab::lesson06
