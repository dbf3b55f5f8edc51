/// \file
/// \brief One main for every lesson binary. A lesson declares its flags on app(), and gives run()
/// a function that measures and returns a LessonOutput: its JSON, its tables, the figures it
/// wrote, its exercises' results, its claims file and the commands to try next. LessonMain writes
/// the rest once: `--json` and `--out-dir`, progress on stderr, the claims' verdicts, the advice
/// after an out-of-memory error, the order of the text output, and the exit codes of
/// lesson_binary.h (0; 1 out of memory or another run-time failure; 2 bad input, in one line
/// naming the value). main() still calls platform::select_blas_core_or_reexec() first, before
/// anything else runs.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/workbook/exercise_result.h"

namespace vramlab::workbook {

/// The file in a lesson's output folder that holds its last run's `--json` object (written by
/// every run, with or without --json): what `vramlab claims` evaluates the claims against.
inline constexpr std::string_view kLessonRunFile = "lesson.json";

/// A command a lesson suggests after its run, and what it shows.
struct NextStep {
  std::string command;  ///< e.g. lesson.command("--steps 100"), or a `vramlab ...` line.
  std::string why;      ///< the comment after it.
};

/// A file a lesson wrote into its output folder.
struct FigureFile {
  std::string key;     ///< its key under "figures" in --json, e.g. "loss_curves_svg".
  std::string path;    ///< where it was written.
  bool listed = true;  ///< named on the text's "Figures in" line (as a path under the folder).
};

/// A lesson's exercises, as run on this run's numbers.
struct ExerciseReport {
  std::string heading;                  ///< the line above them (which EXERCISES.md).
  std::vector<ExerciseResult> results;  ///< one per exercise.
};

/// What a lesson's run gives back.
struct LessonOutput {
  nlohmann::json json;                      ///< the --json object; "figures" and "exercises" added.
  std::string text;                         ///< the tables and notes for the terminal.
  std::vector<FigureFile> figures;          ///< in the order the text names them.
  std::string figures_note;                 ///< after their names, e.g. "(open the .html ...)".
  std::string after_figures;                ///< lines after the figures line, each ending in "\n".
  std::optional<ExerciseReport> exercises;  ///< none for a lesson without exercises.
  std::vector<NextStep> next;               ///< what to try next.
  /// The lesson's claims.json as its binary embeds it (vramlab_embed_files), or empty: its
  /// claims are evaluated against `json` (claims.h), added to it as "claims" and printed after
  /// `text`.
  std::string_view claims_file;
  /// Print and save nothing: a rank other than 0 of a lesson that mpirun started, which only
  /// trains (rank 0 speaks for every rank).
  bool silent = false;
};

/// What a lesson's run may ask of the harness while it runs.
class LessonRun {
 public:
  /// \param id e.g. "09". \param out_dir the prepared output folder. \param json --json given.
  LessonRun(std::string id, std::filesystem::path out_dir, bool json);

  /// \return the folder the figures go to (made before the run).
  [[nodiscard]] const std::filesystem::path& out_dir() const { return out_dir_; }
  /// \return whether --json was given.
  [[nodiscard]] bool json() const { return json_; }
  /// \return whether the text may carry ANSI colours (stdout is a terminal, NO_COLOR unset).
  [[nodiscard]] bool colour() const;
  /// \return what tells the terminal what the lesson is doing now (print_progress: stderr), for
  /// the measuring code; null under --json, whose stdout and stderr hold nothing else.
  [[nodiscard]] void (*progress_function() const)(const std::string&);
  /// \param flags the lesson's flags. \return "vramlab run ID [--mine] FLAGS".
  [[nodiscard]] std::string command(std::string_view flags) const;

  /// What to say if the run throws memory::OutOfMemoryError: PyTorch's message, then "lesson ID:
  /// SUBJECT does not fit DEVICE. Try:" and command(flags) with \p why.
  /// \param device the device's name. \param flags the lesson's flags that would fit.
  /// \param why the comment after them. \param subject what did not fit ("a run", "a rank").
  void on_out_of_memory(std::string device, std::string flags, std::string why,
                        std::string subject = "a run");
  /// What to say if the run throws memory::OutOfMemoryError, in the lesson's own words: \p
  /// advice (lines ending in "\n") is printed after PyTorch's message.
  void on_out_of_memory(std::string advice);

 private:
  friend class LessonMain;
  std::string id_;
  std::filesystem::path out_dir_;
  bool json_ = false;
  std::string oom_device_, oom_flags_, oom_why_, oom_subject_ = "a run", oom_advice_;
};

/// A lesson binary's command line and its run.
class LessonMain {
 public:
  /// \param id e.g. "09". \param program the binary's name, for its messages.
  /// \param description the first line of --help. \param figures what --out-dir receives, for
  /// its help (e.g. "optimizer_bytes_per_param.svg and optimizer_loss_curves.svg").
  LessonMain(std::string id, std::string program, std::string description,
             std::string_view figures);

  /// \return the command line, to add the lesson's own flags to.
  CLI::App& app() { return app_; }

  /// Parses \p argv (run_lesson_main's rules), prepares the output folder, runs \p lesson, saves
  /// its JSON object (with "exercises" and "figures") as kLessonRunFile in the folder and prints
  /// it under --json, else prints the text, the exercises, where the figures went and what to try
  /// next. A file that cannot be saved is an error (exit 1) naming it; the previous one stays.
  /// \param argc as main's. \param argv as main's. \param lesson measures and reports.
  /// \return the exit code.
  int run(int argc, char** argv, const std::function<LessonOutput(LessonRun&)>& lesson);

 private:
  std::string id_, program_;
  CLI::App app_;
  bool json_ = false;
  std::string out_dir_;
};

/// \param minimum the smallest value allowed. \return a CLI11 check of an integer option: a
/// smaller value is refused as "must be >= MINIMUM, got TEXT" (CLI11 prefixes the option's name).
/// Text that is not an integer is left to CLI11's own conversion error.
CLI::Validator at_least(int64_t minimum);

/// \param minimum the smallest value allowed. \param maximum the largest. \return a CLI11 check
/// of an integer option: a value outside is refused as "must be in [MINIMUM, MAXIMUM], got TEXT".
CLI::Validator in_range(int64_t minimum, int64_t maximum);

/// \return a CLI11 check of a real option: refused unless a finite number > 0 ("must be a finite
/// number > 0, got TEXT").
CLI::Validator positive_finite();

}  // namespace vramlab::workbook
