// Lesson 07's exercises beside the runtime (see exercise_results.h).
#include "lessons/07-profiling/exercise_results.h"

#include <algorithm>
#include <exception>
#include <string>
#include <tuple>

#include "common/report/terminal.h"
#include "lessons/07-profiling/api/top_at_peak.h"

namespace vramlab::lesson07 {

namespace {

// Runs one exercise; a stub's NOT IMPLEMENTED (or any error) becomes the line's text.
template <typename F>
ExerciseResult attempt(const std::string& id, F&& f) {
  ExerciseResult r{id, false, false, ""};
  try {
    f(r);
    r.ran = true;
  } catch (const std::exception& e) {
    r.text = e.what();
    r.text = r.text.substr(0, r.text.find('\n'));
  }
  return r;
}

using Owner = std::tuple<int64_t, std::string, std::string, std::string, int64_t>;

ExerciseResult top_at_peak_result(const Lesson& lesson) {
  return attempt("07.1", [&](ExerciseResult& r) {
    const ProfiledRun& run = lesson.baseline;
    const size_t k = static_cast<size_t>(lesson.settings.top);
    const TopAtPeak mine = top_at_peak(run.recording.snapshot, k);
    // The runtime's live set, largest first; ties are compared as sets (the order among equal
    // sizes is the exercise's rule, not analyse_peak's).
    std::vector<Owner> want, got;
    for (size_t i = 0; i < run.peak.live_at_peak.size() && i < k; ++i) {
      const snapshot::Allocation& a = run.peak.live_at_peak[i];
      want.emplace_back(a.bytes, a.module, a.phase, a.tensor, a.alloc_event);
    }
    for (const PeakAllocation& a : mine.top)
      got.emplace_back(a.bytes, a.module, a.phase, a.tensor, a.alloc_event);
    // Of the allocations as large as the k-th, any may be in the top k: compare those above it.
    const int64_t kth = want.empty() ? 0 : std::get<0>(want.back());
    const auto above = [kth](std::vector<Owner> v) {
      std::erase_if(v, [kth](const Owner& o) { return std::get<0>(o) <= kth; });
      std::sort(v.begin(), v.end());
      return v;
    };
    bool sizes_equal = want.size() == got.size();
    for (size_t i = 0; sizes_equal && i < want.size(); ++i)
      sizes_equal = std::get<0>(want[i]) == std::get<0>(got[i]);
    r.agrees = mine.peak_bytes == run.peak.peak_bytes && mine.peak_event == run.peak.peak_event &&
               sizes_equal && above(want) == above(got);
    r.text = "top_at_peak(k=" + std::to_string(k) + ") on this run's snapshot: peak " +
             report::format_count(mine.peak_bytes) + " B at event " +
             std::to_string(mine.peak_event) +
             " (the runtime's: " + report::format_count(run.peak.peak_bytes) + " B at " +
             std::to_string(run.peak.peak_event) + "), " + std::to_string(got.size()) +
             " allocations" + (r.agrees ? ", the same owners" : ", NOT the runtime's owners");
  });
}

}  // namespace

std::vector<ExerciseResult> exercise_results(const Lesson& lesson) {
  return {top_at_peak_result(lesson)};
}

}  // namespace vramlab::lesson07
