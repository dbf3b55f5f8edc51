// Tests of exercise 03.3 (loss weights for gradient accumulation, and the micro-batch split).
// They run against your code (`vramlab check 03.3`) and against the reference (ctest:
// test_ex_03_3_ref).
// Expectations: two small models whose gradients the test computes in closed form in double
// (least squares, and softmax regression as a language model's last layer is): the gradient of
// the mean loss over a whole batch must equal the sum of the micro-batches' mean-loss gradients
// times your weights, to 1e-12, for micro-batches of unequal size (a short last one, sequences
// with padding that the loss ignores); the weights themselves as n_i / N for token counts past
// 2^32; the split's sizes from their definition (even, larger first, summing to B) and as the
// runtime's --grad-accum splits its batch (train::micro_batch_sizes); bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "common/train/micro_batches.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/03-mixed-precision/api/accumulation_weights.h"

namespace vramlab::lesson03 {
namespace {

using workbook::Comparison;
using workbook::Unit;

// One token of a regression or classification problem.
struct Token {
  std::vector<double> x;  // (D)
  double target = 0;      // least squares: the target value; softmax: the class, as a double
};

// A model whose gradient of the mean loss over a set of tokens is known in closed form.
class Model {
 public:
  virtual ~Model() = default;
  // The gradient of (1 / |tokens|) Σ loss(token) with respect to every parameter.
  [[nodiscard]] virtual std::vector<double> mean_loss_gradient(
      const std::vector<Token>& tokens) const = 0;
  [[nodiscard]] virtual size_t parameters() const = 0;
};

// Least squares: loss = ½ (θ·x − y)², gradient (θ·x − y) x.
class LeastSquares : public Model {
 public:
  explicit LeastSquares(std::vector<double> theta) : theta_(std::move(theta)) {}
  [[nodiscard]] std::vector<double> mean_loss_gradient(
      const std::vector<Token>& tokens) const override {
    std::vector<double> g(theta_.size(), 0.0);  // (D)
    for (const Token& t : tokens) {
      double residual = -t.target;
      for (size_t d = 0; d < theta_.size(); ++d) residual += theta_[d] * t.x[d];
      for (size_t d = 0; d < theta_.size(); ++d) g[d] += residual * t.x[d];
    }
    for (double& v : g) v /= static_cast<double>(tokens.size());
    return g;
  }
  [[nodiscard]] size_t parameters() const override { return theta_.size(); }

 private:
  std::vector<double> theta_;  // (D)
};

// Softmax regression over C classes: loss = −log softmax(W x)[c], gradient (p − onehot(c)) xᵀ.
class SoftmaxRegression : public Model {
 public:
  SoftmaxRegression(std::vector<double> w, size_t classes, size_t dim)
      : w_(std::move(w)), classes_(classes), dim_(dim) {}
  [[nodiscard]] std::vector<double> mean_loss_gradient(
      const std::vector<Token>& tokens) const override {
    std::vector<double> g(w_.size(), 0.0);  // (C, D)
    std::vector<double> p(classes_);        // (C)
    for (const Token& t : tokens) {
      double top = -std::numeric_limits<double>::infinity();
      for (size_t c = 0; c < classes_; ++c) {
        p[c] = 0;
        for (size_t d = 0; d < dim_; ++d) p[c] += w_[c * dim_ + d] * t.x[d];
        top = std::max(top, p[c]);
      }
      double sum = 0;
      for (double& v : p) sum += (v = std::exp(v - top));
      const auto label = static_cast<size_t>(t.target);
      for (size_t c = 0; c < classes_; ++c) {
        const double dlogit = p[c] / sum - (c == label ? 1.0 : 0.0);
        for (size_t d = 0; d < dim_; ++d) g[c * dim_ + d] += dlogit * t.x[d];
      }
    }
    for (double& v : g) v /= static_cast<double>(tokens.size());
    return g;
  }
  [[nodiscard]] size_t parameters() const override { return w_.size(); }

