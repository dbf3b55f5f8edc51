/// \file
/// \brief A seeded, learnable synthetic token stream: a sparse doubly-stochastic Markov chain whose
/// unigram entropy and entropy rate are both known exactly.
///
/// The chain runs over S = min(V, 256) states, each shown as a distinct random token id of the
/// vocabulary (so a small model meets every transition often within a short run, whatever V).
/// Each state s has `branching` successors perm_j(s) (j = 0..branching-1, perm_j random
/// permutations of the states) taken with probabilities p_j ∝ 2^-j. Every column of the
/// transition matrix sums to Σ p_j = 1, so the chain is doubly stochastic and the uniform
/// distribution is stationary. Sequences start at a uniformly random state, so the marginal of
/// every position is exactly uniform over the S state tokens:
///   - unigram entropy = ln S (what a model that ignores context can reach at best),
///   - entropy rate    = mean over s of H(next | current = s) (the best any model can reach),
/// and the latter is far below the former (≈ 1.1 nats against ln 256 ≈ 5.5 for branching 4).
/// Bits come from SplitMix64, so a stream is the same on every platform and compiler.
#pragma once

#include <cstdint>
#include <vector>

namespace vramlab::train {

/// The Markov chain and a deterministic sampler of (inputs, targets) batches.
class SyntheticTokenStream {
 public:
  /// \param vocab V ≥ 2. \param branching successors per token, 1 ≤ branching ≤ min(V, 16).
  /// \param seed names the chain and the stream of batches.
  /// \throws vramlab::UsageError naming a bad vocab or branching.
  SyntheticTokenStream(int64_t vocab, int64_t branching, uint64_t seed);

  /// Samples the next batch: B independent sequences of T + 1 tokens; inputs are the first T,
  /// targets the last T (the next token of each input).
  /// \p inputs and \p targets are (B, T), written; B, T ≥ 0.
  void next_batch(int32_t* inputs, int32_t* targets, int64_t B, int64_t T);

  /// \return ln S in nats: the cross-entropy of the best context-free model.
  [[nodiscard]] double unigram_entropy_nats() const;
  /// \return the exact entropy rate in nats (mean of the per-token successor entropies).
  [[nodiscard]] double entropy_rate_nats() const;
  /// V, as given; only S = min(V, 256) of its ids ever appear.
  [[nodiscard]] int64_t vocab() const { return vocab_; }
  /// \return the token id of each state, (S) distinct ids in [0, V).
  [[nodiscard]] const std::vector<int32_t>& state_tokens() const { return state_tokens_; }
  /// \return the probability of the transition from \p current_token to \p next_token (0 when
  /// either is not a state token).
  [[nodiscard]] double transition_probability(int32_t current_token, int32_t next_token) const;

 private:
  int32_t sample_successor(int32_t state);
  uint64_t next_bits();
  [[nodiscard]] int32_t state_of(int32_t token) const;

  int64_t vocab_;
  int64_t states_;
  int64_t branching_;
  std::vector<double> probabilities_;  // (branching) p_j
  std::vector<int32_t> successors_;    // (S, branching) perm_j(s)
  std::vector<int32_t> state_tokens_;  // (S) token id of each state
  uint64_t state_;
};

}  // namespace vramlab::train
