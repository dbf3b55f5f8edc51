// Activations: Korthikanti et al. 2022 Table 2 (all six rows) on the Table 3 models, §5's
// 5as/h values and selective-recompute savings, the ZeRO footnote's 60 GB for GPT-2 1.5B, and the
// runtime's saved-tensor layout against its closed form.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/estimate/activation_memory.h"
#include "common/estimate/estimator.h"
#include "common/estimate/runtime_activations.h"
#include "common/model/model_config.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "tests/estimate/expect_close.h"

namespace vramlab::estimate {
namespace {

using testing::matches_printed;
using testing::near_relative;

// Korthikanti et al. Table 3 (s = 2048, v = 51200, t = 8).
struct Table3Model {
  const char* name;
  int64_t heads, hidden, layers, micro_batch;
  double billions;
};
constexpr Table3Model kTable3[] = {
    {"22B", 64, 6144, 48, 4, 22},
    {"175B", 96, 12288, 96, 1, 175},
    {"530B", 128, 20480, 105, 1, 530},
    {"1T", 160, 25600, 128, 1, 1000},
};
constexpr int64_t kSeq = 2048, kTp = 8;

// Table 2, evaluated in floating point straight from the printed formulas.
double table2(ActivationRow row, double s, double b, double h, double a, double t) {
  const double sbh = s * b * h;
  switch (row) {
    case ActivationRow::no_parallelism:
      return sbh * (34 + 5 * a * s / h);
    case ActivationRow::tensor_parallel:
      return sbh * (10 + 24 / t + 5 * a * s / (h * t));
    case ActivationRow::tensor_sequence_parallel:
      return sbh * (34 / t + 5 * a * s / (h * t));
    case ActivationRow::tensor_parallel_selective:
      return sbh * (10 + 24 / t);
    case ActivationRow::tensor_sequence_parallel_selective:
      return sbh * 34 / t;
    case ActivationRow::full_recompute:
      return 2 * sbh;
  }
  return 0;
}

constexpr ActivationRow kRows[] = {ActivationRow::no_parallelism,
                                   ActivationRow::tensor_parallel,
                                   ActivationRow::tensor_sequence_parallel,
                                   ActivationRow::tensor_parallel_selective,
                                   ActivationRow::tensor_sequence_parallel_selective,
                                   ActivationRow::full_recompute};

TEST(Korthikanti, Table2AllRowsOnTable3Models) {
  for (const auto& m : kTable3) {
    for (ActivationRow row : kRows) {
      const int64_t t = row == ActivationRow::no_parallelism ? 1 : kTp;
      const int64_t got = korthikanti_activation_bytes_per_layer(
          row, {kSeq, m.micro_batch, m.hidden, m.heads, t, 2});
      EXPECT_TRUE(near_relative(
          static_cast<double>(got),
          table2(row, kSeq, static_cast<double>(m.micro_batch), static_cast<double>(m.hidden),
                 static_cast<double>(m.heads), static_cast<double>(t)),
          1e-9))
          << m.name << " row " << korthikanti_formula(row, 2);
    }
  }
}

// Through the estimator: L × Table 2 for the row the flags select; the models' sizes are those
// Table 3 names.
TEST(Korthikanti, EstimatorSelectsTheRowAndMultipliesByLayers) {
  struct Case {
    bool sp;
    Recompute recompute;
    ActivationRow row;
  };
  const Case cases[] = {
      {false, Recompute::none, ActivationRow::tensor_parallel},
      {true, Recompute::none, ActivationRow::tensor_sequence_parallel},
      {false, Recompute::selective, ActivationRow::tensor_parallel_selective},
      {true, Recompute::selective, ActivationRow::tensor_sequence_parallel_selective},
      {true, Recompute::full, ActivationRow::full_recompute},
  };
  for (const auto& m : kTable3) {
    EstimateInputs in;
    in.model = gpt2_config(m.name, m.layers, m.hidden, m.heads, 51200, kSeq);
    EXPECT_TRUE(matches_printed(static_cast<double>(in.model->parameter_count()) / 1e9, m.billions,
                                m.billions >= 1000 ? 1000 : 1))
        << m.name;
    in.micro_batch = m.micro_batch;
    in.plan.parallel.tensor_parallel = kTp;
    in.plan.amp.precision = Precision::mixed_fp16;
    for (const auto& c : cases) {
      in.plan.parallel.sequence_parallel = c.sp;
      in.plan.recompute = recompute::parse_recompute_spec(recompute_name(c.recompute));
      const Estimate e = estimate_memory(in);
      const double expected =
          static_cast<double>(m.layers) * table2(c.row, kSeq, static_cast<double>(m.micro_batch),
                                                 static_cast<double>(m.hidden),
                                                 static_cast<double>(m.heads), kTp);
      EXPECT_TRUE(near_relative(static_cast<double>(e.activations.bytes), expected, 1e-9))
          << m.name << " " << e.activations.source;
      EXPECT_NE(e.activations.source.find("Korthikanti et al. 2022 Table 2"), std::string::npos);
    }
  }
  // Without TP or SP the first row applies.
  EstimateInputs plain;
  plain.model = model_config_by_name("gpt2-124m");
  plain.micro_batch = 4;
  const Estimate e = estimate_memory(plain);
  EXPECT_TRUE(near_relative(static_cast<double>(e.activations.bytes),
                            12 * table2(ActivationRow::no_parallelism, 1024, 4, 768, 12, 1),
                            1e-12));
  EXPECT_NE(e.activations.source.find("sbh(34 + 5as/h)"), std::string::npos)
      << e.activations.source;
}

// §5: 5as/h = 80 for GPT-3 (a = 96, s = 2048, h = 12288) and 64 for MT-NLG (a = 128,
// h = 20480); selective recompute saves 70% and 65% of the activation memory.
TEST(Korthikanti, Section5AttentionTermAndSelectiveSavings) {
  struct Model {
    int64_t heads, hidden;
    double term, saving;
  };
  for (const Model m : {Model{96, 12288, 80, 0.70}, Model{128, 20480, 64, 0.65}}) {
    const ActivationShape one{kSeq, 1, m.hidden, m.heads, 1, 2};
    const double sbh = static_cast<double>(kSeq * m.hidden);
    const double full = static_cast<double>(
        korthikanti_activation_bytes_per_layer(ActivationRow::no_parallelism, one));
    EXPECT_TRUE(near_relative(full / sbh - 34.0, m.term, 1e-12)) << "5as/h for h=" << m.hidden;
    const ActivationShape tp{kSeq, 1, m.hidden, m.heads, kTp, 2};
    const double none = static_cast<double>(
        korthikanti_activation_bytes_per_layer(ActivationRow::tensor_sequence_parallel, tp));
    const double selective = static_cast<double>(korthikanti_activation_bytes_per_layer(
        ActivationRow::tensor_sequence_parallel_selective, tp));
    EXPECT_TRUE(matches_printed(1.0 - selective / none, m.saving, 0.01)) << "h=" << m.hidden;
  }
}

// Element size: fp32 keeps the paper's inventory with 4-byte elements and 1-byte masks, so
// going from 2 to 4 bytes adds exactly 2 bytes per element: 16sbh + 2as²b elements per layer.
TEST(Korthikanti, Fp32ScalesTheElementsNotTheMasks) {
  const ActivationShape two{512, 3, 768, 12, 1, 2};
  ActivationShape four = two;
  four.element_bytes = 4;
  const int64_t sbh = 512 * 3 * 768, as2b = 12 * 512 * 512 * 3;
  EXPECT_EQ(korthikanti_activation_bytes_per_layer(ActivationRow::no_parallelism, four) -
                korthikanti_activation_bytes_per_layer(ActivationRow::no_parallelism, two),
            2 * (16 * sbh + 2 * as2b));
  EXPECT_EQ(korthikanti_activation_bytes_per_layer(ActivationRow::full_recompute, four), 4 * sbh);
  EXPECT_NE(korthikanti_formula(ActivationRow::no_parallelism, 4).find("sbh(66 + 9as/h)"),
            std::string::npos);
}

// ZeRO §3 footnote 3: 12·h·b·s·L elements; GPT-2 1.5B (h = 1600, L = 48), b = 32, s = 1024:
// 30.2e9 elements, 60.4 GB in fp16.
TEST(ZeroFootnote, Gpt2OnePointFiveBillionActivations) {
  const ModelConfig m = model_config_by_name("gpt2-1.5b");
  const int64_t bytes = zero_footnote_activation_bytes(m.hidden, 32, 1024, m.layers, 2);
  EXPECT_TRUE(matches_printed(static_cast<double>(bytes) / 2 / 1e9, 30.2, 0.1));
  EXPECT_TRUE(matches_printed(static_cast<double>(bytes) / 1e9, 60.4, 0.1));
}

TEST(Korthikanti, BadShapesAndOverflowAreUsageErrors) {
  EXPECT_THROW((void)korthikanti_activation_bytes_per_layer(ActivationRow::no_parallelism,
                                                            {0, 1, 64, 4, 1, 2}),
               UsageError);
  EXPECT_THROW((void)korthikanti_activation_bytes_per_layer(ActivationRow::no_parallelism,
                                                            {64, 1, 64, 4, 1, 3}),
               UsageError);
  try {
    (void)korthikanti_activation_bytes_per_layer(ActivationRow::no_parallelism,
                                                 {1LL << 32, 1, 1LL << 20, 1, 1, 2});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("overflows"), std::string::npos) << e.what();
  }
  EstimateInputs in;
  in.model = model_config_by_name("gpt2-124m");
  in.plan.parallel.tensor_parallel = 5;
  EXPECT_THROW((void)estimate_memory(in), UsageError);  // 5 does not divide 12 heads
  in.plan.parallel.tensor_parallel = 4;
  in.plan.parallel.sequence_parallel = true;
  in.seq = 1022;
  EXPECT_THROW((void)estimate_memory(in), UsageError);  // SP needs t | s
  in.seq = 2048;
  in.plan.parallel.sequence_parallel = false;
  EXPECT_THROW((void)estimate_memory(in), UsageError);  // beyond the 1024-row position table
}

// Closed form of the GPT-2 layout: 16C·BT + 4BT + H·BT² elements per layer (the probabilities are
// kept, the scores are not); outside the layers 2C·BT + 3BT + V·BT (encoded, lnf, mean, rstd,
// losses, probs: the logits are a temporary). The 4BT statistics per layer and the 3BT outside are
// f32 whatever the activations' type.
int64_t outside_elements(int64_t C, int64_t B, int64_t T, int64_t V) {
  return 2 * C * B * T + 3 * B * T + V * B * T;
}

TEST(RuntimeLayout, Gpt2MatchesItsClosedForm) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int64_t> pick(1, 7);
  for (int trial = 0; trial < 50; ++trial) {
    const int64_t H = pick(rng), C = H * (pick(rng) * 2 + 1), B = pick(rng), T = pick(rng) * 5;
    const int64_t V = pick(rng) * 31;
    const ModelConfig m = gpt2_config("g", pick(rng), C, H, V, 64);
    const int64_t per_layer = 16 * C * B * T + 4 * B * T + H * B * T * T;
    EXPECT_EQ(runtime_activation_bytes_per_layer(m, B, T, DType::f32), 4 * per_layer)
        << "B=" << B << " T=" << T << " C=" << C << " H=" << H;
    EXPECT_EQ(runtime_activation_bytes_per_layer(m, B, T, DType::bf16),
              2 * (per_layer - 4 * B * T) + 4 * (4 * B * T));
    EXPECT_EQ(runtime_activation_bytes_outside_layers(m, B, T, DType::f16),
              2 * (outside_elements(C, B, T, V) - 3 * B * T) + 4 * (3 * B * T));
    const int64_t outside = outside_elements(C, B, T, V);
    EXPECT_EQ(runtime_activation_bytes_outside_layers(m, B, T, DType::f32), 4 * outside);
    EXPECT_EQ(runtime_activation_bytes_total(m, B, T, DType::f32),
              4 * (m.layers * per_layer + outside));
  }
}

