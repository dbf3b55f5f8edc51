// The NVMe tier (see nvme_tier.h).
#include "common/storage/nvme_tier.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "common/platform/printable.h"

namespace vramlab::storage {

// Note [NVMe requests]
// An NVMe drive reaches its bandwidth only with large requests and several of them in flight
// (DeepSpeed's `aio` block: 1 MiB blocks, queue depth 8; ZeRO-Infinity, Rajbhandari et al., SC21,
// §6). The tier cuts a transfer into block_size requests and keeps queue_depth of them in flight:
// through one io_uring (liburing) whose submissions and completions go through rings shared with
// the kernel, one system call per batch; or, where the kernel refuses io_uring (some container
// sandboxes do), through queue_depth threads each doing pread/pwrite. The files are opened with
// O_DIRECT, which skips the page cache (a tensor swapped out is not read again soon, and the
// cache would take host RAM that offload exists to save); O_DIRECT wants every offset, length
// and buffer aligned to the drive's logical block, so each request goes through a bounce buffer
// aligned to 4096 and a file's last block is padded with zeros. The copy into the bounce buffer
// runs at memory bandwidth, far above a drive's, and overlaps the requests still in flight.

struct NvmeTier::Ring {
  io_uring ring{};
};

namespace {

std::string reason(int error) {
  std::string text = std::strerror(error);
  if (error == ENOSPC || error == EFBIG || error == EDQUOT) text += " (the disk is full)";
  return text;
}

// Unique within the process: several tiers (one per simulated rank) may share a directory.
int64_t next_serial() {
  static std::atomic<int64_t> serial{0};
  return serial++;
}

std::string safe_name(std::string_view name) {
  std::string out;
  for (const char c : name)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return out.empty() ? "tensor" : out;
}

// pwrite (\p writing) or pread of all \p length bytes at \p offset. \return 0 or the errno of
// the failure (a write that makes no progress is a full disk; a read that ends early, EIO).
int move_all(bool writing, int fd, unsigned char* buffer, int64_t length, int64_t offset) {
  while (length > 0) {
    const ssize_t n = writing ? ::pwrite(fd, buffer, static_cast<size_t>(length), offset)
                              : ::pread(fd, buffer, static_cast<size_t>(length), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return writing ? ENOSPC : EIO;
    buffer += n;
    length -= n;
    offset += n;
  }
  return 0;
}

}  // namespace

std::string_view nvme_engine_name(NvmeEngine engine) {
  switch (engine) {
    case NvmeEngine::automatic:
      return "auto";
    case NvmeEngine::io_uring:
      return "io_uring";
    case NvmeEngine::threads:
      return "threads";
  }
  return "auto";
}

NvmeEngine parse_nvme_engine(std::string_view text) {
  for (const NvmeEngine e : {NvmeEngine::automatic, NvmeEngine::io_uring, NvmeEngine::threads})
    if (text == nvme_engine_name(e)) return e;
  throw UsageError("unknown NVMe engine '" + platform::printable(text) +
                   "' (expected one of: auto, io_uring, threads)");
}

NvmeTier::NvmeTier(NvmeOptions options) : options_(std::move(options)) {
  const int64_t bs = options_.block_size;
  if (bs < kNvmeAlignment || bs % kNvmeAlignment != 0 || bs > (int64_t{1} << 30))
    throw UsageError("--nvme-block-size " + std::to_string(bs) +
                     ": a multiple of 4096 bytes from 4096 to 1 GiB");
  if (options_.queue_depth < 1 || options_.queue_depth > 256)
    throw UsageError("--nvme-queue-depth " + std::to_string(options_.queue_depth) +
                     " outside [1, 256]");
  const std::string& dir = options_.path;
  if (dir.empty()) throw UsageError("--nvme-path: no directory given");
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw StorageError("--nvme-path " + platform::printable(dir) + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    throw StorageError("--nvme-path " + platform::printable(dir) + ": not a directory");
  // A probe file: can this process create files there, and does the file system take O_DIRECT?
  const std::string probe =
      dir + "/.vramlab-probe-" + std::to_string(::getpid()) + "-" + std::to_string(next_serial());
  int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_RDWR | O_DIRECT, 0600);
  if (fd < 0 && errno == EINVAL) {
    direct_ = false;
    fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  }
  if (fd < 0)
    throw StorageError("--nvme-path " + platform::printable(dir) +
                       ": cannot create a file there: " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());

  if (options_.engine != NvmeEngine::threads) {
    auto ring = std::make_unique<Ring>();
    const int error =
        io_uring_queue_init(static_cast<unsigned>(options_.queue_depth), &ring->ring, 0);
    if (error == 0) {
      ring_ = std::move(ring);
      engine_ = NvmeEngine::io_uring;
    } else if (options_.engine == NvmeEngine::io_uring) {
      throw StorageError("--nvme-engine io_uring: the kernel refused a ring of " +
                         std::to_string(options_.queue_depth) + ": " + std::strerror(-error));
    }
  }
  for (int64_t i = 0; i < options_.queue_depth; ++i) {
    void* buffer = nullptr;
    if (::posix_memalign(&buffer, static_cast<size_t>(kNvmeAlignment), static_cast<size_t>(bs)) !=
        0) {
      for (unsigned char* b : buffers_) std::free(b);
      if (ring_) io_uring_queue_exit(&ring_->ring);
      throw StorageError("--nvme-path " + platform::printable(dir) + ": no host memory for " +
                         std::to_string(options_.queue_depth) + " buffers of " +
                         std::to_string(bs) + " bytes");
    }
    buffers_.push_back(static_cast<unsigned char*>(buffer));
  }
}

NvmeTier::~NvmeTier() {
  remove_files();
  for (unsigned char* b : buffers_) std::free(b);
  if (ring_) io_uring_queue_exit(&ring_->ring);
}

void NvmeTier::remove_files() {
  for (const File& f : files_) {
    ::close(f.fd);
    ::unlink(f.path.c_str());
  }
  files_.clear();
}

int64_t NvmeTier::create(std::string_view name, int64_t bytes) {
  if (bytes < 0) throw UsageError("an NVMe file of " + std::to_string(bytes) + " bytes");
  File f;
  f.path = options_.path + "/vramlab-" + std::to_string(::getpid()) + "-" +
           std::to_string(next_serial()) + "-" + safe_name(name) + ".swap";
  f.bytes = nvme_aligned_bytes(bytes);
  f.fd = ::open(f.path.c_str(), O_CREAT | O_EXCL | O_RDWR | (direct_ ? O_DIRECT : 0), 0600);
  if (f.fd < 0)
    throw StorageError("cannot create " + platform::printable(f.path) + ": " +
                       std::strerror(errno));
  // Reserved now: a full disk shows here, before a byte of the caller's is written.
  const int error = f.bytes > 0 ? ::posix_fallocate(f.fd, 0, f.bytes) : 0;
  if (error != 0) {
    ::close(f.fd);
    ::unlink(f.path.c_str());
    throw StorageError("no room for " + std::to_string(f.bytes) + " bytes in " +
                       platform::printable(f.path) + ": " + reason(error));
  }
  files_.push_back(std::move(f));
  return static_cast<int64_t>(files_.size()) - 1;
}

const NvmeTier::File& NvmeTier::file_at(int64_t file, int64_t bytes) const {
  if (file < 0 || file >= static_cast<int64_t>(files_.size()))
    throw UsageError("no NVMe file " + std::to_string(file));
  const File& f = files_[static_cast<size_t>(file)];
  if (bytes < 0 || bytes > f.bytes)
    throw UsageError(std::to_string(bytes) + " bytes for " + platform::printable(f.path) +
                     ", which holds " + std::to_string(f.bytes));
  return f;
}

const std::string& NvmeTier::file_path(int64_t file) const {
  return file_at(file, 0).path;
}

int64_t NvmeTier::file_bytes(int64_t file) const {
  return file_at(file, 0).bytes;
}

void NvmeTier::write(int64_t file, const void* source, int64_t bytes) {
  const File& f = file_at(file, bytes);
  const auto start = std::chrono::steady_clock::now();
  // The source is only read (into the bounce buffers).
  transfer(Direction::write, f,
           const_cast<unsigned char*>(static_cast<const unsigned char*>(source)), bytes);
  stats_.write_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_.bytes_written += bytes;
}

void NvmeTier::read(int64_t file, void* destination, int64_t bytes) {
  const File& f = file_at(file, bytes);
  const auto start = std::chrono::steady_clock::now();
  transfer(Direction::read, f, static_cast<unsigned char*>(destination), bytes);
  stats_.read_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_.bytes_read += bytes;
}

void NvmeTier::transfer(Direction direction, const File& file, unsigned char* memory,
                        int64_t bytes) {
  if (bytes == 0) return;
  if (engine_ == NvmeEngine::io_uring) {
    transfer_io_uring(direction, file, memory, bytes);
  } else {
    transfer_threads(direction, file, memory, bytes);
  }
}

namespace {

[[noreturn]] void fail(bool writing, int64_t bytes, const std::string& path, int error) {
  throw StorageError(std::string(writing ? "writing " : "reading ") + std::to_string(bytes) +
                     " bytes " + (writing ? "to " : "from ") + platform::printable(path) + ": " +
                     reason(error));
}

}  // namespace

void NvmeTier::transfer_io_uring(Direction direction, const File& file, unsigned char* memory,
                                 int64_t bytes) {
  const bool writing = direction == Direction::write;
  const int64_t bs = options_.block_size;
  const int64_t blocks = (bytes + bs - 1) / bs;
  io_uring& ring = ring_->ring;
  struct Slot {
    int64_t offset = 0;  // of the block, in the file and in memory
    int64_t length = 0;  // the caller's bytes in it
    int64_t padded = 0;  // length rounded up to kNvmeAlignment: what the request moves
  };
  std::vector<Slot> slots(buffers_.size());
  std::vector<size_t> free_slots;
  for (size_t i = buffers_.size(); i > 0; --i) free_slots.push_back(i - 1);
  int64_t next = 0, in_flight = 0;  // requests prepared and not yet completed
  int64_t in_kernel = 0;            // of them, those the kernel has taken
  int error = 0;
  // After an error, no new request goes out, but those in flight are waited for: their buffers
  // are the tier's and the kernel still writes to them.
  while ((error == 0 && next < blocks) || in_flight > 0) {
    while (error == 0 && next < blocks && !free_slots.empty()) {
      const size_t s = free_slots.back();
      free_slots.pop_back();
      Slot& slot = slots[s];
      slot.offset = next * bs;
      slot.length = std::min(bs, bytes - slot.offset);
      slot.padded = nvme_aligned_bytes(slot.length);
      unsigned char* buffer = buffers_[s];
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);  // never null: one entry per buffer
      if (writing) {
        std::memcpy(buffer, memory + slot.offset, static_cast<size_t>(slot.length));
        std::memset(buffer + slot.length, 0, static_cast<size_t>(slot.padded - slot.length));
        io_uring_prep_write(sqe, file.fd, buffer, static_cast<unsigned>(slot.padded),
                            static_cast<uint64_t>(slot.offset));
      } else {
        io_uring_prep_read(sqe, file.fd, buffer, static_cast<unsigned>(slot.padded),
                           static_cast<uint64_t>(slot.offset));
      }
      io_uring_sqe_set_data64(sqe, s);
      ++next;
      ++in_flight;
    }
    int submitted = io_uring_submit(&ring);
    while (submitted == -EINTR) submitted = io_uring_submit(&ring);
    if (submitted > 0) {
      in_kernel += submitted;
    } else if (submitted < 0 && submitted != -EAGAIN && submitted != -EBUSY) {
      give_up_ring(in_kernel);  // the kernel takes nothing more from this ring
      fail(writing, bytes, file.path, -submitted);
    }
    if (in_flight == 0) break;
    if (in_kernel == 0) continue;  // the kernel was short of resources (EAGAIN): submit again
    io_uring_cqe* cqe = nullptr;
    const int waited = io_uring_wait_cqe(&ring, &cqe);
    if (waited == -EINTR) continue;
    if (waited < 0) {
      give_up_ring(in_kernel);
      fail(writing, bytes, file.path, -waited);
    }
    const auto s = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
    const int result = cqe->res;
    io_uring_cqe_seen(&ring, cqe);
    --in_kernel;
    --in_flight;
    free_slots.push_back(s);
    const Slot& slot = slots[s];
    if (result < 0) {
      if (error == 0) error = -result;
    } else if (result < slot.padded) {
      // A regular file's reserved block comes back whole; short means the device gave up.
      if (error == 0) error = writing ? ENOSPC : EIO;
    } else if (!writing) {
      std::memcpy(memory + slot.offset, buffers_[s], static_cast<size_t>(slot.length));
    }
  }
  if (error != 0) fail(writing, bytes, file.path, error);
}

void NvmeTier::give_up_ring(int64_t in_kernel) {
  // The kernel may still be filling or reading the bounce buffers: wait for what it took (as far
  // as the ring still answers), then close the ring, which drops what it never took, and go on
  // with threads, so no later request meets a stale one.
  io_uring& ring = ring_->ring;
  for (; in_kernel > 0; --in_kernel) {
    io_uring_cqe* cqe = nullptr;
    int waited = io_uring_wait_cqe(&ring, &cqe);
    while (waited == -EINTR) waited = io_uring_wait_cqe(&ring, &cqe);
    if (waited < 0) break;
    io_uring_cqe_seen(&ring, cqe);
  }
  io_uring_queue_exit(&ring);
  ring_.reset();
  engine_ = NvmeEngine::threads;
}

void NvmeTier::transfer_threads(Direction direction, const File& file, unsigned char* memory,
                                int64_t bytes) {
  const bool writing = direction == Direction::write;
  const int64_t bs = options_.block_size;
  const int64_t blocks = (bytes + bs - 1) / bs;
  std::atomic<int64_t> next{0};
  std::atomic<int> error{0};
  const auto work = [&](unsigned char* buffer) {
    for (int64_t i = next++; i < blocks && error.load() == 0; i = next++) {
      const int64_t offset = i * bs, length = std::min(bs, bytes - offset);
      const int64_t padded = nvme_aligned_bytes(length);
      int e = 0;
      if (writing) {
        std::memcpy(buffer, memory + offset, static_cast<size_t>(length));
        std::memset(buffer + length, 0, static_cast<size_t>(padded - length));
        e = move_all(true, file.fd, buffer, padded, offset);
      } else {
        e = move_all(false, file.fd, buffer, padded, offset);
        if (e == 0) std::memcpy(memory + offset, buffer, static_cast<size_t>(length));
      }
      int none = 0;
      if (e != 0) error.compare_exchange_strong(none, e);
    }
  };
  const int64_t workers = std::min<int64_t>(blocks, static_cast<int64_t>(buffers_.size()));
  std::vector<std::thread> threads;
  for (int64_t w = 1; w < workers; ++w)
    threads.emplace_back(work, buffers_[static_cast<size_t>(w)]);
  work(buffers_[0]);
  for (std::thread& t : threads) t.join();
  if (error.load() != 0) fail(writing, bytes, file.path, error.load());
}

}  // namespace vramlab::storage
