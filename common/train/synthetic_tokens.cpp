// The synthetic Markov-chain token stream (see synthetic_tokens.h).
#include "common/train/synthetic_tokens.h"

#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "common/dtype/counter_rng.h"
#include "common/platform/errors.h"

namespace vramlab::train {

SyntheticTokenStream::SyntheticTokenStream(int64_t vocab, int64_t branching, uint64_t seed)
    : vocab_(vocab),
      branching_(branching),
      state_(splitmix64_mix(seed ^ 0x5EED'70CE'0000'0001ull)) {
  if (vocab < 2 || vocab > (int64_t{1} << 30)) {
    throw UsageError("synthetic tokens: vocab must be in [2, 2^30], got " + std::to_string(vocab));
  }
  if (branching < 1 || branching > 16 || branching > vocab) {
    throw UsageError("synthetic tokens: branching must be in [1, min(vocab, 16)], got " +
                     std::to_string(branching));
  }
  double total = 0.0;
  for (int64_t j = 0; j < branching; ++j) {
    probabilities_.push_back(std::ldexp(1.0, static_cast<int>(-j)));
    total += probabilities_.back();
  }
  for (double& p : probabilities_) p /= total;
  // One Fisher-Yates permutation per successor rank: successors_[v * branching + j] = perm_j(v).
  successors_.resize(static_cast<size_t>(vocab * branching));
  std::vector<int32_t> perm(static_cast<size_t>(vocab));
  for (int64_t j = 0; j < branching; ++j) {
    for (int64_t v = 0; v < vocab; ++v) perm[static_cast<size_t>(v)] = static_cast<int32_t>(v);
    for (int64_t i = vocab - 1; i > 0; --i) {
      const auto r = static_cast<int64_t>(next_bits() % static_cast<uint64_t>(i + 1));
      std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(r)]);
    }
    for (int64_t v = 0; v < vocab; ++v)
      successors_[static_cast<size_t>(v * branching + j)] = perm[static_cast<size_t>(v)];
  }
}

uint64_t SyntheticTokenStream::next_bits() {
  state_ += kSplitMix64Gamma;
  return splitmix64_mix(state_);
}

int32_t SyntheticTokenStream::sample_successor(int32_t current) {
  // 53 random bits -> u in [0, 1); walk the cumulative probabilities.
  const double u = static_cast<double>(next_bits() >> 11) * 0x1.0p-53;
  double cumulative = 0.0;
  int64_t j = 0;
  for (; j < branching_ - 1; ++j) {
    cumulative += probabilities_[static_cast<size_t>(j)];
    if (u < cumulative) break;
  }
  return successors_[static_cast<size_t>(current * branching_ + j)];
}

void SyntheticTokenStream::next_batch(int32_t* inputs, int32_t* targets, int64_t B, int64_t T) {
  for (int64_t b = 0; b < B; ++b) {
    auto token = static_cast<int32_t>(next_bits() % static_cast<uint64_t>(vocab_));
    for (int64_t t = 0; t < T; ++t) {
      inputs[b * T + t] = token;
      token = sample_successor(token);
      targets[b * T + t] = token;
    }
  }
}

double SyntheticTokenStream::unigram_entropy_nats() const {
  return std::log(static_cast<double>(vocab_));
}

double SyntheticTokenStream::transition_probability(int32_t current, int32_t next) const {
  double p = 0.0;
  for (int64_t j = 0; j < branching_; ++j)
    if (successors_[static_cast<size_t>(current * branching_ + j)] == next)
      p += probabilities_[static_cast<size_t>(j)];
  return p;
}

double SyntheticTokenStream::entropy_rate_nats() const {
  // Two ranks may map v to the same successor; merge them before taking the entropy.
  double total = 0.0;
  for (int64_t v = 0; v < vocab_; ++v) {
    std::map<int32_t, double> row;
    for (int64_t j = 0; j < branching_; ++j)
      row[successors_[static_cast<size_t>(v * branching_ + j)]] +=
          probabilities_[static_cast<size_t>(j)];
    for (const auto& [token, p] : row) total -= p * std::log(p);
  }
  return total / static_cast<double>(vocab_);
}

}  // namespace vramlab::train
