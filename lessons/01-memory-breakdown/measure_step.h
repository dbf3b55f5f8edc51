/// \file
/// \brief Lesson 01's measurement: one real training step (forward, backward, optimizer step) of a
/// decoder-only transformer on a device, with everything the caching allocator saw, beside the
/// analytic estimate of the same step.
///
/// This is the library behind the `lesson01_memory_breakdown` binary and its tests
/// (tests/lesson01). The step is train::Trainer's; an nn::StepObserver lists the SavedActivations
/// store between forward and backward.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/estimate/estimator.h"
#include "common/memory/device.h"
#include "common/memory/history.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"
#include "common/nn/saved_activations.h"
#include "lessons/01-memory-breakdown/api/peak_from_trace.h"

namespace vramlab::lesson01 {

/// What to run.
struct StepSettings {
  ModelConfig model;  ///< the model (validated by measure_training_step()).
  int64_t batch = 8;  ///< B (≥ 1).
  int64_t seq = 128;  ///< T (1 ≤ T ≤ model.max_seq).
  /// The estimator's name of an optimizer the runtime implements: "adamw", "sgd-momentum"
  /// (momentum 0.9) or "sgd" (no momentum, no state).
  std::string optimizer = "adamw";
  memory::Device device;  ///< where the step runs.
  uint64_t seed = 1;      ///< initial weights and the token stream.
  /// The attention kernel (`--attention`): flash saves lse (B, H, T) instead of att (B, H, T, T).
  AttentionKind attention = AttentionKind::naive;
};

/// Checks the settings without allocating anything.
/// \param settings the run.
/// \throws vramlab::UsageError naming the bad value (model, B, T, optimizer).
void validate(const StepSettings& settings);

/// The analytic estimate of the step: `vramlab estimate` for fp32 training (the runtime's
/// precision), the runtime's optimizer, one device, micro-batch B and sequence T.
/// \param settings the run. \return the estimate (runtime_activation_bytes is the runtime layout).
/// \throws vramlab::UsageError for bad settings.
estimate::Estimate estimate_step(const StepSettings& settings);

/// Everything measured during one training step.
struct StepMeasurement {
  int64_t parameter_count = 0;  ///< Ψ.
  /// Per category (MemoryCategory order): the allocator's peak allocated bytes (512-B rounded
  /// blocks) of that category over the run.
  std::array<int64_t, memory::kMemoryCategoryCount> category_peak_bytes{};
  int64_t parameter_requested_bytes = 0;        ///< numel × 4 of the parameter block.
  int64_t gradient_requested_bytes = 0;         ///< numel × 4 of the gradient block.
  int64_t optimizer_state_requested_bytes = 0;  ///< the optimizer's own count of its states.
  int64_t input_requested_bytes = 0;            ///< tokens and targets, (B, T) int32 each.
  /// The SavedActivations store right after forward, in save order (what backward will read).
  std::vector<nn::SavedActivationInfo> saved;
  int64_t saved_requested_bytes = 0;      ///< sum of saved[i].bytes.
  int64_t peak_allocated_bytes = 0;       ///< allocated_bytes.all.peak.
  int64_t peak_reserved_bytes = 0;        ///< reserved_bytes.all.peak (segments).
  int64_t segment_count_peak = 0;         ///< segment.all.peak.
  double loss = 0.0;                      ///< the step's mean loss in nats (0 on meta).
  double step_seconds = 0.0;              ///< wall time of the step (batch copy to optimizer).
  std::vector<memory::TraceEntry> trace;  ///< the allocator's history from the first allocation.
  nlohmann::json snapshot;                ///< the allocator snapshot after the step.

  /// \param category a category. \return category_peak_bytes of it.
  [[nodiscard]] int64_t peak_of(memory::MemoryCategory category) const {
    return category_peak_bytes[static_cast<size_t>(category)];
  }
};

/// Runs one training step on a fresh Runtime with history recording on from the start, and
/// measures it.
/// \param settings the run.
/// \return the measurements.
/// \throws vramlab::UsageError for bad settings; memory::OutOfMemoryError when the device is too
/// small (the message is PyTorch's).
StepMeasurement measure_training_step(const StepSettings& settings);

/// The allocator's trace as exercise 01.3's events: every alloc and free_requested, named by the
/// tensor's name (made unique among live tensors with a "#2", "#3" … suffix when two live blocks
/// share a name), with its requested size and category.
/// \param trace the allocator's history.
/// \param owners if not null, receives each event's owner_label().
/// \return the events, in order.
std::vector<TraceEvent> trace_events(const std::vector<memory::TraceEntry>& trace,
                                     std::vector<std::string>* owners = nullptr);

/// \return the training phase and module path \p entry's block was allocated in, e.g.
/// "backward in blocks.3.attn", or just the phase ("optimizer") outside every module.
std::string owner_label(const memory::TraceEntry& entry);

/// Per layer: the saved tensors of one layer (-1 = outside the blocks) and their bytes.
struct LayerActivations {
  int64_t layer = -1;   ///< block index, -1 outside the blocks.
  int64_t tensors = 0;  ///< number of saved tensors.
  int64_t bytes = 0;    ///< their requested bytes (numel × element size).
};

/// Groups \p saved by layer.
/// \param saved the store's list. \param layers the model's L.
/// \return one entry for the tensors outside the blocks (layer -1) then one per block, in order.
std::vector<LayerActivations> activations_by_layer(
    const std::vector<nn::SavedActivationInfo>& saved, int64_t layers);

}  // namespace vramlab::lesson01