 private:
  std::vector<double> w_;  // (C, D)
  size_t classes_, dim_;
};

std::vector<double> random_vector(std::mt19937_64& rng, size_t n, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

// A micro-batch: sequences of T positions of which only the first `length` count in the loss
// (the rest is padding, as ignore_index masks it).
std::vector<Token> counted_tokens(std::mt19937_64& rng, int64_t sequences, int64_t seq_len,
                                  size_t dim, size_t classes, bool padded) {
  std::vector<Token> tokens;
  for (int64_t s = 0; s < sequences; ++s) {
    const int64_t length =
        padded ? std::uniform_int_distribution<int64_t>(0, seq_len)(rng) : seq_len;
    for (int64_t p = 0; p < length; ++p) {
      Token t{random_vector(rng, dim, 1.0), 0.0};
      t.target = classes > 0 ? static_cast<double>(rng() % classes) : random_vector(rng, 1, 2.0)[0];
      tokens.push_back(std::move(t));
    }
  }
  return tokens;
}

std::string describe_counts(const std::vector<int64_t>& n) {
  std::string out = "n = {";
  for (size_t i = 0; i < n.size(); ++i) out += (i ? ", " : "") + std::to_string(n[i]);
  return out + "}";
}

//! [test]
// Full batch vs accumulated: Σ_i w_i ∇mean_i must equal ∇mean over the whole batch.
void expect_accumulation_matches_full_batch(const Model& model,
                                            const std::vector<std::vector<Token>>& micro_batches,
                                            const std::string& name, Comparison& gradient) {
  std::vector<Token> all;
  std::vector<int64_t> counts;
  for (const auto& mb : micro_batches) {
    all.insert(all.end(), mb.begin(), mb.end());
    counts.push_back(static_cast<int64_t>(mb.size()));
  }
  const std::vector<double> full = model.mean_loss_gradient(all);
  const std::vector<double> weights = accumulation_loss_weights(counts);
  ASSERT_EQ(weights.size(), micro_batches.size()) << name << ": one weight per micro-batch";
  std::vector<double> accumulated(model.parameters(), 0.0);  // (P)
  for (size_t i = 0; i < micro_batches.size(); ++i) {
    if (micro_batches[i].empty()) continue;  // no counted token: no backward
    const std::vector<double> g = model.mean_loss_gradient(micro_batches[i]);
    for (size_t p = 0; p < g.size(); ++p) accumulated[p] += weights[i] * g[p];
  }
  size_t worst = 0;
  for (size_t p = 0; p < full.size(); ++p)
    if (std::fabs(full[p] - accumulated[p]) > std::fabs(full[worst] - accumulated[worst]))
      worst = p;
  gradient.add(name + " " + describe_counts(counts) + " parameter " + std::to_string(worst),
               full[worst], accumulated[worst]);
}

TEST(AccumulationWeights, AccumulatedGradientEqualsTheFullBatchsForLeastSquares) {
  std::mt19937_64 rng(0x0331);
  Comparison gradient("gradient component (full batch vs accumulated)", Unit::kNumber, 1e-12,
                      1e-12);
  for (int trial = 0; trial < 60; ++trial) {
    const size_t dim = 1 + static_cast<size_t>(trial % 7);
    const LeastSquares model(random_vector(rng, dim, 1.0));
    const int64_t k = 1 + trial % 6, per = 1 + trial % 5, seq_len = 3 + trial % 9;
    std::vector<std::vector<Token>> micro_batches;
    for (int64_t i = 0; i < k; ++i) {
      // The last micro-batch is short (fewer sequences); with padding every count differs.
      const int64_t sequences = i + 1 == k && k > 1 ? std::max<int64_t>(1, per / 2) : per;
      micro_batches.push_back(counted_tokens(rng, sequences, seq_len, dim, 0, trial % 2 == 1));
    }
    if (std::all_of(micro_batches.begin(), micro_batches.end(),
                    [](const auto& mb) { return mb.empty(); }))
      micro_batches[0] = counted_tokens(rng, 1, seq_len, dim, 0, false);
    expect_accumulation_matches_full_batch(
        model, micro_batches, "least squares trial " + std::to_string(trial), gradient);
  }
  VRAMLAB_EXPECT_PASSES(gradient);
}
//! [test]

TEST(AccumulationWeights, AccumulatedGradientEqualsTheFullBatchsForSoftmaxRegression) {
  std::mt19937_64 rng(0x0332);
  Comparison gradient("gradient component (full batch vs accumulated)", Unit::kNumber, 1e-12,
                      1e-12);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t dim = 2 + static_cast<size_t>(trial % 5), classes = 2 + trial % 9;
    const SoftmaxRegression model(random_vector(rng, classes * dim, 0.7), classes, dim);
    const int64_t batch = 3 + trial % 13, k = 1 + trial % std::min<int64_t>(batch, 5);
    // B sequences split as evenly as possible (the test's own split), with padding.
    std::vector<std::vector<Token>> micro_batches;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t sequences = batch / k + (i < batch % k ? 1 : 0);
      micro_batches.push_back(counted_tokens(rng, sequences, 1 + trial % 11, dim, classes, true));
    }
    if (std::all_of(micro_batches.begin(), micro_batches.end(),
                    [](const auto& mb) { return mb.empty(); }))
      micro_batches[0] = counted_tokens(rng, 1, 4, dim, classes, false);
    expect_accumulation_matches_full_batch(model, micro_batches,
                                           "softmax trial " + std::to_string(trial), gradient);
  }
  VRAMLAB_EXPECT_PASSES(gradient);
}

TEST(AccumulationWeights, WeightsAreEachMicroBatchsShareOfTheTokensPast2To32) {
  // A 7B model's optimizer batch of 4M tokens per GPU times thousands of steps' worth of
  // micro-batches: counts past 2^31, sums past 2^32, up to 2^40 tokens per micro-batch.
  std::mt19937_64 rng(0x0333);
  Comparison weight("weight of a micro-batch's mean loss", Unit::kNumber, 0.0, 1e-14);
  Comparison sum("sum of the weights", Unit::kNumber, 1e-14);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t k = 1 + static_cast<size_t>(rng() % 12);
    const int top_bits = 8 + trial % 33;  // counts below 2^8 … 2^40
    std::vector<int64_t> n(k);
    for (int64_t& v : n) v = std::uniform_int_distribution<int64_t>(0, int64_t{1} << top_bits)(rng);
    if (trial % 5 == 0) n.back() = n.back() / 7;  // a short last micro-batch
    if (trial % 7 == 0) n[0] = 0;                 // one made only of padding
    if (std::accumulate(n.begin(), n.end(), int64_t{0}) == 0) n.back() = 1;
    int64_t total = 0;
    for (int64_t v : n) total += v;
    const std::vector<double> w = accumulation_loss_weights(n);
    ASSERT_EQ(w.size(), k);
    double s = 0;
    for (size_t i = 0; i < k; ++i) {
      weight.add(describe_counts(n) + " micro-batch " + std::to_string(i),
                 static_cast<double>(n[i]) / static_cast<double>(total), w[i]);
      s += w[i];
    }
    sum.add(describe_counts(n), 1.0, s);
  }
  // Equal micro-batches: each 1/K; a 3:1 split: 3/4 and 1/4, exactly.
  weight.add("n = {5, 5, 5, 5}", 0.25, accumulation_loss_weights({5, 5, 5, 5})[1]);
  weight.add("n = {3 * 2^40, 2^40} first", 0.75,
             accumulation_loss_weights({3 * (int64_t{1} << 40), int64_t{1} << 40})[0]);
  weight.add("n = {2^31, 2^31, 2^31} last", 1.0 / 3.0,
             accumulation_loss_weights({int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31})[2]);
  VRAMLAB_EXPECT_PASSES(weight);
  VRAMLAB_EXPECT_PASSES(sum);
}

