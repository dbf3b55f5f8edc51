/// \file
/// \brief Static and dynamic shared memory for emulated kernels (the VRAMLAB_SHARED and
/// VRAMLAB_DYNAMIC_SHARED macros of simt.h expand to these under g++).
///
/// A VRAMLAB_SHARED declaration owns a thread_local slot (a pointer and an epoch, no constructor,
/// so no TLS-init call). The first thread of a block to reach the declaration places the array in
/// the worker's SharedArena, between redzones; the others of that block find it in the slot.
#pragma once

#include <cstdint>
#include <new>

#include "common/platform/source_location.h"
#include "kernels/simt/block_runtime.h"

namespace vramlab::simt::detail {

/// The per-OS-thread slot of one VRAMLAB_SHARED declaration.
/// \tparam T the declared type, e.g. float[32][33].
template <class T>
struct SharedSlot {
  std::uint64_t epoch = 0;  ///< t_shared_epoch of the block the array belongs to
  T* array = nullptr;       ///< the array in the worker's arena

  /// \return the running block's array, placed on the first call of the block; \p name and
  /// \p location (the declaration) are for overflow reports.
  /// \throws SimtError when the block's shared memory would exceed the per-block limit.
  T& bind(const char* name, const vramlab::source_location& location) {
    if (epoch != t_shared_epoch) {
      array = std::launder(
          reinterpret_cast<T*>(t_worker->allocate_shared(name, location, sizeof(T), alignof(T))));
      epoch = t_shared_epoch;
    }
    return *array;
  }
};

/// \return the running block's dynamic shared memory (the launch's shmem bytes, 16-byte aligned).
template <class T>
T* dynamic_shared() {
  return std::launder(reinterpret_cast<T*>(t_worker->dynamic_shared()));
}

}  // namespace vramlab::simt::detail
