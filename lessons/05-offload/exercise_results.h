/// \file
/// \brief Lesson 05's exercises beside its run: the learner's function (or, by default, the
/// reference) on the lesson's own numbers, against what the runtime measured.
#pragma once

#include <string_view>
#include <vector>

#include "common/workbook/exercise_result.h"
#include "lessons/05-offload/offload_report.h"

namespace vramlab::lesson05 {

/// The line above the results.
inline constexpr std::string_view kExercisesHeading =
    "Exercises (lessons/05-offload/EXERCISES.md) on this run's numbers:";

/// 05.1: the exposed copy time of every sweep step (overlap on and off) predicted from its
/// backward, against the clock's; 05.2: the time of every delayed sweep step, likewise; 05.3: the
/// pinned host bytes of every run with its activations offloaded, against the pinned allocator's.
/// \param lesson the run. \return one result per exercise.
std::vector<workbook::ExerciseResult> exercise_results(const Lesson& lesson);

}  // namespace vramlab::lesson05
