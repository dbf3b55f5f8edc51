/// \file
/// \brief AllocatorLock: the caching allocator's lock guard, which skips the mutex while the
/// process has a single thread.
#pragma once

#include <mutex>

#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
/// 1 when the C library says whether the process has one thread (glibc ≥ 2.32), else 0.
#define VRAMLAB_HAVE_SINGLE_THREADED 1
#else
/// 1 when the C library says whether the process has one thread (glibc ≥ 2.32), else 0.
#define VRAMLAB_HAVE_SINGLE_THREADED 0
#endif

namespace vramlab::memory {

/// Holds a std::mutex for one allocator call, unless the process has a single thread.
///
/// The decision is taken at construction and kept: a guard that took no lock never unlocks, even
/// when the process gains a thread meanwhile. Why skipping is safe, and what it gains: Note [Lock
/// skipped while single-threaded] in caching_allocator.cpp.
class AllocatorLock {
 public:
  /// Locks \p mutex unless the process has a single thread.
  explicit AllocatorLock(std::mutex& mutex)
      : mutex_(process_is_multithreaded() ? &mutex : nullptr) {
    if (mutex_ != nullptr) mutex_->lock();
  }
  /// Unlocks the mutex if the constructor locked it.
  ~AllocatorLock() {
    if (mutex_ != nullptr) mutex_->unlock();
  }
  AllocatorLock(const AllocatorLock&) = delete;
  AllocatorLock& operator=(const AllocatorLock&) = delete;

  /// \return false while the process certainly has a single thread.
  static bool process_is_multithreaded() {
#if VRAMLAB_HAVE_SINGLE_THREADED
    return !__libc_single_threaded;
#else
    return true;
#endif
  }

 private:
  std::mutex* mutex_;  // locked by this guard, or nullptr
};

}  // namespace vramlab::memory
