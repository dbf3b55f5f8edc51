// The synthetic Markov-chain token stream (see synthetic_tokens.h).
#include "common/train/synthetic_tokens.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "common/dtype/counter_rng.h"
#include "common/platform/errors.h"

namespace vramlab::train {

namespace {

// The chain's state count for large vocabularies (see synthetic_tokens.h).
constexpr int64_t kMaxStates = 256;

}  // namespace

SyntheticTokenStream::SyntheticTokenStream(int64_t vocab, int64_t branching, uint64_t seed)
    : vocab_(vocab),
      states_(std::min(vocab, kMaxStates)),
      branching_(branching),
      state_(splitmix64_mix(seed ^ 0x5EED'70CE'0000'0001ull)) {
  if (vocab < 2 || vocab > (int64_t{1} << 30)) {
    throw UsageError("synthetic tokens: vocab must be in [2, 2^30], got " + std::to_string(vocab));
  }
  if (branching < 1 || branching > 16 || branching > states_) {
    throw UsageError("synthetic tokens: branching must be in [1, min(vocab, 16)], got " +
                     std::to_string(branching));
  }
  double total = 0.0;
  for (int64_t j = 0; j < branching; ++j) {
    probabilities_.push_back(std::ldexp(1.0, static_cast<int>(-j)));
    total += probabilities_.back();
  }
  for (double& p : probabilities_) p /= total;
  // Distinct token ids for the states, drawn by rejection (S ≤ 256 ids out of V).
  std::set<int32_t> used;
  while (static_cast<int64_t>(state_tokens_.size()) < states_) {
    const auto token = static_cast<int32_t>(next_bits() % static_cast<uint64_t>(vocab));
    if (used.insert(token).second) state_tokens_.push_back(token);
  }
  // One Fisher-Yates permutation per successor rank: successors_[s * branching + j] = perm_j(s).
  successors_.resize(static_cast<size_t>(states_ * branching));
  std::vector<int32_t> perm(static_cast<size_t>(states_));
  for (int64_t j = 0; j < branching; ++j) {
    for (int64_t v = 0; v < states_; ++v) perm[static_cast<size_t>(v)] = static_cast<int32_t>(v);
    for (int64_t i = states_ - 1; i > 0; --i) {
      const auto r = static_cast<int64_t>(next_bits() % static_cast<uint64_t>(i + 1));
      std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(r)]);
    }
    for (int64_t v = 0; v < states_; ++v)
      successors_[static_cast<size_t>(v * branching + j)] = perm[static_cast<size_t>(v)];
  }
}

int32_t SyntheticTokenStream::state_of(int32_t token) const {
  for (size_t s = 0; s < state_tokens_.size(); ++s)
    if (state_tokens_[s] == token) return static_cast<int32_t>(s);
  return -1;
}

uint64_t SyntheticTokenStream::next_bits() {
  state_ += kSplitMix64Gamma;
  return splitmix64_mix(state_);
}

int32_t SyntheticTokenStream::sample_successor(int32_t state) {
  // 53 random bits -> u in [0, 1); walk the cumulative probabilities.
  const double u = static_cast<double>(next_bits() >> 11) * 0x1.0p-53;
  double cumulative = 0.0;
  int64_t j = 0;
  for (; j < branching_ - 1; ++j) {
    cumulative += probabilities_[static_cast<size_t>(j)];
    if (u < cumulative) break;
  }
  return successors_[static_cast<size_t>(state * branching_ + j)];
}

void SyntheticTokenStream::next_batch(int32_t* inputs, int32_t* targets, int64_t B, int64_t T) {
  for (int64_t b = 0; b < B; ++b) {
    auto state = static_cast<int32_t>(next_bits() % static_cast<uint64_t>(states_));
    for (int64_t t = 0; t < T; ++t) {
      inputs[b * T + t] = state_tokens_[static_cast<size_t>(state)];
      state = sample_successor(state);
      targets[b * T + t] = state_tokens_[static_cast<size_t>(state)];
    }
  }
}

double SyntheticTokenStream::unigram_entropy_nats() const {
  return std::log(static_cast<double>(states_));
}

double SyntheticTokenStream::transition_probability(int32_t current_token,
                                                    int32_t next_token) const {
  const int32_t current = state_of(current_token), next = state_of(next_token);
  double p = 0.0;
  if (current < 0 || next < 0) return p;
  for (int64_t j = 0; j < branching_; ++j)
    if (successors_[static_cast<size_t>(current * branching_ + j)] == next)
      p += probabilities_[static_cast<size_t>(j)];
  return p;
}

double SyntheticTokenStream::entropy_rate_nats() const {
  // Two ranks may map v to the same successor; merge them before taking the entropy.
  double total = 0.0;
  for (int64_t v = 0; v < states_; ++v) {
    std::map<int32_t, double> row;
    for (int64_t j = 0; j < branching_; ++j)
      row[successors_[static_cast<size_t>(v * branching_ + j)]] +=
          probabilities_[static_cast<size_t>(j)];
    for (const auto& [token, p] : row) total -= p * std::log(p);
  }
  return total / static_cast<double>(states_);
}

}  // namespace vramlab::train
