/// \file
/// \brief Sizes with a unit, as the command line writes them ("2GiB", "512MiB", "1.5GB"):
/// `--device sim:SIZE`, `--recompute budget:SIZE` and the host-memory limit read them.
#pragma once

#include <cstdint>
#include <string_view>

namespace vramlab::platform {

/// Parses a size such as "2GiB", "512MiB", "1.5GB", "4096B" into bytes (decimal units KB/MB/GB/TB
/// are powers of 1000, binary units KiB/MiB/GiB/TiB powers of 1024).
/// \param text the size; the number may have a fraction, the unit is required.
/// \return the size in bytes, rounded down (at most 9.2e18, so it fits in an int64_t).
/// \throws vramlab::UsageError naming \p text when it is not a positive size with a unit.
std::uint64_t parse_size_bytes(std::string_view text);

}  // namespace vramlab::platform
