/// \file
/// \brief Lesson 04's measurements: one data-parallel strategy (DDP, ZeRO-1, ZeRO-2, ZeRO-3)
/// trained by N ranks, each rank with its own nn::Runtime and train::Trainer, and what each
/// rank held and sent.
///
/// The same rank body runs under `mpirun` (one process per rank, dist::MpiCommunicator) and as
/// threads of one process (dist::launch_ranks): on `sim` both train for real, on `meta`
/// the simulated ranks only allocate and count, which sizes a 64-rank 7.5B run in seconds.
///
/// What a rank reports, all read from the runtime rather than computed here: the requested
/// bytes of its parameters, gradients and optimizer states after the last step
/// (train::StepResult::model_state, from the allocator's per-category requested bytes), the
/// allocator's peak, the bytes it sent in the last step by traffic class
/// (train::StepResult::communication, counted as the ring algorithm sends them), and the loss of
/// every step (the mean over the ranks). Beside them: what `vramlab estimate` says for the same
/// stage and rank count.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/amp/precision_policy.h"
#include "common/dist/communicator.h"
#include "common/dist/launch_ranks.h"
#include "common/dist/parallel_options.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"
#include "common/recompute/recompute_spec.h"

namespace vramlab::lesson04 {

/// The four strategies, in the order of the lesson's tables.
inline constexpr std::array<dist::ZeroStage, 4> kStages = {
    dist::ZeroStage::ddp, dist::ZeroStage::optimizer_states, dist::ZeroStage::gradients,
    dist::ZeroStage::parameters};

/// What every rank of one strategy trains.
struct RunSettings {
  ModelConfig model;                                      ///< the model.
  int64_t batch = 8;                                      ///< B, sequences per rank per step.
  int64_t seq = 64;                                       ///< T.
  memory::Device device;                                  ///< every rank's device.
  uint64_t seed = 1;                                      ///< the weights (the same on every rank).
  int64_t steps = 8;                                      ///< optimizer steps (≥ 1).
  amp::Precision precision = amp::Precision::mixed_bf16;  ///< ZeRO's 2 + 2 + 12 accounting.
  float learning_rate = 3e-3f;                            ///< AdamW's.
  bool prefetch = false;  ///< ZeRO-3: gather the next unit with the current one.
  /// Which blocks recompute their activations (the 70B fit question keeps only block inputs).
  recompute::RecomputeSpec recompute;
  /// Rank 0 records the allocator's trace of the last step (the ZeRO-3 timeline figure).
  bool timeline = false;
};

/// Requested bytes of the three model-state categories.
struct ModelStates {
  int64_t parameters = 0;        ///< the working parameters (16-bit under mixed precision).
  int64_t gradients = 0;         ///< the gradients.
  int64_t optimizer_states = 0;  ///< m, v and the fp32 master.
  /// \return the sum.
  [[nodiscard]] int64_t total() const { return parameters + gradients + optimizer_states; }
  /// \return every field equal.
  [[nodiscard]] bool operator==(const ModelStates&) const = default;
};

/// One point of the allocator's trace during one step: requested bytes live per category.
struct TimelinePoint {
  int64_t event = 0;  ///< index of the trace entry within the step.
  std::array<int64_t, memory::kMemoryCategoryCount> bytes{};  ///< live, per category.
  std::string name;   ///< the tensor the entry allocated or freed.
  bool alloc = true;  ///< an allocation (else a free).
  memory::MemoryCategory category = memory::MemoryCategory::other;  ///< of that tensor.
  int64_t size = 0;                                                 ///< its requested bytes.
};

/// Where a phase ran on the timeline (trace indices, as rank 0's observer saw them: after the
/// strategy's before() and after its after()). Every phase but the enclosing forward and backward.
struct PhaseSpan {
  std::string phase;        ///< e.g. "forward_layer".
  int64_t layer = -1;       ///< the block, -1 for the phases outside the blocks.
  int64_t first_event = 0;  ///< the trace length when the phase began.
  int64_t last_event = 0;   ///< the trace length when it ended.
};

/// What one rank measured.
struct RankRun {
  int64_t rank = 0;         ///< r.
  ModelStates model_state;  ///< after the last step (train::StepResult::model_state).
  ModelStates estimate;     ///< estimate::estimate_memory for this stage, N and model.
  int64_t peak_bytes = 0;   ///< the allocator's allocated peak over the run (rounded).
  /// The allocator's peak per category over the run (rounded block sizes).
  std::array<int64_t, memory::kMemoryCategoryCount> peak_by_category{};
  /// ZeRO-3: the most bytes of gathered (full) units held at once (dist::DataParallel's count of
  /// requested bytes); 0 for the other stages.
  int64_t gathered_peak_bytes = 0;
  dist::CommunicationStats last_step;  ///< what the last step sent and received.
  std::vector<double> losses;          ///< per step: the mean over the ranks (0 on meta).
  double seconds = 0.0;                ///< wall time of the steps.

