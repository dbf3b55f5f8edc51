// C++ call stacks for memory history, with Boost.Stacktrace's libbacktrace flavour (see
// call_stack.h).
//
// Note [Cheap call stacks]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// An allocation only walks the stack: safe_dump_to unwinds into a fixed array of return addresses
// on the caller's stack (no heap, ~0.8 µs for a training step's ~20 frames), and the array is
// interned by hash under a mutex, so the thousands of allocations a step makes from a few hundred
// call sites share a few hundred stored stacks. Names, files and lines come from libbacktrace
// (the ELF symbol table, so functions the binary does not export are named, and DWARF line tables
// where the build has them); it is slow (it parses the binary's debug sections), so each distinct
// address is resolved once, when a snapshot is written, and cached for the process.
#include "common/memory/call_stack.h"

#include <boost/stacktrace/frame.hpp>
#include <boost/stacktrace/safe_dump_to.hpp>

#include <array>
#include <deque>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace vramlab::memory {
namespace {

// Deeper stacks keep their innermost frames: the ones that say who allocated.
constexpr std::size_t kMaxFrames = 64;

struct StackTable {
  std::mutex mutex;
  std::deque<std::vector<std::uintptr_t>> stacks;  // id - 1 -> return addresses, innermost first
  std::unordered_multimap<std::uint64_t, StackId> ids_by_hash;
};

StackTable& stack_table() {
  static StackTable table;
  return table;
}

struct FrameCache {
  std::mutex mutex;
  std::unordered_map<std::uintptr_t, StackFrame> frames;
};

FrameCache& frame_cache() {
  static FrameCache cache;
  return cache;
}

std::uint64_t hash_addresses(const std::uintptr_t* addresses, std::size_t count) {
  std::uint64_t hash = 0xcbf29ce484222325ULL ^ count;  // FNV-1a over whole words
  for (std::size_t i = 0; i < count; ++i) {
    hash ^= addresses[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

StackFrame resolve_address(std::uintptr_t address) {
  // A return address points after its call; the call's own line is one byte back.
  const boost::stacktrace::frame frame(reinterpret_cast<void*>(address - 1));
  StackFrame resolved;
  resolved.function = frame.name();
  resolved.file = frame.source_file();
  resolved.line = static_cast<std::int64_t>(frame.source_line());
  if (resolved.file.empty()) resolved.line = 0;
  return resolved;
}

const StackFrame& cached_frame(std::uintptr_t address) {
  FrameCache& cache = frame_cache();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.frames.find(address);
    if (it != cache.frames.end()) return it->second;
  }
  StackFrame resolved = resolve_address(address);  // outside the lock: it parses debug info
  std::lock_guard<std::mutex> lock(cache.mutex);
  // Elements of an unordered_map keep their address while others are inserted.
  return cache.frames.try_emplace(address, std::move(resolved)).first->second;
}

bool starts_with_any(std::string_view text, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view prefix : prefixes) {
    if (text.starts_with(prefix)) return true;
  }
  return false;
}

// The allocator, its tensors, the runtime's allocation functions and the capture itself: who
// asked for the memory is the first frame after them.
bool is_allocation_machinery(const StackFrame& frame) {
  return starts_with_any(
      frame.function,
      {"vramlab::memory::CachingAllocator::", "vramlab::memory::Tensor::",
       "vramlab::memory::capture_call_stack", "vramlab::nn::Runtime::allocate",
       "vramlab::nn::Runtime::zeros", "vramlab::nn::Runtime::temporary", "boost::stacktrace::"});
}

// The C runtime's and the thread library's frames below main or a thread's entry function.
bool is_start_up(const StackFrame& frame) {
  return frame.function.empty() ||
         starts_with_any(frame.function, {"_start", "__libc_start", "start_thread", "clone",
                                          "__clone", "execute_native_thread_routine"});
}

}  // namespace

StackId capture_call_stack(std::size_t skip) {
  std::array<std::uintptr_t, kMaxFrames + 1> buffer;  // (kMaxFrames + 1) addresses, 0-terminated
  static_assert(sizeof(std::uintptr_t) == sizeof(boost::stacktrace::frame::native_frame_ptr_t));
  // One more than asked: this function's own frame.
  const std::size_t stored =
      boost::stacktrace::safe_dump_to(skip + 1, buffer.data(), sizeof(buffer));
  if (stored <= 1) return 0;
  const std::size_t count = stored - 1;  // without the terminating zero
  const std::uint64_t hash = hash_addresses(buffer.data(), count);
  StackTable& table = stack_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto [first, last] = table.ids_by_hash.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const std::vector<std::uintptr_t>& stack = table.stacks[it->second - 1];
    if (stack.size() == count && std::equal(stack.begin(), stack.end(), buffer.data())) {
      return it->second;
    }
  }
  table.stacks.emplace_back(buffer.data(), buffer.data() + count);
  const auto id = static_cast<StackId>(table.stacks.size());
  table.ids_by_hash.emplace(hash, id);
  return id;
}

std::vector<StackFrame> resolve_call_stack(StackId id) {
  if (id == 0) return {};
  std::vector<std::uintptr_t> addresses;
  {
    StackTable& table = stack_table();
    std::lock_guard<std::mutex> lock(table.mutex);
    addresses = table.stacks.at(id - 1);
  }
  std::vector<StackFrame> frames;
  frames.reserve(addresses.size());
  std::size_t i = 0;
  while (i < addresses.size() && is_allocation_machinery(cached_frame(addresses[i]))) ++i;
  for (; i < addresses.size(); ++i) frames.push_back(cached_frame(addresses[i]));
  while (!frames.empty() && is_start_up(frames.back())) frames.pop_back();
  return frames;
}

std::size_t interned_call_stack_count() {
  StackTable& table = stack_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  return table.stacks.size();
}

}  // namespace vramlab::memory
