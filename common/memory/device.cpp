// Device strings, presets and size parsing.
#include "common/memory/device.h"

#include <string>

#include "common/platform/errors.h"

namespace vramlab::memory {
namespace {

constexpr std::uint64_t kGiB = 1ULL << 30;
constexpr std::uint64_t kMetaUnlimitedBytes = 1ULL << 60;  // 1 EiB: the allocator's hard limit
// PCIe x16 per direction: GT/s x 16 lanes x 128/130 (the 128b/130b encoding) / 8 bits, with 8, 16
// and 32 GT/s per lane for generations 3, 4 and 5 (PCI Express Base Specifications 3.0, 4.0, 5.0).
constexpr double kPcieGen3BytesPerS = 15.75e9;
constexpr double kPcieGen4BytesPerS = 31.5e9;
constexpr double kPcieGen5BytesPerS = 63.0e9;
constexpr std::string_view kDefaultSimSpec = "24GiB";

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
      return DeviceSpec{std::string(spec_text), preset.capacity_bytes,
                        preset.memory_bandwidth_bytes_per_s,
                        preset.host_link_bandwidth_bytes_per_s};
    }
  }
  try {
    return DeviceSpec{std::string(spec_text), parse_size_bytes(spec_text), 0.0, 0.0};
  } catch (const UsageError&) {
    std::string presets;
    for (const DevicePreset& preset : device_presets()) {
      presets += (presets.empty() ? "" : ", ") + std::string(preset.name);
    }
    throw UsageError("invalid device '" + std::string(device_text) + "': '" +
                     std::string(spec_text) + "' is neither a preset (" + presets +
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
  // Memory bandwidths as NVIDIA publishes them: A100 40GB SXM4 1,555 GB/s and 80GB SXM4
  // 2,039 GB/s (NVIDIA A100 Tensor Core GPU datasheet; several copies agree); H100 SXM5 3.35 TB/s
  // and H200 4.8 TB/s (NVIDIA's H100 and H200 product pages, not re-checked against the
  // datasheets); T4 320 GB/s on PCIe Gen3 and GeForce RTX 4090 1,008 GB/s on PCIe Gen4 (NVIDIA's
  // product pages). Host links are PCIe x16 per direction.
  static const std::vector<DevicePreset> presets = {
      {"t4-16g", "NVIDIA T4 16GB", 16 * kGiB, 320e9, kPcieGen3BytesPerS},
      {"rtx4090-24g", "NVIDIA GeForce RTX 4090 24GB", 24 * kGiB, 1008e9, kPcieGen4BytesPerS},
      {"a100-40g", "NVIDIA A100 40GB SXM4", 40 * kGiB, 1555e9, kPcieGen4BytesPerS},
      {"a100-80g", "NVIDIA A100 80GB SXM4", 80 * kGiB, 2039e9, kPcieGen4BytesPerS},
      {"h100-80g", "NVIDIA H100 80GB SXM5", 80 * kGiB, 3.35e12, kPcieGen5BytesPerS},
      {"h200-141g", "NVIDIA H200 141GB SXM", 141 * kGiB, 4.8e12, kPcieGen5BytesPerS},
  };
  return presets;
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
