// The process-wide host-memory budget of the sim and cpu devices.
#include "common/memory/host_memory.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>

#include "common/memory/device.h"
#include "common/memory/oom_error.h"

namespace vramlab::memory {
namespace {

constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kMarginFloorBytes = 1ULL << 30;  // host_memory_margin's 1 GiB

struct Budget {
  std::mutex mutex;
  std::uint64_t held_bytes = 0;
  std::optional<std::uint64_t> override_bytes;
  std::optional<HostMemoryLimit> in_force;  // set by the first resolution
};

Budget& budget() {
  static Budget instance;
  return instance;
}

// MemAvailable is read once, when the first host backing (or check) needs it, and never again:
// this process's own device memory is what the budget counts, and once the process touches its
// segments MemAvailable falls by what it touched. Re-reading it would count those bytes twice
// (in the fall and in held_bytes) and the untouched rest of a segment not at all. The snapshot is
// what the machine could give the run when it started; the price is that programs that grow
// later are not seen, which the margin partly covers.
HostMemoryLimit limit_from_meminfo() {
  static const HostMemoryLimit limit = [] {
    std::ifstream file("/proc/meminfo");
    std::stringstream text;
    text << file.rdbuf();
    return limit_from_mem_available(file ? parse_mem_available(text.str()) : std::nullopt);
  }();
  return limit;
}

HostMemoryLimit resolve_locked(const Budget& state) {
  if (state.override_bytes) {
    return HostMemoryLimit{*state.override_bytes, "set by set_host_memory_limit"};
  }
  const std::string name(kHostMemoryLimitVariable);
  const char* value = std::getenv(name.c_str());
  if (value != nullptr && *value != '\0') {
    try {
      return HostMemoryLimit{parse_size_bytes(value), name + "=" + value};
    } catch (const UsageError& error) {
      throw UsageError(name + ": " + error.what());
    }
  }
  return limit_from_meminfo();
}

}  // namespace

HostMemoryLimit resolve_host_memory_limit() {
  Budget& state = budget();
  std::lock_guard lock(state.mutex);
  state.in_force = resolve_locked(state);
  return *state.in_force;
}

void set_host_memory_limit(std::optional<std::uint64_t> bytes) {
  if (bytes && *bytes == 0) throw UsageError("host memory limit 0: expected a positive size");
  Budget& state = budget();
  std::lock_guard lock(state.mutex);
  state.override_bytes = bytes;
  state.in_force = resolve_locked(state);
}

std::uint64_t host_memory_held_bytes() {
  Budget& state = budget();
  std::lock_guard lock(state.mutex);
  return state.held_bytes;
}

std::optional<HostMemoryRefusal> take_host_memory(std::uint64_t bytes) {
  Budget& state = budget();
  std::lock_guard lock(state.mutex);
  // Backings resolve the limit when they are made; a backing made some other way has none.
  const HostMemoryLimit limit = state.in_force.value_or(HostMemoryLimit{kNoLimit, "no limit"});
  if (bytes > limit.bytes || state.held_bytes > limit.bytes - bytes) {
    return HostMemoryRefusal{bytes, state.held_bytes, limit};
  }
  state.held_bytes += bytes;
  return std::nullopt;
}

void give_back_host_memory(std::uint64_t bytes) {
  Budget& state = budget();
  std::lock_guard lock(state.mutex);
  state.held_bytes -= bytes;
}

HostMemoryError host_memory_error(std::string_view device_label, const HostMemoryRefusal& refusal,
                                  std::string_view wanted_note) {
  const std::uint64_t wanted = refusal.held_bytes + refusal.requested_bytes;
  std::string message = "out of host RAM, not out of device memory: " + std::string(device_label) +
                        " keeps its memory in this machine's RAM, and this run wanted " +
                        format_size(wanted) + " of it (" + std::string(wanted_note) +
                        ") but only " + format_size(refusal.limit.bytes) + " is available (" +
                        refusal.limit.source +
                        "). --device meta sizes a model this big without touching memory; " +
                        std::string(kHostMemoryLimitVariable) + "=SIZE changes the limit";
  return HostMemoryError(message, refusal);
}

void require_host_memory(std::string_view device_label, std::uint64_t planned_bytes,
                         std::string_view what) {
  const HostMemoryLimit limit = resolve_host_memory_limit();
  const std::uint64_t held = host_memory_held_bytes();
  if (planned_bytes <= limit.bytes && held <= limit.bytes - planned_bytes) return;
  const HostMemoryRefusal refusal{planned_bytes, held, limit};
  std::string note(what);
  if (held > 0) note = format_size(held) + " held + " + format_size(planned_bytes) + " for " + note;
  throw host_memory_error(device_label, refusal, note);
}

HostMemoryLimit limit_from_mem_available(std::optional<std::uint64_t> available_bytes) {
  if (!available_bytes)
    return HostMemoryLimit{kNoLimit, "no limit: /proc/meminfo has no MemAvailable"};
  const std::uint64_t available = *available_bytes;
  const std::uint64_t margin = host_memory_margin(available);
  return HostMemoryLimit{
      available > margin ? available - margin : 0,
      "MemAvailable " + format_size(available) +
          " when the first sim or cpu device was made, minus a safety margin of " +
          format_size(margin)};
}

std::uint64_t host_memory_margin(std::uint64_t available_bytes) {
  return std::max<std::uint64_t>(kMarginFloorBytes, available_bytes / 10);
}

std::optional<std::uint64_t> parse_mem_available(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemAvailable:";
  std::size_t at = 0;
  while (at < meminfo.size()) {
    std::size_t end = meminfo.find('\n', at);
    if (end == std::string_view::npos) end = meminfo.size();
    std::string_view line = meminfo.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with(kKey)) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    std::uint64_t kib = 0;
    const auto [rest, error] = std::from_chars(line.data(), line.data() + line.size(), kib);
    // The kernel writes the value in KiB with the unit "kB" (fs/proc/meminfo.c).
    if (error != std::errc() || std::string_view(rest, line.data() + line.size()) != " kB" ||
        kib > kNoLimit / 1024) {
      return std::nullopt;
    }
    return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace vramlab::memory