  /// \return bytes sent in the last step, every traffic class.
  [[nodiscard]] int64_t bytes_sent() const { return last_step.total().bytes_sent; }
  /// \return bytes sent in the last step of the ZeRO paper's traffic (gradients + parameters).
  [[nodiscard]] int64_t model_bytes_sent() const;
};

/// One strategy's run over N ranks.
struct StrategyRun {
  dist::ZeroStage stage = dist::ZeroStage::ddp;           ///< the strategy.
  int64_t world_size = 1;                                 ///< N.
  std::string backend;                                    ///< "mpi" or "simulated".
  std::string device;                                     ///< the ranks' device.
  amp::Precision precision = amp::Precision::mixed_bf16;  ///< as run.
  int64_t parameter_count = 0;                            ///< Ψ.
  int64_t padded_parameter_count = 0;   ///< Ψ' = Σ of FSDP's padded units over N ranks.
  std::vector<RankRun> ranks;           ///< one per rank, in rank order.
  std::vector<TimelinePoint> timeline;  ///< rank 0's last step, when recorded.
  std::vector<PhaseSpan> spans;         ///< rank 0's per-block phases in that step.

  /// \return rank 0's losses (every rank has the same: the mean over the ranks).
  [[nodiscard]] const std::vector<double>& losses() const;
  /// \return every rank's model states equal to the estimator's.
  [[nodiscard]] bool equals_estimate() const;
  /// \return the largest minus the smallest model-state total over the ranks.
  [[nodiscard]] int64_t model_state_spread() const;
};

/// The ZeRO paper's volume per rank per step (§7), in bytes, for Ψ parameters over N ranks:
/// 2Ψ(N−1)/N elements for DDP, ZeRO-1 and ZeRO-2, 3Ψ(N−1)/N for ZeRO-3, of \p element_bytes each.
/// \param stage the strategy. \param parameter_count Ψ. \param world_size N ≥ 1.
/// \param element_bytes bytes per communicated element (2 under mixed precision).
/// \return the bytes (real-valued: (N−1)/N need not be whole).
double paper_bytes_per_step(dist::ZeroStage stage, int64_t parameter_count, int64_t world_size,
                            int64_t element_bytes);

/// The estimator's model states for one rank of \p stage over \p world_size ranks.
/// \param model the model. \param precision the precision. \param stage the strategy.
/// \param world_size N. \return parameters, gradients and optimizer states (master included).
/// \throws vramlab::UsageError for an invalid model.
ModelStates estimated_model_states(const ModelConfig& model, amp::Precision precision,
                                   dist::ZeroStage stage, int64_t world_size);

/// Trains settings.steps steps as this rank of \p comm with \p stage, on a fresh Runtime.
/// Every rank of \p comm must call it with the same settings.
/// \param comm the data-parallel group (its stats are not reset). \param settings the run.
/// \param stage the strategy. \param timeline where rank 0 writes its last step's trace when
/// settings.timeline is set (may be null). \param spans where it writes the block phases.
/// \return this rank's measurements. \throws vramlab::UsageError for bad settings;
/// memory::OutOfMemoryError when the device is too small; dist::PeerFailure when a peer fails.
RankRun run_rank(dist::Communicator& comm, const RunSettings& settings, dist::ZeroStage stage,
                 std::vector<TimelinePoint>* timeline = nullptr,
                 std::vector<PhaseSpan>* spans = nullptr);

/// Runs \p stage on the ranks of \p spec (dist::launch_ranks: threads of this process, or this
/// process's rank under `mpirun`) and collects every rank's measurements on rank 0 (the JSON of
/// each, dist::gather_to_rank0, after the last step).
/// \return on rank 0 every rank's measurements; elsewhere none. \throws as run_rank.
StrategyRun run_strategy(const RunSettings& settings, dist::ZeroStage stage,
                         const dist::LaunchSpec& spec);

/// run_strategy on \p world_size simulated ranks (threads; on `meta` the communicators only
/// count). \return every rank's measurements. \throws as run_rank.
StrategyRun run_simulated(const RunSettings& settings, dist::ZeroStage stage, int64_t world_size);

/// \param r a rank's measurements. \return them as JSON (what run_strategy sends to rank 0).
nlohmann::json rank_to_json(const RankRun& r);
/// \param j from rank_to_json. \return the measurements. \throws nlohmann::json's errors.
RankRun rank_from_json(const nlohmann::json& j);

}  // namespace vramlab::lesson04
