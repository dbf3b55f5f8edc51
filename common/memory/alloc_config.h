/// \file
/// \brief The allocator's configuration string, with PyTorch's PYTORCH_CUDA_ALLOC_CONF keys.
///
/// Format `key:value,key:value`. Keys: max_split_size_mb (≥ 20), max_non_split_rounding_mb (≥ 20),
/// roundup_power2_divisions (`4` or `[64:8,128:2,>:1]`), garbage_collection_threshold (0 < t < 1),
/// expandable_segments (True/False), backend (native), release_lock_on_cudamalloc (True/False),
/// pinned_use_cuda_host_register (True/False), pinned_num_register_threads (power of 2 ≤ 128),
/// pinned_use_background_threads (True/False). The environment is read from VRAMLAB_ALLOC_CONF,
/// else PYTORCH_CUDA_ALLOC_CONF, else PYTORCH_ALLOC_CONF.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace vramlab::memory {

/// Number of roundup_power2_divisions intervals: [1 MiB, 2 MiB) … [32 GiB, 64 GiB) and beyond.
inline constexpr std::size_t kRoundupPower2Intervals = 16;

/// The settings PYTORCH_CUDA_ALLOC_CONF controls. Defaults are PyTorch's.
struct AllocatorConfig {
  /// Blocks at least this large are never split ("oversize"); SIZE_MAX = unlimited.
  std::size_t max_split_size_bytes = std::numeric_limits<std::size_t>::max();
  /// An oversize request may take a cached block at most this much larger (default 20 MiB).
  std::size_t max_non_split_rounding_bytes = 20ULL << 20;
  /// Divisions per power-of-two interval, indexed by log2(size) − 20 clamped to [0, 15]; 0 or 1
  /// means plain 512-byte rounding.
  std::array<std::size_t, kRoundupPower2Intervals> roundup_power2_divisions{};
  /// Free old cached blocks when reserved memory exceeds this fraction of the allowed memory
  /// (0 = off; only acts after set_memory_fraction()).
  double garbage_collection_threshold = 0.0;
  /// Grow one segment per (stream, pool) by mapping pages instead of making new segments.
  bool expandable_segments = false;
  /// Accepted for compatibility; no effect in the simulator.
  bool release_lock_on_cudamalloc = false;
  /// Accepted for compatibility (pinned host memory settings); no effect here.
  bool pinned_use_cuda_host_register = false;
  /// Accepted for compatibility; no effect here.
  std::size_t pinned_num_register_threads = 1;
  /// Accepted for compatibility; no effect here.
  bool pinned_use_background_threads = false;
  /// The configuration text last applied, as given (PyTorch reports it in snapshots).
  std::string text;

  /// \return the divisions that apply to a request of \p size_bytes (> 0).
  std::size_t divisions_for(std::size_t size_bytes) const {
    // Intervals start at 1 MiB (2^20): index log2(size) - 20, clamped to [0, 15].
    const auto log_size = static_cast<std::size_t>(std::bit_width(size_bytes)) - 1;
    const std::size_t index =
        log_size > 20 ? std::min(log_size - 20, kRoundupPower2Intervals - 1) : 0;
    return roundup_power2_divisions[index];
  }
};

/// Applies `key:value,...` settings on top of \p base.
/// \param text the configuration string (may be empty).
/// \param base the settings to start from.
/// \return \p base with the given keys changed; `text` is set to \p text.
/// \throws vramlab::UsageError naming the key or the value for an unknown key, a malformed entry or
///         an invalid value (e.g. max_split_size_mb below 20).
AllocatorConfig parse_alloc_conf(std::string_view text, const AllocatorConfig& base = {});

/// \return the configuration from VRAMLAB_ALLOC_CONF (or PYTORCH_CUDA_ALLOC_CONF, or
///         PYTORCH_ALLOC_CONF), or the defaults when none is set.
/// \throws vramlab::UsageError if the variable's value is invalid.
AllocatorConfig alloc_conf_from_environment();

}  // namespace vramlab::memory
