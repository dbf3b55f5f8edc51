/// \file
/// \brief The CUDA built-ins an emulated kernel sees: threadIdx/blockIdx/blockDim/gridDim,
/// warpSize, block barriers, warp collectives and the device-side failure hook.
///
/// Included by simt.h when the compiler is not nvcc; under nvcc the real built-ins are used.
/// Every synchronizing call takes a defaulted std::source_location, so deadlock reports name the
/// file:line where each thread waits.
#pragma once

#include <cstdint>
#include <cstring>
#include <source_location>
#include <sstream>
#include <string>
#include <type_traits>

#include "kernels/simt/block_runtime.h"
#include "kernels/simt/errors.h"

/// Index of the running thread in its block (emulation: a pointer the scheduler repoints).
#define threadIdx (*::vramlab::simt::detail::t_thread_idx)
/// Index of the running block in the grid.
#define blockIdx (*::vramlab::simt::detail::t_block_idx)
/// Threads per block of the running launch.
#define blockDim (*::vramlab::simt::detail::t_block_dim)
/// Blocks per grid of the running launch.
#define gridDim (*::vramlab::simt::detail::t_grid_dim)

/// Threads per warp.
inline constexpr int warpSize = 32;

namespace vramlab::simt::detail {

/// Stops the calling kernel thread with a DeviceError naming the kernel, block, thread and site;
/// the launch then throws it on the host.
/// \param message what went wrong. \param location the VRAMLAB_DEVICE_FAIL site.
/// \throws DeviceError always.
[[noreturn]] inline void device_fail(const char* message, const std::source_location& location) {
  std::ostringstream text;
  uint3 thread = t_worker->current_thread_idx();
  text << "device error in " << t_worker->where() << ", thread (" << thread.x << "," << thread.y
       << "," << thread.z << ") at " << location.file_name() << ":" << location.line() << ": "
       << message;
  throw DeviceError(text.str());
}

/// Checks a shuffle width (a power of two in [1, 32]). \param width the width. \param what the
/// call. \param location the call site. \throws WarpUsageError otherwise.
inline void check_width(int width, const char* what, const std::source_location& location) {
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
    std::ostringstream text;
    text << what << " at " << location.file_name() << ":" << location.line() << " in "
         << t_worker->where() << ": width " << width << " is not a power of two in [1, 32]";
    throw WarpUsageError(text.str());
  }
}

/// Bytes of a value as the 64-bit payload of a warp collective.
template <class T>
std::uint64_t to_payload(const T& value) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "warp shuffles move values of at most 8 bytes");
  std::uint64_t payload = 0;
  std::memcpy(&payload, &value, sizeof(T));
  return payload;
}

/// The value of a payload made by to_payload.
template <class T>
T from_payload(std::uint64_t payload) {
  T value;
  std::memcpy(&value, &payload, sizeof(T));
  return value;
}

/// A shuffle: every lane of mask deposits var; lane `lane` receives the value of
/// `source(lane)` when that lane took part, its own var otherwise (CUDA's rule for lanes outside
/// the width segment). \return the received value.
template <class T, class Source>
T shuffle(const char* what, unsigned mask, T var, const std::source_location& location,
          Source source) {
  std::uint64_t own = to_payload(var);
  std::uint64_t received = t_worker->warp_collective(
      what, mask, own, location, [&source, own](const WarpGroup& group, std::uint32_t lane) {
        std::uint32_t from = source(lane);
        if (from >= kWarpSize || (group.arrived & (1u << from)) == 0) return own;
        return group.values[from];
      });
  return from_payload<T>(received);
}

}  // namespace vramlab::simt::detail

/// Waits until every (non-exited) thread of the block reaches this call.
/// \param location the call site (defaulted; named in deadlock reports).
/// \throws vramlab::simt::DeadlockError when other threads wait at a different barrier call.
inline void __syncthreads(std::source_location location = std::source_location::current()) {
  ::vramlab::simt::detail::t_worker->block_barrier("__syncthreads()", 0, location);
}

/// A barrier that also counts the threads whose predicate is nonzero.
/// \param predicate this thread's predicate. \return the count over the block.
/// \param location the call site (defaulted; named in reports).
inline int __syncthreads_count(int predicate,
                               std::source_location location = std::source_location::current()) {
  return static_cast<int>(
      ::vramlab::simt::detail::t_worker->block_barrier("__syncthreads_count()", predicate, location)
          .first);
}

/// A barrier that returns nonzero when every thread's predicate is nonzero.
/// \param predicate this thread's predicate. \return 1 or 0.
/// \param location the call site (defaulted; named in reports).
inline int __syncthreads_and(int predicate,
                             std::source_location location = std::source_location::current()) {
  auto [count, arrived] =
      ::vramlab::simt::detail::t_worker->block_barrier("__syncthreads_and()", predicate, location);
  return count == arrived ? 1 : 0;
}

/// A barrier that returns nonzero when any thread's predicate is nonzero.
/// \param predicate this thread's predicate. \return 1 or 0.
/// \param location the call site (defaulted; named in reports).
inline int __syncthreads_or(int predicate,
                            std::source_location location = std::source_location::current()) {
  return ::vramlab::simt::detail::t_worker->block_barrier("__syncthreads_or()", predicate, location)
                     .first > 0
             ? 1
             : 0;
}

/// Waits until every live lane of mask reaches a __syncwarp with the same mask.
/// \param mask the lanes taking part; must contain the calling lane.
/// \throws vramlab::simt::WarpUsageError when the calling lane is not in mask.
/// \param location the call site (defaulted; named in reports).
inline void __syncwarp(unsigned mask = 0xffffffffu,
                       std::source_location location = std::source_location::current()) {
  ::vramlab::simt::detail::t_worker->warp_collective("__syncwarp()", mask, 0, location,
                                                     [](const auto&, std::uint32_t) { return 0; });
}

