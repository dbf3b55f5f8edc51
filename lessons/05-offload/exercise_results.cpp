// Lesson 05's exercises beside the runtime (see exercise_results.h).
#include "lessons/05-offload/exercise_results.h"

#include <cmath>
#include <exception>
#include <string>

#include <fmt/core.h>

#include "lessons/05-offload/api/delayed_step.h"
#include "lessons/05-offload/api/exposed_copies.h"

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

workbook::ExerciseResult exposed_copies(const Lesson& lesson) {
  workbook::ExerciseResult r{"05.1", false, false, ""};
  try {
    int64_t steps = 0, agreeing = 0;
    std::string example;
    for (const SweepPoint& p : lesson.sweep)
      for (const RunResult* run : {&p.on, &p.off}) {
        const double mine = predicted(*run);
        const double clock = run->exposed_copy_seconds;
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
    r.text = fmt::format("{} of {} sweep steps' exposed copy time to 1e-9 ({})", agreeing, steps,
                         example.empty() ? "no sweep ran" : example);
  } catch (const std::exception& e) {
    r.text = e.what();
    r.text = r.text.substr(0, r.text.find('\n'));
  }
  return r;
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

workbook::ExerciseResult delayed_steps(const Lesson& lesson) {
  workbook::ExerciseResult r{"05.2", false, false, ""};
  try {
    int64_t steps = 0, agreeing = 0;
    std::string example;
    for (const SweepPoint& p : lesson.sweep)
      for (const RunResult* run : {&p.delayed_on, &p.delayed_off}) {
        const double mine = predicted_delayed(*run);
        const double clock = run->step_seconds;
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
    r.text = fmt::format("{} of {} delayed sweep steps' time to 1e-9 ({})", agreeing, steps,
                         example.empty() ? "no sweep ran" : example);
  } catch (const std::exception& e) {
    r.text = e.what();
    r.text = r.text.substr(0, r.text.find('\n'));
  }
  return r;
}

}  // namespace

std::vector<workbook::ExerciseResult> exercise_results(const Lesson& lesson) {
  return {exposed_copies(lesson), delayed_steps(lesson)};
}

}  // namespace vramlab::lesson05
