// The planner's cost model, term by term, against Note [The planner's cost model] computed here
// from the model's shapes: the collectives' ring volumes, the compute's scaling with the
// micro-batches and the dtype's peak, the offload's copies, the working buffers and the bytes in
// flight; and the candidates the runtime refuses.
#include <gtest/gtest.h>

#include <string>

#include "common/estimate/estimator.h"
#include "common/planner/step_cost.h"

namespace vramlab::planner {
namespace {

Machine machine_of(const char* preset, int64_t gpus) {
  Machine m;
  m.device = memory::parse_device(std::string("meta:") + preset);
  m.gpus = gpus;
  return m;
}

Candidate candidate_of(plan::Precision precision, plan::ZeroStage zero, int64_t N, int64_t t,
                       int64_t B, int64_t K) {
  Candidate c;
  c.plan.amp.precision = precision;
  c.plan.parallel.zero = zero;
  c.plan.parallel.data_parallel = N;
  c.plan.parallel.tensor_parallel = t;
  c.plan.batch.grad_accum = K;
  c.micro_batch = B;
  return c;
}

const ModelConfig& llama7b() {
  static const ModelConfig model = model_config_by_name("llama2-7b");
  return model;
}

TEST(StepCostCommunication, DataParallelRingVolumesOverTheNodeLink) {
  const ModelConfig& m = llama7b();
  const double psi = static_cast<double>(m.parameter_count());
  const Machine machine = machine_of("a100-80g", 4);
  const double bw = machine.intra_node_bytes_per_s;
  const auto comm = [&](plan::ZeroStage zero, int64_t K) {
    return predict_time(m, 1024, candidate_of(plan::Precision::mixed_bf16, zero, 4, 1, 1, K),
                        machine)
        .communication_s;
  };
  const double G = 2.0 * psi, P = 2.0 * psi;  // bf16 gradients and parameters
  EXPECT_DOUBLE_EQ(comm(plan::ZeroStage::ddp, 3), 2.0 * 0.75 * G / bw);  // once a step
  EXPECT_DOUBLE_EQ(comm(plan::ZeroStage::optimizer_states, 3), 0.75 * (G + P) / bw);
  EXPECT_DOUBLE_EQ(comm(plan::ZeroStage::gradients, 3), 0.75 * (3.0 * G + P) / bw);
  EXPECT_DOUBLE_EQ(comm(plan::ZeroStage::parameters, 3), 3.0 * 0.75 * (2.0 * P + G) / bw);
  // One rank: no collective at all.
  EXPECT_EQ(
      predict_time(m, 1024,
                   candidate_of(plan::Precision::mixed_bf16, plan::ZeroStage::ddp, 1, 1, 1, 1),
                   machine_of("a100-80g", 1))
          .communication_s,
      0.0);
}

TEST(StepCostCommunication, GroupsAcrossNodesRunAtTheInterNodeRate) {
  const ModelConfig& m = llama7b();
  Machine one_node = machine_of("h100-80g", 8), two_nodes = machine_of("h100-80g", 16);
  const double inside =
      predict_time(m, 1024,
                   candidate_of(plan::Precision::mixed_bf16, plan::ZeroStage::ddp, 8, 1, 1, 1),
                   one_node)
          .communication_s;
  const double across =
      predict_time(m, 1024,
                   candidate_of(plan::Precision::mixed_bf16, plan::ZeroStage::ddp, 16, 1, 1, 1),
                   two_nodes)
          .communication_s;
  // 2(N−1)/N·G: 7/8 inside one node, 15/16 across two, at the two links' rates.
  EXPECT_DOUBLE_EQ(across / inside,
                   (15.0 / 16.0) / (7.0 / 8.0) *
                       (one_node.intra_node_bytes_per_s / two_nodes.inter_node_bytes_per_s));
}

TEST(StepCostCommunication, TensorParallelAllReducesTheActivationsFourTimesPerLayer) {
  const ModelConfig& m = llama7b();
  const Machine machine = machine_of("a100-80g", 4);
  const int64_t B = 3, T = 512, K = 2, t = 4;
  const double got =
      predict_time(m, T,
                   candidate_of(plan::Precision::mixed_bf16, plan::ZeroStage::ddp, 1, t, B, K),
                   machine)
          .communication_s;
  const double bytes = static_cast<double>(B * T * m.hidden * 2);  // one (B, T, C) bf16 tensor
  EXPECT_DOUBLE_EQ(got, static_cast<double>(K * m.layers) * 4.0 * 2.0 * 0.75 * bytes /
                            machine.intra_node_bytes_per_s);
}

TEST(StepCostCompute, ScalesWithTheMicroBatchesAndTheDtypesPeak) {
  const ModelConfig& m = llama7b();
  const Machine machine = machine_of("a100-80g", 1);
  const auto compute = [&](plan::Precision precision, int64_t K) {
    return predict_time(m, 2048, candidate_of(precision, plan::ZeroStage::ddp, 1, 1, 2, K), machine)
        .compute_s;
  };
  EXPECT_DOUBLE_EQ(compute(plan::Precision::mixed_bf16, 5),
                   5.0 * compute(plan::Precision::mixed_bf16, 1));
  const memory::PeakFlops& peak = machine.device.spec.peak_flops;
  EXPECT_NEAR(compute(plan::Precision::fp32, 1) / compute(plan::Precision::mixed_bf16, 1),
              peak.bf16_tensor / peak.fp32, 1e-12);
  // 3F + rF: a full recompute adds the forward again, less the head's (~98% here, lesson 02).
  Candidate full = candidate_of(plan::Precision::mixed_bf16, plan::ZeroStage::ddp, 1, 1, 2, 1);
  full.plan.recompute.kind = plan::RecomputeSpec::Kind::full;
  const double ratio =
      predict_time(m, 2048, full, machine).compute_s / compute(plan::Precision::mixed_bf16, 1);
  const double r = estimate_candidate(m, 2048, full).recomputed_forward_fraction;
  EXPECT_NEAR(ratio, (3.0 + r) / 3.0, 1e-12);
  EXPECT_GT(r, 0.9);
}

TEST(StepCostOffload, TheLinksCopiesAndTheHostsUpdate) {
  const ModelConfig& m = llama7b();
  Machine machine = machine_of("a100-80g", 2);
  const double psi = static_cast<double>(m.parameter_count());
  Candidate c = candidate_of(plan::Precision::mixed_bf16, plan::ZeroStage::gradients, 2, 1, 1, 3);
  EXPECT_EQ(predict_time(m, 1024, c, machine).offload_s, 0.0);
  const double on_device = predict_time(m, 1024, c, machine).optimizer_s;
  EXPECT_GT(on_device, 0.0);
  c.plan.offload.optimizer = true;
  const StepTime t = predict_time(m, 1024, c, machine);
  EXPECT_EQ(t.optimizer_s, 0.0);
  const memory::DeviceSpec& link = machine.device.spec;
  const double shard = 2.0 * psi / 2.0;  // bf16 gradients (and parameters) over N = 2
  const estimate::Estimate e = estimate_candidate(m, 1024, c);
  const double update =
      2.0 * static_cast<double>(e.host_optimizer_state_bytes) + shard + 2.0 * shard;
  const double expected = update / machine.host_memory_bytes_per_s               // the update
                          + 3.0 * shard / link.device_to_host_bytes_per_s        // K shards down
                          + 2.0 * 3.0 * shard / machine.host_memory_bytes_per_s  // K−1 sums
                          + shard / link.host_to_device_bytes_per_s;             // parameters up
  EXPECT_NEAR(t.offload_s, expected, 1e-9 * expected);
}

TEST(StepCostMemory, ModelStatesAndActivationsAreTheEstimators) {
  const ModelConfig& m = llama7b();
  const Machine machine = machine_of("a100-80g", 4);
  for (const plan::ZeroStage zero : {plan::ZeroStage::ddp, plan::ZeroStage::optimizer_states,
                                     plan::ZeroStage::gradients, plan::ZeroStage::parameters}) {
    const Candidate c = candidate_of(plan::Precision::mixed_bf16, zero, 4, 1, 2, 1);
    const estimate::Estimate e = estimate_candidate(m, 1024, c);
    const StepMemory got = predict_memory(m, 1024, c, machine);
    EXPECT_EQ(got.parameters, e.parameters.bytes);
    EXPECT_EQ(got.gradients, e.gradients.bytes);
    EXPECT_EQ(got.optimizer_states, e.optimizer_states.bytes);
    EXPECT_EQ(got.activations, e.runtime_schedule_peak_bytes);
    EXPECT_EQ(got.in_flight, 0);
    const int64_t live =
        got.parameters + got.gradients + got.optimizer_states + got.activations + got.working;
    EXPECT_EQ(got.slack, std::max(int64_t{256} << 20, live / 100));
    const int64_t sum = live + got.slack;
    EXPECT_GE(got.device_peak, sum);
    EXPECT_LT(got.device_peak, sum + (int64_t{2} << 20));
    EXPECT_EQ(got.device_peak % (int64_t{2} << 20), 0);
  }
}

TEST(StepCostMemory, WorkingBuffersAreTheLossOrOneLayersBackward) {
  const ModelConfig& m = llama7b();
  const Machine machine = machine_of("a100-80g", 1);
  const int64_t T = 2048, C = m.hidden, V = m.vocab, F = m.ffn_hidden;
  for (const int64_t B : {1, 3, 8}) {
    Candidate c = candidate_of(plan::Precision::mixed_bf16, plan::ZeroStage::ddp, 1, 1, B, 1);
    c.plan.attention = plan::AttentionKind::flash;
    const int64_t BT = B * T;
    const int64_t loss = BT * V * 2 + BT * 4 + 3 * BT * C * 4;
    const int64_t attention = BT * (C + 3 * C + 2 * C) * 2;  // 7B: kv heads = heads
    const int64_t layer = 2 * BT * C * 2 + std::max(attention, 3 * BT * F * 2);
    EXPECT_EQ(predict_memory(m, T, c, machine).working, std::max(loss, layer)) << B;
    c.plan.attention = plan::AttentionKind::naive;  // + the (B, H, T, T) gradient of the scores
    const int64_t naive_layer =
        2 * BT * C * 2 + std::max(attention + B * m.heads * T * T * 2, 3 * BT * F * 2);
    EXPECT_EQ(predict_memory(m, T, c, machine).working, std::max(loss, naive_layer)) << B;
    // In 8 chunks: a slice's logits and probabilities (N/8 rows, rounded up) instead.
    c.plan.activations.loss_chunks = 8;
    const int64_t slice = (BT + 7) / 8;
    const int64_t chunked = 2 * slice * V * 2 + BT * 4 + 3 * BT * C * 4;
    EXPECT_EQ(predict_memory(m, T, c, machine).working, std::max(chunked, naive_layer)) << B;
  }
}

TEST(StepCostCompute, AChunkedLossMakesTheHeadsLogitsAgain) {
  const ModelConfig& m = llama7b();
  const Machine machine = machine_of("h100-80g", 1);
  Candidate c = candidate_of(plan::Precision::mixed_bf16, plan::ZeroStage::ddp, 1, 1, 2, 3);
  const double whole = predict_time(m, 1024, c, machine).compute_s;
  c.plan.activations.loss_chunks = 8;
  const double chunked = predict_time(m, 1024, c, machine).compute_s;
  const double head = 2.0 * 2 * 1024 * static_cast<double>(m.hidden) * static_cast<double>(m.vocab);
  EXPECT_NEAR(chunked - whole, 3.0 * head / machine.device.spec.peak_flops.bf16_tensor,
              1e-9 * chunked);
}

TEST(StepCostMemory, OffloadedGradientsInFlightWithAndWithoutAccumulation) {
  const ModelConfig& m = llama7b();
  const Machine machine = machine_of("a100-80g", 2);
  Candidate c = candidate_of(plan::Precision::mixed_bf16, plan::ZeroStage::gradients, 2, 1, 1, 1);
  c.plan.offload.optimizer = true;
  const StepMemory one = predict_memory(m, 1024, c, machine);
  EXPECT_EQ(one.in_flight, (m.parameter_count() * 2 + 1) / 2);
  c.plan.batch.grad_accum = 2;
  const StepMemory two = predict_memory(m, 1024, c, machine);
  EXPECT_EQ(two.in_flight, one.in_flight + two.working);
  c.plan.parallel.zero = plan::ZeroStage::optimizer_states;  // copied once, after the backward
  EXPECT_EQ(predict_memory(m, 1024, c, machine).in_flight, 0);
}

TEST(StepCostRunnable, RefusesWhatTheTrainerRefuses) {
  const ModelConfig& m = model_config_by_name("llama3-8b");
  std::string why;
  Candidate c = candidate_of(plan::Precision::mixed_bf16, plan::ZeroStage::ddp, 1, 2, 1, 1);
  c.plan.optimizer.name = plan::Optimizer::adafactor;
  EXPECT_FALSE(is_runnable(m, 1024, c, &why));
  EXPECT_NE(why.find("--tp 1"), std::string::npos) << why;
  c.plan.parallel.tensor_parallel = 1;
  EXPECT_TRUE(is_runnable(m, 1024, c, &why)) << why;
  c.plan.parallel.zero = plan::ZeroStage::gradients;
  EXPECT_FALSE(is_runnable(m, 1024, c, &why));
  EXPECT_NE(why.find("--zero 0"), std::string::npos) << why;
  c.plan.optimizer.name = plan::Optimizer::adamw;
  c.plan.offload.optimizer = c.plan.offload.parameters = true;  // parameters need ZeRO-3
  EXPECT_FALSE(is_runnable(m, 1024, c));
  c.plan.parallel.zero = plan::ZeroStage::parameters;
  EXPECT_TRUE(is_runnable(m, 1024, c, &why)) << why;
  c.plan.parallel.tensor_parallel = 3;  // 32 heads do not split three ways
  EXPECT_FALSE(is_runnable(m, 1024, c));
}

}  // namespace
}  // namespace vramlab::planner
