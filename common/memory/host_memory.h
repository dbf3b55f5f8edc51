/// \file
/// \brief The host RAM behind the sim and cpu devices: a process-wide budget, so a simulated GPU
/// larger than the machine's free RAM stops with one clear error instead of the kernel's OOM
/// killer.
///
/// A sim device's memory is this machine's RAM (anonymous mappings, committed when touched), so a
/// `sim:rtx4090-24g` run can fit its simulated 24 GiB and still outgrow a 24 GiB machine. Every
/// host backing (make_host_backing: sim and cpu devices) takes its segments and expandable-segment
/// pages from one budget shared by the whole process; a request beyond it fails, and the caching
/// allocator reports it as a HostMemoryError (a UsageError, exit code 2) instead of a simulated
/// out-of-memory (OutOfMemoryError, exit code 1). The meta device touches no memory and never
/// takes from the budget.
///
/// The budget, first match wins:
///   1. set_host_memory_limit(bytes), for tests and embedding programs;
///   2. the environment variable `VRAMLAB_HOST_MEMORY_LIMIT` (a size such as `2GiB`, parsed by
///      parse_size_bytes; empty counts as unset), read each time a host backing is made;
///   3. MemAvailable from /proc/meminfo, read once when the first host backing is made, minus a
///      safety margin (host_memory_margin);
///   4. no limit where /proc/meminfo cannot be read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/platform/errors.h"

namespace vramlab::memory {

/// The environment variable that sets the host-memory budget, e.g.
/// `VRAMLAB_HOST_MEMORY_LIMIT=2GiB`.
inline constexpr std::string_view kHostMemoryLimitVariable = "VRAMLAB_HOST_MEMORY_LIMIT";

/// The host-memory budget in force and where it comes from.
struct HostMemoryLimit {
  /// The most host-backed bytes the process may hold (UINT64_MAX: no limit).
  std::uint64_t bytes = 0;
  /// Where the number comes from, for messages, e.g. "VRAMLAB_HOST_MEMORY_LIMIT=2GiB".
  std::string source;
};

/// A host-memory request the budget refused, with what it saw.
struct HostMemoryRefusal {
  std::uint64_t requested_bytes = 0;  ///< the segment or pages asked for
  std::uint64_t held_bytes = 0;       ///< host-backed bytes the process held at that moment
  HostMemoryLimit limit;              ///< the budget that refused it
};

/// Host RAM ran out before the device's memory did: the sim (or cpu) device keeps its memory in
/// this machine's RAM, and the run wanted more than is available. A UsageError, so the command
/// line exits with code 2; never an OutOfMemoryError, which means the simulated device is full.
class HostMemoryError : public UsageError {
 public:
  /// \param message the whole message (see host_memory_error).  \param refusal the numbers.
  HostMemoryError(const std::string& message, HostMemoryRefusal refusal)
      : UsageError(message), refusal_(std::move(refusal)) {}
  /// \return the request, the bytes held and the budget that refused it.
  const HostMemoryRefusal& refusal() const { return refusal_; }

 private:
  HostMemoryRefusal refusal_;
};

/// Re-resolves the budget (an override, else `VRAMLAB_HOST_MEMORY_LIMIT`, else MemAvailable minus
/// the margin) and makes it the one in force. make_host_backing calls it, so a bad value is
/// reported when the device is made, never in the middle of an allocation.
/// \return the budget now in force.
/// \throws vramlab::UsageError naming the variable and the value when `VRAMLAB_HOST_MEMORY_LIMIT`
///         is set to something that is not a positive size.
HostMemoryLimit resolve_host_memory_limit();

/// Overrides the budget for the whole process (tests; programs that want a cap of their own).
/// \param bytes the budget, or std::nullopt to go back to the environment and MemAvailable.
/// \throws vramlab::UsageError for \p bytes == 0, or (with std::nullopt) for a bad
///         `VRAMLAB_HOST_MEMORY_LIMIT`.
void set_host_memory_limit(std::optional<std::uint64_t> bytes);

/// \return the host-backed bytes (segments and mapped pages of sim and cpu devices) the process
/// holds now.
std::uint64_t host_memory_held_bytes();

/// Takes \p bytes from the budget, or refuses without taking anything.
/// \param bytes a segment or a run of pages about to be mapped.
/// \return std::nullopt when taken, else what refused it.
std::optional<HostMemoryRefusal> take_host_memory(std::uint64_t bytes);

/// Returns bytes taken by take_host_memory.
/// \param bytes the size of the unmapped segment or pages.
void give_back_host_memory(std::uint64_t bytes);

/// The one message for a run that outgrew host RAM: that it is host RAM and not the simulated
/// device, the bytes wanted and available, and that `--device meta` sizes such a run for free.
/// \param device_label the device whose allocation was refused, e.g. "sim:rtx4090-24g".
/// \param refusal what the budget saw.
/// \param wanted_note how the wanted bytes add up, e.g. "18.00 GiB held + 2.00 GiB requested".
/// \return the error to throw.
HostMemoryError host_memory_error(std::string_view device_label, const HostMemoryRefusal& refusal,
                                  std::string_view wanted_note);

/// Checks a planned working set against the budget before any of it is allocated, so a run that
/// cannot fit stops at once instead of after minutes of computing.
/// \param device_label the host-backed device the run will use.
/// \param planned_bytes the bytes the run is expected to hold on it at its peak.
/// \param what what \p planned_bytes is, for the message, e.g. "the step's parameters and saved
/// activations".
/// \throws HostMemoryError when the bytes held now plus \p planned_bytes exceed the budget.
void require_host_memory(std::string_view device_label, std::uint64_t planned_bytes,
                         std::string_view what);

/// The safety margin kept below MemAvailable: the process's own memory outside its devices (the
/// program, host copies, the BLAS library's buffers) and the kernel's reclaim watermarks, below
/// which the OOM killer acts before MemAvailable reaches zero. 1 GiB or a tenth of MemAvailable,
/// whichever is larger.
/// \param available_bytes MemAvailable.
/// \return the margin in bytes.
std::uint64_t host_memory_margin(std::uint64_t available_bytes);

/// The budget the host's MemAvailable gives: MemAvailable minus host_memory_margin (0 when the
/// margin is larger), or no limit when MemAvailable is unknown.
/// \param available_bytes MemAvailable, or std::nullopt when /proc/meminfo could not be read.
/// \return the budget and its source, for messages.
HostMemoryLimit limit_from_mem_available(std::optional<std::uint64_t> available_bytes);

/// Reads the MemAvailable line of /proc/meminfo's text.
/// \param meminfo the file's contents.
/// \return the bytes, or std::nullopt when there is no well-formed MemAvailable line.
std::optional<std::uint64_t> parse_mem_available(std::string_view meminfo);

}  // namespace vramlab::memory
