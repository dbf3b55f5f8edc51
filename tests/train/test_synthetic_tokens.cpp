// The synthetic Markov token stream: its transition matrix is doubly stochastic (so the marginal is
// uniform and the unigram entropy is ln V), its stated entropy rate is the conditional entropy of
// that matrix and of long samples, batches are shifted pairs, and streams are seed-determined.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "common/platform/errors.h"
#include "common/train/synthetic_tokens.h"

namespace vramlab::train {
namespace {

TEST(SyntheticTokens, TransitionMatrixIsDoublyStochasticOverTheStateTokens) {
  for (const int64_t V : {2, 7, 50, 300}) {
    for (const int64_t branching : {1, 2, 4}) {
      if (branching > V) continue;
      SyntheticTokenStream s(V, branching, 3);
      const auto& states = s.state_tokens();
      ASSERT_EQ(static_cast<int64_t>(states.size()), std::min<int64_t>(V, 256));
      EXPECT_EQ(std::set<int32_t>(states.begin(), states.end()).size(), states.size());
      for (int32_t a = 0; a < V; ++a) {
        const bool is_state = std::find(states.begin(), states.end(), a) != states.end();
        double row = 0.0, column = 0.0;
        for (int32_t b = 0; b < V; ++b) {
          row += s.transition_probability(a, b);
          column += s.transition_probability(b, a);
        }
        EXPECT_NEAR(row, is_state ? 1.0 : 0.0, 1e-12) << "V " << V << " row " << a;
        EXPECT_NEAR(column, is_state ? 1.0 : 0.0, 1e-12) << "V " << V << " column " << a;
      }
    }
  }
}

TEST(SyntheticTokens, LargeVocabulariesUse256StateTokens) {
  SyntheticTokenStream s(50257, 4, 1);
  EXPECT_EQ(s.state_tokens().size(), 256u);
  EXPECT_DOUBLE_EQ(s.unigram_entropy_nats(), std::log(256.0));
  for (const int32_t token : s.state_tokens()) {
    EXPECT_GE(token, 0);
    EXPECT_LT(token, 50257);
  }
}

TEST(SyntheticTokens, EntropyRateIsTheConditionalEntropyAndFarBelowUnigram) {
  SyntheticTokenStream s(64, 4, 11);
  double h = 0.0;
  for (int32_t a = 0; a < 64; ++a)
    for (int32_t b = 0; b < 64; ++b) {
      const double p = s.transition_probability(a, b);
      if (p > 0) h -= p * std::log(p) / 64.0;
    }
  EXPECT_NEAR(s.entropy_rate_nats(), h, 1e-12);
  EXPECT_DOUBLE_EQ(s.unigram_entropy_nats(), std::log(64.0));
  // Branching 4 with p ∝ 1, 1/2, 1/4, 1/8: at most H(8/15, 4/15, 2/15, 1/15) ≈ 1.17 nats.
  EXPECT_LE(s.entropy_rate_nats(), 1.18);
  EXPECT_LT(s.entropy_rate_nats(), 0.3 * s.unigram_entropy_nats());
}

TEST(SyntheticTokens, SamplesFollowTheChainAndHaveUniformMarginals) {
  const int64_t V = 16, B = 64, T = 512;
  SyntheticTokenStream s(V, 3, 5);
  std::vector<int32_t> inputs(B * T), targets(B * T);
  s.next_batch(inputs.data(), targets.data(), B, T);
  std::vector<double> unigram(V, 0.0);
  std::map<std::pair<int32_t, int32_t>, double> bigram;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const int32_t a = inputs[b * T + t], n = targets[b * T + t];
      if (t + 1 < T) {
        ASSERT_EQ(inputs[b * T + t + 1], n) << "targets are the next inputs";
      }
      ASSERT_GT(s.transition_probability(a, n), 0.0) << "impossible transition " << a << "->" << n;
      unigram[a] += 1.0;
      bigram[{a, n}] += 1.0;
    }
  const double total = static_cast<double>(B * T);
  double empirical_h = 0.0;
  for (const auto& [pair, count] : bigram)
    empirical_h -= count / total * std::log(count / unigram[pair.first]);
  EXPECT_NEAR(empirical_h, s.entropy_rate_nats(), 0.02);
  for (int64_t v = 0; v < V; ++v) EXPECT_NEAR(unigram[v] / total, 1.0 / V, 0.01) << "token " << v;
}

TEST(SyntheticTokens, SeedDeterminesTheStream) {
  std::vector<int32_t> a(256), b(256), c(256), t(256);
  SyntheticTokenStream s1(100, 4, 9), s2(100, 4, 9), s3(100, 4, 10);
  s1.next_batch(a.data(), t.data(), 4, 64);
  s2.next_batch(b.data(), t.data(), 4, 64);
  s3.next_batch(c.data(), t.data(), 4, 64);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(SyntheticTokens, BadSizesNameTheValue) {
  EXPECT_THROW(SyntheticTokenStream(1, 1, 0), UsageError);
  EXPECT_THROW(SyntheticTokenStream(10, 0, 0), UsageError);
  EXPECT_THROW(SyntheticTokenStream(10, 17, 0), UsageError);
  EXPECT_THROW(SyntheticTokenStream(3, 4, 0), UsageError);
}

}  // namespace
}  // namespace vramlab::train
