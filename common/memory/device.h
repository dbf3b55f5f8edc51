/// \file
/// \brief Devices: where memory lives (cpu, a simulated GPU, meta, a real CUDA GPU) and their
/// specs.
///
/// Device strings (parse_device):
///   - `cpu`                     ordinary host memory, tracked, no capacity
///   - `sim[:INDEX][:SPEC]`      a simulated GPU backed by host memory, SPEC a preset
///                               (t4-16g, rtx4090-24g, a100-40g, a100-80g, h100-80g, h200-141g) or
///                               a size (`2GiB`, `512MiB`, `1.5GB`); default SPEC is `24GiB`
///   - `meta[:INDEX][:SPEC]`     the same allocator with virtual addresses and no memory at all;
///                               without SPEC its capacity is unlimited (1 EiB)
///   - `cuda[:INDEX]`            a real GPU
///
/// Preset capacities are the marketed number read as GiB (16 GiB for t4-16g): GPU DRAM comes in
/// binary sizes (an A100 80GB shows 81920 MiB in nvidia-smi). A real card reports slightly less as
/// total_memory (ECC, reserved pages); the simulator uses the nominal size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/platform/byte_size.h"

namespace vramlab::memory {

/// The kind of a device.
enum class DeviceKind : unsigned char {
  cpu,   ///< host memory, tracked, no caching and no capacity
  sim,   ///< a simulated GPU: host-backed memory under a capacity, caching allocator
  meta,  ///< shapes and sizes only: virtual addresses, no memory touched
  cuda,  ///< a real NVIDIA GPU
};

/// \return "cpu", "sim", "meta" or "cuda".
std::string_view device_kind_name(DeviceKind kind);

/// Capacity and bandwidths of a device, for the allocator and for later time models.
struct DeviceSpec {
  /// The preset name (e.g. "a100-40g") or the size as written (e.g. "2GiB"); empty for cpu/cuda.
  std::string spec_name;
  /// Device memory capacity in bytes (0 = no capacity, as on cpu).
  std::uint64_t capacity_bytes = 0;
  /// Device-memory bandwidth in bytes per second (0 when unknown).
  double memory_bandwidth_bytes_per_s = 0.0;
  /// Host link bandwidth per direction in bytes per second (0 when unknown).
  double host_link_bandwidth_bytes_per_s = 0.0;
};

/// A device: kind, index and spec.
struct Device {
  /// Decides the backing (make_caching_allocator).
  DeviceKind kind = DeviceKind::cpu;
  /// Device ordinal among devices of the same kind (the `N` of `cuda:N`).
  std::int64_t index = 0;
  /// From the preset or size in the device string (sim, meta); see DeviceSpec for the zeros.
  DeviceSpec spec;

  /// \return the canonical device string, e.g. "sim:a100-40g", "sim:1:2GiB", "cuda:0", "cpu".
  std::string name() const;
  /// \return true for the devices whose memory is managed by the caching allocator (sim, meta,
  /// cuda).
  bool uses_caching_allocator() const { return kind != DeviceKind::cpu; }
};

/// A named simulated-GPU preset.
struct DevicePreset {
  /// e.g. "a100-40g".
  std::string_view name;
  /// The full product name, e.g. "NVIDIA A100 40GB SXM4".
  std::string_view product;
  /// Capacity in bytes.
  std::uint64_t capacity_bytes;
  /// Device-memory bandwidth in bytes per second.
  double memory_bandwidth_bytes_per_s;
  /// Host link bandwidth per direction in bytes per second.
  double host_link_bandwidth_bytes_per_s;
};

/// \return the simulated-GPU presets, smallest first.
const std::vector<DevicePreset>& device_presets();

/// Sizes such as "2GiB" (common/platform/byte_size.h), as `--device sim:SIZE` takes them.
using platform::parse_size_bytes;

/// Parses a device string (see the file comment for the grammar).
/// \param text e.g. "sim:a100-80g", "sim:2GiB", "meta", "cuda:1".
/// \return the device with its spec filled in.
/// \throws vramlab::UsageError naming \p text when it is not a valid device.
Device parse_device(std::string_view text);

}  // namespace vramlab::memory
