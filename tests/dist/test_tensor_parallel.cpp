// Megatron tensor parallelism in DecoderModel (Shoeybi et al. 2019), t ranks simulated as threads:
// the same model as one rank, each rank holding its part.
//
// Oracles: a one-rank run of the same config, seed and batch (its loss and its gradients, sliced
// through ParameterSpec::full_index, itself checked by hand in test_tensor_parallel_layout); the
// estimator's per-rank parameter count; Megatron's communication volume written from the paper
// (forward: an all-reduce of (B, T, C) after each block's attention and MLP; backward: one before
// each block's two norms).
//
// Tolerance (f32). A TP rank computes each row-parallel output (attention proj/o, MLP proj/down)
// as t partial dot products of K/t terms summed by the all-reduce, and each normed input's
// gradient as t partial sums; one rank sums the same K terms in another order. In the worst case
// each order is within γ_K·Σ|a_k·w_k| of the exact sum (γ_K = K·u/(1 − K·u), u = 2⁻²⁴; Higham,
// Accuracy and Stability of Numerical Algorithms, §3.1); with independent mean-zero rounding
// errors, as on these random weights, within λ√K·u·Σ|a·w| with probability at least
// 1 − 2·exp(−λ²/2) (Higham & Mary 2019, Theorem 3.1): λ = 6 gives 3·10⁻⁸. So two orders differ by
// at most 2λ√K·u relative to Σ|a·w| per reduction. To first order the 4L reductions of a step
// add up through the network; taking Σ|a·w| as the result's magnitude (random, unstructured
// weights are well conditioned: an assumption, not a theorem) gives
//   tol = 4L · 2λ√K·u · scale,  K = max(C, F),
// with scale max(1, |loss|) for the loss and max |g| of the one-rank tensor for each gradient
// element (normwise per tensor). Each comparison prints its worst element and its % of tol; any
// mistake in what is reduced (a missing all-reduce, the bias added t times, a head on the wrong
// rank) is O(1) relative, far above it.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/amp/precision_policy.h"
#include "common/dist/communicator.h"
#include "common/dist/simulated_communicator.h"
#include "common/dtype/convert.h"
#include "common/dtype/counter_rng.h"
#include "common/estimate/estimator.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/platform/errors.h"