// Llama layout: (6C + 2kvC + 3F)·BT + 2BT + H·BT² elements per layer.
TEST(RuntimeLayout, LlamaMatchesItsClosedForm) {
  const ModelConfig m = model_config_by_name("llama-tiny");
  const int64_t B = 3, T = 17, C = 256, kvC = 128, F = 688, H = 4;
  EXPECT_EQ(runtime_activation_bytes_per_layer(m, B, T, DType::f32),
            4 * ((6 * C + 2 * kvC + 3 * F) * B * T + 2 * B * T + H * B * T * T));
  const auto names = runtime_saved_activations_outside_layers(m, B, T);
  for (const auto& s : names) EXPECT_NE(s.name, "lnf_mean") << "RMSNorm keeps no mean";
}

TEST(RuntimeLayout, EstimatorReportsTheRuntimeColumn) {
  EstimateInputs in;
  in.model = model_config_by_name("gpt2-tiny");
  in.micro_batch = 8;
  in.plan.amp.precision = Precision::fp32;
  const Estimate e = estimate_memory(in);
  EXPECT_EQ(e.runtime_activation_bytes_per_layer,
            runtime_activation_bytes_per_layer(*in.model, 8, 128, DType::f32));
  EXPECT_EQ(e.runtime_activation_bytes,
            runtime_activation_bytes_total(*in.model, 8, 128, DType::f32));
  EXPECT_THROW((void)runtime_activation_bytes_per_layer(*in.model, 0, 128, DType::f32), UsageError);
}

