// Tests of exercise 01.1 (model-state bytes by precision and optimizer). They run against your
// code (`vramlab check 01.1`) and against the reference (ctest: test_ex_01_1_ref).
// Expectations come from the sources, not from the reference: ZeRO (Rajbhandari et al. 2020,
// §3.1: mixed-precision Adam = 2 + 2 + 12 = 16 B/param), Hugging Face's model-memory anatomy
// (fp32 weights 4 B, SGD-momentum 4 B, 8-bit AdamW 2 B), bitsandbytes (one fp32 absmax per block
// of 256 per state), Lion (one state) and Adam-mini (one v per block).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/estimate/model_state_memory.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/01-memory-breakdown/api/bytes_per_param.h"

namespace vramlab::lesson01 {
namespace {

using estimate::Optimizer;
using estimate::Precision;
using workbook::Comparison;
using workbook::Unit;

const Precision kPrecisions[] = {Precision::fp32, Precision::bf16, Precision::mixed_fp16,
                                 Precision::mixed_bf16};
const Optimizer kOptimizers[] = {Optimizer::sgd,   Optimizer::sgd_momentum,
                                 Optimizer::adamw, Optimizer::adamw_8bit,
                                 Optimizer::lion,  Optimizer::adam_mini};

// Bytes per parameter of each part, from the sources above (the test's own table).
struct PerParam {
  int64_t weight, gradient, master, state_element;
};
PerParam per_param(Precision p) {
  switch (p) {
    case Precision::fp32:
      return {4, 4, 0, 4};
    case Precision::bf16:
      return {2, 2, 0, 2};
    case Precision::mixed_fp16:
    case Precision::mixed_bf16:
      return {2, 2, 4, 4};
  }
  return {};
}

// Optimizer-state bytes for psi parameters.
int64_t expected_state_bytes(Precision p, Optimizer o, int64_t psi, int64_t v_blocks) {
  const int64_t e = per_param(p).state_element;
  switch (o) {
    case Optimizer::sgd:
      return 0;
    case Optimizer::sgd_momentum:
      return e * psi;
    case Optimizer::lion:
      return e * psi;
    case Optimizer::adamw:
      return 2 * e * psi;
    case Optimizer::adamw_8bit:
      return 2 * psi + 2 * 4 * ((psi + 255) / 256);
    case Optimizer::adam_mini:
      return e * psi + e * v_blocks;
    case Optimizer::adafactor:  // needs shapes: model_state_breakdown refuses it
      return -1;
  }
  return -1;
}

std::string describe(int64_t psi, Precision p, Optimizer o, int64_t v_blocks) {
  std::string where = "psi=" + std::to_string(psi) + " " +
                      std::string(estimate::precision_name(p)) + " " +
                      std::string(estimate::optimizer_name(o));
  if (o == Optimizer::adam_mini) where += " v_blocks=" + std::to_string(v_blocks);
  return where;
}

// Sizes: tiny, odd, multiples of the 8-bit block, off-by-one around it, and huge (70B).
std::vector<int64_t> parameter_counts(uint64_t seed) {
  std::vector<int64_t> sizes = {1, 255, 256, 257, 4096, 124'439'808, 70'553'706'496};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> small(1, 100'000), large(1, 80'000'000'000);
  for (int i = 0; i < 40; ++i) sizes.push_back(small(rng));
  for (int i = 0; i < 40; ++i) sizes.push_back(large(rng));
  return sizes;
}

//! [test]
TEST(BytesPerParam, ZeroPaperMixedAdamWIsTwoPlusTwoPlusTwelve) {
  Comparison total("total bytes / psi", Unit::kNumber), master("master bytes / psi"),
      states("optimizer-state bytes / psi");
  for (Precision p : {Precision::mixed_fp16, Precision::mixed_bf16})
    for (int64_t psi : {int64_t{1}, int64_t{7'500'000'000}, int64_t{1'557'611'200}}) {
      const ModelStateBreakdown b = model_state_breakdown(psi, p, Optimizer::adamw);
      const std::string where = describe(psi, p, Optimizer::adamw, 0);
      total.add(where, 16.0, static_cast<double>(b.total_bytes()) / static_cast<double>(psi));
      master.add(where, 4.0,
                 static_cast<double>(b.master_weights_bytes) / static_cast<double>(psi));
      states.add(where, 8.0,
                 static_cast<double>(b.optimizer_state_bytes) / static_cast<double>(psi));
    }
  VRAMLAB_EXPECT_PASSES(total);
  VRAMLAB_EXPECT_PASSES(master);
  VRAMLAB_EXPECT_PASSES(states);
}
//! [test]

TEST(BytesPerParam, EveryPrecisionAndOptimizerOnRandomSizes) {
  Comparison weights("weights bytes", Unit::kBytes), gradients("gradients bytes", Unit::kBytes),
      master("master-weights bytes", Unit::kBytes), states("optimizer-state bytes", Unit::kBytes);
  for (Comparison* c : {&weights, &gradients, &master, &states}) c->per_unit("parameter");
  std::mt19937_64 rng(0x01'01);
  for (int64_t psi : parameter_counts(20260101)) {
    for (Precision p : kPrecisions)
      for (Optimizer o : kOptimizers) {
        const int64_t v_blocks = std::uniform_int_distribution<int64_t>(0, psi)(rng);
        const ModelStateBreakdown b = model_state_breakdown(psi, p, o, v_blocks);
        const PerParam pp = per_param(p);
        const std::string where = describe(psi, p, o, v_blocks);
        const auto units = static_cast<double>(psi);
        weights.add(where, static_cast<double>(pp.weight * psi),
                    static_cast<double>(b.weights_bytes), units);
        gradients.add(where, static_cast<double>(pp.gradient * psi),
                      static_cast<double>(b.gradients_bytes), units);
        master.add(where, static_cast<double>(pp.master * psi),
                   static_cast<double>(b.master_weights_bytes), units);
        states.add(where, static_cast<double>(expected_state_bytes(p, o, psi, v_blocks)),
                   static_cast<double>(b.optimizer_state_bytes), units);
      }
  }
  VRAMLAB_EXPECT_PASSES(weights);
  VRAMLAB_EXPECT_PASSES(gradients);
  VRAMLAB_EXPECT_PASSES(master);
  VRAMLAB_EXPECT_PASSES(states);
}

TEST(BytesPerParam, EightBitAdamWKeepsOneFp32AbsmaxPerBlockOfEachState) {
  // bitsandbytes with B = 256: 2 + 8/256 = 2.03125 B/param of state when 256 divides psi.
  Comparison per_param_states("8-bit state bytes / psi", Unit::kNumber, 0.0, 1e-12);
  Comparison odd_sizes("8-bit state bytes (partial last block)", Unit::kBytes);
  for (Precision p : kPrecisions) {
    for (int64_t psi : {int64_t{256}, int64_t{1} << 20, int64_t{6'738'415'616} / 256 * 256}) {
      const auto b = model_state_breakdown(psi, p, Optimizer::adamw_8bit);
      per_param_states.add(describe(psi, p, Optimizer::adamw_8bit, 0), 2.03125,
                           static_cast<double>(b.optimizer_state_bytes) / static_cast<double>(psi));
    }
    for (int64_t psi : {int64_t{1}, int64_t{257}, int64_t{1000}}) {
      const int64_t blocks = psi / 256 + 1;  // a partial block still has its absmax
      const auto b = model_state_breakdown(psi, p, Optimizer::adamw_8bit);
      odd_sizes.add(describe(psi, p, Optimizer::adamw_8bit, 0),
                    static_cast<double>(2 * psi + 8 * blocks),
                    static_cast<double>(b.optimizer_state_bytes));
    }
  }
  VRAMLAB_EXPECT_PASSES(per_param_states);
  VRAMLAB_EXPECT_PASSES(odd_sizes);
}

TEST(BytesPerParam, AdamMiniHalvesAdamWStatesForLlama2_7B) {
  // Adam-mini's Table 1: Llama 2-7B optimizer memory 53.92 GB (AdamW, 8 B/param fp32) -> 26.96 GB.
  const int64_t psi = 6'740'000'000;
  const auto adamw = model_state_breakdown(psi, Precision::mixed_bf16, Optimizer::adamw);
  const auto mini = model_state_breakdown(psi, Precision::mixed_bf16, Optimizer::adam_mini, 0);
  Comparison gb("optimizer-state GB (1e9 B)", Unit::kNumber, 0.005);
  gb.add("AdamW llama2-7b", 53.92, static_cast<double>(adamw.optimizer_state_bytes) / 1e9);
  gb.add("Adam-mini llama2-7b (v blocks ~ 0)", 26.96,
         static_cast<double>(mini.optimizer_state_bytes) / 1e9);
  VRAMLAB_EXPECT_PASSES(gb);
}

TEST(BytesPerParam, AgreesWithTheAnalyticEstimator) {
  Comparison total("total bytes vs vramlab estimate", Unit::kBytes);
  for (int64_t psi : parameter_counts(7))
    for (Precision p : kPrecisions)
      for (Optimizer o : kOptimizers) {
        estimate::ModelStateOptions options;
        options.precision = p;
        options.optimizer = o;
        options.adam_mini_v_blocks = psi / 3;
        const auto expected = estimate::model_state_bytes(psi, options);
        const auto actual = model_state_breakdown(psi, p, o, psi / 3);
        total.add(describe(psi, p, o, psi / 3), static_cast<double>(expected.total()),
                  static_cast<double>(actual.total_bytes()));
      }
  VRAMLAB_EXPECT_PASSES(total);
}

TEST(BytesPerParam, SeventyBillionParametersNeed64BitArithmetic) {
  // Llama 2-70B (68,976,648,192 parameters) and a 405B model: every part passes 2^32 bytes, so a
  // 32-bit intermediate anywhere shows up here. ZeRO's 16 B/param for mixed AdamW, and 8-bit AdamW
  // with its absmax (the test's own table above).
  Comparison total("total bytes", Unit::kBytes), states("optimizer-state bytes", Unit::kBytes);
  total.per_unit("parameter");
  states.per_unit("parameter");
  for (int64_t psi : {int64_t{68'976'648'192}, int64_t{405'853'388'800}, int64_t{1} << 32})
    for (Precision p : kPrecisions)
      for (Optimizer o : {Optimizer::adamw, Optimizer::adamw_8bit}) {
        const ModelStateBreakdown b = model_state_breakdown(psi, p, o);
        const PerParam pp = per_param(p);
        const int64_t expected_states = expected_state_bytes(p, o, psi, 0);
        const std::string where = describe(psi, p, o, 0);
        const auto units = static_cast<double>(psi);
        total.add(
            where,
            static_cast<double>((pp.weight + pp.gradient + pp.master) * psi + expected_states),
            static_cast<double>(b.total_bytes()), units);
        states.add(where, static_cast<double>(expected_states),
                   static_cast<double>(b.optimizer_state_bytes), units);
      }
  VRAMLAB_EXPECT_PASSES(total);
  VRAMLAB_EXPECT_PASSES(states);
}

TEST(BytesPerParam, AcceptsTheLimitsOfItsInput) {
  // One parameter, and Adam-mini with no v block or with one v per parameter (blocks == Psi):
  // all valid, at the edges of the ranges the API allows.
  Comparison states("Adam-mini state bytes at the limits", Unit::kBytes);
  size_t rejected = 0;
  std::string first_rejected;
  for (int64_t psi : {int64_t{1}, int64_t{257}, int64_t{68'976'648'192}})
    for (int64_t v_blocks : {int64_t{0}, psi})
      for (Precision p : kPrecisions) {
        const std::string where = describe(psi, p, Optimizer::adam_mini, v_blocks);
        try {
          const auto b = model_state_breakdown(psi, p, Optimizer::adam_mini, v_blocks);
          states.add(
              where,
              static_cast<double>(expected_state_bytes(p, Optimizer::adam_mini, psi, v_blocks)),
              static_cast<double>(b.optimizer_state_bytes));
        } catch (const UsageError& e) {
          if (rejected++ == 0) first_rejected = where + ": " + e.what();
        }
      }
  if (rejected > 0)
    ADD_FAILURE() << rejected << " valid inputs (0 <= v_blocks <= psi) were rejected; first "
                  << first_rejected;
  if (states.count() > 0) {
    VRAMLAB_EXPECT_PASSES(states);
  }
}

TEST(BytesPerParam, RefusesAdafactorWhoseStateNeedsShapes) {
  try {
    model_state_breakdown(1000, Precision::fp32, Optimizer::adafactor);
    ADD_FAILURE() << "no vramlab::UsageError for adafactor, whose state depends on the shapes";
  } catch (const UsageError& e) {
    if (std::string(e.what()).find("adafactor") == std::string::npos)
      ADD_FAILURE() << "the message should name adafactor: " << e.what();
  }
}

TEST(BytesPerParam, RejectsBadInputNamingTheValue) {
  struct Bad {
    int64_t psi, v_blocks;
    std::string named;
  };
  for (const Bad& bad :
       {Bad{0, 0, "0"}, Bad{-5, 0, "-5"}, Bad{100, -1, "-1"}, Bad{100, 101, "101"}}) {
    try {
      model_state_breakdown(bad.psi, Precision::fp32, Optimizer::adam_mini, bad.v_blocks);
      ADD_FAILURE() << "no vramlab::UsageError for psi=" << bad.psi << " v_blocks=" << bad.v_blocks;
    } catch (const UsageError& e) {
      if (std::string(e.what()).find(bad.named) == std::string::npos)
        ADD_FAILURE() << "the message should name " << bad.named << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace vramlab::lesson01
