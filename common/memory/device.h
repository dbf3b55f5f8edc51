/// \file
/// \brief Devices: where memory lives (cpu, a simulated GPU, meta, a real CUDA GPU) and their
/// specs.
///
/// Device strings (parse_device):
///   - `cpu`                     ordinary host memory, tracked, no capacity
///   - `sim[:INDEX][:SPEC]`      a simulated GPU backed by host memory, SPEC a preset
///                               (t4-16g, rtx4090-24g, a100-40g, a100-80g, h100-80g, gh200-96g,
///                               h200-141g) or a size (`2GiB`, `512MiB`, `1.5GB`); default SPEC
///                               is `24GiB`
///   - `meta[:INDEX][:SPEC]`     the same allocator with virtual addresses and no memory at all;
///                               without SPEC its capacity is unlimited (1 EiB)
///   - `cuda[:INDEX]`            a real GPU
///
/// Preset capacities are the marketed number read as GiB (16 GiB for t4-16g): GPU DRAM comes in
/// binary sizes (an A100 80GB shows 81920 MiB in nvidia-smi). A real card reports slightly less as
/// total_memory (ECC, reserved pages); the simulator uses the nominal size.
///
/// Each preset also carries what a time model needs: its memory bandwidth, its dense peak FLOP/s
/// per dtype and its host link per direction, every figure with its datasheet source in
/// device.cpp and in docs/design/device-presets.md. HostSpec holds the host's NVMe bandwidth.
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

/// Dense peak arithmetic rates in FLOP/s for the dtypes the runtime computes in: without 2:4
/// structured sparsity (the datasheets' starred "with sparsity" figures are twice these). A time
/// model divides a kernel's FLOPs by one of them (docs/design/device-presets.md). All 0 when
/// unknown.
struct PeakFlops {
  /// FP32 on the CUDA cores, no tensor cores: elementwise kernels, and f32 matmuls with TF32 off.
  double fp32 = 0.0;
  /// TF32 on tensor cores: an f32 matmul with TF32 allowed. On a part without TF32 tensor cores
  /// (before Ampere) the FP32 rate.
  double tf32_tensor = 0.0;
  /// BF16 on tensor cores with FP32 accumulate. On a part without BF16 tensor cores (before
  /// Ampere) the FP32 rate.
  double bf16_tensor = 0.0;
  /// FP16 on tensor cores with FP32 accumulate, as mixed-precision training runs it.
  double fp16_tensor = 0.0;
};

/// Capacity, bandwidths and peak rates of a device, for the allocator and the stream clock (a
/// copy's time over the host link; a meta kernel's roofline, common/nn/roofline.h).
/// A device given by size (`sim:2GiB`) or without a spec knows only its capacity: its bandwidths,
/// peak rates and link name are 0 and empty.
struct DeviceSpec {
  /// The preset name (e.g. "a100-40g") or the size as written (e.g. "2GiB"); empty for cpu/cuda.
  std::string spec_name;
  /// Device memory capacity in bytes (0 = no capacity, as on cpu).
  std::uint64_t capacity_bytes = 0;
  /// Device-memory bandwidth in bytes per second (0 when unknown).
  double memory_bandwidth_bytes_per_s = 0.0;
  /// Dense peak FLOP/s per dtype (all 0 when unknown).
  PeakFlops peak_flops;
  /// The host link, e.g. "PCIe 4.0 x16" or "NVLink-C2C" (empty when unknown).
  std::string host_link_name;
  /// Host-to-device bandwidth of the host link in bytes per second (0 when unknown).
  double host_to_device_bytes_per_s = 0.0;
  /// Device-to-host bandwidth of the host link in bytes per second (0 when unknown).
  double device_to_host_bytes_per_s = 0.0;
};

