// A lesson's exercises beside its run, in text and JSON (see exercise_result.h).
#include <nlohmann/json.hpp>

#include "common/workbook/exercise_result.h"

namespace vramlab::workbook {

std::string render_exercise_results(const std::vector<ExerciseResult>& results,
                                    std::string_view heading) {
  std::string out = std::string(heading) + "\n";
  for (const ExerciseResult& r : results) {
    out += "  " + r.id + " ";
    out += !r.ran ? "not run: " : (r.agrees ? "agrees: " : "DIFFERS from the runtime: ");
    out += r.text + "\n";
  }
  return out;
}

nlohmann::json exercise_results_json(const std::vector<ExerciseResult>& results) {
  nlohmann::json out = nlohmann::json::array();
  for (const ExerciseResult& r : results)
    out.push_back({{"id", r.id}, {"ran", r.ran}, {"agrees", r.agrees}, {"text", r.text}});
  return out;
}

}  // namespace vramlab::workbook
