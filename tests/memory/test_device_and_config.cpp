// Device strings, presets, the configuration string and the device registry.
//   build/tests/bin/test_memory --gtest_filter='ParseDevice.*:HostSpec.*:AllocConf.*:MakeCaching*'
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <string_view>

#include "common/memory/make_caching_allocator.h"
#include "common/platform/errors.h"
#include "tests/memory/allocator_test_util.h"

namespace vramlab::memory {
namespace {

using testing::kGiB;
using testing::kMiB;

std::string usage_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const UsageError& error) {
    return error.what();
  }
  return "(no UsageError)";
}

// A PCIe x16 link's theoretical bandwidth per direction, from the specification's figures:
// 8 GT/s per lane for generation 3, doubling with each generation, 128b/130b encoding.
double pcie_x16_per_direction(int generation) {
  const double transfers_per_s = 8e9 * static_cast<double>(1 << (generation - 3));
  return transfers_per_s * 16 / 8 * 128 / 130;
}

TEST(ParseDevice, PresetsCarryCapacityAndBandwidths) {
  const Device a100 = parse_device("sim:a100-40g");
  EXPECT_EQ(a100.kind, DeviceKind::sim);
  EXPECT_EQ(a100.spec.capacity_bytes, 40 * kGiB);
  EXPECT_DOUBLE_EQ(a100.spec.memory_bandwidth_bytes_per_s, 1555e9);
  EXPECT_EQ(a100.spec.host_link_name, "PCIe 4.0 x16");
  EXPECT_NEAR(a100.spec.host_to_device_bytes_per_s, 31.5e9, 0.01e9);
  EXPECT_DOUBLE_EQ(a100.spec.peak_flops.bf16_tensor, 312e12);
  EXPECT_DOUBLE_EQ(a100.spec.peak_flops.fp32, 19.5e12);
  EXPECT_EQ(a100.name(), "sim:a100-40g");
  for (const char* preset :
       {"t4-16g", "rtx4090-24g", "a100-40g", "a100-80g", "h100-80g", "gh200-96g", "h200-141g"}) {
    const Device device = parse_device(std::string("sim:") + preset);
    EXPECT_GT(device.spec.capacity_bytes, 0u) << preset;
    EXPECT_GT(device.spec.memory_bandwidth_bytes_per_s, device.spec.host_to_device_bytes_per_s)
        << preset;
  }
  EXPECT_EQ(parse_device("sim:h200-141g").spec.capacity_bytes, 141 * kGiB);
}

TEST(ParseDevice, EveryPresetHasEveryFigure) {
  ASSERT_GE(device_presets().size(), 7u);
  for (const DevicePreset& preset : device_presets()) {
    SCOPED_TRACE(std::string(preset.name));
    EXPECT_FALSE(preset.product.empty());
    EXPECT_GT(preset.capacity_bytes, 0u);
    EXPECT_GT(preset.memory_bandwidth_bytes_per_s, 0.0);
    EXPECT_GT(preset.peak_flops.fp32, 0.0);
    EXPECT_GT(preset.peak_flops.tf32_tensor, 0.0);
    EXPECT_GT(preset.peak_flops.bf16_tensor, 0.0);
    EXPECT_GT(preset.peak_flops.fp16_tensor, 0.0);
    EXPECT_FALSE(preset.host_link_name.empty());
    EXPECT_GT(preset.host_to_device_bytes_per_s, 0.0);
    EXPECT_GT(preset.device_to_host_bytes_per_s, 0.0);
    // The device string carries the same figures into the spec.
    const DeviceSpec spec = parse_device("meta:" + std::string(preset.name)).spec;
    EXPECT_EQ(spec.capacity_bytes, preset.capacity_bytes);
    EXPECT_EQ(spec.memory_bandwidth_bytes_per_s, preset.memory_bandwidth_bytes_per_s);
    EXPECT_EQ(spec.peak_flops.fp32, preset.peak_flops.fp32);
    EXPECT_EQ(spec.peak_flops.tf32_tensor, preset.peak_flops.tf32_tensor);
    EXPECT_EQ(spec.peak_flops.bf16_tensor, preset.peak_flops.bf16_tensor);
    EXPECT_EQ(spec.peak_flops.fp16_tensor, preset.peak_flops.fp16_tensor);
    EXPECT_EQ(spec.host_link_name, preset.host_link_name);
    EXPECT_EQ(spec.host_to_device_bytes_per_s, preset.host_to_device_bytes_per_s);
    EXPECT_EQ(spec.device_to_host_bytes_per_s, preset.device_to_host_bytes_per_s);
  }
}

