// Lesson 02's exercises beside the runtime (see exercise_results.h).
#include "lessons/02-checkpointing/exercise_results.h"

#include <cstdio>

#include "common/estimate/recompute_costs.h"
#include "common/recompute/activation_peak.h"
#include "common/report/terminal.h"
#include "lessons/02-checkpointing/api/optimal_plan.h"
#include "lessons/02-checkpointing/api/sqrt_spans.h"

namespace vramlab::lesson02 {

namespace {

std::string list(const std::vector<int64_t>& values) {
  std::string out;
  for (const int64_t v : values) {
    if (!out.empty()) out += ' ';
    out += std::to_string(v);
  }
  return out;
}

const PolicyRow* row_named(const Lesson& lesson, const std::string& name) {
  for (const PolicyRow& row : lesson.policies)
    if (row.run.name == name) return &row;
  return nullptr;
}

ExerciseResult sqrt_spans(const Lesson& lesson, const recompute::ChainCosts& chain) {
  ExerciseResult r{"02.1", false, false, ""};
  const PolicyRow* sqrt = row_named(lesson, "sqrt");
  if (sqrt == nullptr) return {"02.1", false, false, "no sqrt row in this run"};
  std::vector<int64_t> runtime_starts;
  for (size_t l = 0; l < sqrt->run.pattern.size(); ++l)
    if (sqrt->run.pattern[l] == 'F') runtime_starts.push_back(static_cast<int64_t>(l));
  // The exercise's chain is one layer repeated: the lesson's models have identical blocks.
  const recompute::LayerCosts& layer = chain.layers.front();
  const ChainShape shape{static_cast<int64_t>(chain.layers.size()), layer.saved_bytes,
                         layer.output_bytes, chain.before_bytes, chain.head_bytes};
  try {
    const std::vector<int64_t> starts = sqrt_span_starts(shape.layers);
    const int64_t peak = checkpointed_activation_peak(shape, runtime_starts);
    r.ran = true;
    r.agrees = starts == runtime_starts && peak == sqrt->run.activation_peak_bytes;
    r.text = "sqrt_span_starts(" + std::to_string(shape.layers) + ") = " + list(starts) +
             " (the runtime's sqrt: " + list(runtime_starts) +
             ")\n     checkpointed_activation_peak = " + report::format_bytes_or_zero(peak) +
             " (measured " + report::format_bytes_or_zero(sqrt->run.activation_peak_bytes) + ")";
  } catch (const std::exception& e) {
    r.text = e.what();
  }
  return r;
}

ExerciseResult optimal_plan(const Lesson& lesson, const recompute::ChainCosts& chain) {
  ExerciseResult r{"02.2", false, false, ""};
  CheckpointChain exercise_chain;
  for (const recompute::LayerCosts& l : chain.layers)
    exercise_chain.layers.push_back({l.saved_bytes, l.output_bytes, l.forward_cost});
  exercise_chain.before_bytes = chain.before_bytes;
  exercise_chain.head_bytes = chain.head_bytes;
  try {
    const CheckpointPlan plan = optimal_checkpoint_plan(exercise_chain, lesson.budget_bytes);
    r.ran = true;
    const recompute::RecomputeSchedule schedule{"02.2", plan.layers};
    recompute::validate_schedule(schedule, chain.layers.size());
    const int64_t modelled = recompute::activation_peak_bytes(chain, schedule);
    const RunSettings& run = lesson.settings.run;
    const double fraction = estimate::recomputed_forward_fraction(run.model, run.batch, run.seq,
                                                                  schedule, run.attention);
    r.agrees = plan.peak_bytes == modelled && modelled <= lesson.budget_bytes;
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%", 100.0 * fraction);
    r.text = "optimal_checkpoint_plan(budget " + report::format_bytes_or_zero(lesson.budget_bytes) +
             ") = " + recompute::schedule_pattern(schedule) + "\n     peak " +
             report::format_bytes_or_zero(plan.peak_bytes) +
             " (the runtime's model of that plan: " + report::format_bytes_or_zero(modelled) +
             "), " + share + " of the forward recomputed (no selective)";
  } catch (const std::exception& e) {
    r.text = e.what();
  }
  return r;
}

}  // namespace

std::vector<ExerciseResult> exercise_results(const Lesson& lesson) {
  const RunSettings& run = lesson.settings.run;
  const recompute::ChainCosts chain =
      estimate::runtime_chain_costs(run.model, run.batch, run.seq, DType::f32, run.attention);
  return {sqrt_spans(lesson, chain), optimal_plan(lesson, chain)};
}

}  // namespace vramlab::lesson02
