/// \file
/// \brief The errors the SIMT emulator throws from a kernel launch.
///
/// Every diagnostic of the emulator (deadlock, divergent barrier, shared-memory overflow, a
/// device-side failure, a bad warp mask) is a SimtError thrown by the launch on the host thread,
/// so a test can catch it instead of hanging or crashing.
#pragma once

#include <stdexcept>
#include <string>

namespace vramlab::simt {

/// Base of every error the emulator reports while running a kernel.
struct SimtError : std::runtime_error {
  /// \p message names the kernel and the source location.
  explicit SimtError(const std::string& message) : std::runtime_error(message) {}
};

/// Threads of a block wait for each other forever (no thread can make progress), or threads of a
/// block wait at different `__syncthreads` call sites (a barrier inside divergent code).
/// The message lists every waiting thread with the file:line where it waits.
struct DeadlockError : SimtError {
  /// \p message has one line per wait site.
  explicit DeadlockError(const std::string& message) : SimtError(message) {}
};

/// A kernel wrote outside a shared-memory array: a redzone byte next to the array changed.
/// The message names the kernel, the array and where it was declared.
struct SharedMemoryOverflowError : SimtError {
  /// \p message names the kernel, the array and the first overwritten byte.
  explicit SharedMemoryOverflowError(const std::string& message) : SimtError(message) {}
};

/// Device code raised an error with VRAMLAB_DEVICE_FAIL (for instance a NOT IMPLEMENTED stub).
struct DeviceError : SimtError {
  /// \p message is the device's, with kernel, block, thread and file:line.
  explicit DeviceError(const std::string& message) : SimtError(message) {}
};

/// A warp-synchronous call was made in a way CUDA leaves undefined: the calling lane is not in
/// the mask, or the width of a shuffle is not a power of two in [1, 32].
struct WarpUsageError : SimtError {
  /// \p message names the call, the mask or width, and file:line.
  explicit WarpUsageError(const std::string& message) : SimtError(message) {}
};

}  // namespace vramlab::simt
