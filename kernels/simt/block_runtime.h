/// \file
/// \brief The heart of the SIMT emulator: a Worker runs the blocks of a launch on one OS thread,
/// every CUDA thread of a block as a fiber, and implements block barriers and warp collectives.
///
/// Model. A block's fibers share the worker's OS thread and never migrate, so `threadIdx` & co. are
/// plain thread_local pointers the scheduler repoints before each switch (no TLS-init calls).
/// A fiber runs until it reaches a synchronization point, records what it waits for (a barrier
/// generation or a warp group) and where (file:line), and yields. The scheduler sweeps the fibers
/// in the launch's schedule order (in order, reverse, or a fresh seeded permutation per sweep) and
/// resumes those whose wait is over. The last arriver at a barrier advances its generation; exited
/// threads stop counting. A sweep in which no fiber can run is a deadlock: the worker throws a
/// DeadlockError listing each waiting thread's site instead of hanging.
///
/// Warp collectives (`__shfl*_sync`, `__ballot_sync`, `__syncwarp`, ...) form a group per mask:
/// each lane deposits its value, the group completes when every live lane of the mask arrived,
/// and it is freed once every member read the result, so concurrent disjoint masks work.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/platform/source_location.h"
#include "kernels/simt/errors.h"
#include "kernels/simt/fiber_stack.h"
#include "kernels/simt/launch_options.h"
#include "kernels/simt/shared_arena.h"
#include "kernels/simt/vector_types.h"

