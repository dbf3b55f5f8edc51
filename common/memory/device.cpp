// Device strings, presets and size parsing.
#include "common/memory/device.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "common/platform/errors.h"
#include "common/platform/printable.h"

namespace vramlab::memory {
namespace {

constexpr std::uint64_t kGiB = 1ULL << 30;
constexpr std::uint64_t kMetaUnlimitedBytes = 1ULL << 60;  // 1 EiB: the allocator's hard limit
constexpr std::string_view kDefaultSimSpec = "24GiB";

// Theoretical bandwidth of a PCIe x16 link per direction, in bytes per second: GT/s per lane x 16
// lanes x 128/130 (the 128b/130b encoding of generations 3 to 5) / 8 bits, with 8, 16 and 32 GT/s
// per lane for generations 3, 4 and 5 (PCI Express Base Specifications 3.0, 4.0 and 5.0). That is
// 15.75, 31.5 and 63.0 GB/s rounded (15.754, 31.508, 63.015 GB/s). NVIDIA's datasheets quote both
// directions together before the encoding: "32 GB/sec" for the T4's Gen3, "PCIe Gen4: 64GB/s" for
// the A100, "PCIe Gen5: 128GB/s" for the H100 and H200 (GT/s x 16 / 8 x 2).
constexpr double pcie_x16_bytes_per_s(double giga_transfers_per_s) {
  return giga_transfers_per_s * 1e9 * 16 * 128.0 / 130.0 / 8;
}
constexpr double kPcieGen3BytesPerS = pcie_x16_bytes_per_s(8);
constexpr double kPcieGen4BytesPerS = pcie_x16_bytes_per_s(16);
constexpr double kPcieGen5BytesPerS = pcie_x16_bytes_per_s(32);
// NVLink-C2C between the Grace CPU and the Hopper GPU of a GH200: 900 GB/s in both directions
// together, 450 GB/s each way (NVIDIA GH200 Grace Hopper Superchip datasheet, "NVLink-C2C
// CPU-to-GPU bandwidth 900GB/s bidirectional"; NVIDIA Grace Hopper Superchip Architecture
// whitepaper: "900 GB/s total bandwidth (450 GB/s per direction)").
constexpr double kNvlinkC2cBytesPerS = 450e9;

// Dense peak FLOP/s per part (PeakFlops), from the datasheet or whitepaper rows named. Where a
// datasheet prints "X | Y*" the first figure is dense and the starred one with 2:4 sparsity.

// NVIDIA T4 (Turing TU104). NVIDIA T4 Tensor Core GPU datasheet, specifications table:
// "Single-Precision 8.1 TFLOPS" and "Mixed-Precision (FP16/FP32) 65 TFLOPS" (FP16 tensor cores
// with FP32 accumulate). Turing has no TF32 or BF16 tensor cores: an f32 matmul runs in FP32 with
// TF32 allowed or not, and BF16 math is emulated, at best at the FP32 rate. Both get the FP32 rate
// here, an assumption of ours, not a datasheet row.
constexpr PeakFlops kT4Peak{
    .fp32 = 8.1e12, .tf32_tensor = 8.1e12, .bf16_tensor = 8.1e12, .fp16_tensor = 65e12};
// NVIDIA GeForce RTX 4090 (Ada AD102). NVIDIA Ada GPU Architecture whitepaper, the GeForce RTX 4090
// column of its specifications table (dense/sparse pairs): "Peak FP32 TFLOPS (non-Tensor)" 82.6,
// "Peak TF32 Tensor TFLOPS" 82.6, "Peak BF16 Tensor TFLOPS with FP32 Accumulate" 165.2 and "Peak
// FP16 Tensor TFLOPS with FP32 Accumulate" 165.2. A GeForce part runs FP16 with FP16 accumulate at
// twice that (330.3), but mixed-precision training accumulates in FP32 (autocast's matmuls use
// cuBLAS's CUBLAS_COMPUTE_32F), so 165.2 is what a training matmul gets.
constexpr PeakFlops kRtx4090Peak{
    .fp32 = 82.6e12, .tf32_tensor = 82.6e12, .bf16_tensor = 165.2e12, .fp16_tensor = 165.2e12};
// NVIDIA A100 SXM4 (Ampere GA100), 40GB and 80GB alike. NVIDIA A100 Tensor Core GPU datasheet,
// specifications table: "FP32 19.5 TFLOPS", "Tensor Float 32 (TF32) 156 TFLOPS | 312 TFLOPS*",
// "BFLOAT16 Tensor Core 312 TFLOPS | 624 TFLOPS*", "FP16 Tensor Core 312 TFLOPS | 624 TFLOPS*".
constexpr PeakFlops kA100Peak{
    .fp32 = 19.5e12, .tf32_tensor = 156e12, .bf16_tensor = 312e12, .fp16_tensor = 312e12};
// The SXM-class Hopper GPU (GH100, 132 SMs): H100 SXM5, H200 SXM and the GH200's GPU alike. NVIDIA
// H100 Tensor Core GPU Architecture whitepaper, H100 SXM5 column of its A100/H100 comparison table:
// "Peak FP32 TFLOPS (non-Tensor)" 66.9, "Peak TF32 Tensor TFLOPS" 494.7, "Peak BF16 Tensor TFLOPS
// with FP32 Accumulate" and "Peak FP16 Tensor TFLOPS with FP32 Accumulate" 989.4. The datasheets
// round the same figures: the H100 and H200 datasheets print "FP32 67 teraFLOPS" and only the
// sparse tensor figures (TF32 989*, BF16 and FP16 1,979*, "* With sparsity"), the GH200 datasheet
// prints 67, 494 and 990 dense.
constexpr PeakFlops kHopperSxmPeak{
    .fp32 = 66.9e12, .tf32_tensor = 494.7e12, .bf16_tensor = 989.4e12, .fp16_tensor = 989.4e12};

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::vector<std::string_view> split_colons(std::string_view text) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return parts;
}

DeviceSpec spec_from_text(std::string_view spec_text, std::string_view device_text) {
  for (const DevicePreset& preset : device_presets()) {
    if (preset.name == spec_text) {
      return DeviceSpec{.spec_name = std::string(spec_text),
                        .capacity_bytes = preset.capacity_bytes,
                        .memory_bandwidth_bytes_per_s = preset.memory_bandwidth_bytes_per_s,
                        .peak_flops = preset.peak_flops,
                        .host_link_name = std::string(preset.host_link_name),
                        .host_to_device_bytes_per_s = preset.host_to_device_bytes_per_s,
                        .device_to_host_bytes_per_s = preset.device_to_host_bytes_per_s};
    }
  }
  try {
    DeviceSpec spec;  // a size alone: no bandwidths, rates or link
    spec.spec_name = std::string(spec_text);
    spec.capacity_bytes = parse_size_bytes(spec_text);
    return spec;
  } catch (const UsageError&) {
    throw UsageError("invalid device '" + std::string(device_text) + "': '" +
                     std::string(spec_text) + "' is neither a preset (" + device_preset_names() +
                     ") nor a size such as 2GiB, 512MiB or 1.5GB");
  }
}

}  // namespace

