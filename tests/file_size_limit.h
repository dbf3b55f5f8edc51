#pragma once
// The process's file-size limit for a scope: a write beyond it fails with EFBIG, as on a full disk
// (the kernel checks it on every write and fallocate), and SIGXFSZ is ignored meanwhile so the
// failure is an error code, not the end of the process. For the tests of what writes files (the
// NVMe tier's users, snapshots).

#include <sys/resource.h>

#include <csignal>

namespace vramlab::test_build {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previous_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  void (*previous_)(int) = nullptr;
};

}  // namespace vramlab::test_build
