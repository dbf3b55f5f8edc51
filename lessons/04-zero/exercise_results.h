/// \file
/// \brief Lesson 04's exercises beside the runtime: the learner's shard ranges (04.1) against
/// dist::ShardLayout and the ZeRO-3 bytes this run measured, the ring all-reduce (04.2) against
/// the communicator's on simulated ranks (result and bytes sent), ZeRO-3's gathered peak (04.3)
/// against the one this run measured, and one rank's model-state bytes (04.4) against every
/// stage's measured bytes. Compiled into the lesson binary only, which links the references or,
/// as `vramlab run 04 --mine`, the learner's code.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lessons/04-zero/zero_report.h"

namespace vramlab::lesson04 {

/// One exercise's line of the report.
struct ExerciseResult {
  std::string id;       ///< e.g. "04.1".
  bool ran = false;     ///< false when the function threw (e.g. not written yet).
  bool agrees = false;  ///< the result matches what the runtime computes or measured.
  std::string text;     ///< what it returned beside the runtime's number, or the error.
};

/// Calls the exercise functions on the lesson's model and its measured runs.
/// \param lesson the runs (the training runs on rank 0). \return one result per exercise.
std::vector<ExerciseResult> exercise_results(const Lesson& lesson);

/// \param results from exercise_results(). \return the report's lines.
std::string render_exercises(const std::vector<ExerciseResult>& results);

/// \param results from exercise_results(). \return [{id, ran, agrees, text}].
nlohmann::json exercises_json(const std::vector<ExerciseResult>& results);

}  // namespace vramlab::lesson04
