// The sim and meta backings: host memory under a capacity (and the process's host-memory budget),
// and bare virtual addresses.
#include <sys/mman.h>

#include <optional>
#include <string>
#include <utility>

#include "common/memory/backing.h"
#include "common/memory/host_memory.h"
#include "common/memory/oom_error.h"

namespace vramlab::memory {
namespace {

/// Counts the bytes held against the capacity; shared by both host-side backings.
class CapacityGauge {
 public:
  explicit CapacityGauge(std::uint64_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}
  bool try_take(std::size_t bytes) {
    if (bytes > capacity_bytes_ - used_bytes_) return false;
    used_bytes_ += bytes;
    return true;
  }
  void give_back(std::size_t bytes) { used_bytes_ -= bytes; }
  std::uint64_t capacity_bytes() const { return capacity_bytes_; }
  std::uint64_t free_bytes() const { return capacity_bytes_ - used_bytes_; }

 private:
  std::uint64_t capacity_bytes_;
  std::uint64_t used_bytes_ = 0;
};

class HostBacking final : public Backing {
 public:
  explicit HostBacking(std::uint64_t capacity_bytes) : gauge_(capacity_bytes) {
    resolve_host_memory_limit();  // a bad VRAMLAB_HOST_MEMORY_LIMIT stops here, not in a malloc
  }

  std::uint64_t allocate_segment(std::size_t bytes) override {
    host_refusal_.reset();
    if (!take(bytes)) return 0;
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
      give_back(bytes);
      return 0;
    }
    return reinterpret_cast<std::uint64_t>(memory);
  }
  void free_segment(std::uint64_t address, std::size_t bytes) override {
    munmap(reinterpret_cast<void*>(address), bytes);
    give_back(bytes);
  }
  std::uint64_t reserve_address_range(std::size_t bytes) override {
    void* memory =
        mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return memory == MAP_FAILED ? 0 : reinterpret_cast<std::uint64_t>(memory);
  }
  bool map_pages(std::uint64_t address, std::size_t bytes) override {
    host_refusal_.reset();
    if (!take(bytes)) return false;
    if (mprotect(reinterpret_cast<void*>(address), bytes, PROT_READ | PROT_WRITE) != 0) {
      give_back(bytes);
      return false;
    }
    return true;
  }
  void unmap_pages(std::uint64_t address, std::size_t bytes) override {
    // Dropping the pages returns the memory to the OS; the range stays reserved.
    madvise(reinterpret_cast<void*>(address), bytes, MADV_DONTNEED);
    mprotect(reinterpret_cast<void*>(address), bytes, PROT_NONE);
    give_back(bytes);
  }
  void release_address_range(std::uint64_t address, std::size_t bytes) override {
    munmap(reinterpret_cast<void*>(address), bytes);
  }
  std::uint64_t total_bytes() const override { return gauge_.capacity_bytes(); }
  std::uint64_t free_bytes() const override { return gauge_.free_bytes(); }
  bool host_accessible() const override { return true; }
  void raise_refusal_cause(std::string_view device_label) override {
    if (!host_refusal_) return;
    const HostMemoryRefusal refusal = *std::exchange(host_refusal_, std::nullopt);
    throw host_memory_error(device_label, refusal,
                            format_size(refusal.held_bytes) + " held + " +
                                format_size(refusal.requested_bytes) + " requested");
  }

 private:
  // The device's capacity first: a full simulated device is the device's out-of-memory, whatever
  // the host has left. Then the process's host budget.
  bool take(std::size_t bytes) {
    if (!gauge_.try_take(bytes)) return false;
    host_refusal_ = take_host_memory(bytes);
    if (!host_refusal_) return true;
    gauge_.give_back(bytes);
    return false;
  }
  void give_back(std::size_t bytes) {
    gauge_.give_back(bytes);
    give_back_host_memory(bytes);
  }

  CapacityGauge gauge_;
  // Why the last request was refused when the host budget refused it; kept until the allocator
  // gives up (raise_refusal_cause) or the next request, so a retry that succeeds forgets it.
  std::optional<HostMemoryRefusal> host_refusal_;
};

class MetaBacking final : public Backing {
 public:
  explicit MetaBacking(std::uint64_t capacity_bytes) : gauge_(capacity_bytes) {}

  std::uint64_t allocate_segment(std::size_t bytes) override {
    if (!gauge_.try_take(bytes)) return 0;
    const std::uint64_t address = take_addresses(bytes);
    if (address == 0) gauge_.give_back(bytes);
    return address;
  }
  void free_segment(std::uint64_t, std::size_t bytes) override { gauge_.give_back(bytes); }
  std::uint64_t reserve_address_range(std::size_t bytes) override { return take_addresses(bytes); }
  bool map_pages(std::uint64_t, std::size_t bytes) override { return gauge_.try_take(bytes); }
  void unmap_pages(std::uint64_t, std::size_t bytes) override { gauge_.give_back(bytes); }
  void release_address_range(std::uint64_t, std::size_t) override {}
  std::uint64_t total_bytes() const override { return gauge_.capacity_bytes(); }
  std::uint64_t free_bytes() const override { return gauge_.free_bytes(); }
  bool host_accessible() const override { return false; }

 private:
  // Addresses are never reused, aligned to 2 MiB like a GPU's, and start far from 0.
  // Returns 0 when the 64-bit address space is used up (possible only on unlimited devices).
  std::uint64_t take_addresses(std::size_t bytes) {
    constexpr std::uint64_t kAlignment = 2ULL << 20;
    const std::uint64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded < bytes || rounded > ~0ULL - next_address_) return 0;
    const std::uint64_t address = next_address_;
    next_address_ += rounded;
    return address;
  }
  CapacityGauge gauge_;
  std::uint64_t next_address_ = 0x7f0000000000ULL;
};

}  // namespace

std::unique_ptr<Backing> make_host_backing(std::uint64_t capacity_bytes) {
  return std::make_unique<HostBacking>(capacity_bytes);
}

std::unique_ptr<Backing> make_meta_backing(std::uint64_t capacity_bytes) {
  return std::make_unique<MetaBacking>(capacity_bytes);
}

}  // namespace vramlab::memory