std::string_view device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cpu:
      return "cpu";
    case DeviceKind::sim:
      return "sim";
    case DeviceKind::meta:
      return "meta";
    case DeviceKind::cuda:
      return "cuda";
  }
  return "cpu";
}

std::string Device::name() const {
  std::string text(device_kind_name(kind));
  if (kind == DeviceKind::cpu) return text;
  if (kind == DeviceKind::cuda || index != 0) text.append(1, ':').append(std::to_string(index));
  if (kind != DeviceKind::cuda && !spec.spec_name.empty())
    text.append(1, ':').append(spec.spec_name);
  return text;
}

const std::vector<DevicePreset>& device_presets() {
  // Each preset's memory bandwidth and host link as NVIDIA publishes them, with the source beside
  // it; the peak rates and the link bandwidths are the constants above, with theirs.
  static const std::vector<DevicePreset> presets = {
      {.name = "t4-16g",
       .product = "NVIDIA T4 16GB",
       .capacity_bytes = 16 * kGiB,
       // NVIDIA T4 product brief, Table 2 "Memory Specifications": "Peak memory bandwidth up to
       // 320 GBytes/s" (256-bit GDDR6 at 10 Gbps); the T4 datasheet's table rounds it to 300.
       .memory_bandwidth_bytes_per_s = 320e9,
       .peak_flops = kT4Peak,
       // T4 datasheet: "System Interface x16 PCIe Gen3", "Interconnect Bandwidth 32 GB/sec".
       .host_link_name = "PCIe 3.0 x16",
       .host_to_device_bytes_per_s = kPcieGen3BytesPerS,
       .device_to_host_bytes_per_s = kPcieGen3BytesPerS},
      {.name = "rtx4090-24g",
       .product = "NVIDIA GeForce RTX 4090 24GB",
       .capacity_bytes = 24 * kGiB,
       // Ada whitepaper, GeForce RTX 4090 column: "Memory Bandwidth 1008 GB/sec".
       .memory_bandwidth_bytes_per_s = 1008e9,
       .peak_flops = kRtx4090Peak,
       // NVIDIA's GeForce RTX 4090 specifications: PCI Express Gen 4.
       .host_link_name = "PCIe 4.0 x16",
       .host_to_device_bytes_per_s = kPcieGen4BytesPerS,
       .device_to_host_bytes_per_s = kPcieGen4BytesPerS},
      {.name = "a100-40g",
       .product = "NVIDIA A100 40GB SXM4",
       .capacity_bytes = 40 * kGiB,
       // NVIDIA A100 Tensor Core GPU datasheet (the 40GB edition), "GPU Memory Bandwidth
       // 1,555GB/s"; the same in the NVIDIA A100 Tensor Core GPU Architecture whitepaper.
       .memory_bandwidth_bytes_per_s = 1555e9,
       .peak_flops = kA100Peak,
       // A100 datasheet, "Interconnect: ... PCIe Gen4: 64GB/s".
       .host_link_name = "PCIe 4.0 x16",
       .host_to_device_bytes_per_s = kPcieGen4BytesPerS,
       .device_to_host_bytes_per_s = kPcieGen4BytesPerS},
      {.name = "a100-80g",
       .product = "NVIDIA A100 80GB SXM4",
       .capacity_bytes = 80 * kGiB,
       // A100 datasheet, A100 80GB SXM column: "GPU Memory Bandwidth 2,039GB/s".
       .memory_bandwidth_bytes_per_s = 2039e9,
       .peak_flops = kA100Peak,
       // A100 datasheet, "PCIe Gen4: 64GB/s".
       .host_link_name = "PCIe 4.0 x16",
       .host_to_device_bytes_per_s = kPcieGen4BytesPerS,
       .device_to_host_bytes_per_s = kPcieGen4BytesPerS},
      {.name = "h100-80g",
       .product = "NVIDIA H100 80GB SXM5",
       .capacity_bytes = 80 * kGiB,
       // NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column: "GPU memory bandwidth 3.35TB/s".
       .memory_bandwidth_bytes_per_s = 3.35e12,
       .peak_flops = kHopperSxmPeak,
       // H100 datasheet, H100 SXM column: "Interconnect: NVLink 900GB/s, PCIe Gen5: 128GB/s".
       .host_link_name = "PCIe 5.0 x16",
       .host_to_device_bytes_per_s = kPcieGen5BytesPerS,
       .device_to_host_bytes_per_s = kPcieGen5BytesPerS},
      {.name = "gh200-96g",
       .product = "NVIDIA GH200 Grace Hopper Superchip, 96GB HBM3",
       .capacity_bytes = 96 * kGiB,
       // NVIDIA GH200 Grace Hopper Superchip datasheet: "GPU memory 96GB HBM3", "GPU memory
       // bandwidth up to 4TB/s" (the 144GB HBM3e edition: up to 4.9TB/s).
       .memory_bandwidth_bytes_per_s = 4.0e12,
       .peak_flops = kHopperSxmPeak,
       .host_link_name = "NVLink-C2C",
       .host_to_device_bytes_per_s = kNvlinkC2cBytesPerS,
       .device_to_host_bytes_per_s = kNvlinkC2cBytesPerS},
      {.name = "h200-141g",
       .product = "NVIDIA H200 141GB SXM",
       .capacity_bytes = 141 * kGiB,
       // NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column: "GPU memory 141GB", "GPU memory
       // bandwidth 4.8TB/s".
       .memory_bandwidth_bytes_per_s = 4.8e12,
       .peak_flops = kHopperSxmPeak,
       // H200 datasheet, H200 SXM column: "Interconnect: NVIDIA NVLink 900GB/s, PCIe Gen5:
       // 128GB/s".
       .host_link_name = "PCIe 5.0 x16",
       .host_to_device_bytes_per_s = kPcieGen5BytesPerS,
       .device_to_host_bytes_per_s = kPcieGen5BytesPerS},
  };
  return presets;
}