namespace vramlab {
namespace {

using nn::DecoderModel;
using nn::Runtime;
using nn::SavedActivations;

// Llama with grouped-query attention: 8 query heads sharing 4 key/value heads, so that t = 4
// gives each rank 2 query heads and their one kv head; F = 344 = 4 · 86.
ModelConfig llama_gqa() {
  return llama_config("llama-gqa", 2, 192, 8, 4, 344, 1000, 64);
}

struct StepOptions {
  int64_t B = 3;
  int64_t T = 37;  // odd: no size divides evenly except C and F
  AttentionKind attention = AttentionKind::naive;
  std::vector<nn::LayerPolicy> plan;  // empty: keep everything
  amp::Precision precision = amp::Precision::fp32;
  bool perturb = true;  // overwrite the initial weights (zero biases, unit norms) with random ones
};

struct RankOutcome {
  double loss = 0.0;
  std::vector<float> values;  // (rank's numel) after initialisation or perturbation
  std::vector<float> grads;   // (rank's numel)
  std::vector<ParameterSpec> specs;
  dist::CommunicationStats stats;
  int64_t parameter_bytes = 0;  // the allocator's parameter category
};

std::vector<float> to_floats(const memory::TensorView& view) {
  std::vector<float> out(static_cast<size_t>(view.numel()));
  if (view.dtype() == DType::f32) {
    std::copy(view.f32(), view.f32() + view.numel(), out.begin());
  } else {
    const auto* bits = static_cast<const uint16_t*>(view.data());  // (numel) bf16
    for (size_t i = 0; i < out.size(); ++i) out[i] = bf16_bits_to_f32(bits[i]);
  }
  return out;
}

// Element i of the whole model's store: weights uniform in ±0.1, norm weights 1 ± 0.3, biases
// ±0.2, the same wherever the element lives.
float perturbed_value(const ParameterSpec& spec, int64_t whole_index) {
  const uint64_t bits =
      splitmix64_mix(0x7e57u + static_cast<uint64_t>(whole_index) * kSplitMix64Gamma);
  const float z = static_cast<float>(static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0);  // [-1, 1)
  if (spec.init == InitKind::ones) return 1.0f + 0.3f * z;
  if (spec.init == InitKind::zeros) return 0.2f * z;
  return 0.1f * z;
}

// One training step's forward and backward on rank comm (null: the one-rank model).
RankOutcome run_step(const ModelConfig& config, dist::Communicator* comm, const StepOptions& o) {
  Runtime runtime(memory::parse_device("cpu"));
  const amp::PrecisionPolicy precision = amp::precision_policy(o.precision);
  DecoderModel model(runtime, config, 17, precision, {}, comm);
  model.set_attention(o.attention);
  RankOutcome out;
  out.specs = comm ? config.parameters(comm->rank(), comm->world_size()) : config.parameters();
  if (o.perturb) {
    const memory::TensorView values = model.parameters().values().view();  // (numel) f32
    int64_t whole_offset = 0;
    for (size_t p = 0; p < out.specs.size(); ++p) {
      const ParameterSpec& spec = out.specs[p];
      const nn::ParameterView& view = model.parameters().views()[p];
      for (int64_t e = 0; e < spec.numel(); ++e)
        values.f32()[view.offset + e] = perturbed_value(spec, whole_offset + spec.full_index(e));
      int64_t whole_numel = 1;
      for (int64_t d : spec.full_shape()) whole_numel *= d;
      whole_offset += whole_numel;
    }
  }
  out.values = to_floats(model.parameters().values().view());
  std::vector<int32_t> tokens(static_cast<size_t>(o.B * o.T)), targets(tokens.size());
  std::mt19937 rng(91);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(config.vocab - 1));
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = id(rng);
    targets[i] = id(rng);
  }
  const memory::TensorView token_view(tokens.data(), DType::i32, {o.B, o.T});
  const memory::TensorView target_view(targets.data(), DType::i32, {o.B, o.T});
  SavedActivations saved(runtime, config.layers);
  if (!o.plan.empty()) saved.set_plan(o.plan);
  out.loss = model.forward(saved, token_view, target_view, o.B, o.T);
  model.backward(saved, token_view, target_view, o.B, o.T);
  out.grads = to_floats(model.parameters().grads().view());
  if (comm) out.stats = comm->stats();
  out.parameter_bytes =
      runtime.allocator().category_stats().of(memory::MemoryCategory::parameter).current;
  return out;
}

std::vector<RankOutcome> run_ranks(const ModelConfig& config, int64_t t, const StepOptions& o) {
  std::vector<RankOutcome> out(static_cast<size_t>(t));
  dist::run_simulated_ranks(t, true, [&](dist::Communicator& comm) {
    omp_set_num_threads(1);  // t ranks share the cores
    out[static_cast<size_t>(comm.rank())] = run_step(config, &comm, o);
  });
  return out;
}

// Where each whole tensor starts in the one-rank store.
std::map<std::string, int64_t> whole_offsets(const ModelConfig& config) {
  std::map<std::string, int64_t> offsets;
  int64_t offset = 0;
  for (const ParameterSpec& s : config.parameters()) {
    offsets[s.name] = offset;
    offset += s.numel();
  }
  return offsets;
}

// See the file comment: 4L reductions of at most K = max(C, F) terms, each within 2λ√K·u.
double step_tolerance(const ModelConfig& c, double u) {
  constexpr double kLambda = 6.0;
  const double K = static_cast<double>(std::max(c.hidden, c.ffn_hidden));
  return 4.0 * static_cast<double>(c.layers) * 2.0 * kLambda * std::sqrt(K) * u;
}

