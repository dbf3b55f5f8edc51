// What the planner predicts for one candidate (see step_cost.h).
#include "common/planner/step_cost.h"

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include "common/amp/precision_policy.h"
#include "common/dtype/dtype.h"
#include "common/estimate/estimator.h"
#include "common/estimate/forward_flops.h"
#include "common/nn/roofline.h"
#include "common/platform/errors.h"
#include "common/train/trainer.h"

// Note [The planner's cost model]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// One function prices every plan, so that a plan's rank is decided by the techniques' measured
// overheads and nothing else. With P and G the bytes of a tensor-parallel rank's parameters in
// the parameters' and the gradients' dtypes, N data-parallel ranks, t tensor-parallel ranks,
// K micro-batches of B sequences of T tokens:
//
//   compute   = K · (3F + rF + A) / peak(dtype), and with int8 activations twice their bytes over
//               the memory bandwidth (packing and unpacking). F is one micro-batch's forward matmul
//               FLOPs on a rank (the blocks' over t, the LM head whole, as the runtime splits them;
//               estimate/forward_flops.h), the backward twice that; r the schedule's re-run
//               fraction of the forward (lesson 02); A, with flash attention, the scores the
//               backward computes again (lesson 06), and in a chunked loss the head's logits
//               made again (Note [Chunked cross-entropy]). peak is the device's dense rate in the
//               matmuls' dtype (fp32 without TF32, or the tensor cores' bf16/fp16).
//   optimizer = (2·O + f·(G + 2P)) / device memory bandwidth: the update is elementwise, so it
//               reads and writes its states O (the estimator's, sharded) and reads the gradients
//               and writes the parameters of its share f (1/N from ZeRO-1 on). Offloaded, the
//               same bytes go over the host's memory bandwidth instead (in offload below).
//   comm      = the ring collectives' bytes over the link of their group (Rajbhandari et al.
//               2020, §7): DDP all-reduces G once a step, 2(N−1)/N·G; ZeRO-1 and -2
//               reduce-scatter G (-2 after every micro-batch, since it keeps no whole gradient)
//               and all-gather P after the update, (N−1)/N each; ZeRO-3 gathers P twice per
//               micro-batch (forward and backward) and reduce-scatters G per micro-batch. Tensor
//               parallelism all-reduces the (B, T, C) activations four times per layer per
//               micro-batch (Megatron's f and g, forward and backward), 2(t−1)/t each, inside a
//               node. Data-parallel groups that span nodes run at the inter-node rate.
//   offload   = the host link's copies (the gradient shard down, from ZeRO-2 on after every
//               micro-batch, which the host then sums; the parameter shard up; with parameters
//               offloaded, each gather's shard up), the host's update over its memory
//               bandwidth, the drive's reads and writes of what lives on NVMe, and offloaded
//               activations down and back.
//
// The terms are added: nothing is assumed to overlap (communication beside compute, copies behind
// the backward), so the time is pessimistic for plans that overlap well, by the same rule for
// every plan. What it leaves out: elementwise kernels (norms, activations, softmax; memory-bound,
// about the same for every plan of a model), kernel launch and per-micro-batch overheads, and
// pipeline parallelism, which the runtime does not have.
//
// Memory: the estimator's model states and the runtime's saved-activation peak under the
// schedule (both tested equal to what `vramlab train` measures), plus what the estimator does not
// count, each an upper bound of what coexists at the peak:
//   activations are the estimator's peak under the schedule, or with int8 storage the store
//               when the forward ends plus one layer unpacked for its backward;
//   working   = the larger of the loss's buffers (the (B, T, V) logits in the activations' dtype
//               beside the probabilities the loss saves, or in K chunks a slice's logits and
//               probabilities) and one layer backward's (the input
//               gradients of attention or of the MLP; with naive attention the (B, H, T, T)
//               gradient of the scores), and under ZeRO-3 the gathered units and one unit's
//               whole gradient before its reduce-scatter;
//   in_flight = with the optimizer offloaded from ZeRO-2 on, the gradient shards the host link
//               has not copied yet, and with saved activations offloaded, one micro-batch's: the
//               backward frees them, but the caching allocator does not reuse a block another
//               stream still reads (record_stream) until that stream's work is done, and the
//               link is slower than the compute that makes them (with accumulation, plus the
//               next micro-batch's working buffers, which cannot take those blocks);
//   slack     = what the allocator reserves beyond its live blocks (the small pool's segments,
//               each stream's own pool, holes in the expandable range): 1% of the rest, at least
//               256 MiB.
// Their sum, rounded up to 2 MiB, is the predicted reserved peak, which must fit the capacity. The
// planner's runs use expandable segments, so the reserved bytes follow the live ones; lesson 08
// shows the fragmentation a run without them pays. tests/planner checks on a grid of models,
// devices and GPU counts that the reserved peak of every chosen plan's run stays within it.

