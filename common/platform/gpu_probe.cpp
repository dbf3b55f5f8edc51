// GPU detection through the driver API, loaded with dlopen so vramlab needs no driver to run.
#include "common/platform/gpu_probe.h"

#include <dlfcn.h>

#include <string>

namespace vramlab::platform {

namespace {

// The few driver-API entry points we need (CUresult is an int enum; CUdevice an int).
using CuInit = int (*)(unsigned int);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceTotalMem = int (*)(size_t*, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
constexpr int kAttrComputeMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr int kErrorStubLibrary = 34;  // CUDA_ERROR_STUB_LIBRARY
constexpr int kErrorNoDevice = 100;    // CUDA_ERROR_NO_DEVICE

template <typename Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

}  // namespace

const char* gpu_status_name(GpuStatus status) {
  switch (status) {
    case GpuStatus::no_driver:
      return "no driver";
    case GpuStatus::driver_error:
      return "driver error";
    case GpuStatus::no_device:
      return "no device";
    case GpuStatus::available:
      return "available";
  }
  return "unknown";
}

GpuProbe probe_gpus() {
  GpuProbe probe;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    probe.status = GpuStatus::no_driver;
    probe.detail = "no GPU: the NVIDIA driver (libcuda.so.1) is not installed";
    return probe;
  }
  auto cu_init = symbol<CuInit>(lib, "cuInit");
  auto cu_driver_version = symbol<CuDriverGetVersion>(lib, "cuDriverGetVersion");
  auto cu_count = symbol<CuDeviceGetCount>(lib, "cuDeviceGetCount");
  auto cu_get = symbol<CuDeviceGet>(lib, "cuDeviceGet");
  auto cu_name = symbol<CuDeviceGetName>(lib, "cuDeviceGetName");
  auto cu_mem = symbol<CuDeviceTotalMem>(lib, "cuDeviceTotalMem_v2");
  auto cu_attr = symbol<CuDeviceGetAttribute>(lib, "cuDeviceGetAttribute");
  if (!cu_init || !cu_count || !cu_get || !cu_name || !cu_mem || !cu_attr) {
    probe.status = GpuStatus::driver_error;
    probe.detail = "no GPU: libcuda.so.1 lacks the driver API entry points";
    return probe;
  }
  int version = 0;
  if (cu_driver_version && cu_driver_version(&version) == 0) probe.driver_version = version;
  const int init = cu_init(0);
  if (init == kErrorNoDevice) {
    probe.status = GpuStatus::no_device;
    probe.detail = "no GPU: the NVIDIA driver is installed but reports no device";
    return probe;
  }
  if (init != 0) {
    probe.status = GpuStatus::driver_error;
    probe.detail = init == kErrorStubLibrary
                       ? "no GPU: only the CUDA toolkit's stub libcuda is present, not a driver"
                       : "no GPU: cuInit failed with CUresult " + std::to_string(init);
    return probe;
  }
  int count = 0;
  if (cu_count(&count) != 0 || count == 0) {
    probe.status = GpuStatus::no_device;
    probe.detail = "no GPU: the NVIDIA driver is installed but reports no device";
    return probe;
  }
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    if (cu_get(&dev, i) != 0) continue;
    GpuDevice d;
    char name[256] = {};
    if (cu_name(name, sizeof(name) - 1, dev) == 0) d.name = name;
    size_t bytes = 0;
    if (cu_mem(&bytes, dev) == 0) d.total_bytes = bytes;
    int major = 0, minor = 0;
    cu_attr(&major, kAttrComputeMajor, dev);
    cu_attr(&minor, kAttrComputeMinor, dev);
    d.compute_major = major;
    d.compute_minor = minor;
    probe.devices.push_back(d);
  }
  probe.status = GpuStatus::available;
  probe.detail = std::to_string(probe.devices.size()) + " GPU(s) available";
  return probe;
}

}  // namespace vramlab::platform
