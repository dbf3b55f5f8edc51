// LessonMain: the flags, output and exit codes every lesson binary shares (see lesson_main.h).
#include "common/workbook/lesson_main.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <unistd.h>

#include "common/memory/oom_error.h"
#include "common/platform/errors.h"
#include "common/report/svg_plot.h"
#include "common/report/terminal.h"
#include "common/report/typed_table.h"
#include "common/workbook/claims.h"
#include "common/workbook/lesson_binary.h"

namespace vramlab::workbook {

namespace fs = std::filesystem;

namespace {

// Keeps the run's JSON beside its figures, as `vramlab claims` reads it: written under another
// name and renamed, so a full disk leaves the last run's file whole, never half of this one. The
// other name is this process's own, so two runs into one folder do not take each other's file.
void save_run(const fs::path& out_dir, const std::string& dumped) {
  const fs::path path = out_dir / kLessonRunFile;
  const fs::path partial =
      out_dir / (std::string(kLessonRunFile) + "." + std::to_string(getpid()) + ".partial");
  try {
    report::write_text_file(partial.string(), dumped + "\n");
    fs::rename(partial, path);
  } catch (const std::exception& e) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    throw std::runtime_error("cannot save the run's JSON to " + out_dir_shown(path) + ": " +
                             e.what());
  }
}

}  // namespace

LessonRun::LessonRun(std::string id, fs::path out_dir, bool json)
    : id_(std::move(id)), out_dir_(std::move(out_dir)), json_(json) {}

bool LessonRun::colour() const {
  return report::use_colour(stdout);
}

void (*LessonRun::progress_function() const)(const std::string&) {
  return json_ ? nullptr : print_progress;
}

std::string LessonRun::command(std::string_view flags) const {
  return lesson_command(id_, lesson_runs_mine(), flags);
}

void LessonRun::on_out_of_memory(std::string device, std::string flags, std::string why,
                                 std::string subject) {
  oom_device_ = std::move(device);
  oom_flags_ = std::move(flags);
  oom_why_ = std::move(why);
  oom_subject_ = std::move(subject);
}

void LessonRun::on_out_of_memory(std::string advice) {
  oom_advice_ = std::move(advice);
}

LessonMain::LessonMain(std::string id, std::string program, std::string description,
                       std::string_view figures)
    : id_(std::move(id)), program_(std::move(program)), app_(std::move(description), program_) {
  app_.add_flag("--json", json_, "One JSON object instead of the tables");
  app_.add_option("--out-dir", out_dir_,
                  "Where " + std::string(figures) + " go (default: lesson-output/" + id_ +
                      " in the build directory)");
}

int LessonMain::run(int argc, char** argv, const std::function<LessonOutput(LessonRun&)>& lesson) {
  return run_lesson_main(app_, argc, argv, program_, [&]() -> int {
    // Made before any work: an --out-dir that cannot be a folder is named before the lesson runs.
    LessonRun run(id_, prepare_out_dir(out_dir_, id_), json_);
    LessonOutput out;
    try {
      out = lesson(run);
    } catch (const memory::OutOfMemoryError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      if (!run.oom_advice_.empty())
        std::fprintf(stderr, "\n%s", run.oom_advice_.c_str());
      else if (!run.oom_flags_.empty())
        std::fprintf(stderr, "\nlesson %s: %s does not fit %s. Try:\n  %s   # %s\n", id_.c_str(),
                     run.oom_subject_.c_str(), run.oom_device_.c_str(),
                     run.command(run.oom_flags_).c_str(), run.oom_why_.c_str());
      return kExitFailure;
    }
    if (out.silent) return 0;
    nlohmann::json j = std::move(out.json);
    std::vector<ClaimResult> claims;
    if (!out.claims_file.empty()) {
      claims = evaluate_claims(out.claims_file, "lesson " + id_ + "'s claims.json", j);
      j["claims"] = report::table_of(claim_columns(), claims).json();
    }
    if (out.exercises) j["exercises"] = exercise_results_json(out.exercises->results);
    if (!out.figures.empty()) {
      j["figures"] = nlohmann::json::object();
      for (const FigureFile& f : out.figures) j["figures"][f.key] = f.path;
    }
    const std::string dumped = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    save_run(run.out_dir(), dumped);
    if (json_) {
      std::printf("%s\n", dumped.c_str());
      return 0;
    }
    std::string text = std::move(out.text);
    if (!out.claims_file.empty())
      text += "\nThe seeds' claims, against these numbers\n" +
              report::table_of(claim_columns(), claims).render(run.colour());
    if (out.exercises)
      text += "\n" + render_exercise_results(out.exercises->results, out.exercises->heading);
    std::string names;
    for (const FigureFile& f : out.figures)
      if (f.listed)
        names += (names.empty() ? " " : ", ") +
                 fs::path(f.path).lexically_relative(run.out_dir()).string();
    if (!names.empty())
      text += "\nFigures in " + out_dir_shown(run.out_dir()) + ":" + names +
              (out.figures_note.empty() ? "" : " " + out.figures_note) + "\n";
    text += out.after_figures;
    for (size_t i = 0; i < out.next.size(); ++i)
      text += (i ? "  " : "Next:\n  ") + out.next[i].command + "   # " + out.next[i].why + "\n";
    std::fputs(text.c_str(), stdout);
    return 0;
  });
}

CLI::Validator at_least(int64_t minimum) {
  return CLI::Validator(
      [minimum](std::string& text) -> std::string {
        int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size()) return "";  // CLI11's to judge
        if (value >= minimum) return "";
        return "must be >= " + std::to_string(minimum) + ", got " + text;
      },
      "");
}

CLI::Validator in_range(int64_t minimum, int64_t maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& text) -> std::string {
        int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size()) return "";  // CLI11's to judge
        if (value >= minimum && value <= maximum) return "";
        return "must be in [" + std::to_string(minimum) + ", " + std::to_string(maximum) +
               "], got " + text;
      },
      "");
}

CLI::Validator positive_finite() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "";  // CLI11's to judge
        if (value > 0.0 && std::isfinite(value)) return "";
        return "must be a finite number > 0, got " + text;
      },
      "");
}

}  // namespace vramlab::workbook
