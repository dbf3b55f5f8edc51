/// \file
/// \brief The NVMe tier: bytes in real files under a directory you give (DeepSpeed's
/// `nvme_path`), written and read in large aligned requests, several in flight (DeepSpeed's `aio`
/// block: `block_size`, `queue_depth`), through io_uring (liburing) or, where the kernel refuses
/// io_uring, through plain threads (Note [NVMe requests] in nvme_tier.cpp).
///
/// A file's space is reserved when it is created (fallocate), so a full disk is found before
/// anything is written to it, and a write that fails leaves its source untouched: a caller that
/// frees its host copy only after write() returns loses nothing. Every failure is one
/// StorageError naming the path and the system's reason; the tier removes its files when it goes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/platform/errors.h"

namespace vramlab::storage {

/// A file of the NVMe tier could not be made, written or read: one line naming the path, the
/// bytes and the system's reason (a full disk, a path that is not a writable directory).
/// A UsageError: a vramlab binary prints it and exits 2.
struct StorageError : UsageError {
  /// \param message what failed, with the path.
  explicit StorageError(const std::string& message) : UsageError(message) {}
};

/// How requests reach the file system.
enum class NvmeEngine {
  automatic,  ///< io_uring when the kernel allows it, else threads
  io_uring,   ///< liburing: one ring of queue_depth requests
  threads,    ///< queue_depth threads, each with pread/pwrite
};

/// \return "auto", "io_uring" or "threads".
std::string_view nvme_engine_name(NvmeEngine engine);
/// \param text as nvme_engine_name gives. \throws vramlab::UsageError naming anything else.
NvmeEngine parse_nvme_engine(std::string_view text);

/// The requests' shape (DeepSpeed's `aio` defaults: 1 MiB blocks, 8 in flight).
struct NvmeOptions {
  std::string path;                           ///< the directory the files go in (`--nvme-path`)
  int64_t block_size = int64_t{1} << 20;      ///< bytes per request: a multiple of 4096, ≥ 4096
  int64_t queue_depth = 8;                    ///< requests in flight, in [1, 256]
  NvmeEngine engine = NvmeEngine::automatic;  ///< automatic picks io_uring when it works
};

/// What the tier moved and how long it took (wall time of write() and read() calls).
struct NvmeStats {
  int64_t bytes_written = 0;   ///< the callers' bytes (not the padding to 4096)
  int64_t bytes_read = 0;      ///< likewise
  double write_seconds = 0.0;  ///< summed over write() calls
  double read_seconds = 0.0;   ///< summed over read() calls
  /// \return bytes_written / write_seconds, 0 before any write.
  [[nodiscard]] double write_bytes_per_s() const {
    return write_seconds > 0.0 ? static_cast<double>(bytes_written) / write_seconds : 0.0;
  }
  /// \return bytes_read / read_seconds, 0 before any read.
  [[nodiscard]] double read_bytes_per_s() const {
    return read_seconds > 0.0 ? static_cast<double>(bytes_read) / read_seconds : 0.0;
  }
};

/// Alignment of every request's offset, length and buffer: the logical block of O_DIRECT on
/// today's drives and file systems (4096; 512 on older ones, which 4096 also satisfies).
inline constexpr int64_t kNvmeAlignment = 4096;

/// \param bytes ≥ 0. \return \p bytes rounded up to kNvmeAlignment: what a file of \p bytes
/// takes on disk (NvmeTier::create reserves it) and what a request of \p bytes moves.
inline constexpr int64_t nvme_aligned_bytes(int64_t bytes) {
  return (bytes + kNvmeAlignment - 1) / kNvmeAlignment * kNvmeAlignment;
}

/// Files of the tier under one directory (see the file comment). Not thread-safe: one caller.
class NvmeTier {
 public:
  /// Checks \p options and that the path is a directory this process can create files in (a
  /// probe file, removed at once), and whether it takes O_DIRECT (tmpfs does not: then the page
  /// cache is used and direct() says so).
  /// \throws vramlab::UsageError for a block size or queue depth out of range;
  /// StorageError for a path that is not a writable directory, or io_uring asked for and refused.
  explicit NvmeTier(NvmeOptions options);
  ~NvmeTier();  ///< Closes and removes every file it made.
  NvmeTier(const NvmeTier&) = delete;
  NvmeTier& operator=(const NvmeTier&) = delete;

  /// Makes a file for \p bytes (rounded up to kNvmeAlignment) and reserves its space.
  /// \param name part of the file's name (letters, digits, '.', '-', '_'; others become '_').
  /// \param bytes ≥ 0. \return its index for write() and read().
  /// \throws StorageError when the file cannot be made or the disk cannot hold it (nothing is
  /// left behind); vramlab::UsageError for bytes < 0.
  int64_t create(std::string_view name, int64_t bytes);
  /// Writes \p bytes from \p source at the start of file \p file.
  /// \throws StorageError when the file system fails a request (\p source is untouched; the
  /// file's contents are then undefined); vramlab::UsageError for more bytes than the file has.
  void write(int64_t file, const void* source, int64_t bytes);
  /// Reads the first \p bytes of file \p file into \p destination.
  /// \throws StorageError when a request fails or comes back short; vramlab::UsageError for more
  /// bytes than the file has.
  void read(int64_t file, void* destination, int64_t bytes);

  /// Closes and removes every file made so far (their indices are no longer valid); the tier
  /// stays usable.
  void remove_files();

  /// \return the engine in use (io_uring or threads; threads after the ring itself failed).
  [[nodiscard]] NvmeEngine engine() const { return engine_; }
  /// \return true when the files are opened with O_DIRECT (no page cache).
  [[nodiscard]] bool direct() const { return direct_; }
  /// \return the options, as given.
  [[nodiscard]] const NvmeOptions& options() const { return options_; }
  /// \return the file's path. \throws vramlab::UsageError for an unknown file.
  [[nodiscard]] const std::string& file_path(int64_t file) const;
  /// \return the file's size on disk (its bytes rounded up to kNvmeAlignment).
  [[nodiscard]] int64_t file_bytes(int64_t file) const;
  /// \return what the tier moved so far.
  [[nodiscard]] const NvmeStats& stats() const { return stats_; }

 private:
  struct File {
    std::string path;
    int fd = -1;
    int64_t bytes = 0;  // on disk: the caller's bytes rounded up to kNvmeAlignment
  };
  enum class Direction { write, read };
  const File& file_at(int64_t file, int64_t bytes) const;
  // Moves [0, bytes) between \p memory and the file in block_size requests.
  void transfer(Direction direction, const File& file, unsigned char* memory, int64_t bytes);
  void transfer_io_uring(Direction direction, const File& file, unsigned char* memory,
                         int64_t bytes);
  void transfer_threads(Direction direction, const File& file, unsigned char* memory,
                        int64_t bytes);
  // After the ring itself failed: waits for the \p in_kernel requests it took, closes it and
  // goes on with the threads engine.
  void give_up_ring(int64_t in_kernel);

  struct Ring;  // liburing's io_uring, kept out of this header

  NvmeOptions options_;
  std::unique_ptr<Ring> ring_;  // with the io_uring engine
  NvmeEngine engine_ = NvmeEngine::threads;
  bool direct_ = true;
  std::vector<File> files_;
  std::vector<unsigned char*> buffers_;  // (queue_depth) bounce buffers of block_size, aligned
  NvmeStats stats_;
};

}  // namespace vramlab::storage
