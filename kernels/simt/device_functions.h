/// \file
/// \brief The CUDA built-ins an emulated kernel sees: threadIdx/blockIdx/blockDim/gridDim,
/// warpSize, block barriers, warp collectives and the device-side failure hook.
///
/// Included by simt.h when the compiler is not nvcc; under nvcc the real built-ins are used.
/// Every synchronizing call takes a defaulted vramlab::source_location, so deadlock reports name
/// the file:line where each thread waits.
#pragma once

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>

#include "common/platform/source_location.h"
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

/// Stops the calling kernel thread with a DeviceError naming the kernel, block, thread and the
/// VRAMLAB_DEVICE_FAIL site \p location; the launch then throws it on the host.
/// \throws DeviceError always.
[[noreturn]] inline void device_fail(const char* message,
                                     const vramlab::source_location& location) {
  std::ostringstream text;
  uint3 thread = t_worker->current_thread_idx();
  text << "device error in " << t_worker->where() << ", thread (" << thread.x << "," << thread.y
       << "," << thread.z << ") at " << location.file_name() << ":" << location.line() << ": "
       << message;
  throw DeviceError(text.str());
}

/// Checks a shuffle width is a power of two in [1, 32]; \p what and \p location name the call.
/// \throws WarpUsageError otherwise.
inline void check_width(int width, const char* what, const vramlab::source_location& location) {
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
T shuffle(const char* what, unsigned mask, T var, const vramlab::source_location& location,
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

/// Waits until every (non-exited) thread of the block reaches this call. \p location defaults to
/// the call site, named in deadlock reports (as for every collective below).
/// \throws vramlab::simt::DeadlockError when other threads wait at a different barrier call.
inline void __syncthreads(vramlab::source_location location = vramlab::source_location::current()) {
  ::vramlab::simt::detail::t_worker->block_barrier("__syncthreads()", 0, location);
}

/// A barrier that also returns how many threads of the block passed a nonzero \p predicate.
inline int __syncthreads_count(
    int predicate, vramlab::source_location location = vramlab::source_location::current()) {
  return static_cast<int>(
      ::vramlab::simt::detail::t_worker->block_barrier("__syncthreads_count()", predicate, location)
          .first);
}

/// A barrier that returns 1 when every thread's \p predicate is nonzero, else 0.
inline int __syncthreads_and(
    int predicate, vramlab::source_location location = vramlab::source_location::current()) {
  auto [count, arrived] =
      ::vramlab::simt::detail::t_worker->block_barrier("__syncthreads_and()", predicate, location);
  return count == arrived ? 1 : 0;
}

/// A barrier that returns 1 when any thread's \p predicate is nonzero, else 0.
inline int __syncthreads_or(
    int predicate, vramlab::source_location location = vramlab::source_location::current()) {
  return ::vramlab::simt::detail::t_worker->block_barrier("__syncthreads_or()", predicate, location)
                     .first > 0
             ? 1
             : 0;
}

/// Waits until every live lane of \p mask reaches a __syncwarp with the same mask.
/// \throws vramlab::simt::WarpUsageError when the calling lane is not in \p mask.
inline void __syncwarp(unsigned mask = 0xffffffffu,
                       vramlab::source_location location = vramlab::source_location::current()) {
  ::vramlab::simt::detail::t_worker->warp_collective("__syncwarp()", mask, 0, location,
                                                     [](const auto&, std::uint32_t) { return 0; });
}

/// Returns \p var of lane srcLane (mod width) of this lane's width-segment; \p mask is the lanes
/// taking part, \p width a power of two in [1, 32] (checked: WarpUsageError).
template <class T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize,
              vramlab::source_location location = vramlab::source_location::current()) {
  ::vramlab::simt::detail::check_width(width, "__shfl_sync()", location);
  const std::uint32_t w = static_cast<std::uint32_t>(width);
  const std::uint32_t source_in_segment = static_cast<std::uint32_t>(srcLane) & (w - 1);
  return ::vramlab::simt::detail::shuffle(
      "__shfl_sync()", mask, var, location,
      [w, source_in_segment](std::uint32_t lane) { return (lane & ~(w - 1)) + source_in_segment; });
}

/// Returns \p var of the lane \p delta below in this lane's width-segment (own var when there
/// is none); \p mask and \p width as __shfl_sync.
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,
                 vramlab::source_location location = vramlab::source_location::current()) {
  ::vramlab::simt::detail::check_width(width, "__shfl_up_sync()", location);
  const std::uint32_t w = static_cast<std::uint32_t>(width);
  return ::vramlab::simt::detail::shuffle(
      "__shfl_up_sync()", mask, var, location,
      [w, delta](std::uint32_t lane) { return (lane & (w - 1)) < delta ? lane : lane - delta; });
}

/// Returns \p var of the lane \p delta above in this lane's width-segment (own var when there
/// is none); \p mask and \p width as __shfl_sync.
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,
                   vramlab::source_location location = vramlab::source_location::current()) {
  ::vramlab::simt::detail::check_width(width, "__shfl_down_sync()", location);
  const std::uint32_t w = static_cast<std::uint32_t>(width);
  return ::vramlab::simt::detail::shuffle(
      "__shfl_down_sync()", mask, var, location, [w, delta](std::uint32_t lane) {
        return static_cast<std::uint64_t>(lane & (w - 1)) + delta >= w ? lane : lane + delta;
      });
}

/// Returns \p var of lane (lane XOR laneMask); own var when that lane is in a later
/// width-segment; \p mask and \p width as __shfl_sync.
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize,
                  vramlab::source_location location = vramlab::source_location::current()) {
  ::vramlab::simt::detail::check_width(width, "__shfl_xor_sync()", location);
  const std::uint32_t w = static_cast<std::uint32_t>(width);
  return ::vramlab::simt::detail::shuffle(
      "__shfl_xor_sync()", mask, var, location, [w, laneMask](std::uint32_t lane) {
        std::uint32_t source = lane ^ static_cast<std::uint32_t>(laneMask);
        return source >= (lane & ~(w - 1)) + w ? lane : source;
      });
}

/// \return bit i set when lane i of \p mask took part with a nonzero \p predicate.
inline unsigned __ballot_sync(
    unsigned mask, int predicate,
    vramlab::source_location location = vramlab::source_location::current()) {
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

/// \return 1 when any taking-part lane of \p mask has a nonzero \p predicate.
inline int __any_sync(unsigned mask, int predicate,
                      vramlab::source_location location = vramlab::source_location::current()) {
  return ::vramlab::simt::detail::t_worker->warp_collective(
      "__any_sync()", mask, predicate != 0 ? 1u : 0u, location,
      [](const ::vramlab::simt::detail::WarpGroup& group, std::uint32_t) {
        for (std::uint32_t lane = 0; lane < 32; ++lane) {
          if ((group.arrived >> lane & 1u) != 0 && group.values[lane] != 0) return 1;
        }
        return 0;
      });
}

/// \return 1 when every taking-part lane of \p mask has a nonzero \p predicate.
inline int __all_sync(unsigned mask, int predicate,
                      vramlab::source_location location = vramlab::source_location::current()) {
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