// Every rank's gradient of every tensor against the one-rank gradient at the same whole index,
// normwise per tensor; `of` picks gradients or values.
void expect_slices_match(const ModelConfig& config, const RankOutcome& whole,
                         const std::vector<RankOutcome>& ranks, double relative_tolerance,
                         bool compare_values, const std::string& what) {
  const std::map<std::string, int64_t> offsets = whole_offsets(config);
  std::map<std::string, double> max_abs;  // of the one-rank tensor
  for (const ParameterSpec& s : config.parameters()) {
    double m = 0.0;
    const std::vector<float>& w = compare_values ? whole.values : whole.grads;
    const int64_t start = offsets.at(s.name);  // a map lookup per tensor, not per element
    for (int64_t e = 0; e < s.numel(); ++e)
      m = std::max(m, std::abs(static_cast<double>(w[static_cast<size_t>(start + e)])));
    max_abs[s.name] = m;
  }
  double worst_ratio = 0.0;
  std::string worst;
  for (size_t r = 0; r < ranks.size(); ++r) {
    int64_t offset = 0;
    for (const ParameterSpec& s : ranks[r].specs) {
      const std::vector<float>& mine = compare_values ? ranks[r].values : ranks[r].grads;
      const std::vector<float>& ref = compare_values ? whole.values : whole.grads;
      const double tol = relative_tolerance * max_abs.at(s.name);
      const int64_t start = offsets.at(s.name);
      for (int64_t e = 0; e < s.numel(); ++e) {
        const int64_t at = start + s.full_index(e);
        const double diff = std::abs(static_cast<double>(mine[static_cast<size_t>(offset + e)]) -
                                     static_cast<double>(ref[static_cast<size_t>(at)]));
        const double ratio = tol > 0.0 ? diff / tol : (diff > 0.0 ? 1e30 : 0.0);
        if (ratio > worst_ratio) {
          worst_ratio = ratio;
          char text[256];
          std::snprintf(text, sizeof text, "%s on rank %zu element %lld (whole %lld): |diff| %.3g",
                        s.name.c_str(), r, static_cast<long long>(e), static_cast<long long>(at),
                        diff);
          worst = text;
        }
      }
      offset += s.numel();
    }
  }
  std::printf("[ %s ] %s: worst %s = %.2f%% of the tolerance\n", what.c_str(),
              compare_values ? "values" : "gradients", worst.empty() ? "(none)" : worst.c_str(),
              100.0 * worst_ratio);
  EXPECT_LE(worst_ratio, 1.0) << what << ": " << worst << " is " << 100.0 * worst_ratio
                              << "% of the tolerance";
}

void expect_loss_matches(const RankOutcome& whole, const std::vector<RankOutcome>& ranks,
                         double relative_tolerance, const std::string& what) {
  const double tol = relative_tolerance * std::max(1.0, std::abs(whole.loss));
  for (size_t r = 0; r < ranks.size(); ++r) {
    const double diff = std::abs(ranks[r].loss - whole.loss);
    std::printf(
        "[ %s ] loss rank %zu %.9g vs one rank %.9g: |diff| %.3g = %.2f%% of the tolerance\n",
        what.c_str(), r, ranks[r].loss, whole.loss, diff, 100.0 * diff / tol);
    EXPECT_LE(diff, tol) << what << " rank " << r << ": |diff| " << diff << " is "
                         << 100.0 * diff / tol << "% of the tolerance";
    // The loss is computed from identical replicated inputs: bitwise the same on every rank.
    EXPECT_EQ(ranks[r].loss, ranks[0].loss) << what << " rank " << r;
  }
}

// Megatron's volume: 4 all-reduces of (B, T, C) per block, each sending 2(t − 1)/t of it.
void expect_megatron_traffic(const ModelConfig& c, int64_t t, const StepOptions& o,
                             const std::vector<RankOutcome>& ranks, int64_t recomputed_layers = 0) {
  const int64_t element_bytes = o.precision == amp::Precision::fp32 ? 4 : 2;
  const int64_t per_all_reduce = 2 * (t - 1) * (o.B * o.T * c.hidden / t) * element_bytes;
  const int64_t all_reduces = 4 * c.layers + 2 * recomputed_layers;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const dist::CallCounts activations = ranks[r].stats.of(dist::Traffic::activations);
    EXPECT_EQ(activations.calls, all_reduces) << "rank " << r;
    EXPECT_EQ(activations.bytes_sent, all_reduces * per_all_reduce) << "rank " << r;
    EXPECT_EQ(activations.bytes_received, all_reduces * per_all_reduce) << "rank " << r;
    EXPECT_EQ(ranks[r].stats.total().bytes_sent, activations.bytes_sent) << "rank " << r;
    EXPECT_EQ(ranks[r].stats.of(dist::Collective::all_reduce).calls, all_reduces);
  }
}

