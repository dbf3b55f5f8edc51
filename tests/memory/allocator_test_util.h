/// \file
/// \brief Helpers shared by the memory tests: allocators over sim and meta backings.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/memory/caching_allocator.h"

namespace vramlab::memory::testing {

inline constexpr std::size_t kKiB = 1ULL << 10;
inline constexpr std::size_t kMiB = 1ULL << 20;
inline constexpr std::size_t kGiB = 1ULL << 30;

/// An allocator over host memory (a sim device) of \p capacity_bytes named like "sim:<capacity>".
inline std::unique_ptr<CachingAllocator> make_sim_allocator(std::uint64_t capacity_bytes,
                                                            const std::string& conf = "") {
  return std::make_unique<CachingAllocator>(make_host_backing(capacity_bytes), "sim:test", 0,
                                            parse_alloc_conf(conf));
}

/// An allocator over the meta backing: increasing virtual addresses, nothing touched.
inline std::unique_ptr<CachingAllocator> make_meta_allocator(std::uint64_t capacity_bytes,
                                                             const std::string& conf = "") {
  return std::make_unique<CachingAllocator>(make_meta_backing(capacity_bytes), "meta:test", 0,
                                            parse_alloc_conf(conf));
}

}  // namespace vramlab::memory::testing
