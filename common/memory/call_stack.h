/// \file
/// \brief The C++ call stacks memory history records with each allocation
/// (torch.cuda.memory._record_memory_history(stacks="cpp")), captured with Boost.Stacktrace.
///
/// Capturing only walks the stack into an array of return addresses and interns it (identical
/// stacks share one id), so it is cheap enough to leave on for a whole lesson run; turning
/// addresses into function names, files and lines happens once per distinct address, when a
/// snapshot is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vramlab::memory {

/// An interned call stack: 0 = none recorded.
using StackId = std::uint32_t;

/// One frame in the schema of PyTorch's snapshots ({filename, line, name}).
struct StackFrame {
  std::string function;   ///< demangled name, e.g. "vramlab::nn::Attention::forward(...)"
  std::string file;       ///< source file, "" without debug line tables
  std::int64_t line = 0;  ///< source line, 0 when unknown
};

/// Captures the calling thread's stack and interns it.
/// \param skip innermost frames to drop (the recording machinery's own).
/// \return its id (identical stacks give the same id); 0 if nothing could be captured.
StackId capture_call_stack(std::size_t skip);

/// \param id from capture_call_stack() (0 gives an empty stack).
/// \return the frames, innermost first, starting at the first frame outside the allocator and the
/// runtime's allocation functions (what memory_viz should show: who asked for the memory) and
/// ending before the C runtime's start-up frames.
std::vector<StackFrame> resolve_call_stack(StackId id);

/// \return how many distinct stacks have been interned (for the recording-overhead report).
std::size_t interned_call_stack_count();

}  // namespace vramlab::memory