TEST(ParseDevice, PresetsAreSmallestFirstWithUniqueNames) {
  const std::vector<DevicePreset>& presets = device_presets();
  for (size_t i = 1; i < presets.size(); ++i) {
    EXPECT_LE(presets[i - 1].capacity_bytes, presets[i].capacity_bytes) << presets[i].name;
    for (size_t j = 0; j < i; ++j) EXPECT_NE(presets[j].name, presets[i].name);
  }
}

TEST(ParseDevice, TensorCoresAreNeverSlowerThanFp32) {
  for (const DevicePreset& preset : device_presets()) {
    SCOPED_TRACE(std::string(preset.name));
    const PeakFlops& peak = preset.peak_flops;
    EXPECT_GE(peak.tf32_tensor, peak.fp32);
    EXPECT_GE(peak.bf16_tensor, peak.fp32);
    EXPECT_GE(peak.fp16_tensor, peak.fp32);
    EXPECT_GE(peak.bf16_tensor, peak.tf32_tensor);
    // Every preset has FP16 tensor cores, and all but Turing's T4 BF16 ones too (the T4 runs
    // BF16 at its FP32 rate); tensor cores are at least twice the FP32 rate (the RTX 4090's
    // FP32-accumulate rate is exactly twice, the others' 8x and more).
    EXPECT_GE(peak.fp16_tensor, 2 * peak.fp32);
    if (preset.name != "t4-16g") {
      EXPECT_GE(peak.bf16_tensor, 2 * peak.fp32);
    }
  }
}

TEST(ParseDevice, PcieLinksCarryTheirGenerationsBandwidthEachWay) {
  int pcie_presets = 0;
  std::set<int> generations;
  for (const DevicePreset& preset : device_presets()) {
    SCOPED_TRACE(std::string(preset.name));
    const std::string_view link = preset.host_link_name;
    if (!link.starts_with("PCIe ")) continue;
    // "PCIe N.0 x16": the generation, then the lane count.
    ASSERT_EQ(link.size(), std::string_view("PCIe 4.0 x16").size());
    ASSERT_TRUE(link.ends_with(".0 x16"));
    const int generation = link[5] - '0';
    ASSERT_GE(generation, 3);
    ASSERT_LE(generation, 5);
    EXPECT_DOUBLE_EQ(preset.host_to_device_bytes_per_s, pcie_x16_per_direction(generation));
    EXPECT_DOUBLE_EQ(preset.device_to_host_bytes_per_s, pcie_x16_per_direction(generation));
    ++pcie_presets;
    generations.insert(generation);
  }
  EXPECT_EQ(pcie_presets, 6);
  EXPECT_EQ(generations, (std::set<int>{3, 4, 5}));
  // The rounded figures everyone quotes.
  EXPECT_NEAR(pcie_x16_per_direction(3), 15.75e9, 0.01e9);
  EXPECT_NEAR(pcie_x16_per_direction(4), 31.5e9, 0.01e9);
  EXPECT_NEAR(pcie_x16_per_direction(5), 63.0e9, 0.02e9);
  EXPECT_EQ(parse_device("sim:t4-16g").spec.host_link_name, "PCIe 3.0 x16");
  EXPECT_EQ(parse_device("sim:rtx4090-24g").spec.host_link_name, "PCIe 4.0 x16");
  EXPECT_EQ(parse_device("sim:h100-80g").spec.host_link_name, "PCIe 5.0 x16");
}

