// ProgressBar: throttled in-place redraw on a terminal, percent lines or silence elsewhere.
#include "common/report/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>

#include "common/report/terminal.h"

namespace vramlab::report {
namespace {

double steady_now_ms() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count();
}

ProgressMode resolve_mode(const ProgressBarOptions& options) {
  if (options.mode != ProgressMode::kAuto) return options.mode;
  if (options.stream != nullptr) {
    const int descriptor = fileno(options.stream);
    if (descriptor >= 0 && isatty(descriptor) == 1) return ProgressMode::kTerminal;
  }
  return options.line_every_percent > 0 ? ProgressMode::kLines : ProgressMode::kSilent;
}

double fraction_done(uint64_t done, uint64_t total) {
  if (total == 0) return 1.0;
  return static_cast<double>(done) / static_cast<double>(total);
}

std::string format_rate(double per_second, const std::string& unit) {
  std::array<char, 64> buffer{};
  const char* format =
      per_second < 9.995 ? "%.2f %s/s" : (per_second < 99.95 ? "%.1f %s/s" : "%.0f %s/s");
  std::snprintf(buffer.data(), buffer.size(), format, per_second, unit.c_str());
  return std::string(buffer.data());
}

}  // namespace

ProgressBar::ProgressBar(uint64_t total, std::string label, ProgressBarOptions options)
    : total_(total),
      label_(std::move(label)),
      options_(std::move(options)),
      mode_(resolve_mode(options_)),
      start_ms_(now()),
      last_draw_ms_(start_ms_) {}

ProgressBar::~ProgressBar() {
  if (!finished_) finish();
}

double ProgressBar::now() const {
  return options_.now_ms ? options_.now_ms() : steady_now_ms();
}

void ProgressBar::write(const std::string& text) {
  if (options_.stream == nullptr) return;
  std::fwrite(text.data(), 1, text.size(), options_.stream);
  std::fflush(options_.stream);
}

std::string ProgressBar::render_line() const {
  const double fraction = fraction_done(done_, total_);
  const auto filled =
      static_cast<size_t>(std::floor(fraction * static_cast<double>(options_.bar_width)));
  std::string bar(filled, '=');
  if (filled < options_.bar_width) {
    if (filled > 0) bar.back() = '>';
    bar += std::string(options_.bar_width - filled, ' ');
  }
  std::string line;
  if (!label_.empty()) line += label_ + " ";
  line += '[';
  line += style::green(bar, options_.colour);
  line += "] ";
  line += std::to_string(static_cast<uint64_t>(std::floor(fraction * 100.0))) + "% ";
  line += format_count(static_cast<int64_t>(std::min<uint64_t>(done_, INT64_MAX))) + "/" +
          format_count(static_cast<int64_t>(std::min<uint64_t>(total_, INT64_MAX)));

  const double elapsed_ms = now() - start_ms_;
  if (elapsed_ms > 0.0 && done_ > 0) {
    const double per_second = static_cast<double>(done_) / (elapsed_ms / 1000.0);
    line += ' ';
    line += format_rate(per_second, options_.unit);
    if (finished_) {
      line += " in ";
      line += format_duration_ms(elapsed_ms);
    } else {
      const double remaining_ms = static_cast<double>(total_ - done_) / per_second * 1000.0;
      line += " ETA " + format_duration_ms(remaining_ms);
    }
  } else if (!finished_) {
    line += " ETA --";
  }
  if (!suffix_.empty()) line += " " + suffix_;
  return line;
}

void ProgressBar::update(uint64_t done, std::string_view suffix) {
  if (finished_) return;
  done_ = std::min(done, total_);
  suffix_ = std::string(suffix);
  if (mode_ == ProgressMode::kTerminal) {
    const double now_ms = now();
    const bool complete = done_ == total_;
    if (drawn_once_ && !complete && now_ms - last_draw_ms_ < options_.min_redraw_interval_ms)
      return;
    last_draw_ms_ = now_ms;
    drawn_once_ = true;
    write('\r' + render_line() + "\x1b[K");
  } else if (mode_ == ProgressMode::kLines && options_.line_every_percent > 0) {
    const auto percent = static_cast<uint64_t>(std::floor(fraction_done(done_, total_) * 100.0));
    const uint64_t step = percent / options_.line_every_percent;
    if (step > last_line_percent_step_) {
      last_line_percent_step_ = step;
      last_printed_done_ = done_;
      write(render_line() + "\n");
    }
  }
}

void ProgressBar::finish(std::string_view suffix) {
  if (finished_) return;
  finished_ = true;
  if (!suffix.empty()) suffix_ = std::string(suffix);
  if (mode_ == ProgressMode::kTerminal) {
    write('\r' + render_line() + "\x1b[K\n");
  } else if (mode_ == ProgressMode::kLines && options_.line_every_percent > 0) {
    // A crossing that already printed this exact state is not repeated.
    if (last_printed_done_ != done_) write(render_line() + "\n");
  }
}

}  // namespace vramlab::report