void expect_same_model_as_one_rank(const ModelConfig& config, int64_t t, const StepOptions& o,
                                   int64_t recomputed_layers = 0) {
  const std::string what = config.name + " t=" + std::to_string(t);
  const RankOutcome whole = run_step(config, nullptr, o);
  const std::vector<RankOutcome> ranks = run_ranks(config, t, o);
  const double tol = step_tolerance(config, 0x1.0p-24);
  expect_loss_matches(whole, ranks, tol, what);
  expect_slices_match(config, whole, ranks, tol, false, what);
  expect_megatron_traffic(config, t, o, ranks, recomputed_layers);
}

TEST(TensorParallel, EveryRanksInitialWeightsAreItsSliceOfTheOneRankModel) {
  StepOptions o;
  o.perturb = false;
  o.T = 29;
  for (const ModelConfig& config : {model_config_by_name("gpt2-mini"), llama_gqa()}) {
    const RankOutcome whole = run_step(config, nullptr, o);
    for (int64_t t : {2, 4})
      expect_slices_match(config, whole, run_ranks(config, t, o), 0.0, true,
                          config.name + " t=" + std::to_string(t));
  }
}

// Tensor parallelism under ZeRO-3: each data-parallel rank's shard of a tensor-parallel rank's
// part holds, element for element, the one-rank model's initial weights at the same whole index.
TEST(TensorParallel, ZeroThreeShardsOfATensorParallelPartHoldTheOneRankInitialWeights) {
  for (const ModelConfig& config : {model_config_by_name("gpt2-mini"), llama_gqa()}) {
    Runtime one(memory::parse_device("cpu"));
    DecoderModel whole(one, config, 23);
    const std::vector<float> whole_values =
        to_floats(whole.parameters().values().view());  // (numel)
    const std::map<std::string, int64_t> offsets = whole_offsets(config);
    for (int64_t t : {2, 4}) {
      std::vector<int64_t> mismatches(static_cast<size_t>(t)), checked(static_cast<size_t>(t));
      dist::run_simulated_ranks(t, true, [&](dist::Communicator& comm) {
        const auto r = static_cast<size_t>(comm.rank());
        const std::vector<ParameterSpec> specs = config.parameters(comm.rank(), t);
        for (int64_t dp_rank = 0; dp_rank < 3; ++dp_rank) {  // 3 data-parallel ranks: odd shards
          Runtime runtime(memory::parse_device("cpu"));
          DecoderModel model(runtime, config, 23, {}, {3, dp_rank, nn::StoreSharding::parameters},
                             &comm);
          const nn::ParameterStore& store = model.parameters();
          for (size_t p = 0; p < specs.size(); ++p) {
            const nn::LocalPart part = store.local_part(store.views()[p]);
            if (part.values.none()) continue;
            const float* v = part.values.f32();  // (part numel)
            const int64_t start = offsets.at(specs[p].name);
            for (int64_t i = 0; i < part.values.numel(); ++i) {
              const int64_t at = start + specs[p].full_index(part.first + i);
              mismatches[r] += v[i] != whole_values[static_cast<size_t>(at)] ? 1 : 0;
              ++checked[r];
            }
          }
        }
      });
      for (int64_t r = 0; r < t; ++r) {
        EXPECT_EQ(mismatches[static_cast<size_t>(r)], 0)
            << config.name << " t=" << t << " rank " << r;
        // Every element of the rank's part, once over the 3 shards.
        EXPECT_EQ(checked[static_cast<size_t>(r)], config.rank_parameter_count(t));
      }
    }
  }
}