TEST(ParseDevice, Gh200IsAHopperOnNvlinkC2c) {
  const Device gh200 = parse_device("sim:gh200-96g");
  EXPECT_EQ(gh200.name(), "sim:gh200-96g");
  EXPECT_EQ(gh200.spec.capacity_bytes, 96 * kGiB);
  EXPECT_DOUBLE_EQ(gh200.spec.memory_bandwidth_bytes_per_s, 4.0e12);
  EXPECT_EQ(gh200.spec.host_link_name, "NVLink-C2C");
  // 900 GB/s both directions together.
  EXPECT_DOUBLE_EQ(gh200.spec.host_to_device_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(gh200.spec.device_to_host_bytes_per_s, 450e9);
  // Its GPU is an H100: the same peak rates (dense BF16 989.4 TFLOPS), 7x a PCIe 5.0 link.
  const DeviceSpec h100 = parse_device("sim:h100-80g").spec;
  EXPECT_DOUBLE_EQ(gh200.spec.peak_flops.bf16_tensor, 989.4e12);
  EXPECT_EQ(gh200.spec.peak_flops.fp32, h100.peak_flops.fp32);
  EXPECT_EQ(gh200.spec.peak_flops.tf32_tensor, h100.peak_flops.tf32_tensor);
  EXPECT_EQ(gh200.spec.peak_flops.fp16_tensor, h100.peak_flops.fp16_tensor);
  EXPECT_GT(gh200.spec.host_to_device_bytes_per_s, 7 * h100.host_to_device_bytes_per_s);
  EXPECT_EQ(parse_device("meta:gh200-96g").spec.capacity_bytes, 96 * kGiB);
}

TEST(ParseDevice, SizedDevicesKnowOnlyTheirCapacity) {
  for (const char* text : {"sim:2GiB", "meta", "cpu", "cuda:0"}) {
    const DeviceSpec spec = parse_device(text).spec;
    EXPECT_EQ(spec.memory_bandwidth_bytes_per_s, 0.0) << text;
    EXPECT_EQ(spec.peak_flops.bf16_tensor, 0.0) << text;
    EXPECT_EQ(spec.host_link_name, "") << text;
    EXPECT_EQ(spec.host_to_device_bytes_per_s, 0.0) << text;
    EXPECT_EQ(spec.device_to_host_bytes_per_s, 0.0) << text;
  }
}

TEST(ParseDevice, UnknownPresetErrorListsEveryPreset) {
  const std::string message = usage_error_of([] { parse_device("sim:gh100-96g"); });
  EXPECT_NE(message.find(device_preset_names()), std::string::npos) << message;
  for (const DevicePreset& preset : device_presets())
    EXPECT_NE(message.find(std::string(preset.name)), std::string::npos) << message;
}

TEST(HostSpec, NvmeDefaultsAreATypicalPcie4Drive) {
  const HostSpec host;
  EXPECT_DOUBLE_EQ(host.nvme_read_bytes_per_s, 7.0e9);
  EXPECT_DOUBLE_EQ(host.nvme_write_bytes_per_s, 5.0e9);
  EXPECT_LE(host.nvme_write_bytes_per_s, host.nvme_read_bytes_per_s);
  // Within what a PCIe 4.0 x4 link can carry each way (a quarter of x16).
  EXPECT_LT(host.nvme_read_bytes_per_s, pcie_x16_per_direction(4) / 4);
  // Far below every preset's host link: an NVMe tier is the slowest one.
  for (const DevicePreset& preset : device_presets())
    EXPECT_LT(host.nvme_read_bytes_per_s, preset.host_to_device_bytes_per_s) << preset.name;
}

TEST(ParseDevice, ExplicitSizesUseBinaryOrDecimalUnitsAsWritten) {
  EXPECT_EQ(parse_device("sim:2GiB").spec.capacity_bytes, 2 * kGiB);
  EXPECT_EQ(parse_device("sim:512MiB").spec.capacity_bytes, 512 * kMiB);
  EXPECT_EQ(parse_device("sim:1.5GB").spec.capacity_bytes, 1500000000u);
  EXPECT_EQ(parse_device("sim:4096B").spec.capacity_bytes, 4096u);
  EXPECT_EQ(parse_device("sim:2GiB").name(), "sim:2GiB");
}

TEST(ParseDevice, IndexesAndDefaults) {
  const Device second = parse_device("sim:1:t4-16g");
  EXPECT_EQ(second.index, 1);
  EXPECT_EQ(second.name(), "sim:1:t4-16g");
  EXPECT_EQ(parse_device("sim").spec.capacity_bytes, 24 * kGiB);
  EXPECT_EQ(parse_device("cuda:3").index, 3);
  EXPECT_EQ(parse_device("cuda").name(), "cuda:0");
  EXPECT_EQ(parse_device("cpu").kind, DeviceKind::cpu);
  EXPECT_EQ(parse_device("meta").spec.capacity_bytes, 1ULL << 60);
  EXPECT_EQ(parse_device("meta:1TiB").spec.capacity_bytes, 1ULL << 40);
}

TEST(ParseDevice, BadStringsAreNamedInTheError) {
  for (const char* bad : {"gpu", "sim:", "sim:fast", "sim:0GiB", "sim:-1GiB", "sim:2XB", "cpu:0",
                          "cuda:x", "sim:1:2:3", "", "sim:nanGiB", "sim:infGiB"}) {
    const std::string message = usage_error_of([&] { parse_device(bad); });
    std::string quoted(1, '\'');
    quoted.append(bad).append(1, '\'');
    EXPECT_NE(message.find(quoted), std::string::npos) << bad << " -> " << message;
  }
}

TEST(AllocConf, ParsesPyTorchKeys) {
  const AllocatorConfig config = parse_alloc_conf(
      "max_split_size_mb:128, garbage_collection_threshold:0.6,expandable_segments:True,"
      "roundup_power2_divisions:[256:4,>:8],max_non_split_rounding_mb:64,backend:native");
  EXPECT_EQ(config.max_split_size_bytes, 128 * kMiB);
  EXPECT_DOUBLE_EQ(config.garbage_collection_threshold, 0.6);
  EXPECT_TRUE(config.expandable_segments);
  EXPECT_EQ(config.max_non_split_rounding_bytes, 64 * kMiB);
  EXPECT_EQ(config.divisions_for(kMiB), 4u);
  EXPECT_EQ(config.divisions_for(256 * kMiB), 4u);
  EXPECT_EQ(config.divisions_for(512 * kMiB), 8u);
}

TEST(AllocConf, DefaultsAreUnlimitedSplitAndNoRounding) {
  const AllocatorConfig config = parse_alloc_conf("");
  EXPECT_EQ(config.max_split_size_bytes, std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(config.max_non_split_rounding_bytes, 20 * kMiB);
  EXPECT_EQ(config.divisions_for(100 * kMiB), 0u);
  EXPECT_FALSE(config.expandable_segments);
}

TEST(AllocConf, UnknownKeysAndInvalidValuesAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"max_split_size:20", "'max_split_size'"},
      {"max_split_size_mb:19", "'19'"},
      {"max_non_split_rounding_mb:2", "'2'"},
      {"max_split_size_mb:abc", "'abc'"},
      {"garbage_collection_threshold:1.0", "'1.0'"},
      {"garbage_collection_threshold:0", "'0'"},
      {"expandable_segments:yes", "'yes'"},
      {"roundup_power2_divisions:3", "'3'"},
      {"roundup_power2_divisions:[100:4]", "[100:4]"},
      {"backend:cudaMallocAsync", "'cudaMallocAsync'"},
      {"expandable_segments", "'expandable_segments'"},
  };
  for (const auto& [text, named] : cases) {
    const std::string message = usage_error_of([&text = text] { parse_alloc_conf(text); });
    EXPECT_NE(message.find(named), std::string::npos) << text << " -> " << message;
  }
}

