// The NVMe drive a host runtime swaps to (see nvme_drive.h).
#include "common/nn/nvme_drive.h"

#include <cmath>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::nn {

namespace {

void require_bandwidth(double bytes_per_s, const char* what) {
  if (!std::isfinite(bytes_per_s) || bytes_per_s <= 0.0)
    throw UsageError(std::string("the NVMe drive's ") + what + " bandwidth must be > 0, got " +
                     std::to_string(bytes_per_s) + " bytes/s");
}

}  // namespace

std::unique_ptr<storage::NvmeTier> open_drive(const Runtime& host, const NvmeDrive& drive,
                                              const char* flag) {
  require_bandwidth(drive.read_bytes_per_s, "read");
  require_bandwidth(drive.write_bytes_per_s, "write");
  if (host.device().kind == memory::DeviceKind::meta) return nullptr;
  if (drive.files.path.empty())
    throw UsageError(
        std::string(flag) +
        " nvme needs --nvme-path DIR: the directory, on the drive, where its files go");
  return std::make_unique<storage::NvmeTier>(drive.files);
}

}  // namespace vramlab::nn