TEST(TensorParallel, Gpt2TinyLossAndGradientSlicesMatchOneRank) {
  for (int64_t t : {2, 4}) expect_same_model_as_one_rank(model_config_by_name("gpt2-tiny"), t, {});
}

TEST(TensorParallel, LlamaWithGroupedQueryAttentionMatchesOneRank) {
  for (int64_t t : {2, 4}) expect_same_model_as_one_rank(llama_gqa(), t, {});
}

TEST(TensorParallel, FlashAttentionMatchesOneRank) {
  StepOptions o;
  o.attention = AttentionKind::flash;
  o.B = 2;
  o.T = 29;
  expect_same_model_as_one_rank(model_config_by_name("gpt2-mini"), 2, o);
  expect_same_model_as_one_rank(llama_gqa(), 4, o);
}

// A re-run forward all-reduces its two branch outputs again: 2 more per recomputed block.
TEST(TensorParallel, RecomputeMatchesOneRankAndAllReducesAgain) {
  StepOptions o;
  o.plan = {{nn::Recompute::full, true}, {nn::Recompute::full, false}};
  expect_same_model_as_one_rank(llama_gqa(), 2, o, 2);
  o.plan = {{nn::Recompute::selective, false}, {nn::Recompute::full, true}};
  o.T = 29;
  expect_same_model_as_one_rank(model_config_by_name("gpt2-mini"), 4, o, 1);
}

// bf16 activations: each rank rounds its partial output to bf16 before the sum, one rank rounds
// the whole sum once, so a reduction differs by up to (t + 1)·u_bf16 of Σ|partials| (u = 2⁻⁸)
// instead of 2γ_K; the same first-order sum over the 4L reductions gives the bound.
TEST(TensorParallel, Bf16AndMixedPrecisionMatchOneRankWithinBf16Rounding) {
  StepOptions o;
  o.perturb = false;
  o.B = 2;
  o.T = 16;
  const ModelConfig config = model_config_by_name("gpt2-mini");
  for (amp::Precision precision : {amp::Precision::bf16, amp::Precision::mixed_bf16}) {
    o.precision = precision;
    const int64_t t = 2;
    const std::string what = "gpt2-mini " + std::string(amp::precision_name(precision));
    const RankOutcome whole = run_step(config, nullptr, o);
    const std::vector<RankOutcome> ranks = run_ranks(config, t, o);
    const double tol =
        4.0 * static_cast<double>(config.layers) * static_cast<double>(t + 1) * 0x1.0p-8;
    expect_loss_matches(whole, ranks, tol, what);
    expect_slices_match(config, whole, ranks, tol, false, what);
    expect_megatron_traffic(config, t, o, ranks);
  }
}

// What each rank allocates for its parameters is what the estimator counts for it (fp32: 4 bytes
// each, one block rounded up to the allocator's 512 bytes).
TEST(TensorParallel, ParameterBytesPerRankEqualTheEstimators) {
  StepOptions o;
  o.perturb = false;
  o.B = 1;
  o.T = 8;
  for (const ModelConfig& config : {model_config_by_name("gpt2-mini"), llama_gqa()}) {
    for (int64_t t : {2, 4}) {
      estimate::EstimateInputs in;
      in.model = config;
      in.plan.parallel.tensor_parallel = t;
      in.plan.amp.precision = amp::Precision::fp32;
      const estimate::Estimate e = estimate::estimate_memory(in);
      for (const RankOutcome& rank : run_ranks(config, t, o)) {
        EXPECT_EQ(static_cast<int64_t>(rank.values.size()), config.rank_parameter_count(t));
        EXPECT_EQ(e.parameters.bytes, 4 * config.rank_parameter_count(t));
        EXPECT_EQ(rank.parameter_bytes, (e.parameters.bytes + 511) / 512 * 512)
            << config.name << " t=" << t;
      }
    }
  }
}

