/// \file
/// \brief Exercise 05.3's input for a run: what one block of the run's model saves (the runtime's
/// layout, estimate::runtime_saved_activations_per_layer, in the run's activation dtype) and the
/// schedule the trainer made. Shared by the exercise's test and the lesson binary's check.
#pragma once

#include "common/recompute/recompute_schedule.h"
#include "common/train/trainer.h"
#include "lessons/05-offload/api/pinned_activations.h"

namespace vramlab::lesson05 {

/// \param options a run's options (model, B, T, attention, precision).
/// \param schedule the schedule its trainer made (train::Trainer::schedule()).
/// \return the forward in exercise 05.3's terms.
OffloadedActivations offloaded_activations(const train::TrainOptions& options,
                                           const recompute::RecomputeSchedule& schedule);

}  // namespace vramlab::lesson05
