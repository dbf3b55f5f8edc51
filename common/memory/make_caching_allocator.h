/// \file
/// \brief make_caching_allocator: the one place a device becomes a caching allocator (the
/// runtime's, the allocator playground's replays, the SIMT emulator's device memory).
///
///   cpu   host RAM with no capacity (a training step still reuses cached blocks instead of
///         faulting in fresh pages every step), under the process's host-memory budget
///   sim   host RAM under the simulated device's capacity, under the host-memory budget
///   meta  addresses only: no memory is ever touched
///   cuda  cudaMalloc and the driver's virtual-memory API, after checking the GPU can be used
#pragma once

#include <memory>

#include "common/memory/alloc_config.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"

namespace vramlab::memory {

/// What a caching allocator's segments are.
enum class SegmentMemory {
  real,            ///< memory the program uses: host RAM (cpu, sim), GPU memory (cuda)
  addresses_only,  ///< addresses under the device's capacity, no memory (always so on meta):
                   ///< for replays, whose decisions depend only on sizes, never on contents
};

/// The caching allocator of \p device. Its label in out-of-memory messages is PyTorch's "CUDA" on
/// a GPU and the device's name otherwise (e.g. "sim:t4-16g out of memory. Tried to allocate ...").
/// \param device from parse_device(). \param config the allocator settings (e.g. from
/// alloc_conf_from_environment()). \param memory ignored on meta, which is always addresses
/// only.
/// \throws vramlab::UsageError for a cuda device this build or machine cannot use (the message
/// is the GPU probe's reason, with the way to run without one).
std::unique_ptr<CachingAllocator> make_caching_allocator(
    const Device& device, const AllocatorConfig& config,
    SegmentMemory memory = SegmentMemory::real);

}  // namespace vramlab::memory