namespace vramlab::simt::detail {

/// Threads per warp, as on every NVIDIA GPU.
inline constexpr std::uint32_t kWarpSize = 32;

/// Everything a worker needs to know about the launch it serves; owned by the launching thread.
struct KernelLaunch {
  const char* kernel_name;           ///< the kernel's name as written at the launch
  const char* file;                  ///< where the launch is
  std::uint32_t line;                ///< where the launch is
  dim3 grid;                         ///< gridDim
  dim3 block;                        ///< blockDim
  std::size_t dynamic_shared_bytes;  ///< the launch's dynamic shared memory
  LaunchOptions options;             ///< schedule, poisoning, stack size
  void (*invoke)(const void* call);  ///< runs the kernel body for the current thread
  const void* call;                  ///< the kernel pointer and its arguments, for invoke
};

class Worker;

/// The worker running on this OS thread (null outside a launch).
inline constinit thread_local Worker* t_worker = nullptr;
/// threadIdx of the fiber currently running on this OS thread.
inline constinit thread_local const uint3* t_thread_idx = nullptr;
/// blockIdx of the block running on this OS thread.
inline constinit thread_local const uint3* t_block_idx = nullptr;
/// blockDim of the launch running on this OS thread.
inline constinit thread_local const dim3* t_block_dim = nullptr;
/// gridDim of the launch running on this OS thread.
inline constinit thread_local const dim3* t_grid_dim = nullptr;
/// Incremented at every block start on this OS thread; shared-array slots compare against it.
inline constinit thread_local std::uint64_t t_shared_epoch = 0;

/// What a fiber is blocked on.
enum class WaitKind : std::uint8_t {
  kRunnable,      ///< not waiting
  kBlockBarrier,  ///< a __syncthreads-family barrier
  kWarpSync,      ///< a warp collective
};

/// Where and on what a thread waits, for reports.
struct WaitSite {
  const char* what = "";   ///< the call, e.g. "__syncthreads()"
  const char* file = "";   ///< its file
  std::uint32_t line = 0;  ///< its line
  std::uint32_t mask = 0;  ///< the warp mask (warp collectives only)
};

/// One CUDA thread.
struct ThreadState {
  SwitchRecord fiber;                   ///< its suspended context and stack
  uint3 thread_idx{};                   ///< threadIdx
  std::uint32_t linear_id = 0;          ///< x + y*bx + z*bx*by
  std::uint32_t warp = 0;               ///< linear_id / 32
  std::uint32_t lane = 0;               ///< linear_id % 32
  WaitKind wait = WaitKind::kRunnable;  ///< what it is blocked on
  bool exited = false;                  ///< returned from the kernel
  WaitSite site;                        ///< where it waits
  std::uint64_t wait_generation = 0;    ///< barrier generation it waits to see pass
  std::uint32_t warp_group = 0;         ///< index of the warp group it waits in
};

/// One warp collective in flight: the lanes of `mask` exchange one 64-bit value each.
struct WarpGroup {
  bool in_use = false;                   ///< holds a collective not yet read by all members
  bool complete = false;                 ///< every live lane of mask arrived
  std::uint32_t mask = 0;                ///< the mask passed by the callers
  std::uint32_t arrived = 0;             ///< lanes that arrived
  std::uint32_t readers_left = 0;        ///< members that still have to read the result
  std::uint64_t values[kWarpSize] = {};  ///< each arrived lane's value (bytes of var/predicate)
};

/// A warp's live lanes and collectives in flight.
struct WarpState {
  std::uint32_t live_lanes = 0;   ///< lanes that exist and have not exited
  std::vector<WarpGroup> groups;  ///< reused between collectives
};

/// Runs blocks of one launch on the calling OS thread.
class Worker {
 public:
  /// Takes a stack region from the pool and makes this the thread's current worker.
  /// \p launch must outlive the worker.
  explicit Worker(const KernelLaunch& launch)
      : launch_(launch), stacks_(StackPool::instance().acquire(launch.options.stack_bytes)) {
    previous_worker_ = t_worker;
    t_worker = this;
    t_block_idx = &block_idx_;
    t_block_dim = &launch_.block;
    t_grid_dim = &launch_.grid;
    block_threads_ = launch.block.x * launch.block.y * launch.block.z;
    threads_.resize(block_threads_);
    warps_.resize((block_threads_ + kWarpSize - 1) / kWarpSize);
    order_.resize(block_threads_);
  }
  /// Returns the stacks to the pool and restores the previous worker pointer.
  ~Worker() {
    StackPool::instance().release(std::move(stacks_));
    t_worker = previous_worker_;
    t_thread_idx = nullptr;
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Runs block \p linear_block (x + y*gx + z*gx*gy) to completion, then checks its shared
  /// memory redzones.
  /// \throws DeadlockError, SharedMemoryOverflowError, DeviceError, WarpUsageError, or whatever the
  /// kernel threw.
  void run_block(std::uint64_t linear_block) {
    start_block(linear_block);
    std::uint64_t sweep = 0;
    while (live_threads_ > 0) {
      if (launch_.options.schedule == Schedule::kRandom) shuffle_order(linear_block, sweep);
      ++sweep;
      bool progressed = false;
      for (std::uint32_t id : order_) {
        ThreadState& thread = threads_[id];
        if (thread.exited || !runnable(thread)) continue;
        progressed = true;
        resume(thread);
        if (failure_) abandon_block();
        if (thread.exited) on_thread_exit(thread);
      }
      if (!progressed) {
        std::string report = wait_report("deadlock", "no thread can make progress", nullptr);
        forget_fibers();
        throw DeadlockError(report);
      }
    }
    arena_.check_redzones(where());
  }

  /// \return the dynamic shared memory of the running block (extern __shared__).
  std::byte* dynamic_shared() const { return dynamic_shared_; }

  /// Gives the running block a shared array, or the one it already has for this slot.
  /// \p name and \p location (the declaration) are for reports.
  /// \throws SimtError when the block's shared memory would exceed the per-block limit.
  std::byte* allocate_shared(const char* name, const vramlab::source_location& location,
                             std::size_t bytes, std::size_t alignment) {
    return arena_.allocate(
        SharedArrayRecord{name, location.file_name(), location.line(), nullptr, 0}, bytes,
        alignment, launch_.kernel_name);
  }

  /// A __syncthreads-family barrier for the current thread; \p what and \p location name the call
  /// in reports, \p predicate is counted when nonzero.
  /// \return {threads whose predicate was nonzero, threads that took part}.
  /// \throws DeadlockError when other threads wait at a different barrier call.
  std::pair<std::uint32_t, std::uint32_t> block_barrier(const char* what, int predicate,
                                                        const vramlab::source_location& location) {
    ThreadState& thread = *current_;
    thread.site = WaitSite{what, location.file_name(), location.line(), 0};
    if (barrier_arrived_ == 0) {
      barrier_site_ = thread.site;
    } else if (!same_site(barrier_site_, thread.site)) {
      thread.wait = WaitKind::kBlockBarrier;
      thread.wait_generation = barrier_generation_;
      throw DeadlockError(wait_report("divergent barrier",
                                      "threads wait at different __syncthreads calls", nullptr));
    }
    thread.wait = WaitKind::kBlockBarrier;
    thread.wait_generation = barrier_generation_;
    barrier_true_ += predicate != 0 ? 1u : 0u;
    ++barrier_arrived_;
    if (barrier_arrived_ == live_threads_) complete_barrier();
    yield(thread);
    thread.wait = WaitKind::kRunnable;
    return {barrier_result_true_, barrier_result_arrived_};
  }

  /// A warp collective for the current thread: every lane of \p mask deposits its 64-bit
  /// \p value; once all have arrived, \p read computes each lane's result from (group, lane).
  /// \p what and \p location name the call in reports.
  /// \throws WarpUsageError when the calling lane is not in mask.
  template <class Read>
  auto warp_collective(const char* what, std::uint32_t mask, std::uint64_t value,
                       const vramlab::source_location& location, Read&& read) {
    ThreadState& thread = *current_;
    const std::uint32_t lane_bit = 1u << thread.lane;
    if ((mask & lane_bit) == 0) {
      std::ostringstream message;
      message << what << " at " << location.file_name() << ":" << location.line() << " in "
              << where() << ": lane " << thread.lane << " (threadIdx " << format(thread.thread_idx)
              << ") is not in mask 0x" << std::hex << mask;
      throw WarpUsageError(message.str());
    }
    WarpState& warp = warps_[thread.warp];
    std::uint32_t index = find_group(warp, mask);
    WarpGroup& group = warp.groups[index];
    group.arrived |= lane_bit;
    group.values[thread.lane] = value;
    thread.wait = WaitKind::kWarpSync;
    thread.warp_group = index;
    thread.site = WaitSite{what, location.file_name(), location.line(), mask};
    try_complete(warp, group);
    yield(thread);
    thread.wait = WaitKind::kRunnable;
    WarpGroup& done = warps_[thread.warp].groups[index];
    auto result = read(static_cast<const WarpGroup&>(done), thread.lane);
    if (--done.readers_left == 0) done.in_use = false;
    return result;
  }

  /// \return the current thread's warp's live lanes (what __activemask reports).
  std::uint32_t live_lanes_of_current_warp() const { return warps_[current_->warp].live_lanes; }

  /// \return "kernel 'name' (launched at file:line), block (x,y,z)" for messages.
  std::string where() const {
    std::ostringstream text;
    text << "kernel '" << launch_.kernel_name << "' (launched at " << launch_.file << ":"
         << launch_.line << "), block " << format(block_idx_);
    return text.str();
  }

  /// \return threadIdx of the running thread, for messages.
  uint3 current_thread_idx() const { return current_->thread_idx; }

 private:
  static std::string format(uint3 v) {
    std::ostringstream text;
    text << "(" << v.x << "," << v.y << "," << v.z << ")";
    return text.str();
  }

  static bool same_site(const WaitSite& a, const WaitSite& b) {
    return a.line == b.line && (a.what == b.what || std::strcmp(a.what, b.what) == 0) &&
           (a.file == b.file || std::strcmp(a.file, b.file) == 0);
  }

  static void fiber_main(fctx::transfer_t transfer) {
    Worker* worker = t_worker;
    auto* thread = static_cast<ThreadState*>(transfer.data);
    worker->scheduler_.context = transfer.fctx;
#if VRAMLAB_SIMT_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &worker->scheduler_.stack_bottom,
                                    &worker->scheduler_.stack_bytes);
#endif
    worker->run_kernel_body();
    thread->exited = true;
#if VRAMLAB_SIMT_ASAN
    __sanitizer_start_switch_fiber(nullptr, worker->scheduler_.stack_bottom,
                                   worker->scheduler_.stack_bytes);
#endif
    fctx::jump_fcontext(worker->scheduler_.context, nullptr);
    __builtin_unreachable();
  }

