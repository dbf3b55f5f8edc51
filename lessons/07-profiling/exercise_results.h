/// \file
/// \brief Lesson 07's exercises beside the runtime: the learner's top-k at the peak (07.1) on this
/// run's snapshot against snapshot::analyse_peak. Compiled into the lesson binary only, which links
/// the references or, as `vramlab run 07 --mine`, the learner's code.
#pragma once

#include <string_view>
#include <vector>

#include "common/workbook/exercise_result.h"
#include "lessons/07-profiling/profile_report.h"

namespace vramlab::lesson07 {

using workbook::ExerciseResult;

/// The heading of the exercises' lines in the report.
inline constexpr std::string_view kExercisesHeading =
    "Exercises on this run (lessons/07-profiling/EXERCISES.md; your code with --mine):";

/// Calls the exercise functions on the lesson's recorded snapshots.
/// \param lesson the runs. \return one result per exercise.
std::vector<ExerciseResult> exercise_results(const Lesson& lesson);

}  // namespace vramlab::lesson07