TEST(AccumulationWeights, SplitsEvenlyWithTheLargerMicroBatchesFirst) {
  std::mt19937_64 rng(0x0334);
  Comparison size("sequences in a micro-batch", Unit::kNumber);
  auto check = [&size](int64_t b, int64_t k) {
    const std::vector<int64_t> got = split_micro_batches(b, k);
    const std::string where = "B=" + std::to_string(b) + " K=" + std::to_string(k);
    size.add(where + " count of micro-batches", static_cast<double>(k),
             static_cast<double>(got.size()));
    if (static_cast<int64_t>(got.size()) != k) return;
    // ⌈B/K⌉ sequences for the first B mod K micro-batches, ⌊B/K⌋ for the rest.
    const int64_t floor = b / k;
    for (int64_t i = 0; i < k; ++i)
      size.add(where + " micro-batch " + std::to_string(i),
               static_cast<double>(i < b % k ? floor + 1 : floor),
               static_cast<double>(got[static_cast<size_t>(i)]));
  };
  for (int64_t b = 1; b <= 40; ++b)
    for (int64_t k = 1; k <= b; ++k) check(b, k);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t b = std::uniform_int_distribution<int64_t>(1, int64_t{1} << 45)(rng);
    check(b, std::uniform_int_distribution<int64_t>(1, 4096)(rng));
  }
  check(std::numeric_limits<int64_t>::max(), 7);
  VRAMLAB_EXPECT_PASSES(size);
  // Doubles cannot tell these sizes apart from their neighbours; compare the integers.
  const int64_t max = std::numeric_limits<int64_t>::max();  // 7 · 1317624576693539401
  EXPECT_EQ(split_micro_batches(max, 7), std::vector<int64_t>(7, max / 7));
  std::vector<int64_t> expected(5, max / 5);  // max = 5 · 1844674407370955161 + 2
  expected[0] += 1;
  expected[1] += 1;
  EXPECT_EQ(split_micro_batches(max, 5), expected);
}