  void run_kernel_body() noexcept {
    try {
      launch_.invoke(launch_.call);
    } catch (...) {
      if (!failure_) failure_ = std::current_exception();
    }
  }

  void start_block(std::uint64_t linear_block) {
    const std::uint64_t gx = launch_.grid.x;
    const std::uint64_t gy = launch_.grid.y;
    block_idx_ = uint3{static_cast<unsigned>(linear_block % gx),
                       static_cast<unsigned>(linear_block / gx % gy),
                       static_cast<unsigned>(linear_block / (gx * gy))};
    const std::uint32_t bx = launch_.block.x;
    const std::uint32_t by = launch_.block.y;
    for (std::uint32_t id = 0; id < block_threads_; ++id) {
      ThreadState& thread = threads_[id];
      thread.thread_idx = uint3{id % bx, id / bx % by, id / (bx * by)};
      thread.linear_id = id;
      thread.warp = id / kWarpSize;
      thread.lane = id % kWarpSize;
      thread.wait = WaitKind::kRunnable;
      thread.exited = false;
      thread.fiber.context =
          fctx::make_fcontext(stacks_->stack_top(id), stacks_->stack_bytes(), &Worker::fiber_main);
#if VRAMLAB_SIMT_ASAN
      thread.fiber.fake_stack = nullptr;
      thread.fiber.stack_bottom = stacks_->stack_bottom(id);
      thread.fiber.stack_bytes = stacks_->stack_bytes();
#endif
    }
    for (std::size_t w = 0; w < warps_.size(); ++w) {
      const std::uint32_t lanes = std::min<std::uint32_t>(
          kWarpSize, block_threads_ - static_cast<std::uint32_t>(w) * kWarpSize);
      warps_[w].live_lanes = lanes == kWarpSize ? ~0u : (1u << lanes) - 1u;
      for (WarpGroup& group : warps_[w].groups) group.in_use = false;
    }
    live_threads_ = block_threads_;
    barrier_arrived_ = 0;
    barrier_true_ = 0;
    failure_ = nullptr;
    if (launch_.options.schedule == Schedule::kReverse) {
      for (std::uint32_t i = 0; i < block_threads_; ++i) order_[i] = block_threads_ - 1 - i;
    } else {
      std::iota(order_.begin(), order_.end(), 0u);
    }
    ++t_shared_epoch;
    arena_.reset(launch_.options.poison_shared);
    dynamic_shared_ = arena_.allocate(SharedArrayRecord{"extern __shared__ (dynamic shared memory)",
                                                        launch_.file, launch_.line, nullptr, 0},
                                      launch_.dynamic_shared_bytes, 16, launch_.kernel_name);
  }

