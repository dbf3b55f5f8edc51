/// \file
/// \brief Lesson 09's exercises beside the runtime: the learner's block-wise quantisation (09.1)
/// and Lion step (09.2) against the runtime's kernels, Adam-mini's v count (09.3) and the moment
/// bytes from the shapes (09.4) against the bytes this run measured. Compiled into the lesson
/// binary only, which links the references or, as `vramlab run 09 --mine`, the learner's code.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lessons/09-optimizer-memory/optimizer_report.h"

namespace vramlab::lesson09 {

/// One exercise's line of the report.
struct ExerciseResult {
  std::string id;       ///< e.g. "09.1".
  bool ran = false;     ///< false when the function threw (e.g. not written yet).
  bool agrees = false;  ///< the result matches what the runtime computes or measured.
  std::string text;     ///< what it returned beside the runtime's number, or the error.
};

/// Calls the exercise functions on the lesson's model, its measured bytes and random inputs.
/// \param lesson the runs. \return one result per exercise.
std::vector<ExerciseResult> exercise_results(const Lesson& lesson);

/// \param results from exercise_results(). \return the report's lines.
std::string render_exercises(const std::vector<ExerciseResult>& results);

/// \param results from exercise_results(). \return [{id, ran, agrees, text}].
nlohmann::json exercises_json(const std::vector<ExerciseResult>& results);

}  // namespace vramlab::lesson09
