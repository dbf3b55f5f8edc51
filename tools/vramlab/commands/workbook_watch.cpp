// `vramlab watch`: re-check the current exercise every time its file is saved (inotify on the
// file's folder, plus polling of its modification time for file systems that send no events),
// until every exercise is done or you quit. Keys: Enter or c re-check now, h the next hint,
// n skip to the next exercise, q (or Ctrl-C) quit. --manual re-checks only on Enter.
//
//   build/bin/vramlab watch [ID] [--manual] [--poll-ms 500] [--max-checks N] [--timeout S]
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "common/platform/errors.h"
#include "common/report/terminal.h"
#include "tools/vramlab/commands/workbook_cli.h"

namespace vramlab::cli::workbook_cli {

namespace {

namespace style = report::style;

volatile sig_atomic_t g_interrupted = 0;
void on_interrupt(int) {
  g_interrupted = 1;
}

// Puts a terminal in single-key mode for the watch's lifetime and restores it afterwards.
class KeyMode {
 public:
  KeyMode() {
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
      raw.c_cc[VMIN] = 1;
      raw.c_cc[VTIME] = 0;
      active_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
  }
  ~KeyMode() {
    if (active_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  KeyMode(const KeyMode&) = delete;
  KeyMode& operator=(const KeyMode&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

// Watches one file: inotify events on its folder, and its modification time as a fallback.
class FileWatch {
 public:
  explicit FileWatch(const fs::path& file) : file_(file), mtime_(mtime()) {
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ >= 0)
      watch_ = inotify_add_watch(fd_, file.parent_path().c_str(),
                                 IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_MODIFY);
  }
  ~FileWatch() {
    if (fd_ >= 0) close(fd_);
  }
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;
  /// The inotify descriptor to poll (-1 when inotify is unavailable).
  int fd() const { return watch_ >= 0 ? fd_ : -1; }
  /// Drains inotify events; true if one named our file.
  bool drain_events() {
    bool ours = false;
    alignas(inotify_event) char buffer[4096];
    for (;;) {
      const ssize_t n = read(fd_, buffer, sizeof buffer);
      if (n <= 0) break;
      for (ssize_t at = 0; at < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        if (event->len > 0 && file_.filename() == event->name) ours = true;
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
    return ours;
  }
  /// True when the modification time changed since the last call (the polling fallback).
  bool mtime_changed() {
    const auto now = mtime();
    if (now == mtime_) return false;
    mtime_ = now;
    return true;
  }

 private:
  fs::file_time_type mtime() const {
    std::error_code error;
    const auto t = fs::last_write_time(file_, error);
    return error ? fs::file_time_type{} : t;
  }
  fs::path file_;
  fs::file_time_type mtime_;
  int fd_ = -1;
  int watch_ = -1;
};

}  // namespace

void add_watch_command(CLI::App& app, int& exit_code) {
  struct Options : CommonOptions {
    std::string id;
    bool manual = false;
    int64_t poll_ms = 500;
    int64_t max_checks = 0;
    double timeout_seconds = 0;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "watch",
      "re-check the current exercise on every save (keys: Enter re-check, h hint, n next, q quit)");
  cmd->add_option("id", options->id, "start with this exercise (default: the current one)");
  cmd->add_flag("--manual", options->manual,
                "do not watch files: re-check only when you press Enter");
  cmd->add_option("--poll-ms", options->poll_ms, "how often to poll the file's modification time")
      ->check(CLI::Range(int64_t{10}, int64_t{60'000}));
  cmd->add_option("--max-checks", options->max_checks, "stop after this many checks (0 = no limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--timeout", options->timeout_seconds,
                  "stop after this many seconds (0 = no limit)")
      ->check(CLI::NonNegativeNumber);
  add_common_options(cmd, *options);
  cmd->callback([options, &exit_code] {
    Context ctx = load_context(*options);
    std::string current = !options->id.empty()         ? ctx.book.exercise(options->id).id
                          : !ctx.state.current.empty() ? ctx.state.current
                                                       : first_pending(ctx);
    if (current.empty()) {
      std::printf("Every exercise is done. `vramlab check --all` re-checks them.\n");
      exit_code = 0;
      return;
    }
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    g_interrupted = 0;
    KeyMode keys;
    const auto started = std::chrono::steady_clock::now();
    bool stdin_open = true;
    int64_t checks = 0;
    bool check_now = true;
    exit_code = 0;
    while (g_interrupted == 0) {
      const workbook::Exercise& ex = ctx.book.exercise(current);
      FileWatch watch(ctx.repo_root / ex.stub);
      if (check_now) {
        check_now = false;
        ctx.state.current = current;
        const CheckResult result = check_exercise(ctx, ex, /*reference=*/false);
        record_check(ctx, result);
        ++checks;
        if (ctx.json) {
          print_json(check_json(result));
        } else {
          std::printf("\n");
          print_check(ctx, result);
          std::printf("%s\n", progress_line(ctx, lesson_of(ctx, ex)).c_str());
        }
        if (result.passed) {
          const std::string next = first_pending(ctx);
          if (next.empty()) {
            if (!ctx.json)
              std::printf("%s\n",
                          style::green("Every exercise is done. Well done!", ctx.colour).c_str());
            break;
          }
          current = next;
          check_now = true;
        }
        if (options->max_checks > 0 && checks >= options->max_checks) break;
        if (check_now) continue;
        if (!ctx.json)
          std::printf(
              "%s\n",
              style::dim(
                  std::string(options->manual ? "Press Enter to re-check"
                                              : "Watching " + ex.stub +
                                                    " — save it to re-check; Enter re-checks now") +
                      ", h hint, n next, q quit.",
                  ctx.colour)
                  .c_str());
        std::fflush(stdout);
      }
      // Wait for a save, a key, the poll interval, or the timeout.
      pollfd fds[2];
      nfds_t count = 0;
      if (stdin_open) fds[count++] = {STDIN_FILENO, POLLIN, 0};
      const bool use_inotify = !options->manual && watch.fd() >= 0;
      if (use_inotify) fds[count++] = {watch.fd(), POLLIN, 0};
      for (;;) {
        if (g_interrupted != 0) break;
        if (options->timeout_seconds > 0 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >
                options->timeout_seconds) {
          g_interrupted = 1;
          break;
        }
        for (nfds_t i = 0; i < count; ++i) fds[i].revents = 0;
        const int ready = poll(fds, count, static_cast<int>(options->poll_ms));
        if (ready < 0) continue;  // EINTR: the loop re-reads the flag
        bool changed = false;
        if (!options->manual) {
          if (use_inotify && (fds[count - 1].revents & POLLIN) != 0) changed = watch.drain_events();
          changed = watch.mtime_changed() || changed;  // polling fallback
        }
        if (stdin_open && (fds[0].revents & (POLLIN | POLLHUP)) != 0) {
          char key = 0;
          if (read(STDIN_FILENO, &key, 1) <= 0) {
            stdin_open = false;  // no more keys (stdin closed); keep watching files
            if (options->manual) g_interrupted = 1;
            break;
          }
          if (key == 'q' || key == 'Q' || key == 4) {
            g_interrupted = 1;
          } else if (key == 'h' || key == 'H') {
            const int seen = ctx.state.hints_seen.count(ex.id) ? ctx.state.hints_seen.at(ex.id) : 0;
            const int level = std::min(static_cast<int>(ex.hints.size()), seen + 1);
            if (level > 0) {
              ctx.state.hints_seen[ex.id] = level;
              workbook::save_state(ctx.state_file, ctx.state);
              std::printf("Hint %d/%zu: %s\n", level, ex.hints.size(),
                          ex.hints[static_cast<size_t>(level - 1)].c_str());
              std::fflush(stdout);
            }
            continue;
          } else if (key == 'n' || key == 'N') {
            const auto all = ctx.book.all_exercises();
            for (size_t i = 0; i < all.size(); ++i)
              if (all[i]->id == current) current = all[(i + 1) % all.size()]->id;
            check_now = true;
          } else if (key == '\n' || key == 'c' || key == 'C') {
            check_now = true;
          } else {
            continue;
          }
          break;
        }
        if (changed) {
          check_now = true;
          break;
        }
      }
    }
    if (!ctx.json)
      std::printf("Stopped watching after %lld checks.\n", static_cast<long long>(checks));
  });
}

}  // namespace vramlab::cli::workbook_cli