  void shuffle_order(std::uint64_t linear_block, std::uint64_t sweep) {
    std::uint64_t state = launch_.options.seed ^ (linear_block * 0x9E3779B97F4A7C15ull) ^
                          (sweep * 0xD1B54A32D192ED03ull);
    auto next = [&state] {
      state += 0x9E3779B97F4A7C15ull;
      std::uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      return z ^ (z >> 31);
    };
    std::iota(order_.begin(), order_.end(), 0u);
    for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[next() % i]);
  }

  bool runnable(const ThreadState& thread) const {
    switch (thread.wait) {
      case WaitKind::kRunnable:
        return true;
      case WaitKind::kBlockBarrier:
        return thread.wait_generation != barrier_generation_;
      case WaitKind::kWarpSync:
        return warps_[thread.warp].groups[thread.warp_group].complete;
    }
    return false;
  }

  void resume(ThreadState& thread) {
    current_ = &thread;
    t_thread_idx = &thread.thread_idx;
    switch_to(scheduler_, thread.fiber, &thread);
  }

  void yield(ThreadState& thread) {
    switch_to(thread.fiber, scheduler_, nullptr);
  }

  void complete_barrier() {
    barrier_result_true_ = barrier_true_;
    barrier_result_arrived_ = barrier_arrived_;
    barrier_true_ = 0;
    barrier_arrived_ = 0;
    ++barrier_generation_;
  }