void expect_usage_error(const std::function<void()>& call, const std::string& expected) {
  try {
    call();
    ADD_FAILURE() << "expected UsageError containing: " << expected;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(TensorParallel, BadDegreesDropoutAndMetaGroupsThatMoveDataAreRefusedNamingTheValue) {
  // llama-tiny has 2 kv heads: 4 ranks would split one.
  dist::run_simulated_ranks(4, true, [](dist::Communicator& comm) {
    Runtime runtime(memory::parse_device("cpu"));
    expect_usage_error(
        [&] { DecoderModel model(runtime, model_config_by_name("llama-tiny"), 1, {}, {}, &comm); },
        "tensor-parallel degree 4 must divide kv_heads (2)");
  });
  dist::run_simulated_ranks(3, true, [](dist::Communicator& comm) {
    Runtime runtime(memory::parse_device("cpu"));
    expect_usage_error(
        [&] { DecoderModel model(runtime, model_config_by_name("gpt2-mini"), 1, {}, {}, &comm); },
        "tensor-parallel degree 3 must divide heads (4)");
  });
  dist::run_simulated_ranks(2, true, [](dist::Communicator& comm) {
    Runtime runtime(memory::parse_device("cpu"));
    DecoderModel model(runtime, model_config_by_name("gpt2-mini"), 1, {}, {}, &comm);
    expect_usage_error([&] { model.set_dropout({0.1f}); }, "dropout probability 0.100000");
    EXPECT_NO_THROW(model.set_dropout({0.0f}));
    Runtime meta(memory::parse_device("meta"));
    expect_usage_error(
        [&] { DecoderModel on_meta(meta, model_config_by_name("gpt2-mini"), 1, {}, {}, &comm); },
        "set_move_data(false)");
  });
}

// Llama 2 7B over 8 ranks on meta: shapes, allocations and counted traffic only, in seconds.
TEST(TensorParallel, SevenBillionLlamaOverEightRanksIsSizedOnMetaInSeconds) {
  const ModelConfig config = model_config_by_name("llama2-7b");
  const int64_t t = 8, B = 1, T = 4096;
  std::vector<int64_t> parameter_bytes(t), bytes_sent(t);
  const auto start = std::chrono::steady_clock::now();
  dist::run_simulated_ranks(t, false, [&](dist::Communicator& comm) {
    comm.set_move_data(false);
    Runtime runtime(memory::parse_device("meta"));
    DecoderModel model(runtime, config, 1, amp::precision_policy(amp::Precision::mixed_bf16), {},
                       &comm);
    std::vector<int32_t> tokens(static_cast<size_t>(B * T));  // meta reads nothing
    const memory::TensorView view(tokens.data(), DType::i32, {B, T});
    SavedActivations saved(runtime, config.layers);
    (void)model.forward(saved, view, view, B, T);
    model.backward(saved, view, view, B, T);
    const auto r = static_cast<size_t>(comm.rank());
    parameter_bytes[r] =
        runtime.allocator().category_stats().of(memory::MemoryCategory::parameter).current;
    bytes_sent[r] = comm.stats().of(dist::Traffic::activations).bytes_sent;
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "[ llama2-7b t=8 on meta ] %.2f s, %lld parameter bytes and %lld activation bytes "
      "sent per rank\n",
      seconds, static_cast<long long>(parameter_bytes[0]), static_cast<long long>(bytes_sent[0]));
  EXPECT_LT(seconds, 30.0);
  // By hand: 2VC + C + L(2C + (4C² + 3CF)/8) bf16 parameters (no GQA in Llama 2 7B).
  const int64_t C = 4096, V = 32000, F = 11008, L = 32;
  const int64_t per_rank = 2 * V * C + C + L * (2 * C + (4 * C * C + 3 * C * F) / 8);
  const int64_t expected_sent = 4 * L * 2 * (t - 1) * (B * T * C / t) * 2;
  for (int64_t r = 0; r < t; ++r) {
    EXPECT_EQ(parameter_bytes[static_cast<size_t>(r)], (2 * per_rank + 511) / 512 * 512);
    EXPECT_EQ(bytes_sent[static_cast<size_t>(r)], expected_sent);
  }
}

}  // namespace
}  // namespace vramlab
