/// \file
/// \brief What the planner predicts for one candidate: the device's peak bytes, the host's bytes,
/// and the step's time, each as a stated function of the estimator's bytes and the machine's
/// rates. Note [The planner's cost model] in step_cost.cpp says what each term counts and what
/// it leaves out.
///
/// Nothing here runs a step or reads a measurement: the prediction is the estimator's side, and
/// `vramlab plan` then runs the chosen plan on a meta device to measure it.
#pragma once

#include <cstdint>
#include <string>

#include "common/estimate/estimator.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/plan/plan.h"

namespace vramlab::planner {

/// A GPU's NVLink 3 bandwidth per direction, 300 GB/s (A100's 600 GB/s total over 12 links: the
/// A100 datasheet). The intra-node collectives' default rate.
inline constexpr double kTypicalIntraNodeBytesPerS = 300e9;
/// One 200 Gb/s HDR InfiniBand adapter per GPU, 25 GB/s per direction (a DGX A100 has eight):
/// the inter-node collectives' default rate.
inline constexpr double kTypicalInterNodeBytesPerS = 25e9;
/// GPUs that share a node's NVLink (a DGX/HGX server's eight): tensor parallelism stays inside.
inline constexpr int64_t kTypicalGpusPerNode = 8;

/// The machine a plan is priced on.
struct Machine {
  memory::Device device;  ///< one GPU: its capacity, roofline and host link (a preset)
  int64_t gpus = 1;       ///< GPUs in the run (data-parallel × tensor-parallel)
  int64_t gpus_per_node = kTypicalGpusPerNode;  ///< GPUs sharing a node's NVLink and host RAM
  double intra_node_bytes_per_s = kTypicalIntraNodeBytesPerS;  ///< collectives inside a node
  double inter_node_bytes_per_s = kTypicalInterNodeBytesPerS;  ///< collectives across nodes
  /// Host RAM one node gives the run (the offloaded states of its GPUs); 0 means no limit.
  int64_t host_ram_bytes = 0;
  double host_memory_bytes_per_s = memory::kTypicalHostMemoryBytesPerS;  ///< the host's update
  memory::HostSpec host;  ///< the node's NVMe drive (read and write rates)
  bool nvme = false;      ///< the node has a drive offload may use (`--nvme`)
};

/// One way to train: a plan and its micro-batch (B sequences of T tokens per rank; the plan's
/// grad_accum K and data_parallel N make the global batch N·K·B).
struct Candidate {
  plan::Plan plan;          ///< how it trains (its batch.grad_accum is K)
  int64_t micro_batch = 1;  ///< B
};

/// The terms of a candidate's predicted step time, in seconds (Note [The planner's cost model]).
struct StepTime {
  double compute_s = 0.0;        ///< matmul FLOPs (forward, backward, recompute) over the peak
  double optimizer_s = 0.0;      ///< the device's update: its operands' bytes over memory bandwidth
  double communication_s = 0.0;  ///< data- and tensor-parallel collectives over the links
  double offload_s = 0.0;        ///< host link copies, the host's update and the drive's transfers
  /// \return the sum of the terms: nothing is assumed to overlap.
  [[nodiscard]] double total() const {
    return compute_s + optimizer_s + communication_s + offload_s;
  }
};

/// A candidate's predicted bytes: one device's, and one node's host RAM.
struct StepMemory {
  int64_t parameters = 0;        ///< the estimator's, on one device
  int64_t gradients = 0;         ///< the estimator's
  int64_t optimizer_states = 0;  ///< the estimator's, master weights included
  int64_t activations = 0;       ///< the runtime's saved-activation peak under the schedule
  /// The step's largest working buffers beside the saved activations: the logits of the loss and,
  /// under ZeRO-3, the gathered units and one unit's full gradients.
  int64_t working = 0;
  /// With the optimizer offloaded from ZeRO-2 on: the gradient shards the host link has not
  /// copied yet, freed by the backward but held by their copies (reserved, not allocated).
  int64_t in_flight = 0;
  /// What the allocator reserves beyond the live blocks (Note [The planner's cost model]).
  int64_t slack = 0;
  /// The device's predicted peak of reserved bytes: the seven above, rounded up to the caching
  /// allocator's 2 MiB: what must fit in the capacity.
  int64_t device_peak = 0;
  int64_t host_per_node = 0;  ///< offloaded states (and activations) of one node's GPUs
  int64_t nvme_per_node = 0;  ///< the node's files on its drive
  /// \return the name of the largest of the six device terms ("optimizer_states", ...).
  [[nodiscard]] std::string largest_category() const;
};

/// \return the estimator's bytes of \p candidate, which the two predictions below start from.
/// \throws vramlab::UsageError when the runtime cannot run the candidate (is_runnable()).
estimate::Estimate estimate_candidate(const ModelConfig& model, int64_t seq,
                                      const Candidate& candidate);

/// \return the predicted bytes of \p candidate for \p model at sequence \p seq on \p machine.
/// \throws vramlab::UsageError when the estimator refuses the candidate (a plan the runtime
/// cannot run: see is_runnable()).
StepMemory predict_memory(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                          const Machine& machine);

/// As predict_memory() above, from the candidate's estimate_candidate().
StepMemory predict_memory(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                          const Machine& machine, const estimate::Estimate& estimate);

/// \return the predicted step time of \p candidate (Note [The planner's cost model]).
/// \throws vramlab::UsageError as predict_memory(), or when the device has no roofline.
StepTime predict_time(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                      const Machine& machine);
/// As predict_time() above, from the candidate's estimate_candidate().
StepTime predict_time(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                      const Machine& machine, const estimate::Estimate& estimate);

/// \return whether the runtime trains \p candidate at all (the trainer's own validation of the
/// plan, the model's split over the plan's tensor-parallel ranks and the micro-batch): the
/// planner offers nothing the runtime does not have. \p why, if given, gets the refusal.
bool is_runnable(const ModelConfig& model, int64_t seq, const Candidate& candidate,
                 std::string* why = nullptr);

}  // namespace vramlab::planner
