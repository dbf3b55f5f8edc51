/// \file
/// \brief The NVMe drive a host runtime swaps to (ZeRO-Infinity's `nvme_path`): where its files go,
/// the shape of its requests, and its bandwidths as the device's clock times them. The optimizer's
/// states (optim::StateSwap) and the parameters (ParameterStore) use one drive.
#pragma once

#include <memory>

#include "common/memory/device.h"
#include "common/nn/runtime.h"
#include "common/storage/nvme_tier.h"

namespace vramlab::nn {

/// Where and how data reaches the drive (`--nvme-*` flags).
struct NvmeDrive {
  storage::NvmeOptions files;  ///< the directory and the requests' shape (not used on meta)
  /// The drive as the device's clock times its reads and writes (HostSpec's typical drive by
  /// default), on every device: as a copy's time comes from the link's bandwidth, not a watch.
  double read_bytes_per_s = memory::kTypicalNvmeReadBytesPerS;
  double write_bytes_per_s = memory::kTypicalNvmeWriteBytesPerS;  ///< see read_bytes_per_s
};

/// Checks \p drive and opens its tier for files made in \p host's memory.
/// \param host the runtime whose memory the files' data passes through. \param drive where and
/// how. \param flag the flag that put data on the drive, named in the error without a path.
/// \return the tier, or null on a meta host (no file is made: the bytes are counted and the time
/// is the drive's, as for every meta copy).
/// \throws vramlab::UsageError for a bandwidth ≤ 0 or non-finite, or no path on a host that makes
/// files; storage::StorageError for a path the tier refuses (NvmeTier's checks).
std::unique_ptr<storage::NvmeTier> open_drive(const Runtime& host, const NvmeDrive& drive,
                                              const char* flag);

}  // namespace vramlab::nn
