// The one place a device becomes a caching allocator (see make_caching_allocator.h).
#include "common/memory/make_caching_allocator.h"

#include <string>

#include "common/memory/backing.h"
#include "common/platform/errors.h"
#include "common/platform/gpu_probe.h"

namespace vramlab::memory {

namespace {

// cpu memory has no capacity; the host backing still needs a number, so give it an exabyte.
constexpr uint64_t kUnlimitedBytes = kOneExaByte;

// The cuda device's backing, after checking that this build and machine can use it.
std::unique_ptr<Backing> usable_cuda_backing(const Device& device) {
  const std::string name = device.name();
#if VRAMLAB_HAVE_CUDA
  const platform::GpuProbe probe = platform::probe_gpus();
  if (probe.status != platform::GpuStatus::available)
    throw UsageError("device '" + name +
                     "' is not available: " + platform::gpu_status_name(probe.status) + " (" +
                     probe.detail + "); without a GPU, simulate one: --device sim:t4-16g");
  if (device.index >= static_cast<int64_t>(probe.devices.size()))
    throw UsageError("device '" + name + "' does not exist: the driver reports " +
                     std::to_string(probe.devices.size()) + " GPU(s)");
  return make_cuda_backing(static_cast<int>(device.index));
#else
  throw UsageError("device '" + name +
                   "' is not available: this build of vramlab has no CUDA (configure with "
                   "-DVRAMLAB_CUDA=ON); without a GPU, simulate one: --device sim:t4-16g");
#endif
}

std::unique_ptr<Backing> make_backing(const Device& device, SegmentMemory memory) {
  const uint64_t capacity =
      device.kind == DeviceKind::cpu ? kUnlimitedBytes : device.spec.capacity_bytes;
  if (memory == SegmentMemory::addresses_only || device.kind == DeviceKind::meta)
    return make_meta_backing(capacity);
  if (device.kind == DeviceKind::cuda) return usable_cuda_backing(device);
  return make_host_backing(capacity);
}

}  // namespace

std::unique_ptr<CachingAllocator> make_caching_allocator(const Device& device,
                                                         const AllocatorConfig& config,
                                                         SegmentMemory memory) {
  const bool gpu = device.kind == DeviceKind::cuda && memory == SegmentMemory::real;
  return std::make_unique<CachingAllocator>(make_backing(device, memory),
                                            gpu ? "CUDA" : device.name(), device.index, config);
}

}  // namespace vramlab::memory