TEST(AccumulationWeights, SplitsAsTheRuntimesGradAccumDoes) {
  // The trainer runs --grad-accum K over micro-batches of these sizes; the first, the largest,
  // sets the activation peak.
  std::mt19937_64 rng(0x0335);
  Comparison size("sequences in a micro-batch (runtime vs yours)", Unit::kNumber);
  auto check = [&size](int64_t b, int64_t k) {
    const std::vector<int64_t> expected = train::micro_batch_sizes(b, k);
    const std::vector<int64_t> got = split_micro_batches(b, k);
    const std::string where = "B=" + std::to_string(b) + " K=" + std::to_string(k);
    size.add(where + " count", static_cast<double>(expected.size()),
             static_cast<double>(got.size()));
    for (size_t i = 0; i < std::min(expected.size(), got.size()); ++i)
      size.add(where + " micro-batch " + std::to_string(i), static_cast<double>(expected[i]),
               static_cast<double>(got[i]));
  };
  for (int64_t b = 1; b <= 64; ++b)
    for (int64_t k = 1; k <= b; ++k) check(b, k);
  for (int trial = 0; trial < 100; ++trial) {
    const int64_t b = std::uniform_int_distribution<int64_t>(1, int64_t{1} << 40)(rng);
    check(b, std::uniform_int_distribution<int64_t>(1, 1000)(rng));
  }
  VRAMLAB_EXPECT_PASSES(size);
}

TEST(AccumulationWeights, RejectsBadInputNamingTheValue) {
  auto expect_usage_error = [](const std::string& what, const std::string& named, auto call) {
    try {
      call();
      ADD_FAILURE() << "no vramlab::UsageError for " << what;
    } catch (const UsageError& e) {
      if (std::string(e.what()).find(named) == std::string::npos)
        ADD_FAILURE() << what << ": the message should name " << named << ": " << e.what();
    }
  };
  constexpr int64_t max = std::numeric_limits<int64_t>::max();
  expect_usage_error("K = 9 > B = 8", "9", [] { split_micro_batches(8, 9); });
  expect_usage_error("K = 0", "0", [] { split_micro_batches(8, 0); });
  expect_usage_error("K = -3", "-3", [] { split_micro_batches(8, -3); });
  expect_usage_error("B = 0", "0", [] { split_micro_batches(0, 1); });
  expect_usage_error("B = -5", "-5", [] { split_micro_batches(-5, 1); });
  expect_usage_error("a count of -12", "-12", [] { accumulation_loss_weights({4, -12, 3}); });
  expect_usage_error("all counts 0", "0", [] { accumulation_loss_weights({0, 0, 0}); });
  expect_usage_error("no micro-batches", "empty", [] { accumulation_loss_weights({}); });
  expect_usage_error("a sum past INT64_MAX", "int64", [] {
    accumulation_loss_weights({max / 2, max / 2, 2});
  });
}

}  // namespace
}  // namespace vramlab::lesson03
