// Lesson 05's exercises beside the runtime (see exercise_results.h).
#include "lessons/05-offload/exercise_results.h"

#include <array>
#include <cmath>
#include <exception>
#include <string>

#include <fmt/core.h>

#include "common/report/terminal.h"

#include "lessons/05-offload/api/delayed_step.h"
#include "lessons/05-offload/api/exposed_copies.h"
#include "lessons/05-offload/api/pinned_activations.h"
#include "lessons/05-offload/pinned_inputs.h"

namespace vramlab::lesson05 {

namespace {

// 05.1 on one measured step: the learner's prediction, or the error it threw.
double predicted(const RunResult& r) {
  OffloadedStep step;
  for (const train::BackwardTimeline::Unit& u : r.backward_units)
    step.units.push_back({u.ready_seconds, u.bytes});
  step.backward_end_seconds = r.backward_end_seconds;
  step.parameter_bytes = r.parameter_bytes;
  step.link_bytes_per_s = r.link_bytes_per_s;
  step.overlap = r.overlap;
  return exposed_copy_seconds(step);
}

// 05.2 on one measured steady step of a delayed run: times from the step's start.
double predicted_delayed(const RunResult& r) {
  DelayedStep step;
  for (const train::BackwardTimeline::Unit& u : r.backward_units)
    step.units.push_back({u.ready_seconds - r.last_step_start_seconds, u.bytes});
  step.backward_end_seconds = r.backward_end_seconds - r.last_step_start_seconds;
  step.parameter_bytes = r.parameter_bytes;
  step.link_bytes_per_s = r.link_bytes_per_s;
  step.overlap = r.overlap;
  step.update_seconds = r.previous_delayed_update_seconds;
  return delayed_step_seconds(step);
}

// One exercise on the sweep: \p predict on each of the two runs \p runs picks from every point,
// against \p measured of the same run, to 1e-9 relative; \p what names the figure.
template <typename Runs, typename Predict, typename Measured>
workbook::ExerciseResult on_the_sweep(const Lesson& lesson, const char* id, const char* what,
                                      Runs runs, Predict predict, Measured measured) {
  workbook::ExerciseResult r{id, false, false, ""};
  try {
    int64_t steps = 0, agreeing = 0;
    std::string example;
    for (const SweepPoint& p : lesson.sweep)
      for (const RunResult* run : runs(p)) {
        const double mine = predict(*run);
        const double clock = measured(*run);
        ++steps;
        const bool agrees = std::fabs(mine - clock) <= 1e-9 * std::max(1e-12, std::fabs(clock));
        agreeing += agrees ? 1 : 0;
        if (example.empty() || !agrees)
          example =
              fmt::format("at {:g} GB/s, overlap {}: {:.6f} s predicted, {:.6f} s on the clock",
                          p.link_gbps, run->overlap ? "on" : "off", mine, clock);
      }
    r.ran = true;
    r.agrees = steps > 0 && agreeing == steps;
    r.text = fmt::format("{} of {} {} to 1e-9 ({})", agreeing, steps, what,
                         example.empty() ? "no sweep ran" : example);
  } catch (const std::exception& e) {
    r.text = e.what();
    r.text = r.text.substr(0, r.text.find('\n'));
  }
  return r;
}

// 05.3 on the activation runs that offloaded: the learner's pinned bytes against the pinned
// allocator's, exactly.
workbook::ExerciseResult pinned_on_the_activation_runs(const Lesson& lesson) {
  workbook::ExerciseResult r{"05.3", false, false, ""};
  try {
    int64_t runs = 0, agreeing = 0;
    std::string example;
    std::vector<const RunResult*> offloaded;
    for (const auto* group : {&lesson.activations.small, &lesson.activations.large})
      for (const RunResult& run : *group)
        if (run.activations_offloaded && run.fits) offloaded.push_back(&run);
    for (const RunResult* run : offloaded) {
      const train::TrainOptions& o = run->options;
      const OffloadedActivations forward = offloaded_activations(o, run->schedule);
      const int64_t mine = pinned_activation_bytes(forward);
      ++runs;
      const bool agrees = mine == run->pinned_activation_bytes;
      agreeing += agrees ? 1 : 0;
      if (example.empty() || !agrees)
        example =
            fmt::format("{}, {}: {} predicted, {} pinned", o.model.name, run->label,
                        report::format_bytes(static_cast<uint64_t>(mine)),
                        report::format_bytes(static_cast<uint64_t>(run->pinned_activation_bytes)));
    }
    r.ran = true;
    r.agrees = runs > 0 && agreeing == runs;
    r.text = fmt::format("{} of {} offloaded runs' pinned activation bytes exactly ({})", agreeing,
                         runs, example.empty() ? "no offloaded run" : example);
  } catch (const std::exception& e) {
    r.text = e.what();
    r.text = r.text.substr(0, r.text.find('\n'));
  }
  return r;
}

}  // namespace

std::vector<workbook::ExerciseResult> exercise_results(const Lesson& lesson) {
  return {on_the_sweep(
              lesson, "05.1", "sweep steps' exposed copy time",
              [](const SweepPoint& p) {
                return std::array{&p.on, &p.off};
              },
              predicted, [](const RunResult& r) { return r.exposed_copy_seconds; }),
          on_the_sweep(
              lesson, "05.2", "delayed sweep steps' time",
              [](const SweepPoint& p) {
                return std::array{&p.delayed_on, &p.delayed_off};
              },
              predicted_delayed, [](const RunResult& r) { return r.step_seconds; }),
          pinned_on_the_activation_runs(lesson)};
}

}  // namespace vramlab::lesson05
