/// \file
/// \brief Running a child process (a build, a test binary) with its output in a file and a
/// timeout, so a hanging or crashing exercise never takes `vramlab check` or `verify` with it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace vramlab::workbook {

/// How a child process ended.
struct ProcessResult {
  bool started = false;    ///< false when the program could not be executed.
  bool timed_out = false;  ///< killed after the timeout.
  int exit_code = -1;      ///< exit status when it exited normally, else -1.
  int signal = 0;          ///< the signal that ended it (0 if none).
  double seconds = 0.0;    ///< wall-clock time.
  /// Exited normally with status 0 (not timed out, no signal).
  [[nodiscard]] bool succeeded() const {
    return started && !timed_out && signal == 0 && exit_code == 0;
  }
  /// \return true when it died of a signal (other than our timeout kill).
  [[nodiscard]] bool crashed() const { return started && !timed_out && signal != 0; }
  /// \return e.g. "exit code 1", "killed by signal 11 (Segmentation fault)", "timed out after 60
  /// s".
  [[nodiscard]] std::string describe() const;
};

/// Runs \p argv (argv[0] is looked up on PATH) with stdout and stderr appended to \p output_file
/// and stdin from /dev/null; kills its whole process group after \p timeout_seconds.
/// \p output_file is created or truncated; \p timeout_seconds > 0.
/// \throws vramlab::UsageError for an empty argv or a non-positive timeout;
/// std::runtime_error if the output file cannot be opened or fork fails.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::filesystem::path& output_file, double timeout_seconds);

/// The last \p max_lines lines of a text file (for showing a build's errors).
/// \return "" when the file cannot be read.
std::string tail_of_file(const std::filesystem::path& file, size_t max_lines);

}  // namespace vramlab::workbook
