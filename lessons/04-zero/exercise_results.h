/// \file
/// \brief Lesson 04's exercises beside the runtime: the learner's shard ranges (04.1) against
/// dist::ShardLayout and the ZeRO-3 bytes this run measured, the ring all-reduce (04.2) against
/// the communicator's on simulated ranks (result and bytes sent), ZeRO-3's gathered peak (04.3)
/// against the one this run measured, and one rank's model-state bytes (04.4) against every
/// stage's measured bytes. Compiled into the lesson binary only, which links the references or,
/// as `vramlab run 04 --mine`, the learner's code.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/workbook/exercise_result.h"

#include "lessons/04-zero/zero_report.h"

namespace vramlab::lesson04 {

using workbook::ExerciseResult;

/// The heading of the exercises' lines in the report.
inline constexpr std::string_view kExercisesHeading =
    "Exercises on this run (lessons/04-zero/EXERCISES.md; your code with --mine):";

/// Calls the exercise functions on the lesson's model and its measured runs.
/// \param lesson the runs (the training runs on rank 0). \return one result per exercise.
std::vector<ExerciseResult> exercise_results(const Lesson& lesson);

}  // namespace vramlab::lesson04
