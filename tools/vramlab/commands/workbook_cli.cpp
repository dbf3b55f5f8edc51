// What the workbook commands share (see workbook_cli.h): the checkout and its build, building
// targets, checking one exercise and printing the result.
#include "tools/vramlab/commands/workbook_cli.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/platform/build_info.h"
#include "common/platform/errors.h"
#include "common/platform/printable.h"
#include "common/report/progress_bar.h"
#include "common/report/terminal.h"
#include "common/workbook/comparison.h"
#include "common/workbook/not_implemented.h"
#include "common/workbook/process.h"

namespace vramlab::cli::workbook_cli {

using nlohmann::json;
namespace style = report::style;

namespace {

// The default build directory: the build this binary was configured in when it still exists
// (on a fresh clone that is <repo>/build, the README's), else <repo>/build.
fs::path default_build_dir(const fs::path& repo_root) {
  const fs::path own = build_info::kBinaryDir;
  if (fs::exists(own / "CMakeCache.txt")) return own;
  return repo_root / "build";
}

std::vector<std::string> first_lines(const std::string& text, size_t max_lines) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (lines.size() < max_lines && std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string indent_lines(const std::string& text, const std::string& prefix) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out += prefix + line + "\n";
  return out;
}

// The human part of a failure: the NOT IMPLEMENTED line, the numeric summary, or the first lines.
std::string failure_gist(const std::string& message) {
  const size_t marker = message.find(workbook::kNotImplementedMarker);
  if (marker != std::string::npos) {
    const size_t end = message.find_first_of("\"\n", marker);
    return message.substr(marker, end == std::string::npos ? std::string::npos : end - marker);
  }
  if (const auto summary = workbook::parse_failure_summary(message))
    return summary->quantity + ": " + workbook::describe(*summary);
  std::string gist;
  for (const auto& line : first_lines(message, 8)) gist += line + "\n";
  if (!gist.empty()) gist.pop_back();
  return gist;
}

}  // namespace

void add_common_options(CLI::App* cmd, CommonOptions& options) {
  cmd->add_option("--build-dir", options.build_dir,
                  "build directory (default: $VRAMLAB_BUILD_DIR, else the build this vramlab "
                  "was built in, else <repo>/build)")
      // An empty value would fall back to the default build, which the user did not ask for.
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return text.empty() ? "an empty value names no build directory" : "";
          },
          ""));
  cmd->add_flag("--json", options.json, "machine-readable output on stdout");
}

Context load_context(const CommonOptions& options) {
  Context ctx;
  ctx.repo_root = build_info::kSourceDir;
  if (!options.build_dir.empty()) {
    ctx.build_dir = fs::absolute(options.build_dir);
  } else if (const char* env = std::getenv("VRAMLAB_BUILD_DIR"); env != nullptr && *env != '\0') {
    ctx.build_dir = fs::absolute(env);
  } else {
    ctx.build_dir = default_build_dir(ctx.repo_root);
  }
  ctx.book = workbook::load_workbook(ctx.repo_root);
  ctx.state_file = workbook::state_file(ctx.repo_root);
  ctx.state = workbook::load_state(ctx.state_file);
  ctx.json = options.json;
  ctx.colour = !options.json && report::use_colour(stdout);
  return ctx;
}

void require_configured_build(const Context& ctx) {
  if (!fs::exists(ctx.build_dir / "CMakeCache.txt"))
    throw UsageError("no configured build in '" + platform::printable(ctx.build_dir.string()) +
                     "': run tools/setup.sh (or cmake -S . -B build) first, or pass --build-dir");
}

bool build_targets(const Context& ctx, const std::vector<std::string>& targets,
                   const std::string& log_name, std::string& error_tail) {
  require_configured_build(ctx);
  std::vector<std::string> argv = {"cmake", "--build", ctx.build_dir.string(), "--target"};
  argv.insert(argv.end(), targets.begin(), targets.end());
  const fs::path log_dir = ctx.build_dir / "workbook";
  fs::create_directories(log_dir);
  const fs::path log = log_dir / (log_name + ".build.log");
  const workbook::ProcessResult result = workbook::run_process(argv, log, 3600.0);
  if (result.succeeded()) return true;
  error_tail = workbook::tail_of_file(log, 40);
  if (!result.started) error_tail = "cmake could not be started (is it on PATH?)\n";
  return false;
}