// Flash attention replaces att (H·B·T² elements of the activation type) by lse (H·B·T, always f32):
// the closed form for both families and every storage type, at sizes where T² alone overflows
// int32 (T = 131072, 2^34 score elements per head group).
TEST(RuntimeLayout, FlashAttentionSavesTheLogSumExpInsteadOfTheProbabilities) {
  for (const char* name : {"gpt2-tiny", "llama-tiny", "llama2-70b"}) {
    const ModelConfig m = model_config_by_name(name);
    for (const auto& [B, T] :
         std::vector<std::pair<int64_t, int64_t>>{{3, 17}, {1, 4096}, {2, 131072}}) {
      if (T > m.max_seq && m.family == ModelFamily::gpt2) continue;  // learned positions end
      for (const DType dtype : {DType::f32, DType::bf16, DType::f16}) {
        const int64_t element = dtype == DType::f32 ? 4 : 2;
        const int64_t naive = runtime_activation_bytes_per_layer(m, B, T, dtype);
        const int64_t flash =
            runtime_activation_bytes_per_layer(m, B, T, dtype, AttentionKind::flash);
        EXPECT_EQ(naive - flash, m.heads * B * T * T * element - 4 * m.heads * B * T)
            << name << " B=" << B << " T=" << T << " " << dtype_name(dtype);
      }
    }
    const auto specs = runtime_saved_activations_per_layer(m, 2, 9, AttentionKind::flash);
    int lse = 0;
    for (const auto& spec : specs) {
      EXPECT_NE(spec.name, "att") << name;
      if (spec.name == "lse") {
        ++lse;
        EXPECT_EQ(spec.shape, (std::vector<int64_t>{2, m.heads, 9})) << name;
        EXPECT_TRUE(spec.always_f32) << name;
      }
    }
    EXPECT_EQ(lse, 1) << name;
  }
}

