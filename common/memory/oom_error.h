/// \file
/// \brief The out-of-memory error: PyTorch's message plus the allocator state as fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/memory/call_stack.h"
#include "common/memory/history.h"
#include "common/memory/memory_category.h"

namespace vramlab::memory {

/// A live block named in an out-of-memory error.
struct LiveBlockInfo {
  std::uint64_t address = 0;        ///< device address (never dereference it on meta)
  std::size_t size_bytes = 0;       ///< block size (rounded)
  std::size_t requested_bytes = 0;  ///< what the caller asked for
  MemoryCategory category = MemoryCategory::other;  ///< as given to malloc
  std::string name;                                 ///< tensor name, if any
  std::string module;  ///< the module path that allocated it, e.g. "blocks.3.attn" ("" for none)
  TrainingPhase phase = TrainingPhase::none;  ///< the training phase it was allocated in
  StackId stack = 0;  ///< its C++ call stack (0 unless recorded; see resolve_call_stack())
};

/// The allocator state at the moment an allocation failed.
struct OutOfMemoryDetails {
  std::size_t requested_bytes = 0;   ///< the caller's request
  std::size_t rounded_bytes = 0;     ///< after round_size
  std::size_t segment_bytes = 0;     ///< the segment size tried (what "Tried to allocate" prints)
  std::uint64_t capacity_bytes = 0;  ///< device total
  std::uint64_t free_bytes = 0;      ///< device free
  std::uint64_t allowed_bytes = 0;   ///< memory-fraction limit (0 = none set)
  std::int64_t allocated_bytes = 0;  ///< allocated_bytes.all.current
  std::int64_t reserved_bytes = 0;   ///< reserved_bytes.all.current
  std::int64_t reserved_unallocated_bytes = 0;     ///< reserved − allocated
  std::vector<LiveBlockInfo> largest_live_blocks;  ///< up to 10 allocated blocks, largest first
};

/// Thrown when the caching allocator cannot get memory (torch.OutOfMemoryError, a RuntimeError).
/// what() is PyTorch's current message, with "CUDA" replaced by the simulated device's name on sim.
class OutOfMemoryError : public std::runtime_error {
 public:
  /// \param message what() returns, already formatted (PyTorch's text).
  /// \param details the allocator state, for programs that act on it (e.g. print live blocks).
  OutOfMemoryError(const std::string& message, OutOfMemoryDetails details)
      : std::runtime_error(message), details_(std::move(details)) {}
  /// \return valid as long as the exception object.
  const OutOfMemoryDetails& details() const { return details_; }

 private:
  OutOfMemoryDetails details_;
};

/// PyTorch's c10 format_size: "512 bytes", "1.50 KiB", "20.00 MiB", "1.00 GiB".
/// Two decimals from KiB up; plain bytes below 1 KiB.
std::string format_size(std::uint64_t bytes);

}  // namespace vramlab::memory