std::string device_preset_names() {
  std::string names;
  for (const DevicePreset& preset : device_presets())
    names.append(names.empty() ? "" : ", ").append(preset.name);
  return names;
}

PeakFlops parse_peak_tflops(std::string_view text, PeakFlops base) {
  const std::string shown = platform::printable(text);
  auto bad = [&](const std::string& item, const std::string& why) {
    return UsageError("--peak-tflops '" + shown +
                      "': " + (item.empty() ? "an empty item " : "'" + item + "' ") + why +
                      " (expected DTYPE=TFLOPS[,...], DTYPE one of fp32, bf16, fp16)");
  };
  std::vector<std::string_view> seen;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const std::string item_shown = platform::printable(item);
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) throw bad(item_shown, "has no '='");
    const std::string_view dtype = item.substr(0, equals);
    const std::string value(item.substr(equals + 1));
    // No tf32: the roofline runs fp32 matmuls without TF32, as PyTorch does by default, so a TF32
    // peak would be accepted and never used.
    if (dtype == "tf32")
      throw bad(item_shown,
                "sets a peak nothing uses: fp32 matmuls run without TF32 here, as "
                "PyTorch's do by default; set fp32");
    double* peak = dtype == "fp32"   ? &base.fp32
                   : dtype == "bf16" ? &base.bf16_tensor
                   : dtype == "fp16" ? &base.fp16_tensor
                                     : nullptr;
    if (peak == nullptr) throw bad(item_shown, "names no dtype with a peak");
    if (std::find(seen.begin(), seen.end(), dtype) != seen.end())
      throw bad(item_shown, "repeats " + std::string(dtype));
    seen.push_back(dtype);
    char* end = nullptr;
    const double tflops = value.empty() ? 0.0 : std::strtod(value.c_str(), &end);
    // Above 1e6 TFLOP/s no device exists; the bound also keeps FLOPs / peak away from denormals.
    if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(tflops) ||
        tflops <= 0.0 || tflops > 1e6)
      throw bad(item_shown, "needs a rate in TFLOP/s in (0, 1e6]");
    *peak = tflops * 1e12;
    start = comma + 1;
  }
  return base;
}

