/// \file
/// \brief Shared memory of an emulated block: one arena per worker holding the dynamic shared
/// memory and every VRAMLAB_SHARED array of the running block, each between two redzones.
///
/// ASan cannot see shared memory (it is ordinary host memory the emulator hands out), so every
/// array gets 64-byte canary redzones on both sides, checked when the block ends: an
/// out-of-bounds write is reported with the kernel and the array's name and declaration site.
/// In debug builds (or with LaunchOptions::poison_shared) each array is filled with 0xFF bytes when
/// a block first touches it, so reading shared memory before writing it gives NaN / -1, not
/// whatever the previous block left there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/simt/errors.h"

namespace vramlab::simt::detail {

/// Shared memory one block may use (static plus dynamic): the opt-in maximum of an H100.
inline constexpr std::size_t kMaxSharedBytesPerBlock = 227 * 1024;
/// Canary bytes on each side of every shared array.
inline constexpr std::size_t kSharedRedzoneBytes = 64;
/// Distinct shared arrays one block may declare.
inline constexpr std::size_t kMaxSharedArraysPerBlock = 64;
/// The byte every redzone holds.
inline constexpr unsigned char kSharedCanaryByte = 0xCB;
/// The byte poisoned shared memory holds (NaN as float, -1 as signed integer).
inline constexpr unsigned char kSharedPoisonByte = 0xFF;

/// One array in the arena, for the end-of-block redzone check.
struct SharedArrayRecord {
  const char* name;    ///< the array's name in the kernel
  const char* file;    ///< where it is declared
  std::uint32_t line;  ///< where it is declared
  std::byte* data;     ///< its first byte
  std::size_t bytes;   ///< its size
};

/// The shared memory of the block a worker runs: a bump allocator reset at every block start.
class SharedArena {
 public:
  SharedArena()
      : capacity_bytes_(kMaxSharedBytesPerBlock +
                        (2 * kSharedRedzoneBytes + 256) * (kMaxSharedArraysPerBlock + 1)),
        memory_(static_cast<std::byte*>(::operator new (capacity_bytes_, std::align_val_t{256}))) {}
  ~SharedArena() { ::operator delete (memory_, std::align_val_t{256}); }
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;

  /// Forgets the previous block's arrays; with \p poison, new arrays are filled with
  /// kSharedPoisonByte so reads before writes show.
  void reset(bool poison) {
    used_bytes_ = 0;
    data_bytes_ = 0;
    poison_ = poison;
    arrays_.clear();
  }

  /// Places an array between two redzones.
  /// \param record name and declaration site (data and bytes are filled in).
  /// \param bytes the array's size. \param alignment a power of two, at most 256.
  /// \param kernel_name for the error message.
  /// \throws SimtError when the block's shared memory would exceed kMaxSharedBytesPerBlock or it
  /// declares more than kMaxSharedArraysPerBlock arrays.
  std::byte* allocate(SharedArrayRecord record, std::size_t bytes, std::size_t alignment,
                      const char* kernel_name) {
    if (data_bytes_ + bytes > kMaxSharedBytesPerBlock ||
        arrays_.size() == kMaxSharedArraysPerBlock) {
      std::ostringstream message;
      message << "kernel '" << kernel_name << "': shared array '" << record.name << "' ("
              << record.file << ":" << record.line << ", " << bytes
              << " bytes) takes the block's shared memory to " << data_bytes_ + bytes
              << " bytes in " << arrays_.size() + 1 << " arrays; the limit is "
              << kMaxSharedBytesPerBlock << " bytes in " << kMaxSharedArraysPerBlock << " arrays";
      throw SimtError(message.str());
    }
    std::size_t align = alignment < 16 ? 16 : alignment;
    std::size_t lead = used_bytes_;
    std::size_t start = (lead + kSharedRedzoneBytes + align - 1) / align * align;
    std::size_t end = start + bytes;
    std::memset(memory_ + lead, kSharedCanaryByte, start - lead);
    if (poison_) std::memset(memory_ + start, kSharedPoisonByte, bytes);
    std::memset(memory_ + end, kSharedCanaryByte, kSharedRedzoneBytes);
    used_bytes_ = end + kSharedRedzoneBytes;
    data_bytes_ += bytes;
    record.data = memory_ + start;
    record.bytes = bytes;
    arrays_.push_back(record);
    return record.data;
  }

  /// Checks every redzone of the block's arrays (after the block ends, so an overflow is
  /// reported once per block, not where it happened); \p where names the kernel and block.
  /// \throws SharedMemoryOverflowError naming the first array whose redzone changed.
  void check_redzones(const std::string& where) const {
    for (const SharedArrayRecord& array : arrays_) {
      const std::byte* after = array.data + array.bytes;
      for (std::size_t i = 0; i < kSharedRedzoneBytes; ++i) {
        if (static_cast<unsigned char>(after[i]) != kSharedCanaryByte)
          report(where, array, i, "past its end");
      }
      for (std::size_t i = 1; i <= kSharedRedzoneBytes; ++i) {
        if (static_cast<unsigned char>(array.data[-static_cast<std::ptrdiff_t>(i)]) !=
            kSharedCanaryByte) {
          report(where, array, i, "before its start");
        }
      }
    }
  }

 private:
  [[noreturn]] static void report(const std::string& where, const SharedArrayRecord& array,
                                  std::size_t offset, const char* side) {
    std::ostringstream message;
    message << "out-of-bounds shared-memory write in " << where << ": byte " << offset << " "
            << side << " of shared array '" << array.name << "' (" << array.bytes
            << " bytes, declared at " << array.file << ":" << array.line << ") was overwritten";
    throw SharedMemoryOverflowError(message.str());
  }

  std::size_t capacity_bytes_;
  std::byte* memory_;
  std::size_t used_bytes_ = 0;
  std::size_t data_bytes_ = 0;
  bool poison_ = false;
  std::vector<SharedArrayRecord> arrays_;
};

}  // namespace vramlab::simt::detail
