/// \file
/// \brief Lesson 09's exercises beside the runtime: the learner's block-wise quantisation (09.1)
/// and Lion step (09.2) against the runtime's kernels, Adam-mini's v count (09.3) and the moment
/// bytes from the shapes (09.4) against the bytes this run measured. Compiled into the lesson
/// binary only, which links the references or, as `vramlab run 09 --mine`, the learner's code.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/workbook/exercise_result.h"

#include "lessons/09-optimizer-memory/optimizer_report.h"

namespace vramlab::lesson09 {

using workbook::ExerciseResult;

/// The heading of the exercises' lines in the report.
inline constexpr std::string_view kExercisesHeading =
    "Exercises on this run (lessons/09-optimizer-memory/EXERCISES.md; your code with --mine):";

/// Calls the exercise functions on the lesson's model, its measured bytes and random inputs.
/// \param lesson the runs. \return one result per exercise.
std::vector<ExerciseResult> exercise_results(const Lesson& lesson);

}  // namespace vramlab::lesson09
