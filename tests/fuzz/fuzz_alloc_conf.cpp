// libFuzzer target: a PYTORCH_CUDA_ALLOC_CONF string (common/memory/alloc_config.h). Contract: it
// parses or is refused with a UsageError; a parsed configuration is usable: it rounds every size
// class without overflow, an allocator accepts it and serves allocations under it, and parsing its
// own text again gives the same settings.
//   build-fuzz/bin/fuzz_alloc_conf tests/fuzz/corpus/alloc_conf
//   -dict=tests/fuzz/alloc_conf.dict
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/trace_replay.h"
#include "tests/fuzz/fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vramlab;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_parsed_or_usage_error([&] {
    const memory::AllocatorConfig config = memory::parse_alloc_conf(text);
    if (config.text != text) fuzz::contract_broken("parse_alloc_conf", "text not kept");
    const memory::AllocatorConfig again = memory::parse_alloc_conf(config.text);
    if (again.max_split_size_bytes != config.max_split_size_bytes ||
        again.roundup_power2_divisions != config.roundup_power2_divisions ||
        again.expandable_segments != config.expandable_segments ||
        again.garbage_collection_threshold != config.garbage_collection_threshold)
      fuzz::contract_broken("parse_alloc_conf", "not the same settings when parsed again");
    // round_size() must not wrap for any size class a user can request.
    for (std::size_t bytes :
         {std::size_t{1}, std::size_t{511}, std::size_t{1} << 20, (std::size_t{1} << 20) + 1,
          std::size_t{3} << 30, std::size_t{1} << 40, std::size_t{1} << 50}) {
      if (memory::round_size(bytes, config) < bytes)
        fuzz::contract_broken("round_size", "wrapped for " + std::to_string(bytes) + " bytes");
    }
    static const memory::Device device = memory::parse_device("sim:64MiB");
    auto allocator = memory::make_replay_allocator(device, config);
    for (std::size_t bytes : {std::size_t{1}, std::size_t{3} << 20, std::size_t{25} << 20}) {
      memory::Block* block = allocator->malloc(bytes);
      allocator->free(block);
    }
    allocator->empty_cache();
    allocator->check_invariants();
  });
  return 0;
}