// With flash attention the paper's column drops the 5as/h term (its selective row, the same with
// or without selective recompute), and the runtime column and the planner use the flash layout.
TEST(Korthikanti, FlashAttentionUsesTheSelectiveRow) {
  EstimateInputs in;
  in.model = model_config_by_name("llama2-7b");
  in.micro_batch = 1;
  in.seq = 4096;
  EstimateInputs selective = in;
  selective.plan.recompute = recompute::parse_recompute_spec("selective");
  in.plan.attention = AttentionKind::flash;
  const Estimate flash = estimate_memory(in);
  const Estimate paper_selective = estimate_memory(selective);
  EXPECT_EQ(flash.activation_bytes_per_layer, paper_selective.activation_bytes_per_layer);
  EXPECT_NE(flash.activations.source.find("FlashAttention"), std::string::npos)
      << flash.activations.source;
  const DType bf16 = DType::bf16;
  EXPECT_EQ(flash.runtime_activation_bytes_per_layer,
            runtime_activation_bytes_per_layer(*in.model, 1, 4096, bf16, AttentionKind::flash));
  EXPECT_EQ(flash.runtime_schedule_peak_bytes,
            runtime_activation_bytes_total(*in.model, 1, 4096, bf16, AttentionKind::flash));
  in.plan.recompute = recompute::parse_recompute_spec("selective");
  EXPECT_EQ(estimate_memory(in).runtime_schedule_peak_bytes, flash.runtime_schedule_peak_bytes)
      << "selective recompute has nothing to drop under flash attention";
  EXPECT_EQ(estimate_memory(in).recomputed_forward_fraction, 0.0);
}

}  // namespace
}  // namespace vramlab::estimate