TEST(AllocConf, EnvironmentVariableIsRead) {
  setenv("VRAMLAB_ALLOC_CONF", "max_split_size_mb:64", 1);
  EXPECT_EQ(alloc_conf_from_environment().max_split_size_bytes, 64 * kMiB);
  setenv("VRAMLAB_ALLOC_CONF", "nope:1", 1);
  EXPECT_NE(usage_error_of([] { alloc_conf_from_environment(); }).find("VRAMLAB_ALLOC_CONF"),
            std::string::npos);
  unsetenv("VRAMLAB_ALLOC_CONF");
}

TEST(MakeCachingAllocator, EachSimDeviceHasItsOwnCapacityAndLabel) {
  auto small = make_caching_allocator(parse_device("sim:64MiB"), AllocatorConfig{});
  auto big = make_caching_allocator(parse_device("sim:a100-80g"), AllocatorConfig{});
  EXPECT_EQ(small->capacity_bytes(), 64 * kMiB);
  EXPECT_EQ(big->capacity_bytes(), 80 * kGiB);
  Block* on_big = big->malloc(100 * kMiB);
  std::memset(reinterpret_cast<void*>(static_cast<std::uintptr_t>(on_big->address)), 1, 4096);
  try {
    small->malloc(100 * kMiB);
    FAIL() << "100 MiB fit on a 64 MiB device";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("sim:64MiB out of memory. Tried to allocate 100.00 MiB", 0), 0u)
        << e.what();
  }
  big->free(on_big);
  small->check_invariants();
}