/// A host's memory bandwidth, 204.8 GB/s: one server socket with eight channels of DDR4-3200
/// (8 channels x 3200 MT/s x 8 bytes). The theoretical figure of a typical host, not a
/// measurement: a CPU's optimizer step reaches less (bench/compare_cpu_adamw.py measures this
/// machine's). What a meta device's host takes its optimizer update at (`--host-memory-gbps`).
inline constexpr double kTypicalHostMemoryBytesPerS = 204.8e9;
/// A typical PCIe 4.0 x4 NVMe SSD's sequential read, 7 GB/s: the x4 link carries 7.88 GB/s per
/// direction (4 lanes x 16 GT/s x 128/130 / 8) and fast drives of that class are rated near 7 GB/s.
/// A typical figure, not a measurement of any drive.
inline constexpr double kTypicalNvmeReadBytesPerS = 7.0e9;
/// The same class of drive's sequential write, 5 GB/s: rated writes vary more from drive to drive
/// than reads, and fall once a drive's SLC cache is full. A typical figure, not a measurement.
inline constexpr double kTypicalNvmeWriteBytesPerS = 5.0e9;

/// The host's side of a run, for later time models: its NVMe drive, where ZeRO-Infinity-style
/// offload puts what does not fit in host RAM. Host RAM's capacity is a budget of its own
/// (host_memory.h); this is a plain value a flag can override, beside the device's DeviceSpec.
struct HostSpec {
  /// Sequential NVMe read bandwidth in bytes per second (a typical drive's by default).
  double nvme_read_bytes_per_s = kTypicalNvmeReadBytesPerS;
  /// Sequential NVMe write bandwidth in bytes per second (a typical drive's by default).
  double nvme_write_bytes_per_s = kTypicalNvmeWriteBytesPerS;
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

/// A named simulated-GPU preset. Every figure comes from the part's NVIDIA datasheet or
/// whitepaper, cited beside it in device.cpp.
struct DevicePreset {
  /// e.g. "a100-40g".
  std::string_view name;
  /// The full product name, e.g. "NVIDIA A100 40GB SXM4".
  std::string_view product;
  /// Capacity in bytes.
  std::uint64_t capacity_bytes;
  /// Device-memory bandwidth in bytes per second.
  double memory_bandwidth_bytes_per_s;
  /// Dense peak FLOP/s per dtype.
  PeakFlops peak_flops;
  /// The host link, e.g. "PCIe 4.0 x16" or "NVLink-C2C".
  std::string_view host_link_name;
  /// Host-to-device bandwidth of the host link in bytes per second.
  double host_to_device_bytes_per_s;
  /// Device-to-host bandwidth of the host link in bytes per second.
  double device_to_host_bytes_per_s;
};

/// \return the simulated-GPU presets, smallest capacity first.
const std::vector<DevicePreset>& device_presets();

/// \return the presets' names in device_presets() order, comma-separated ("t4-16g, rtx4090-24g,
/// ..."), for help texts and messages.
std::string device_preset_names();

/// Sizes such as "2GiB" (common/platform/byte_size.h), as `--device sim:SIZE` takes them.
using platform::parse_size_bytes;

/// Sets the dense peaks of \p base that \p text lists, `DTYPE=TFLOPS` separated by commas
/// (`--peak-tflops fp32=19.5,bf16=312`): DTYPE one of fp32, bf16, fp16 (not tf32: the roofline
/// runs fp32 matmuls without TF32, as PyTorch by default), TFLOPS in (0, 1e6].
/// \return \p base with those peaks replaced, in FLOP/s.
/// \throws vramlab::UsageError naming the item for an empty list or item, an unknown or repeated
/// dtype, tf32, or a rate that is not a number in range.
PeakFlops parse_peak_tflops(std::string_view text, PeakFlops base);

/// Parses a device string (see the file comment for the grammar).
/// \param text e.g. "sim:a100-80g", "sim:2GiB", "meta", "cuda:1".
/// \return the device with its spec filled in.
/// \throws vramlab::UsageError naming \p text when it is not a valid device.
Device parse_device(std::string_view text);

}  // namespace vramlab::memory
