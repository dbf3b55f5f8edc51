/// \file
/// \brief Launching a kernel under emulation: checks the configuration like CUDA does, runs the
/// grid's blocks on OS workers (each one block at a time, fibers inside), and rethrows on the host
/// the first error any block raised.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/platform/errors.h"
#include "kernels/simt/block_runtime.h"
#include "kernels/simt/fiber_stack.h"
#include "kernels/simt/launch_options.h"

namespace vramlab::simt {

/// Where a launch is written, for messages.
struct LaunchSite {
  const char* kernel_name;  ///< the kernel as written at the launch
  const char* file;         ///< the launch's file
  std::uint32_t line;       ///< the launch's line
};

namespace detail {

/// A kernel and its arguments, converted to its parameter types, as one launch stores them.
template <class... Params>
struct KernelCall {
  void (*kernel)(Params...);                      ///< the __global__ function
  std::tuple<std::decay_t<Params>...> arguments;  ///< copied once per launch, read by every thread
  /// Runs the kernel body for the current thread; \p self is this KernelCall, type-erased so
  /// the block runtime needs no template.
  static void invoke(const void* self) {
    const auto* call = static_cast<const KernelCall*>(self);
    std::apply(call->kernel, call->arguments);
  }
};

/// \return "(x,y,z)", for messages.
inline std::string format_dim3(const dim3& d) {
  std::ostringstream text;
  text << "(" << d.x << "," << d.y << "," << d.z << ")";
  return text.str();
}

/// Rejects what CUDA rejects at launch (block and grid limits, shared memory), before any thread
/// starts. \throws vramlab::UsageError naming the configuration and what is wrong with it.
inline void check_configuration(const LaunchSite& site, dim3 grid, dim3 block,
                                std::size_t dynamic_shared_bytes) {
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  const char* problem = nullptr;
  if (threads == 0 || threads > kMaxThreadsPerBlock)
    problem = "blockDim must hold 1 to 1024 threads";
  if (block.z > 64) problem = "blockDim.z must be at most 64";
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    problem = "gridDim must be at least 1 in every dimension";
  if (grid.x > 2147483647u || grid.y > 65535u || grid.z > 65535u)
    problem = "gridDim exceeds (2^31-1, 65535, 65535)";
  if (dynamic_shared_bytes > kMaxSharedBytesPerBlock)
    problem = "dynamic shared memory exceeds 227 KiB";
  if (problem == nullptr) return;
  std::ostringstream text;
  text << "invalid launch of kernel '" << site.kernel_name << "' at " << site.file << ":"
       << site.line << ": gridDim " << format_dim3(grid) << ", blockDim " << format_dim3(block)
       << ", " << dynamic_shared_bytes << " bytes of dynamic shared memory: " << problem;
  throw UsageError(text.str());
}

/// Runs every block of a launch on the option's workers; the first error a block raises stops
/// the others from taking new blocks and is rethrown here.
inline void run_launch(const KernelLaunch& launch) {
  const std::uint64_t blocks = std::uint64_t{launch.grid.x} * launch.grid.y * launch.grid.z;
  const std::size_t workers =
      static_cast<std::size_t>(std::min<std::uint64_t>(effective_workers(launch.options), blocks));
  std::atomic<std::uint64_t> next_block{0};
  std::atomic<bool> abort{false};
  std::mutex error_mutex;
  std::exception_ptr first_error;
  auto work = [&] {
    const unsigned saved_csr = enable_fast_switch();
    try {
      Worker worker(launch);
      while (!abort.load(std::memory_order_relaxed)) {
        const std::uint64_t block = next_block.fetch_add(1, std::memory_order_relaxed);
        if (block >= blocks) break;
        worker.run_block(block);
      }
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
      abort.store(true, std::memory_order_relaxed);
    }
    _mm_setcsr(saved_csr);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(workers - 1);
  for (std::size_t i = 1; i < workers; ++i) helpers.emplace_back(work);
  work();
  for (std::thread& helper : helpers) helper.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace detail

/// Runs `kernel(arguments...)` on a grid of blocks under emulation; returns when every block is
/// done. The arguments are converted to the kernel's parameter types and copied once, as CUDA does.
/// \p site (the kernel's name and the launch's file:line) names the launch in every error;
/// \p options override the process-wide launch_options() for this launch only.
/// \throws vramlab::UsageError for a configuration CUDA would reject (names the bad value);
/// DeadlockError, SharedMemoryOverflowError, DeviceError, WarpUsageError, or what the kernel threw.
template <class... Params, class... Args>
void launch_with(const LaunchSite& site, const LaunchOptions& options, void (*kernel)(Params...),
                 dim3 grid, dim3 block, std::size_t dynamic_shared_bytes, Args&&... arguments) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "the launch passes a different number of arguments than the kernel takes");
  detail::check_configuration(site, grid, block, dynamic_shared_bytes);
  const detail::KernelCall<Params...> call{
      kernel, std::tuple<std::decay_t<Params>...>(std::forward<Args>(arguments)...)};
  const detail::KernelLaunch launch{site.kernel_name,
                                    site.file,
                                    site.line,
                                    grid,
                                    block,
                                    dynamic_shared_bytes,
                                    options,
                                    &detail::KernelCall<Params...>::invoke,
                                    &call};
  detail::run_launch(launch);
}

/// The object VRAMLAB_LAUNCH(kernel, grid, block, shmem, stream) makes; calling it launches.
/// \tparam Params the kernel's parameter types.
template <class... Params>
class Launcher {
 public:
  /// \p stream is accepted for the `<<<...>>>` shape and ignored: emulated launches are
  /// synchronous.
  template <class Stream>
  Launcher(LaunchSite site, void (*kernel)(Params...), dim3 grid, dim3 block,
           std::size_t dynamic_shared_bytes, [[maybe_unused]] const Stream& stream)
      : site_(site),
        kernel_(kernel),
        grid_(grid),
        block_(block),
        dynamic_shared_bytes_(dynamic_shared_bytes) {}
  /// Launches with the process-wide options (launch_options()).
  /// \throws what launch_with throws.
  template <class... Args>
  void operator()(Args&&... arguments) const {
    launch_with(site_, launch_options(), kernel_, grid_, block_, dynamic_shared_bytes_,
                std::forward<Args>(arguments)...);
  }

 private:
  LaunchSite site_;
  void (*kernel_)(Params...);
  dim3 grid_;
  dim3 block_;
  std::size_t dynamic_shared_bytes_;
};

}  // namespace vramlab::simt