/// Reads var from lane srcLane of this lane's width-segment.
/// \param mask lanes taking part. \param var this lane's value. \param srcLane the source lane (mod
/// width). \param width segment size, a power of two in [1, 32]. \return the source lane's var.
/// \param location the call site (defaulted; named in reports).
template <class T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize,
              std::source_location location = std::source_location::current()) {
  ::vramlab::simt::detail::check_width(width, "__shfl_sync()", location);
  const std::uint32_t w = static_cast<std::uint32_t>(width);
  const std::uint32_t source_in_segment = static_cast<std::uint32_t>(srcLane) & (w - 1);
  return ::vramlab::simt::detail::shuffle(
      "__shfl_sync()", mask, var, location,
      [w, source_in_segment](std::uint32_t lane) { return (lane & ~(w - 1)) + source_in_segment; });
}

/// Reads var from the lane delta below in this lane's width-segment (own var when there is none).
/// \param mask lanes taking part. \param var this lane's value. \param delta distance.
/// \param width segment size. \return the value.
/// \param location the call site (defaulted; named in reports).
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,
                 std::source_location location = std::source_location::current()) {
  ::vramlab::simt::detail::check_width(width, "__shfl_up_sync()", location);
  const std::uint32_t w = static_cast<std::uint32_t>(width);
  return ::vramlab::simt::detail::shuffle(
      "__shfl_up_sync()", mask, var, location,
      [w, delta](std::uint32_t lane) { return (lane & (w - 1)) < delta ? lane : lane - delta; });
}

/// Reads var from the lane delta above in this lane's width-segment (own var when there is none).
/// \param mask lanes taking part. \param var this lane's value. \param delta distance.
/// \param width segment size. \return the value.
/// \param location the call site (defaulted; named in reports).
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,
                   std::source_location location = std::source_location::current()) {
  ::vramlab::simt::detail::check_width(width, "__shfl_down_sync()", location);
  const std::uint32_t w = static_cast<std::uint32_t>(width);
  return ::vramlab::simt::detail::shuffle(
      "__shfl_down_sync()", mask, var, location, [w, delta](std::uint32_t lane) {
        return static_cast<std::uint64_t>(lane & (w - 1)) + delta >= w ? lane : lane + delta;
      });
}

/// Reads var from lane (lane XOR laneMask); own var when that lane is in a later width-segment.
/// \param mask lanes taking part. \param var this lane's value. \param laneMask the XOR mask.
/// \param width segment size. \return the value.
/// \param location the call site (defaulted; named in reports).
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize,
                  std::source_location location = std::source_location::current()) {
  ::vramlab::simt::detail::check_width(width, "__shfl_xor_sync()", location);
  const std::uint32_t w = static_cast<std::uint32_t>(width);
  return ::vramlab::simt::detail::shuffle(
      "__shfl_xor_sync()", mask, var, location, [w, laneMask](std::uint32_t lane) {
        std::uint32_t source = lane ^ static_cast<std::uint32_t>(laneMask);
        return source >= (lane & ~(w - 1)) + w ? lane : source;
      });
}

/// \param mask lanes taking part. \param predicate this lane's vote.
/// \return bit i set when lane i took part with a nonzero predicate.
/// \param location the call site (defaulted; named in reports).
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              std::source_location location = std::source_location::current()) {
  return ::vramlab::simt::detail::t_worker->warp_collective(
      "__ballot_sync()", mask, predicate != 0 ? 1u : 0u, location,
      [](const ::vramlab::simt::detail::WarpGroup& group, std::uint32_t) {
        unsigned bits = 0;
        for (std::uint32_t lane = 0; lane < 32; ++lane) {
          if ((group.arrived >> lane & 1u) != 0 && group.values[lane] != 0) bits |= 1u << lane;
        }
        return bits;
      });
}

/// \param mask lanes taking part. \param predicate this lane's vote.
/// \return 1 when any taking-part lane's predicate is nonzero.
/// \param location the call site (defaulted; named in reports).
inline int __any_sync(unsigned mask, int predicate,
                      std::source_location location = std::source_location::current()) {
  return ::vramlab::simt::detail::t_worker->warp_collective(
      "__any_sync()", mask, predicate != 0 ? 1u : 0u, location,
      [](const ::vramlab::simt::detail::WarpGroup& group, std::uint32_t) {
        for (std::uint32_t lane = 0; lane < 32; ++lane) {
          if ((group.arrived >> lane & 1u) != 0 && group.values[lane] != 0) return 1;
        }
        return 0;
      });
}

/// \param mask lanes taking part. \param predicate this lane's vote.
/// \return 1 when every taking-part lane's predicate is nonzero.
/// \param location the call site (defaulted; named in reports).
inline int __all_sync(unsigned mask, int predicate,
                      std::source_location location = std::source_location::current()) {
  return ::vramlab::simt::detail::t_worker->warp_collective(
      "__all_sync()", mask, predicate != 0 ? 1u : 0u, location,
      [](const ::vramlab::simt::detail::WarpGroup& group, std::uint32_t) {
        for (std::uint32_t lane = 0; lane < 32; ++lane) {
          if ((group.arrived >> lane & 1u) != 0 && group.values[lane] == 0) return 0;
        }
        return 1;
      });
}

/// \return the lanes of the calling warp that have not exited (the emulator's notion of active).
inline unsigned __activemask() {
  return ::vramlab::simt::detail::t_worker->live_lanes_of_current_warp();
}
