/// \file
/// \brief How the SIMT emulator runs a launch: thread schedule, number of OS workers, shared
/// memory poisoning, fiber stack size; set globally, per scope, or from the environment.
///
/// Environment (read once, at the first launch):
///   VRAMLAB_SIMT_SCHEDULE = inorder | reverse | random | random:SEED
///   VRAMLAB_SIMT_WORKERS  = N (OS threads, each runs one block at a time)
///   VRAMLAB_SIMT_POISON   = 0 | 1 (fill shared memory with 0xFF bytes at each block start)
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/platform/errors.h"

namespace vramlab::simt {

/// The order in which the emulator runs the threads of a block between two synchronization points.
/// A correct kernel gives the same result under every schedule; a race usually does not.
enum class Schedule {
  kInOrder,  ///< thread 0, 1, 2, ... (what a naive emulator does; hides races on lower indices)
  kReverse,  ///< the last thread first (hides races on higher indices instead)
  kRandom,   ///< a new seeded permutation at every sweep (deterministic for a given seed)
};

/// Everything that decides how a launch is emulated.
struct LaunchOptions {
  /// Thread order inside a block.
  Schedule schedule = Schedule::kInOrder;
  /// Seed of the random schedule (ignored by the others).
  std::uint64_t seed = 0;
  /// OS worker threads; each runs one block at a time. 0 means std::thread::hardware_concurrency().
  std::size_t workers = 0;
  /// Fill shared memory with 0xFF bytes (NaN for floats, -1 for integers) at each block start.
#ifdef NDEBUG
  bool poison_shared = false;
#else
  bool poison_shared = true;
#endif
  /// Stack of each fiber (one per CUDA thread). ASan frames are bigger, so sanitized builds get
  /// more.
#if defined(__SANITIZE_ADDRESS__) || defined(VRAMLAB_SANITIZE)
  std::size_t stack_bytes = 256 * 1024;
#else
  std::size_t stack_bytes = 64 * 1024;
#endif
};

/// Parses a schedule name: "inorder" (or "in-order"), "reverse", "random" or "random:SEED".
/// Sets the schedule in \p options and, for "random:SEED", the seed; other fields stay.
/// \throws vramlab::UsageError naming the text when it is none of these.
inline void parse_schedule(std::string_view text, LaunchOptions& options) {
  if (text == "inorder" || text == "in-order") {
    options.schedule = Schedule::kInOrder;
  } else if (text == "reverse") {
    options.schedule = Schedule::kReverse;
  } else if (text == "random") {
    options.schedule = Schedule::kRandom;
  } else if (text.starts_with("random:")) {
    std::string_view digits = text.substr(7);
    std::uint64_t seed = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), seed);
    if (digits.empty() || error != std::errc{} || end != digits.data() + digits.size()) {
      throw UsageError("schedule '" + std::string(text) +
                       "': the seed after 'random:' must be an unsigned integer");
    }
    options.schedule = Schedule::kRandom;
    options.seed = seed;
  } else {
    throw UsageError("unknown SIMT schedule '" + std::string(text) +
                     "' (expected inorder, reverse, random or random:SEED)");
  }
}

/// The name of a schedule, as parse_schedule() accepts it: "inorder", "reverse" or "random" (the
/// seed is not part of it).
inline const char* schedule_name(Schedule schedule) {
  switch (schedule) {
    case Schedule::kInOrder:
      return "inorder";
    case Schedule::kReverse:
      return "reverse";
    case Schedule::kRandom:
      return "random";
  }
  return "unknown";
}

/// The defaults, overridden by VRAMLAB_SIMT_SCHEDULE, VRAMLAB_SIMT_WORKERS and VRAMLAB_SIMT_POISON.
/// \return the options a launch uses unless a ScopedLaunchOptions or set_launch_options() says
/// otherwise. \throws vramlab::UsageError naming the variable and its value when one of them is
/// malformed.
inline LaunchOptions options_from_environment() {
  LaunchOptions options;
  if (const char* schedule = std::getenv("VRAMLAB_SIMT_SCHEDULE");
      schedule != nullptr && *schedule != '\0') {
    parse_schedule(schedule, options);
  }
  if (const char* workers = std::getenv("VRAMLAB_SIMT_WORKERS");
      workers != nullptr && *workers != '\0') {
    std::string_view text(workers);
    std::size_t count = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (error != std::errc{} || end != text.data() + text.size() || count == 0) {
      throw UsageError("VRAMLAB_SIMT_WORKERS='" + std::string(text) +
                       "': expected a positive integer");
    }
    options.workers = count;
  }
  if (const char* poison = std::getenv("VRAMLAB_SIMT_POISON");
      poison != nullptr && *poison != '\0') {
    std::string_view text(poison);
    if (text != "0" && text != "1") {
      throw UsageError("VRAMLAB_SIMT_POISON='" + std::string(text) + "': expected 0 or 1");
    }
    options.poison_shared = text == "1";
  }
  return options;
}

namespace detail {
/// The process-wide options and whether the environment was read yet.
struct GlobalLaunchOptions {
  std::mutex mutex;          ///< guards the other members
  bool initialized = false;  ///< the environment was read
  LaunchOptions options;     ///< what the next launch uses
};
/// A function-local static, constructed on first use (no static-initialization order issue).
inline GlobalLaunchOptions& global_launch_options() {
  static GlobalLaunchOptions global;
  return global;
}
}  // namespace detail

/// The options the next launch will use (the environment's on first use); a copy, taken under
/// the lock. \throws vramlab::UsageError when an environment variable is malformed.
inline LaunchOptions launch_options() {
  auto& global = detail::global_launch_options();
  std::lock_guard lock(global.mutex);
  if (!global.initialized) {
    global.options = options_from_environment();
    global.initialized = true;
  }
  return global.options;
}

/// Replaces the process-wide options used by every following launch; the environment is then
/// never read.
inline void set_launch_options(const LaunchOptions& options) {
  auto& global = detail::global_launch_options();
  std::lock_guard lock(global.mutex);
  global.options = options;
  global.initialized = true;
}

/// The number of OS workers a launch with \p options uses: 0 workers means
/// hardware_concurrency, and the result is at least 1.
inline std::size_t effective_workers(const LaunchOptions& options) {
  if (options.workers != 0) return options.workers;
  return std::max<std::size_t>(1, std::thread::hardware_concurrency());
}

/// Sets the process-wide options for the lifetime of this object, then restores the previous ones.
/// Tests use it to run one kernel under several schedules.
class ScopedLaunchOptions {
 public:
  /// Reads the current options first, so a malformed environment throws here.
  explicit ScopedLaunchOptions(const LaunchOptions& options) : previous_(launch_options()) {
    set_launch_options(options);
  }
  /// Restores the options that were in force at construction.
  ~ScopedLaunchOptions() { set_launch_options(previous_); }
  ScopedLaunchOptions(const ScopedLaunchOptions&) = delete;
  ScopedLaunchOptions& operator=(const ScopedLaunchOptions&) = delete;

 private:
  LaunchOptions previous_;
};

}  // namespace vramlab::simt
