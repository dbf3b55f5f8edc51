/// \file
/// \brief Fiber stacks for the SIMT emulator, and the context switch between a worker's scheduler
/// and one fiber (one CUDA thread), with AddressSanitizer annotations when built with ASan.
///
/// A StackRegion holds the stacks of a whole block (up to 1024 fibers), each with a guard page
/// below it so a stack overflow faults instead of corrupting a neighbour. Regions are expensive to
/// map and protect, so a process-wide pool keeps them between launches. Switching uses
/// Boost.Context's fcontext (about 10 ns a round trip once MXCSR.PE is set, see
/// enable_fast_switch).
#pragma once

#include <sys/mman.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <boost/context/detail/fcontext.hpp>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <system_error>
#include <vector>

#if defined(__SANITIZE_ADDRESS__) || defined(VRAMLAB_SANITIZE)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
/// Defined to 1 when the emulator annotates fiber switches for AddressSanitizer.
#define VRAMLAB_SIMT_ASAN 1
#else
/// Defined to 1 when the emulator annotates fiber switches for AddressSanitizer.
#define VRAMLAB_SIMT_ASAN 0
#endif

namespace vramlab::simt::detail {

namespace fctx = boost::context::detail;

/// The largest block CUDA allows, and so the number of stacks in a region.
inline constexpr std::size_t kMaxThreadsPerBlock = 1024;

/// Sets the sticky MXCSR precision-exception flag of the calling OS thread. fcontext saves and
/// restores MXCSR on every switch; on these VMs the restore is ~15x slower while PE is clear.
/// The flag only records that an inexact result happened; it changes no result.
/// \return the previous MXCSR, to restore with _mm_setcsr.
inline unsigned enable_fast_switch() {
  unsigned previous = _mm_getcsr();
  _mm_setcsr(previous | 0x20u);
  return previous;
}

/// kMaxThreadsPerBlock fiber stacks of stack_bytes each, every one above a PROT_NONE guard page.
class StackRegion {
 public:
  /// Maps the region (MAP_NORESERVE: pages cost RAM only once touched); \p stack_bytes is rounded
  /// up to whole pages.
  /// \throws std::system_error when mmap or mprotect fails.
  explicit StackRegion(std::size_t stack_bytes) {
    page_bytes_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    stack_bytes_ = (stack_bytes + page_bytes_ - 1) / page_bytes_ * page_bytes_;
    slot_bytes_ = stack_bytes_ + page_bytes_;
    total_bytes_ = slot_bytes_ * kMaxThreadsPerBlock;
    void* base = mmap(nullptr, total_bytes_, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
      throw std::system_error(errno, std::generic_category(), "mmap of fiber stacks");
    base_ = static_cast<std::byte*>(base);
    for (std::size_t i = 0; i < kMaxThreadsPerBlock; ++i) {
      if (mprotect(base_ + i * slot_bytes_, page_bytes_, PROT_NONE) != 0) {
        int error = errno;
        munmap(base_, total_bytes_);
        throw std::system_error(error, std::generic_category(), "mprotect of a fiber guard page");
      }
    }
  }
  ~StackRegion() { munmap(base_, total_bytes_); }
  StackRegion(const StackRegion&) = delete;
  StackRegion& operator=(const StackRegion&) = delete;

  /// Lowest usable address of stack \p index, in [0, kMaxThreadsPerBlock); its guard page is just
  /// below, so an overflow faults instead of corrupting the next stack.
  std::byte* stack_bottom(std::size_t index) const {
    return base_ + index * slot_bytes_ + page_bytes_;
  }
  /// One past the highest address of stack \p index: where a fiber starts (stacks grow down).
  std::byte* stack_top(std::size_t index) const { return stack_bottom(index) + stack_bytes_; }
  /// Usable bytes per stack, after rounding to whole pages (guard page excluded).
  std::size_t stack_bytes() const { return stack_bytes_; }
#if VRAMLAB_SIMT_ASAN
  /// Clears ASan's shadow of the first `count` stacks; needed after fibers were abandoned
  /// mid-frame.
  void unpoison(std::size_t count) const {
    for (std::size_t i = 0; i < count; ++i)
      ASAN_UNPOISON_MEMORY_REGION(stack_bottom(i), stack_bytes_);
  }
#endif

 private:
  std::byte* base_ = nullptr;
  std::size_t page_bytes_ = 0;
  std::size_t stack_bytes_ = 0;
  std::size_t slot_bytes_ = 0;
  std::size_t total_bytes_ = 0;
};

/// Keeps stack regions between launches (mapping and protecting 1024 guard pages costs ~1 ms).
class StackPool {
 public:
  /// One pool per process, shared by every launch's workers (thread-safe).
  static StackPool& instance() {
    static StackPool pool;
    return pool;
  }
  /// \return a free region with at least \p stack_bytes per stack, else a newly mapped one.
  std::unique_ptr<StackRegion> acquire(std::size_t stack_bytes) {
    {
      std::lock_guard lock(mutex_);
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if ((*it)->stack_bytes() >= stack_bytes) {
          auto region = std::move(*it);
          free_.erase(it);
          return region;
        }
      }
    }
    return std::make_unique<StackRegion>(stack_bytes);
  }
  /// Keeps \p region, from acquire(), for later launches; regions are never unmapped.
  void release(std::unique_ptr<StackRegion> region) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(region));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<StackRegion>> free_;
};

/// What one side of a switch must remember for ASan: the other stack's bounds and its own fake
/// stack.
struct SwitchRecord {
  /// The suspended context to jump to next.
  fctx::fcontext_t context = nullptr;
#if VRAMLAB_SIMT_ASAN
  /// ASan's fake stack of this side while it is switched out.
  void* fake_stack = nullptr;
  /// Lowest address of this side's stack.
  const void* stack_bottom = nullptr;
  /// Size of this side's stack.
  std::size_t stack_bytes = 0;
#endif
};

/// Switches from `from` (the running side) to `to`. Returns when something switches back to
/// `from`; `to.context` then holds where `to` stopped. \p data reaches a fiber's entry function
/// on its first run.
inline void switch_to([[maybe_unused]] SwitchRecord& from, SwitchRecord& to, void* data) {
#if VRAMLAB_SIMT_ASAN
  __sanitizer_start_switch_fiber(&from.fake_stack, to.stack_bottom, to.stack_bytes);
#endif
  fctx::transfer_t back = fctx::jump_fcontext(to.context, data);
#if VRAMLAB_SIMT_ASAN
  __sanitizer_finish_switch_fiber(from.fake_stack, nullptr, nullptr);
#endif
  to.context = back.fctx;
}

}  // namespace vramlab::simt::detail