Device parse_device(std::string_view text) {
  const std::vector<std::string_view> parts = split_colons(text);
  const std::string_view kind_text = parts[0];
  Device device;
  auto bad = [&](const std::string& why) {
    return UsageError("invalid device '" + std::string(text) + "': " + why +
                      " (expected cpu, sim[:INDEX][:PRESET|:SIZE], meta[:INDEX][:PRESET|:SIZE] or "
                      "cuda[:INDEX])");
  };
  std::size_t next = 1;
  auto take_index = [&] {
    if (next < parts.size() && all_digits(parts[next])) {
      if (parts[next].size() > 6) throw bad("index too large");
      device.index = std::stoll(std::string(parts[next]));
      ++next;
    }
  };
  if (kind_text == "cpu") {
    device.kind = DeviceKind::cpu;
    if (parts.size() != 1) throw bad("cpu takes no index or spec");
    return device;
  }
  if (kind_text == "cuda") {
    device.kind = DeviceKind::cuda;
    take_index();
    if (next != parts.size()) throw bad("cuda takes only an index");
    return device;
  }
  if (kind_text == "sim" || kind_text == "meta") {
    device.kind = kind_text == "sim" ? DeviceKind::sim : DeviceKind::meta;
    take_index();
    if (next < parts.size()) {
      if (parts[next].empty()) throw bad("empty spec");
      device.spec = spec_from_text(parts[next], text);
      ++next;
    } else if (device.kind == DeviceKind::sim) {
      device.spec = spec_from_text(kDefaultSimSpec, text);
    } else {
      device.spec.capacity_bytes = kMetaUnlimitedBytes;
    }
    if (next != parts.size()) throw bad("too many ':' parts");
    return device;
  }
  throw bad("unknown device kind '" + std::string(kind_text) + "'");
}

}  // namespace vramlab::memory