TEST(MakeCachingAllocator, CpuMemoryHasNoCapacityButIsCached) {
  auto cpu = make_caching_allocator(parse_device("cpu"), AllocatorConfig{});
  EXPECT_EQ(cpu->capacity_bytes(), kOneExaByte);
  Block* block = cpu->malloc(100, 0, MemoryCategory::input, "ids");
  EXPECT_EQ(cpu->stats().allocated_bytes[kAggregate].current, 512);  // PyTorch's 512-B rounding
  EXPECT_EQ(cpu->category_stats().of(MemoryCategory::input).current, 512);
  cpu->free(block);
  EXPECT_EQ(cpu->stats().allocated_bytes[kAggregate].current, 0);
  EXPECT_GT(cpu->stats().reserved_bytes[kAggregate].current, 0) << "the segment was not cached";
}

TEST(MakeCachingAllocator, MetaAndAddressOnlySimHandOutAddressesWithoutMemory) {
  for (const auto& [device, memory] : std::vector<std::pair<const char*, SegmentMemory>>{
           {"meta:1TiB", SegmentMemory::real}, {"sim:1TiB", SegmentMemory::addresses_only}}) {
    auto allocator = make_caching_allocator(parse_device(device), AllocatorConfig{}, memory);
    Block* block = allocator->malloc(512 * kGiB);  // would not fit in this machine's RAM
    EXPECT_NE(block->address, 0u) << device;
    EXPECT_EQ(allocator->stats().reserved_bytes[kAggregate].current, 512 * kGiB) << device;
    allocator->free(block);
  }
}

TEST(MakeCachingAllocator, AnUnusableCudaDeviceIsRefusedWithTheReason) {
  try {
    make_caching_allocator(parse_device("cuda:5"), AllocatorConfig{});
    GTEST_SKIP() << "this machine has a sixth GPU";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("device 'cuda:5' "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("without a GPU, simulate one: --device sim:t4-16g"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vramlab::memory