fs::path test_binary(const Context& ctx, const std::string& target) {
  return ctx.build_dir / "tests" / "bin" / target;
}

CheckResult check_exercise(const Context& ctx, const workbook::Exercise& exercise, bool reference) {
  CheckResult result;
  result.exercise = &exercise;
  result.reference = reference;
  const std::string target =
      reference ? exercise.reference_test_target() : exercise.mine_test_target();
  result.built = build_targets(ctx, {target}, target, result.build_errors);
  if (!result.built) return result;
  result.run = workbook::run_test_binary(test_binary(ctx, target), exercise.test_filter,
                                         ctx.build_dir / "workbook", 300.0);
  result.passed = result.run.all_passed();
  if (const auto* failure = result.run.first_failure();
      failure != nullptr && !failure->failures.empty())
    result.not_implemented =
        failure->failures.front().find(std::string(workbook::kNotImplementedMarker) + exercise.id +
                                       " ") != std::string::npos;
  return result;
}

const workbook::Lesson& lesson_of(const Context& ctx, const workbook::Exercise& exercise) {
  return ctx.book.lesson(exercise.lesson_id);
}

std::string first_pending(const Context& ctx) {
  for (const auto* ex : ctx.book.all_exercises())
    if (!ctx.state.is_done(ex->id)) return ex->id;
  return "";
}

std::string progress_line(const Context& ctx, const workbook::Lesson& lesson) {
  uint64_t done = 0;
  for (const auto& ex : lesson.exercises) done += ctx.state.is_done(ex.id) ? 1 : 0;
  report::ProgressBarOptions options;
  options.stream = stdout;
  options.mode = report::ProgressMode::kSilent;  // rendered by hand below, once
  options.colour = ctx.colour;
  options.now_ms = [] { return 0.0; };  // no rate or ETA: this is not a timed run
  report::ProgressBar bar(lesson.exercises.size(), "lesson " + lesson.id, options);
  bar.update(done);
  bar.finish("exercises done");
  return bar.render_line();
}

void record_check(Context& ctx, const CheckResult& result) {
  if (result.reference || result.exercise == nullptr) return;
  const std::string& id = result.exercise->id;
  if (result.passed) {
    ctx.state.done.insert(id);
    if (ctx.state.current == id || ctx.state.current.empty())
      ctx.state.current = first_pending(ctx);
  } else {
    ctx.state.done.erase(id);
    ctx.state.current = id;
  }
  workbook::save_state(ctx.state_file, ctx.state);
}

void print_json(const json& value) {
  std::fputs((value.dump(2, ' ', false, json::error_handler_t::replace) + "\n").c_str(), stdout);
}

json check_json(const CheckResult& r) {
  json tests = json::array();
  for (const auto& t : r.run.tests) {
    json entry = {{"name", t.full_name()},
                  {"outcome", t.outcome == workbook::TestOutcome::kPassed   ? "passed"
                              : t.outcome == workbook::TestOutcome::kFailed ? "failed"
                                                                            : "skipped"}};
    if (!t.failures.empty()) entry["failure"] = t.failures.front();
    if (!t.failures.empty())
      if (const auto s = workbook::parse_failure_summary(t.failures.front()))
        entry["summary"] = {
            {"quantity", s->quantity}, {"max_abs_diff", s->max_abs_diff},
            {"where", s->where},       {"expected", s->expected},
            {"actual", s->actual},     {"percent_of_tolerance", s->percent_of_tolerance}};
    tests.push_back(entry);
  }
  return {{"id", r.exercise->id},
          {"title", r.exercise->title},
          {"code", r.reference ? "reference" : "mine"},
          {"file", r.reference ? r.exercise->reference : r.exercise->stub},
          {"built", r.built},
          {"build_errors", r.build_errors},
          {"run_status", std::string(workbook::run_status_name(r.run.status))},
          {"run_detail", r.run.detail},
          {"passed", r.passed},
          {"not_implemented", r.not_implemented},
          {"tests", tests}};
}

