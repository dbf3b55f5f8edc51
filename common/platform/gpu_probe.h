/// \file
/// \brief Is there a usable NVIDIA GPU? Asked of the driver library at run time, so the answer is
/// right on machines with the CUDA toolkit but no driver, with a driver but no device, and with
/// GPUs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vramlab::platform {

/// One CUDA device as the driver reports it.
struct GpuDevice {
  std::string name;           ///< e.g. "NVIDIA A100-SXM4-80GB"
  uint64_t total_bytes = 0;   ///< device memory
  int64_t compute_major = 0;  ///< compute capability, major
  int64_t compute_minor = 0;  ///< compute capability, minor
};

/// The three answers (plus a driver error) a machine can give.
enum class GpuStatus {
  no_driver,     ///< libcuda.so.1 cannot be loaded (no NVIDIA driver installed)
  driver_error,  ///< the driver loaded but cuInit failed (e.g. the toolkit's stub library, or a
                 ///< broken install)
  no_device,     ///< the driver works and reports zero devices
  available,     ///< at least one device
};

/// The result of probing for GPUs.
struct GpuProbe {
  GpuStatus status = GpuStatus::no_driver;  ///< which answer
  std::string detail;                       ///< a human sentence explaining the answer
  int64_t driver_version = 0;               ///< e.g. 13000 for CUDA 13.0 (0 when unknown)
  std::vector<GpuDevice> devices;           ///< the devices when status == available
};

/// Probes the CUDA driver with dlopen; never throws and never crashes without a driver.
GpuProbe probe_gpus();

/// A short name for a status: "no driver", "driver error", "no device", "available".
const char* gpu_status_name(GpuStatus status);

}  // namespace vramlab::platform
