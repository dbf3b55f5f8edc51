// Model states: ZeRO's Figure 1 and formulas, the Hugging Face / EleutherAI bytes-per-parameter
// rules, 8-bit Adam, Adam-mini and Lion, tensor parallelism, offload, and bad input. Every
// expected value is the paper's number or its closed form evaluated here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/estimate/estimator.h"
#include "common/estimate/model_state_memory.h"
#include "common/model/model_config.h"
#include "common/platform/errors.h"
#include "tests/estimate/expect_close.h"

namespace vramlab::estimate {
namespace {

using testing::matches_printed;
using testing::near_relative;

EstimateInputs zero_figure1_inputs(int64_t stage) {
  EstimateInputs in;
  in.parameter_count = 7'500'000'000;
  in.plan.amp.precision = Precision::mixed_fp16;
  in.plan.optimizer.name = Optimizer::adamw;
  in.plan.parallel.zero = plan::zero_stage_from_int(stage);
  in.plan.parallel.data_parallel = 64;
  return in;
}

// ZeRO Figure 1: Ψ = 7.5B, Nd = 64, K = 12: 120 / 31.4 / 16.6 / 1.9 GB (decimal).
TEST(ZeroModelStates, Figure1PrintedValues) {
  const double printed[] = {120, 31.4, 16.6, 1.9};
  const double unit[] = {1, 0.1, 0.1, 0.1};
  for (int64_t stage = 0; stage <= 3; ++stage) {
    const Estimate e = estimate_memory(zero_figure1_inputs(stage));
    EXPECT_TRUE(
        matches_printed(static_cast<double>(e.total_bytes) / 1e9, printed[stage], unit[stage]))
        << "stage " << stage;
    EXPECT_FALSE(e.has_activations);
    EXPECT_EQ(e.activations.bytes, 0);
  }
}

// The same figure from the closed forms 16Ψ, 4Ψ + 12Ψ/Nd, 2Ψ + 14Ψ/Nd, 16Ψ/Nd.
TEST(ZeroModelStates, Figure1ExactBytes) {
  const double exact[] = {120e9, 31.40625e9, 16.640625e9, 1.875e9};
  for (int64_t stage = 0; stage <= 3; ++stage) {
    const Estimate e = estimate_memory(zero_figure1_inputs(stage));
    EXPECT_TRUE(near_relative(static_cast<double>(e.total_bytes), exact[stage], 1e-9))
        << "stage " << stage;
  }
  const Estimate s2 = estimate_memory(zero_figure1_inputs(2));
  EXPECT_EQ(s2.parameters.bytes, 15'000'000'000);       // 2Ψ stays
  EXPECT_EQ(s2.gradients.bytes, 234'375'000);           // 2Ψ/64
  EXPECT_EQ(s2.optimizer_states.bytes, 1'406'250'000);  // 12Ψ/64
  EXPECT_EQ(s2.master_weight_bytes, 468'750'000);       // 4Ψ/64 of the 12
}

// ZeRO partitions the optimizer states, the fp32 master weights among them, from stage 1 on (§5.1:
// P_os), the same way at stages 1, 2 and 3; Figure1ExactBytes pins stage 2 alone. Every optimizer,
// both mixed precisions, with Ψ alone and with a model's shapes (units padded to Nd elements each),
// for odd Ψ and rank counts: stage 0 holds 4Ψ; every later stage the same share, which covers
// 4Ψ over Nd ranks with at most one padded element per unit per rank. With Ψ alone and an
// elementwise optimizer the share is exactly 4⌈Ψ/Nd⌉ (one unit of Ψ, padded to a multiple of Nd).
TEST(ZeroModelStates, MasterWeightsArePartitionedAtStageOneAsAtStagesTwoAndThree) {
  const ModelConfig model = gpt2_config("odd-gpt2", 3, 36, 3, 97, 16);
  const int64_t model_units = model.layers + 3;  // at most: embedding, each block, final norm, head
  for (const bool with_model : {false, true}) {
    for (const Precision precision : {Precision::mixed_fp16, Precision::mixed_bf16}) {
      for (const Optimizer optimizer :
           {Optimizer::sgd, Optimizer::sgd_momentum, Optimizer::adamw, Optimizer::adamw_8bit,
            Optimizer::lion, Optimizer::adam_mini, Optimizer::adafactor}) {
        if (optimizer == Optimizer::adafactor && !with_model) continue;  // needs the shapes
        for (const int64_t nd : {1, 2, 3, 7, 64}) {
          EstimateInputs in;
          if (with_model) {
            in.model = model;
          } else {
            in.parameter_count = 1'000'003;
          }
          in.plan.amp.precision = precision;
          in.plan.optimizer.name = optimizer;
          in.plan.parallel.data_parallel = nd;
          std::vector<Estimate> by_stage;
          for (int64_t stage = 0; stage <= 3; ++stage) {
            in.plan.parallel.zero = plan::zero_stage_from_int(stage);
            by_stage.push_back(estimate_memory(in));
          }
          const int64_t psi = by_stage[0].parameter_count;
          const int64_t units = with_model ? model_units : 1;
          SCOPED_TRACE(std::string(optimizer_name(optimizer)) + ", Ψ " + std::to_string(psi) +
                       (with_model ? " (shapes)" : "") + ", Nd " + std::to_string(nd));
          EXPECT_EQ(by_stage[0].master_weight_bytes, 4 * psi) << "stage 0 keeps the whole master";
          const int64_t share = by_stage[1].master_weight_bytes;
          EXPECT_GE(share * nd, 4 * psi) << "stage 1's shares do not cover the master";
          EXPECT_LE(share * nd, 4 * psi + 4 * units * nd) << "stage 1 did not partition the master";
          if (!with_model && optimizer != Optimizer::adamw_8bit &&
              optimizer != Optimizer::adam_mini) {
            EXPECT_EQ(share, 4 * ((psi + nd - 1) / nd));
          }
          for (int64_t stage = 1; stage <= 3; ++stage) {
            const Estimate& e = by_stage[static_cast<std::size_t>(stage)];
            EXPECT_EQ(e.master_weight_bytes, share) << "stage " << stage;
            EXPECT_LE(e.master_weight_bytes, e.optimizer_states.bytes) << "stage " << stage;
            if (optimizer == Optimizer::sgd) {  // plain SGD keeps nothing but the master
              EXPECT_EQ(e.master_weight_bytes, e.optimizer_states.bytes) << "stage " << stage;
            }
          }
        }
      }
    }
  }
}

TEST(ZeroModelStates, SourcesNameThePaperAndTheStageFormula) {
  const Estimate s1 = estimate_memory(zero_figure1_inputs(1));
  EXPECT_NE(s1.optimizer_states.source.find("ZeRO (Rajbhandari et al. 2020) §5.1"),
            std::string::npos)
      << s1.optimizer_states.source;
  EXPECT_NE(s1.optimizer_states.source.find("4Ψ + 12Ψ/Nd"), std::string::npos)
      << s1.optimizer_states.source;
  const Estimate s3 = estimate_memory(zero_figure1_inputs(3));
  EXPECT_NE(s3.parameters.source.find("(2 + 2 + 12)Ψ/Nd"), std::string::npos)
      << s3.parameters.source;
}

// "When Nd is large the reductions approach 4x, 8x and Nd" (ZeRO §5, Table 1's columns).
TEST(ZeroModelStates, ReductionsApproachFourEightAndNd) {
  for (int64_t nd : {1, 4, 16, 64, 1024, 4096}) {  // divisors of Ψ: no rounding
    EstimateInputs in = zero_figure1_inputs(0);
    in.parameter_count = 1'000'000'000'000;
    in.plan.parallel.data_parallel = nd;
    const double base = static_cast<double>(estimate_memory(in).total_bytes);
    const double n = static_cast<double>(nd);
    const double expected[] = {1.0, 16.0 / (4.0 + 12.0 / n), 16.0 / (2.0 + 14.0 / n), n};
    for (int64_t stage = 1; stage <= 3; ++stage) {
      in.plan.parallel.zero = plan::zero_stage_from_int(stage);
      EXPECT_TRUE(near_relative(base / static_cast<double>(estimate_memory(in).total_bytes),
                                expected[stage], 1e-9))
          << "stage " << stage << " Nd " << nd;
    }
    in.plan.parallel.zero = plan::ZeroStage::ddp;
  }
}

// Hugging Face model_memory_anatomy: mixed-precision AdamW 18 B/param = weights 6 (fp32 + fp16),
// gradients 4 (fp32), AdamW 8; 8-bit AdamW 2; SGD with momentum 4; fp32 weights 4.
TEST(BytesPerParameter, HuggingFaceAnatomy) {
  const int64_t n = 336'000'000;
  ModelStateOptions mixed{
      Precision::mixed_fp16, Optimizer::adamw, 256, /*fp32_gradients=*/true, 0, 0, -1, 0};
  const ModelStateBytes hf = model_state_bytes(n, mixed);
  EXPECT_EQ(hf.total(), 18 * n);
  EXPECT_EQ(hf.parameters + hf.master_weights, 6 * n);
  EXPECT_EQ(hf.gradients, 4 * n);
  EXPECT_EQ(hf.optimizer_moments, 8 * n);
  mixed.optimizer = Optimizer::adamw_8bit;
  mixed.quantization_block_size = 1 << 20;  // absmax negligible: the doc's "2 bytes"
  EXPECT_TRUE(near_relative(static_cast<double>(model_state_bytes(n, mixed).optimizer_moments) / n,
                            2.0, 1e-5));
  mixed.optimizer = Optimizer::sgd_momentum;
  EXPECT_EQ(model_state_bytes(n, mixed).optimizer_moments, 4 * n);
  const ModelStateBytes fp32 =
      model_state_bytes(n, {Precision::fp32, Optimizer::adamw, 256, false, 0, 0, -1, 0});
  EXPECT_EQ(fp32.parameters, 4 * n);
  EXPECT_EQ(fp32.master_weights, 0);
}

// EleutherAI Transformer Math 101: 16 (fp16 grads) or 18 (fp32 grads) B/param with AdamW;
// optimizer AdamW 12, 8-bit 6 (4 + 1 + 1), SGD with momentum 8.
TEST(BytesPerParameter, EleutherAiTransformerMath) {
  const int64_t n = 1'000'000'000;
  ModelStateOptions o{Precision::mixed_bf16, Optimizer::adamw, 2048, false, 0, 0, -1, 0};
  EXPECT_EQ(model_state_bytes(n, o).total(), 16 * n);
  EXPECT_EQ(model_state_bytes(n, o).optimizer_states(), 12 * n);
  o.fp32_gradients = true;
  EXPECT_EQ(model_state_bytes(n, o).total(), 18 * n);
  o.fp32_gradients = false;
  o.optimizer = Optimizer::adamw_8bit;
  EXPECT_TRUE(
      matches_printed(static_cast<double>(model_state_bytes(n, o).optimizer_states()) / n, 6, 1));
  o.optimizer = Optimizer::sgd_momentum;
  EXPECT_EQ(model_state_bytes(n, o).optimizer_states(), 8 * n);
  o.optimizer = Optimizer::sgd;
  EXPECT_EQ(model_state_bytes(n, o).optimizer_states(), 4 * n);  // master weights only
}

// bitsandbytes: 2 + 8/B bytes/param: 2.03125 at B = 256, 2.0039 at B = 2048 (Dettmers et al.).
TEST(BytesPerParameter, EightBitAdamBlockwise) {
  const int64_t n = 256 * 2048 * 3;  // whole blocks for both sizes
  ModelStateOptions o{Precision::fp32, Optimizer::adamw_8bit, 256, false, 0, 0, -1, 0};
  EXPECT_TRUE(near_relative(static_cast<double>(model_state_bytes(n, o).optimizer_moments) / n,
                            2.03125, 1e-12));
  o.quantization_block_size = 2048;
  EXPECT_TRUE(matches_printed(static_cast<double>(model_state_bytes(n, o).optimizer_moments) / n,
                              2.0039, 1e-4));
  // A partial last block still carries its two absmax values.
  o.quantization_block_size = 256;
  EXPECT_EQ(model_state_bytes(257, o).optimizer_moments, 2 * 257 + 8 * 2);
  EXPECT_EQ(model_state_bytes(1, o).optimizer_moments, 2 + 8);
}

// Adam-mini Table 1: Llama 2-7B optimizer memory 53.92 GB (AdamW) → 26.96 GB, with the paper's
// 6.74e9 parameters; Lion keeps one 4-byte state.
TEST(BytesPerParameter, AdamMiniHalvesAdamWAndLionKeepsOneState) {
  const int64_t n = 6'740'000'000;
  ModelStateOptions o{Precision::fp32, Optimizer::adamw, 256, false, 0, 0, -1, 0};
  EXPECT_TRUE(matches_printed(model_state_bytes(n, o).optimizer_moments / 1e9, 53.92, 0.01));
  o.optimizer = Optimizer::adam_mini;
  EXPECT_TRUE(matches_printed(model_state_bytes(n, o).optimizer_moments / 1e9, 26.96, 0.01));
  o.optimizer = Optimizer::lion;
  EXPECT_EQ(model_state_bytes(n, o).optimizer_moments, 4 * n);
  // With shapes, Adam-mini's v adds one entry per block: a few hundred thousand for 7B.
  const ModelConfig llama = model_config_by_name("llama2-7b");
  const int64_t blocks = adam_mini_v_blocks(llama);
  // Closed form: embed and head by token 2V, per layer q,k by head 2H, v, o by neuron 2C,
  // gate, up by neuron 2F, down C, two norms 2; final norm 1.
  const int64_t V = 32000, H = 32, C = 4096, F = 11008, L = 32;
  EXPECT_EQ(blocks, 2 * V + L * (2 * H + 2 * C + 2 * F + C + 2) + 1);
  EstimateInputs in;
  in.model = llama;
  in.plan.amp.precision = Precision::fp32;
  in.plan.optimizer.name = Optimizer::adam_mini;
  const Estimate e = estimate_memory(in);
  EXPECT_EQ(e.optimizer_states.bytes, 4 * (llama.parameter_count() + blocks));
}

// With shapes, 8-bit AdamW quantizes tensor by tensor (bitsandbytes: blocks never span tensors):
// every tensor rounds its own last block up, and tensors under min_8bit_size keep fp32 m and v.
TEST(BytesPerParameter, EightBitAdamPerTensorWithShapes) {
  const ModelConfig gpt2 = model_config_by_name("gpt2-124m");
  const int64_t C = 768, V = 50257, T = 1024, L = 12;
  for (const int64_t B : {256, 2048}) {
    EstimateInputs in;
    in.model = gpt2;
    in.plan.amp.precision = Precision::fp32;
    in.plan.optimizer.name = Optimizer::adamw_8bit;
    in.plan.optimizer.eight_bit.block_size = B;
    const auto blocks = [B](int64_t n) { return (n + B - 1) / B; };
    // Quantized (≥ 4096 elements): wte, wpe, and per layer qkv (3C, C), proj (C, C), fc (4C, C),
    // mlp proj (C, 4C), and the 3C and 4C biases (2304 and 3072 elements are below 4096: fp32).
    const int64_t quantized = V * C + T * C + L * (3 * C * C + C * C + 4 * C * C + 4 * C * C);
    const int64_t absmax = blocks(V * C) + blocks(T * C) +
                           L * (blocks(3 * C * C) + blocks(C * C) + 2 * blocks(4 * C * C));
    const int64_t fp32 = gpt2.parameter_count() - quantized;
    EXPECT_EQ(fp32, L * (3 * C + C + 4 * C + C + 4 * C) + 2 * C);  // biases and norms
    EXPECT_EQ(estimate_memory(in).optimizer_states.bytes, 2 * quantized + 8 * absmax + 8 * fp32)
        << "B = " << B;
    // Stable embedding: wte and wpe keep fp32 states too.
    in.plan.optimizer.eight_bit.fp32_embeddings = true;
    const int64_t emb = V * C + T * C;
    EXPECT_EQ(
        estimate_memory(in).optimizer_states.bytes,
        2 * (quantized - emb) + 8 * (absmax - blocks(V * C) - blocks(T * C)) + 8 * (fp32 + emb));
  }
}

// Adafactor (Shazeer & Stern 2018): rows + cols per matrix, the whole vector otherwise.
TEST(BytesPerParameter, AdafactorFactorsEveryMatrix) {
  const ModelConfig llama = model_config_by_name("llama2-7b");
  const int64_t V = 32000, C = 4096, F = 11008, L = 32;
  // embed and lm_head (V, C); per layer q, k, v, o (C, C), gate and up (F, C), down (C, F), two
  // norms (C); the final norm (C).
  const int64_t entries = 2 * (V + C) + L * (4 * 2 * C + 2 * (F + C) + (C + F) + 2 * C) + C;
  EstimateInputs in;
  in.model = llama;
  in.plan.amp.precision = Precision::fp32;
  in.plan.optimizer.name = Optimizer::adafactor;
  EXPECT_EQ(estimate_memory(in).optimizer_states.bytes, 4 * entries);
  in.plan.amp.precision = Precision::mixed_bf16;  // fp32 factors plus the fp32 master
  EXPECT_EQ(estimate_memory(in).optimizer_states.bytes, 4 * entries + 4 * llama.parameter_count());
  // About 0.002 bytes per parameter, against AdamW's 8.
  EXPECT_LT(static_cast<double>(4 * entries) / llama.parameter_count(), 0.0025);
  // Without shapes it cannot be counted: a usage error pointing at --model.
  EstimateInputs bare;
  bare.parameter_count = 7'000'000'000;
  bare.plan.optimizer.name = Optimizer::adafactor;
  try {
    (void)estimate_memory(bare);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--model"), std::string::npos) << e.what();
  }
}

TEST(BytesPerParameter, PureBf16KeepsStatesInBf16WithoutMaster) {
  const ModelStateBytes b =
      model_state_bytes(1000, {Precision::bf16, Optimizer::adamw, 256, false, 0, 0, -1, 0});
  EXPECT_EQ(b.parameters, 2000);
  EXPECT_EQ(b.gradients, 2000);
  EXPECT_EQ(b.master_weights, 0);
  EXPECT_EQ(b.optimizer_moments, 4000);
}

// Megatron's split of Llama 2 70B over 8 ranks, from the architecture: the embedding and the
// head (2VC) and the final norm (C) whole, per layer the two norms (2C) whole and the attention
// (2C² + 2·kvC·C) and the MLP (3CF) divided by 8.
TEST(Estimator, TensorParallelCountsEachRanksExactShare) {
  EstimateInputs in;
  in.model = model_config_by_name("llama2-70b");
  in.plan.parallel.tensor_parallel = 8;
  in.plan.amp.precision = Precision::mixed_bf16;
  const Estimate e = estimate_memory(in);
  const int64_t C = 8192, V = 32000, kvC = 1024, F = 28672, L = 80;
  const int64_t per_rank = 2 * V * C + C + L * (2 * C + (2 * C * C + 2 * kvC * C + 3 * C * F) / 8);
  EXPECT_GT(per_rank, (68'976'648'192 + 7) / 8);  // the replicated tensors count whole
  EXPECT_EQ(e.parameters.bytes, 2 * per_rank);
  EXPECT_EQ(e.gradients.bytes, 2 * per_rank);
  EXPECT_EQ(e.optimizer_states.bytes, 12 * per_rank);
  // Without shapes, Ψ/t.
  EstimateInputs bare;
  bare.parameter_count = 68'976'648'192;
  bare.plan.parallel.tensor_parallel = 8;
  bare.plan.amp.precision = Precision::mixed_bf16;
  EXPECT_EQ(estimate_memory(bare).parameters.bytes, 2 * ((68'976'648'192 + 7) / 8));
  // A degree that splits a key/value head is refused, naming it.
  in.model = model_config_by_name("llama2-70b");
  in.plan.parallel.tensor_parallel = 16;
  try {
    (void)estimate_memory(in);
    ADD_FAILURE() << "expected UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("tensor-parallel degree 16 must divide kv_heads (8)"),
              std::string::npos)
        << error.what();
  }
}

TEST(Estimator, OffloadMovesPartitionsToTheHost) {
  EstimateInputs in = zero_figure1_inputs(2);
  in.plan.offload.optimizer = true;
  const Estimate e = estimate_memory(in);
  EXPECT_EQ(e.optimizer_states.bytes, 0);
  EXPECT_EQ(e.host_optimizer_state_bytes, 1'406'250'000);  // 12Ψ/64
  // The host's step reads this rank's fp16 gradients and writes its fp16 parameters, staged
  // there: 2Ψ/64 each.
  EXPECT_EQ(e.host_gradient_bytes, 234'375'000);
  EXPECT_EQ(e.host_parameter_bytes, 234'375'000);
  EXPECT_EQ(e.cpu_offload_bytes, 1'406'250'000 + 2 * 234'375'000);
  // Under ZeRO-2 each reduced gradient shard goes to the host as it is made: the device keeps
  // the fp16 parameters only (ZeRO-Offload's 2Ψ).
  EXPECT_EQ(e.gradients.bytes, 0);
  EXPECT_EQ(e.total_bytes, 15'000'000'000);
  EstimateInputs stage1 = zero_figure1_inputs(1);
  stage1.plan.offload.optimizer = true;
  EXPECT_EQ(estimate_memory(stage1).gradients.bytes, 15'000'000'000);  // whole, until copied

  EstimateInputs params = zero_figure1_inputs(3);
  params.model = model_config_by_name("gpt2-1.5b");
  params.plan.offload.optimizer = true;
  params.plan.offload.parameters = true;
  const Estimate p = estimate_memory(params);
  const int64_t psi = params.model->parameter_count();
  EXPECT_EQ(p.parameters.bytes, 0);  // gathered units are working memory, as under ZeRO-3
  EXPECT_EQ(p.gradients.bytes, 0);   // each reduced shard goes to the host as it is made
  EXPECT_EQ(p.host_optimizer_state_bytes, (12 * psi + 63) / 64);
  EXPECT_EQ(p.host_parameter_bytes, (2 * psi + 63) / 64);    // the offloaded partition itself
  EXPECT_EQ(p.host_gradient_bytes, p.host_parameter_bytes);  // staged, fp16 as the parameters
  EXPECT_EQ(p.cpu_offload_bytes,
            p.host_optimizer_state_bytes + p.host_gradient_bytes + p.host_parameter_bytes);

  EstimateInputs below = zero_figure1_inputs(2);
  below.plan.offload.parameters = true;
  try {
    (void)estimate_memory(below);
    FAIL() << "parameter offload below stage 3 should be refused";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("stage 2"), std::string::npos) << error.what();
  }
}

std::string usage_message(const EstimateInputs& in) {
  try {
    (void)estimate_memory(in);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Estimator, BadInputsNameTheValue) {
  // A stage is a plan::ZeroStage: an integer outside 0-3 is refused where it becomes one.
  for (const int64_t stage : {4, -1}) {
    try {
      (void)plan::zero_stage_from_int(stage);
      ADD_FAILURE() << "stage " << stage << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(stage)), std::string::npos) << e.what();
    }
  }
  EstimateInputs in = zero_figure1_inputs(1);
  in.plan.parallel.data_parallel = 0;
  EXPECT_NE(usage_message(in).find("--dp must be >= 1, got 0"), std::string::npos)
      << usage_message(in);
  in = zero_figure1_inputs(1);
  in.parameter_count = -5;
  EXPECT_NE(usage_message(in).find("-5"), std::string::npos);
  in = zero_figure1_inputs(1);
  in.micro_batch = 0;
  EXPECT_NE(usage_message(in).find("micro-batch must be positive, got 0"), std::string::npos);
  in = zero_figure1_inputs(0);
  in.parameter_count = INT64_MAX / 3;
  EXPECT_NE(usage_message(in).find("overflows"), std::string::npos) << usage_message(in);
  in = zero_figure1_inputs(0);
  in.plan.amp.precision = Precision::fp32;
  in.plan.amp.fp32_grads = true;
  EXPECT_NE(usage_message(in).find("'fp32'"), std::string::npos);
}

TEST(Parsing, NamesRoundTripAndUnknownNamesAreNamed) {
  for (auto p : {Precision::fp32, Precision::bf16, Precision::mixed_fp16, Precision::mixed_bf16})
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  for (auto o : {Optimizer::sgd, Optimizer::sgd_momentum, Optimizer::adamw, Optimizer::adamw_8bit,
                 Optimizer::lion, Optimizer::adam_mini, Optimizer::adafactor})
    EXPECT_EQ(parse_optimizer(optimizer_name(o)), o);
  try {
    (void)parse_optimizer("adagrad");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'adagrad'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("adamw-8bit"), std::string::npos);
  }
  EXPECT_THROW((void)parse_precision("fp64"), UsageError);
  EXPECT_THROW((void)parse_recompute("some"), UsageError);
}

TEST(Parsing, ParameterCounts) {
  EXPECT_EQ(parse_parameter_count("7.5e9"), 7'500'000'000);
  EXPECT_EQ(parse_parameter_count("7.5B"), 7'500'000'000);
  EXPECT_EQ(parse_parameter_count("6.74b"), 6'740'000'000);
  EXPECT_EQ(parse_parameter_count("124439808"), 124'439'808);
  EXPECT_EQ(parse_parameter_count("1.5T"), 1'500'000'000'000);
  EXPECT_EQ(parse_parameter_count("355M"), 355'000'000);
  EXPECT_EQ(parse_parameter_count("4.24e6"), 4'240'000);
  for (const char* bad :
       {"", "abc", "7.5x", "0", "-5", "1.25", "1e40", "99999999999999999999", "7.5BB"}) {
    try {
      (void)parse_parameter_count(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("'" + std::string(bad) + "'"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace vramlab::estimate