void print_check(const Context& ctx, const CheckResult& r) {
  const bool c = ctx.colour;
  const workbook::Exercise& ex = *r.exercise;
  std::string out;
  out += style::bold(ex.id + "  " + ex.title, c) + "\n";
  out += "    " + (r.reference ? style::cyan("REFERENCE", c) : style::yellow("YOUR CODE", c)) +
         ": " + (r.reference ? ex.reference : ex.stub) + "\n";
  if (!r.built) {
    out += style::red("  BUILD FAILED", c) + "\n" + indent_lines(r.build_errors, "    ");
    out += style::bold("  Next: ", c) + "fix the compile error above in " + ex.stub +
           ", then run `vramlab check " + ex.id + "`.\n";
    std::fputs(out.c_str(), stdout);
    return;
  }
  for (const auto& t : r.run.tests) {
    const char* word = t.outcome == workbook::TestOutcome::kPassed   ? "PASS"
                       : t.outcome == workbook::TestOutcome::kFailed ? "FAIL"
                                                                     : "SKIP";
    const std::string tag = t.outcome == workbook::TestOutcome::kPassed   ? style::green(word, c)
                            : t.outcome == workbook::TestOutcome::kFailed ? style::red(word, c)
                                                                          : style::yellow(word, c);
    out += "  " + tag + "  " + t.full_name() + "\n";
  }
  if (r.run.status != workbook::RunStatus::kCompleted) {
    out += style::red("  The tests " + std::string(workbook::run_status_name(r.run.status)), c) +
           ": " + r.run.detail + "\n" + indent_lines(r.run.output_tail, "    ");
  } else if (const auto* failure = r.run.first_failure(); failure != nullptr) {
    out += "  First failure (" + failure->full_name() + "):\n";
    out += indent_lines(failure_gist(failure->failures.empty() ? "" : failure->failures.front()),
                        "    ");
  }
  std::string next;
  if (r.passed) {
    out += style::green("  All " + std::to_string(r.run.tests.size()) + " tests pass.", c) + "\n";
    if (r.reference) {
      next = "the reference is fine; check your own code with `vramlab check " + ex.id + "`.";
    } else {
      const std::string pending = first_pending(ctx);
      next = pending.empty()
                 ? "every exercise is done. Compare with the reference: `vramlab solution " +
                       ex.id + "`."
                 : "`vramlab solution " + ex.id + "` shows the reference; then exercise " +
                       pending + ": edit " + ctx.book.exercise(pending).stub +
                       " and run `vramlab check " + pending + "`.";
    }
  } else if (r.reference) {
    next =
        "the reference itself fails: that is a bug in vramlab, please report it with this output.";
  } else if (r.not_implemented) {
    next = "open " + ex.stub + ", replace VRAMLAB_NOT_IMPLEMENTED(\"" + ex.id +
           "\") with your code, then run `vramlab check " + ex.id +
           "` (or `vramlab watch` to re-check on every save). Stuck? `vramlab hint " + ex.id + "`.";
  } else if (r.run.status != workbook::RunStatus::kCompleted) {
    next = "your code " + std::string(workbook::run_status_name(r.run.status)) +
           " — look for an out-of-range index or an endless loop in " + ex.stub + ".";
  } else {
    const auto seen = ctx.state.hints_seen.find(ex.id);
    const int level = std::min(3, (seen == ctx.state.hints_seen.end() ? 0 : seen->second) + 1);
    next = "compare the expected and actual values above, fix " + ex.stub +
           ", and re-run `vramlab check " + ex.id + "`. A hint: `vramlab hint " + ex.id +
           " --level " + std::to_string(level) + "`.";
  }
  out += style::bold("  Next: ", c) + next + "\n";
  std::fputs(out.c_str(), stdout);
}

}  // namespace vramlab::cli::workbook_cli