namespace vramlab::planner {

namespace {

int64_t dtype_bytes(DType dtype) {
  return static_cast<int64_t>(dtype_size_bytes(dtype));
}

train::TrainOptions options_of(const ModelConfig& model, int64_t seq, const Candidate& c) {
  train::TrainOptions options;
  options.model = model;
  options.seq = seq;
  options.batch = c.micro_batch;
  options.plan = c.plan;
  return options;
}

// The largest FSDP unit's parameters on one tensor-parallel rank: a block, or the tensors before
// the first block (the embedding) or after the last (the final norm and the head), as
// dist::ShardLayout cuts them.
int64_t largest_unit_parameters(const ModelConfig& model, int64_t tensor_parallel) {
  std::map<int64_t, int64_t> by_unit;  // block index, or -1 (before) / L (after)
  bool seen_block = false;
  for (const ParameterSpec& p : model.parameters(0, tensor_parallel)) {
    int64_t numel = 1;
    for (const int64_t d : p.shape) numel *= d;
    int64_t unit = p.layer;
    if (p.layer < 0) unit = seen_block ? model.layers : -1;
    seen_block = seen_block || p.layer >= 0;
    by_unit[unit] += numel;
  }
  int64_t largest = 0;
  for (const auto& [unit, numel] : by_unit) largest = std::max(largest, numel);
  return largest;
}

// One micro-batch's matmul FLOPs on a rank (Note [The planner's cost model]): the forward F and
// the backward 2F with what it makes again (the schedule's re-run, flash attention's scores, a
// chunked loss's logits).
struct PassFlops {
  double forward = 0.0;
  double backward = 0.0;
};
PassFlops pass_flops(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                     const estimate::Estimate& e) {
  const plan::Plan& plan = candidate.plan;
  const auto t = static_cast<double>(plan.parallel.tensor_parallel);
  const int64_t B = candidate.micro_batch;
  const double blocks =
      estimate::block_forward_flops(model, B, seq) * static_cast<double>(model.layers);
  const double head = estimate::model_forward_flops(model, B, seq) - blocks;
  PassFlops f;
  f.forward = blocks / t + head;
  const double flash_rerun =
      plan.attention == plan::AttentionKind::flash
          ? estimate::attention_scores_flops(model, B, seq) * static_cast<double>(model.layers) / t
          : 0.0;
  const double loss_rerun = plan.activations.loss_chunks > 1 ? head : 0.0;
  f.backward = (2.0 + e.recomputed_forward_fraction) * f.forward + flash_rerun + loss_rerun;
  return f;
}

// The step's working buffers beside the saved activations (Note [The planner's cost model]): the
// larger of the loss's and one layer backward's, plus ZeRO-3's gathered units.
int64_t working_bytes(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                      const amp::PrecisionPolicy& policy) {
  const plan::Plan& plan = candidate.plan;
  const int64_t t = plan.parallel.tensor_parallel;
  const int64_t a = dtype_bytes(policy.activations);
  const int64_t BT = candidate.micro_batch * seq;
  const int64_t C = model.hidden, V = model.vocab;
  const int64_t QC = C / t, kvC = model.kv_hidden() / t, F = model.ffn_hidden / t;
  const int64_t H = model.heads / t;
  // The loss: the (B, T, V) logits beside their logsumexp, and the head's backward's (B, T, C)
  // gradients, counted in fp32 to bound the head's smaller buffers too. In K chunks, a slice's
  // logits and its probabilities (or their gradient) instead.
  const int64_t K = plan.activations.loss_chunks;
  const int64_t slice = (BT + K - 1) / K;
  const int64_t loss = (K > 1 ? 2 * slice * V * a : BT * V * a) + BT * 4 + 3 * BT * C * 4;
  // One layer's backward: the attention's input gradients (of its output, of q, k, v, and of q
  // and k before RoPE), with naive attention the (B, H, T, T) gradient of the scores (and under
  // a selective recompute the probabilities it recomputes), or the MLP's three (B, T, F)
  // gradients; beside the branch's and the norm's (B, T, C) gradients.
  int64_t attention = BT * (QC + (QC + 2 * kvC) + (QC + kvC)) * a;
  if (plan.attention == plan::AttentionKind::naive) {
    const int64_t scores = candidate.micro_batch * H * seq * seq * a;
    attention += scores;
    if (plan.recompute.kind == plan::RecomputeSpec::Kind::selective) attention += scores;
  }
  const int64_t layer = 2 * BT * C * a + std::max(attention, 3 * BT * F * a);
  int64_t working = std::max(loss, layer);
  if (plan.parallel.zero == plan::ZeroStage::parameters) {
    // The unit in use and the one gathered beside it (the head's during the loss, the next
    // block's with prefetch, or the block a full recompute re-runs), and one unit's gradient
    // before its reduce-scatter.
    const int64_t unit = largest_unit_parameters(model, t);
    working += (plan.parallel.prefetch ? 3 : 2) * unit * dtype_bytes(policy.parameters) +
               unit * dtype_bytes(policy.gradients);
  }
  return working;
}

int64_t round_up(int64_t bytes, int64_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

constexpr int64_t kSegmentRounding = int64_t{2} << 20;  // the caching allocator's kRoundLarge
// What the caching allocator reserves beyond the live blocks with expandable segments: the small
// pool's 2 MiB segments, each stream's pool (whose free blocks the other streams do not take), and
// holes inside the expandable range that a larger request cannot use, so that it grows the range
// (measured on the planner's test grid, tests/planner: up to 0.52% of the live bytes, 410 MiB of
// 78.7 GiB). The slack is 1% of the rest, and at least 256 MiB.
constexpr int64_t kAllocatorSlackMinimum = int64_t{256} << 20;
constexpr int64_t kAllocatorSlackPercent = 1;

}  // namespace

std::string StepMemory::largest_category() const {
  const std::array<std::pair<const char*, int64_t>, 6> terms{
      {{"parameters", parameters},
       {"gradients", gradients},
       {"optimizer_states", optimizer_states},
       {"activations", activations},
       {"working", working},
       {"in_flight", in_flight}}};
  return std::max_element(terms.begin(), terms.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

bool is_runnable(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                 std::string* why) {
  try {
    (void)estimate_candidate(model, seq, candidate);
    return true;
  } catch (const UsageError& e) {
    if (why != nullptr) *why = e.what();
    return false;
  }
}

estimate::Estimate estimate_candidate(const ModelConfig& model, int64_t seq,
                                      const Candidate& candidate) {
  return train::estimate_step(options_of(model, seq, candidate),
                              candidate.plan.parallel.data_parallel,
                              candidate.plan.parallel.tensor_parallel);
}

StepMemory predict_memory(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                          const Machine& machine) {
  return predict_memory(model, seq, candidate, machine, estimate_candidate(model, seq, candidate));
}

StepMemory predict_memory(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                          const Machine& machine, const estimate::Estimate& e) {
  const plan::Plan& plan = candidate.plan;
  const amp::PrecisionPolicy policy =
      amp::precision_policy(plan.amp.precision, plan.amp.fp32_grads);
  StepMemory m;
  m.parameters = e.parameters.bytes;
  m.gradients = e.gradients.bytes;
  m.optimizer_states = e.optimizer_states.bytes;
  m.activations = e.runtime_schedule_peak_bytes;
  if (plan.activations.compression != plan::ActivationCompression::none)
    // The int8 store when the forward ends, and one layer unpacked for its backward beside it.
    m.activations = e.runtime_bytes_after_forward + e.runtime_activation_bytes_per_layer;
  m.working = working_bytes(model, seq, candidate, policy);
  // Copies in flight: a block a copy stream still reads is not reused until the copy ends
  // (record_stream). On the meta and sim clocks the host runs ahead of every stream and sees a
  // copy end only when it synchronizes, at the step's end, so the blocks of a whole pass's copies
  // stay reserved (measured on llama2-7b: 9.2 GiB of its 12.6 GiB of gradients with one
  // micro-batch; 6.5 GiB at B = 16 on a 141 GiB device, where nothing made the allocator free
  // its cache). A GPU's host runs a bounded distance ahead, and DeepSpeed's reduce buckets bound
  // the gradients' buffers further: the bound here is the runtime's, not a GPU's.
  if (plan.offload.optimizer && plan.parallel.zero >= plan::ZeroStage::gradients) {
    const int64_t N = plan.parallel.data_parallel;
    m.in_flight =
        (model.rank_parameter_count(plan.parallel.tensor_parallel) * dtype_bytes(policy.gradients) +
         N - 1) /
        N;
    // With accumulation the next micro-batch starts while they are held, and its working
    // buffers cannot take their blocks (14.1 GiB with two micro-batches on llama2-7b).
    if (plan.batch.grad_accum > 1) m.in_flight += m.working;
  }
  // Saved activations on their way to the host likewise: at most one micro-batch's.
  if (plan.activations.offload) m.in_flight += e.host_activation_requested_bytes;
  const int64_t live =
      m.parameters + m.gradients + m.optimizer_states + m.activations + m.working + m.in_flight;
  m.slack = std::max(kAllocatorSlackMinimum, live / 100 * kAllocatorSlackPercent);
  m.device_peak = round_up(live + m.slack, kSegmentRounding);
  const int64_t per_node = std::min(machine.gpus, machine.gpus_per_node);
  const int64_t host_per_gpu = e.cpu_offload_bytes - e.host_pinned_requested_bytes +
                               e.host_pinned_bytes + e.host_activation_bytes;
  m.host_per_node = host_per_gpu * per_node;
  m.nvme_per_node = (e.nvme_optimizer_state_bytes + e.nvme_parameter_bytes) * per_node;
  return m;
}

StepTime predict_time(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                      const Machine& machine) {
  return predict_time(model, seq, candidate, machine, estimate_candidate(model, seq, candidate));
}

StepTime predict_time(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                      const Machine& machine, const estimate::Estimate& e) {
  const plan::Plan& plan = candidate.plan;
  const std::optional<nn::Roofline> roofline = nn::Roofline::of(machine.device.spec);
  if (!roofline)
    throw UsageError("device " + machine.device.name() +
                     " has no peak rates or bandwidth to price a step with: give a preset "
                     "(e.g. meta:a100-80g)");
  const int64_t N = plan.parallel.data_parallel;
  const int64_t t = plan.parallel.tensor_parallel;
  const int64_t K = plan.batch.grad_accum;
  const int64_t B = candidate.micro_batch;
  const amp::PrecisionPolicy policy =
      amp::precision_policy(plan.amp.precision, plan.amp.fp32_grads);
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  StepTime time;

  const PassFlops flops = pass_flops(model, seq, candidate, e);
  time.compute_s =
      d(K) * (flops.forward + flops.backward) / roofline->peak_flops(policy.activations);

  const double P = d(model.rank_parameter_count(t)) * d(dtype_bytes(policy.parameters));
  const double G = d(model.rank_parameter_count(t)) * d(dtype_bytes(policy.gradients));
  const double share = plan.parallel.zero == plan::ZeroStage::ddp ? 1.0 : 1.0 / d(N);
  // The states wherever they live (on NVMe the host holds only their staging).
  const int64_t states =
      e.optimizer_states.bytes + (e.nvme_optimizer_state_bytes > 0 ? e.nvme_optimizer_state_bytes
                                                                   : e.host_optimizer_state_bytes);
  const double update_bytes = 2.0 * d(states) + share * (G + 2.0 * P);
  if (plan.offload.optimizer)
    time.offload_s += update_bytes / machine.host_memory_bytes_per_s;
  else
    time.optimizer_s = update_bytes / roofline->memory_bytes_per_s;
  if (plan.activations.compression != plan::ActivationCompression::none)
    // Packing reads the saved activations and writes int8, unpacking the reverse: about twice
    // their bytes through device memory, per micro-batch.
    time.compute_s += d(K) * 2.0 * d(e.runtime_activation_bytes) / roofline->memory_bytes_per_s;

  const bool spans_nodes = machine.gpus > machine.gpus_per_node;
  const double dp_rate =
      spans_nodes ? machine.inter_node_bytes_per_s : machine.intra_node_bytes_per_s;
  const double ring = N > 1 ? d(N - 1) / d(N) : 0.0;
  double dp_bytes = 0.0;
  switch (plan.parallel.zero) {
    case plan::ZeroStage::ddp:
      dp_bytes = 2.0 * ring * G;
      break;
    case plan::ZeroStage::optimizer_states:
      dp_bytes = ring * (G + P);
      break;
    case plan::ZeroStage::gradients:
      dp_bytes = ring * (d(K) * G + P);
      break;
    case plan::ZeroStage::parameters:
      dp_bytes = d(K) * ring * (2.0 * P + G);
      break;
  }
  const double act_bytes = d(B) * d(seq) * d(model.hidden) * d(dtype_bytes(policy.activations));
  const double tp_bytes =
      t > 1 ? d(K) * d(model.layers) * 4.0 * 2.0 * d(t - 1) / d(t) * act_bytes : 0.0;
  time.communication_s = dp_bytes / dp_rate + tp_bytes / machine.intra_node_bytes_per_s;

  const memory::DeviceSpec& link = machine.device.spec;
  if (plan.offload.optimizer) {
    // From ZeRO-2 on each micro-batch's reduced shard goes down as the backward makes it (the
    // device keeps no gradient), and the host adds it to the step's sum: read the new shard,
    // read and write the sum.
    const bool streamed = plan.parallel.zero >= plan::ZeroStage::gradients;
    const double down = (streamed ? d(K) : 1.0) * share * G;
    if (streamed) time.offload_s += d(K - 1) * 3.0 * share * G / machine.host_memory_bytes_per_s;
    const double up = plan.offload.parameters ? d(K) * 2.0 * P / d(N) : share * P;
    time.offload_s += down / link.device_to_host_bytes_per_s + up / link.host_to_device_bytes_per_s;
  }
  const double nvme_states = d(e.nvme_optimizer_state_bytes);
  const double nvme_params = d(e.nvme_parameter_bytes);
  time.offload_s += (nvme_states + d(K) * 2.0 * nvme_params) / machine.host.nvme_read_bytes_per_s +
                    (nvme_states + nvme_params) / machine.host.nvme_write_bytes_per_s;
  if (plan.activations.offload) {
    const double bytes = d(K) * d(e.host_activation_requested_bytes);
    time.offload_s +=
        bytes / link.device_to_host_bytes_per_s + bytes / link.host_to_device_bytes_per_s;
  }
  return time;
}

}  // namespace vramlab::planner
