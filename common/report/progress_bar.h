/// \file
/// \brief A progress bar for long runs (exercise checks, replays, sweeps): redrawn in place with
/// '\\r' on a terminal, silent (or one line every N percent) when the output is a file or a pipe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace vramlab::report {

/// How a ProgressBar writes.
enum class ProgressMode {
  kAuto,  ///< kTerminal if the stream is a terminal, else kLines if line_every_percent > 0, else
          ///< kSilent.
  kTerminal,  ///< one line redrawn in place with '\\r' (and cleared to its end).
  kLines,     ///< a full line each time progress crosses a multiple of line_every_percent.
  kSilent,    ///< writes nothing.
};

/// Options of a ProgressBar; the defaults suit an interactive command.
struct ProgressBarOptions {
  FILE* stream = stderr;  ///< where to draw (stderr keeps stdout clean for --json).
  ProgressMode mode = ProgressMode::kAuto;  ///< see ProgressMode.
  uint32_t line_every_percent =
      0;  ///< kLines/kAuto: print a line every this many percent (0 = never).
  double min_redraw_interval_ms =
      100.0;              ///< kTerminal: redraw at most this often (the last update always draws).
  size_t bar_width = 30;  ///< characters between the brackets.
  std::string unit = "it";         ///< what is counted, shown in the rate ("12.5 it/s").
  bool colour = false;             ///< colour the filled part (callers pass use_colour(stream)).
  std::function<double()> now_ms;  ///< clock in milliseconds; empty = std::chrono::steady_clock.
};

/// A progress bar over a known number of steps.
///
/// Example: `ProgressBar bar(n, "replay"); for (i...) { ...; bar.update(i + 1); } bar.finish();`
/// Not thread-safe: update it from one thread.
class ProgressBar {
 public:
  /// \param total number of steps; 0 is allowed and shows as complete.
  /// \param label text drawn before the bar.
  /// \param options the defaults suit an interactive command.
  ProgressBar(uint64_t total, std::string label, ProgressBarOptions options = {});
  /// Finishes the bar if finish() was not called, so a terminal line is never left open.
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;  ///< A bar owns its line: not copyable.
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// Records progress and redraws if the mode and throttle allow.
  /// \param done steps completed so far (values above total are clamped to total).
  /// \param suffix short text drawn after the numbers, e.g. the current exercise name.
  void update(uint64_t done, std::string_view suffix = {});

  /// Draws the final state (done = total unless update() said less) and ends the line.
  /// Calling it again does nothing.
  /// \param suffix as update()'s, for the final line.
  void finish(std::string_view suffix = {});

  /// Renders the current state as one line without '\\r' or newline (what kTerminal draws).
  /// \return the line, e.g. "check [=========>          ] 33% 10/30 2.0 it/s ETA 10.0 s ex03".
  [[nodiscard]] std::string render_line() const;

  /// Never kAuto: resolved at construction from the stream.
  [[nodiscard]] ProgressMode mode() const { return mode_; }

  /// Clamped to total.
  [[nodiscard]] uint64_t done() const { return done_; }

 private:
  double now() const;
  void write(const std::string& text);

  uint64_t total_;
  std::string label_;
  ProgressBarOptions options_;
  ProgressMode mode_;
  uint64_t done_ = 0;
  std::string suffix_;
  double start_ms_;
  double last_draw_ms_;
  bool drawn_once_ = false;
  uint64_t last_line_percent_step_ = 0;
  uint64_t last_printed_done_ = UINT64_MAX;
  bool finished_ = false;
};

}  // namespace vramlab::report