  static std::uint32_t find_group(WarpState& warp, std::uint32_t mask) {
    for (std::uint32_t i = 0; i < warp.groups.size(); ++i) {
      const WarpGroup& group = warp.groups[i];
      if (group.in_use && !group.complete && group.mask == mask) return i;
    }
    for (std::uint32_t i = 0; i < warp.groups.size(); ++i) {
      if (!warp.groups[i].in_use) {
        warp.groups[i] = WarpGroup{true, false, mask, 0, 0, {}};
        return i;
      }
    }
    warp.groups.push_back(WarpGroup{true, false, mask, 0, 0, {}});
    return static_cast<std::uint32_t>(warp.groups.size() - 1);
  }

  static void try_complete(const WarpState& warp, WarpGroup& group) {
    if (group.complete || group.arrived == 0) return;
    if ((group.mask & warp.live_lanes) == group.arrived) {
      group.complete = true;
      group.readers_left = static_cast<std::uint32_t>(std::popcount(group.arrived));
    }
  }

  void on_thread_exit(const ThreadState& thread) {
    --live_threads_;
    WarpState& warp = warps_[thread.warp];
    warp.live_lanes &= ~(1u << thread.lane);
    for (WarpGroup& group : warp.groups) {
      if (group.in_use) try_complete(warp, group);
    }
    if (barrier_arrived_ > 0 && barrier_arrived_ == live_threads_) complete_barrier();
  }

  // Fibers of a failed block are never resumed: their frames are dropped without unwinding, so
  // ASan's shadow of those stacks is reset before the region is reused.
  void forget_fibers() {
#if VRAMLAB_SIMT_ASAN
    stacks_->unpoison(block_threads_);
#endif
  }

  [[noreturn]] void abandon_block() {
    std::exception_ptr failure = failure_;
    failure_ = nullptr;
    forget_fibers();
    std::rethrow_exception(failure);
  }

  std::string wait_report(const char* title, const char* summary, const ThreadState* extra) const {
    struct Key {
      std::string what;
      std::string file;
      std::uint32_t line;
      std::uint32_t mask;
      bool operator<(const Key& other) const {
        return std::tie(file, line, what, mask) <
               std::tie(other.file, other.line, other.what, other.mask);
      }
    };
    std::map<Key, std::vector<std::uint32_t>> waiting;
    std::uint32_t exited = 0;
    for (const ThreadState& thread : threads_) {
      if (thread.exited) {
        ++exited;
      } else if (thread.wait != WaitKind::kRunnable || &thread == extra) {
        waiting[Key{thread.site.what, thread.site.file, thread.site.line,
                    thread.wait == WaitKind::kWarpSync ? thread.site.mask : 0}]
            .push_back(thread.linear_id);
      }
    }
    std::ostringstream text;
    text << title << " in " << where() << " of grid " << format(launch_.grid) << ", blockDim "
         << format(launch_.block) << ": " << summary << ".";
    for (const auto& [key, ids] : waiting) {
      text << "\n  " << ids.size() << " thread(s) wait in " << key.what;
      if (key.mask != 0) text << " (mask 0x" << std::hex << key.mask << std::dec << ")";
      text << " at " << key.file << ":" << key.line << ": threads ";
      for (std::size_t i = 0; i < ids.size();) {
        std::size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
        if (i != 0) text << ", ";
        text << format(threads_[ids[i]].thread_idx);
        if (j > i) text << ".." << format(threads_[ids[j]].thread_idx);
        i = j + 1;
      }
    }
    if (exited > 0) text << "\n  " << exited << " thread(s) have returned";
    return text.str();
  }

  const KernelLaunch& launch_;
  std::unique_ptr<StackRegion> stacks_;
  Worker* previous_worker_ = nullptr;
  std::uint32_t block_threads_ = 0;
  uint3 block_idx_{};
  std::vector<ThreadState> threads_;
  std::vector<WarpState> warps_;
  std::vector<std::uint32_t> order_;
  SwitchRecord scheduler_;
  ThreadState* current_ = nullptr;
  std::uint32_t live_threads_ = 0;
  std::uint64_t barrier_generation_ = 0;
  std::uint32_t barrier_arrived_ = 0;
  std::uint32_t barrier_true_ = 0;
  std::uint32_t barrier_result_true_ = 0;
  std::uint32_t barrier_result_arrived_ = 0;
  WaitSite barrier_site_;
  std::exception_ptr failure_;
  SharedArena arena_;
  std::byte* dynamic_shared_ = nullptr;
};

}  // namespace vramlab::simt::detail
