/// \file
/// \brief When each unit's gradients became final in a step's backward, on the compute stream's
/// clock, and how many bytes they are: what a schedule of ZeRO-Offload's gradient copies is
/// computed from (the offload lesson's exercise, tests/train/test_offload_clock.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "common/nn/step_observer.h"
#include "common/stream/clock.h"

namespace vramlab::train {

/// A step observer that records, for the last backward it saw, each unit of the parameter
/// store's layout (the head, each block from the last, the embedding) as its backward ended.
class BackwardTimeline final : public nn::StepObserver {
 public:
  /// One unit's gradients.
  struct Unit {
    double ready_seconds = 0.0;  ///< the compute stream's time when its backward ended.
    int64_t bytes = 0;           ///< its gradients' bytes (padded numel × the gradients' dtype).
  };

  /// \param clock the runtime's clock; must outlive the observer.
  explicit BackwardTimeline(stream::Clock& clock) : clock_(clock) {}

  void before(const nn::PhaseEvent& event) override;
  void after(const nn::PhaseEvent& event) override;

  /// \return the units of the last backward, in the order they became final.
  [[nodiscard]] const std::vector<Unit>& units() const { return units_; }
  /// \return the compute stream's time when the last step's backward ended (its optimizer phase
  /// began).
  [[nodiscard]] double backward_end_seconds() const { return backward_end_; }

 private:
  stream::Clock& clock_;
  std::vector<Unit> units_;
  double backward_end_ = 0.0;
};

}  // namespace vramlab::train
