/// \file
/// \brief Lesson 02's exercises beside the runtime: the learner's √N spans and their peak
/// (02.1) against the measured `sqrt` row, and the learner's plan under the lesson's budget (02.2)
/// against the runtime's own model of that plan. Compiled into the lesson binary only, which links
/// the references or, as `vramlab run 02 --mine`, the learner's code.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/workbook/exercise_result.h"

#include "lessons/02-checkpointing/checkpoint_report.h"

namespace vramlab::lesson02 {

using workbook::ExerciseResult;

/// The heading of the exercises' lines in the report.
inline constexpr std::string_view kExercisesHeading =
    "Exercises on this run's model (lessons/02-checkpointing/EXERCISES.md; your code with "
    "--mine):";

/// Calls the exercise functions on the lesson's model and budget.
/// \param lesson the runs (its `sqrt` row and budget). \return one result per exercise.
std::vector<ExerciseResult> exercise_results(const Lesson& lesson);

}  // namespace vramlab::lesson02
