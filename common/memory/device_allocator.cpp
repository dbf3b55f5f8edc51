// One allocator per device, and the registry of the process's devices.
#include "common/memory/device_allocator.h"

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <utility>

#include "common/platform/errors.h"

namespace vramlab::memory {
namespace {

constexpr std::size_t kHostAlignment = 64;

std::unique_ptr<Backing> make_backing(const Device& device) {
  switch (device.kind) {
    case DeviceKind::sim:
      return make_host_backing(device.spec.capacity_bytes);
    case DeviceKind::meta:
      return make_meta_backing(device.spec.capacity_bytes);
    case DeviceKind::cuda:
      return make_cuda_backing(static_cast<int>(device.index));
    case DeviceKind::cpu:
      break;
  }
  return nullptr;
}

struct Registry {
  std::mutex mutex;
  std::map<std::pair<DeviceKind, std::int64_t>, std::unique_ptr<DeviceAllocator>> allocators;
  bool settings_loaded = false;
  AllocatorConfig settings;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

const AllocatorConfig& registry_settings(Registry& reg) {
  if (!reg.settings_loaded) {
    reg.settings = alloc_conf_from_environment();
    reg.settings_loaded = true;
  }
  return reg.settings;
}

}  // namespace

DeviceAllocator::DeviceAllocator(const Device& device, const AllocatorConfig& config)
    : device_(device) {
  if (device.uses_caching_allocator()) {
    caching_ = std::make_unique<CachingAllocator>(
        make_backing(device), device.kind == DeviceKind::cuda ? "CUDA" : device.name(),
        device.index, config);
  }
}

DeviceAllocator::~DeviceAllocator() {
  for (auto& [pointer, allocation] : host_allocations_) std::free(pointer);
}

void* DeviceAllocator::raw_alloc(std::size_t bytes, StreamId stream, MemoryCategory category,
                                 std::string_view name) {
  if (bytes == 0) return nullptr;
  if (caching_) {
    Block* block = caching_->malloc(bytes, stream, category, name);
    void* pointer = reinterpret_cast<void*>(block->address);
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.emplace(pointer, block);
    return pointer;
  }
  const std::size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* pointer = std::aligned_alloc(kHostAlignment, rounded);
  if (pointer == nullptr) throw std::bad_alloc();
  std::lock_guard<std::mutex> lock(mutex_);
  host_allocations_.emplace(pointer, HostAllocation{rounded, category});
  host_allocated_bytes_.increase(static_cast<std::int64_t>(rounded));
  host_category_stats_.allocated_bytes[static_cast<std::size_t>(category)].increase(
      static_cast<std::int64_t>(rounded));
  return pointer;
}

void DeviceAllocator::raw_free(void* pointer) {
  if (pointer == nullptr) return;
  std::unique_lock<std::mutex> lock(mutex_);
  if (caching_) {
    auto it = blocks_.find(pointer);
    if (it == blocks_.end()) {
      throw std::logic_error("raw_free: pointer was not allocated on " + device_.name());
    }
    Block* block = it->second;
    blocks_.erase(it);
    lock.unlock();
    caching_->free(block);
    return;
  }
  auto it = host_allocations_.find(pointer);
  if (it == host_allocations_.end()) {
    throw std::logic_error("raw_free: pointer was not allocated on " + device_.name());
  }
  const auto bytes = static_cast<std::int64_t>(it->second.bytes);
  host_allocated_bytes_.decrease(bytes);
  host_category_stats_.allocated_bytes[static_cast<std::size_t>(it->second.category)].decrease(
      bytes);
  host_allocations_.erase(it);
  std::free(pointer);
}

void DeviceAllocator::record_stream(void* pointer, StreamId stream) {
  if (!caching_ || pointer == nullptr) return;
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = blocks_.find(pointer);
  if (it == blocks_.end()) {
    throw std::logic_error("record_stream: pointer was not allocated on " + device_.name());
  }
  Block* block = it->second;
  lock.unlock();
  caching_->record_stream(block, stream);
}

bool DeviceAllocator::host_accessible() const {
  return caching_ ? caching_->host_accessible() : true;
}

CategoryStats DeviceAllocator::category_stats() const {
  if (caching_) return caching_->category_stats();
  std::lock_guard<std::mutex> lock(mutex_);
  return host_category_stats_;
}

Stat DeviceAllocator::allocated_bytes() const {
  if (caching_) return caching_->stats().allocated_bytes[kAggregate];
  std::lock_guard<std::mutex> lock(mutex_);
  return host_allocated_bytes_;
}

DeviceAllocator& device_allocator(const Device& device) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  const auto key = std::make_pair(device.kind, device.index);
  auto it = reg.allocators.find(key);
  if (it != reg.allocators.end()) {
    const Device& existing = it->second->device();
    if (existing.spec.capacity_bytes != device.spec.capacity_bytes) {
      throw UsageError("device '" + device.name() + "' conflicts with '" + existing.name() +
                       "', which already exists with the same index; use another index, e.g. " +
                       std::string(device_kind_name(device.kind)) + ":1:" + device.spec.spec_name);
    }
    return *it->second;
  }
  auto allocator = std::make_unique<DeviceAllocator>(device, registry_settings(reg));
  DeviceAllocator& result = *allocator;
  reg.allocators.emplace(key, std::move(allocator));
  return result;
}

void set_allocator_settings(std::string_view text) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  reg.settings = parse_alloc_conf(text, registry_settings(reg));
  for (auto& [key, allocator] : reg.allocators) {
    if (CachingAllocator* caching = allocator->caching_allocator())
      caching->set_config(reg.settings);
  }
}

}  // namespace vramlab::memory
