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
/// glibc's own pthread_mutex_lock/unlock make the same test (`__libc_single_threaded`) and then
/// take no atomic operation, but they are calls that also dispatch on the mutex type: ~110
/// instructions per malloc + free pair, a sixth of the cached pair (callgrind,
/// bench_caching_allocator). Making the test inline drops them.
///
/// Why skipping is safe: while `__libc_single_threaded` is true no other thread exists, and only
/// this thread could create one; it is inside an allocator call, which never starts a thread that
/// calls the allocator (a backing may start helper threads, e.g. the CUDA runtime's, but they never
/// call it). The decision is taken once per call and kept: a guard that took no lock never unlocks,
/// even when the process gains a thread during the call.
/// Once the process has had a second thread, glibc keeps the flag false and every call locks.
/// Without glibc's flag (non-glibc systems) every call locks.
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
