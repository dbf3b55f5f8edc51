/// \file
/// \brief The offloaded optimizer's states on the NVMe tier (ZeRO-Infinity's
/// `offload_optimizer.device: nvme`): one file per state and part (a ZeRO-3 unit's shard), and
/// host memory for two parts' states at a time, into which a step reads a part, updates it and
/// writes it back (Note [Optimizer states on NVMe] in optimizer.cpp).
///
/// On a meta host no file is made: the bytes are counted as the files would hold them and the
/// time is the drive's (the clock's model, as for every meta copy).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/memory/device.h"
#include "common/memory/tensor.h"
#include "common/nn/nvme_drive.h"
#include "common/nn/runtime.h"
#include "common/storage/nvme_tier.h"

namespace vramlab::optim {

/// Where and how the states reach the drive (`--nvme-*` flags).
using NvmeSwapOptions = nn::NvmeDrive;

/// One state every part has (the fp32 master, a moment): its name and element type.
struct SwappedState {
  std::string name;          ///< e.g. "adamw.exp_avg", part of the file names
  DType dtype = DType::f32;  ///< its element type
};

/// What went to and from the drive.
struct SwapTraffic {
  int64_t read_bytes = 0;   ///< the states' bytes (not the files' padding)
  int64_t write_bytes = 0;  ///< likewise
};

/// The files and the host staging of one optimizer's states (file comment). One caller.
class StateSwap {
 public:
  /// \param host the runtime the staging lives on (the optimizer's); files are made unless it
  /// is meta. \param options where and how.
  /// \throws vramlab::UsageError for a bandwidth ≤ 0 or non-finite, or no path on a host that
  /// makes files; storage::StorageError for a path the tier refuses (NvmeTier's checks).
  StateSwap(nn::Runtime& host, NvmeSwapOptions options);
  ~StateSwap();
  StateSwap(const StateSwap&) = delete;
  StateSwap& operator=(const StateSwap&) = delete;

  /// Makes a file for each of \p states of each part (of \p part_numels elements) and two
  /// staging sets for the largest part (category optimizer_state). At the first step.
  /// \throws storage::StorageError when the drive cannot hold the files;
  /// memory::OutOfMemoryError when the host cannot hold the staging. Either way nothing is left
  /// (prepared() stays false); std::logic_error when prepared already.
  void prepare(const std::vector<int64_t>& part_numels, std::vector<SwappedState> states);
  /// \return whether prepare() succeeded.
  [[nodiscard]] bool prepared() const { return !staging_.empty(); }
  /// \return the parts prepare() was given.
  [[nodiscard]] int64_t part_count() const { return static_cast<int64_t>(part_numels_.size()); }
  /// \return the states each part has (one file each).
  [[nodiscard]] int64_t state_count() const { return static_cast<int64_t>(states_.size()); }

  /// \return \p part's states in host memory (its staging set, part % 2), in prepare()'s order,
  /// each of the part's elements.
  [[nodiscard]] std::vector<memory::TensorView> staged(int64_t part) const;
  /// Reads \p part's states from their files into staged(part). \throws storage::StorageError.
  void read(int64_t part) { transfer(part, false); }
  /// Writes staged(part) to \p part's files. \throws storage::StorageError.
  void write(int64_t part) { transfer(part, true); }
  /// \return the bytes of \p part's states (Σ elements × element size).
  [[nodiscard]] int64_t part_bytes(int64_t part) const;

  /// \return bytes on the drive: every file, each rounded up to storage::kNvmeAlignment (counted
  /// the same on meta, where no file is made).
  [[nodiscard]] int64_t file_bytes() const { return file_bytes_; }
  /// \return bytes of the host staging (two parts' states).
  [[nodiscard]] int64_t staging_bytes() const;
  /// \return what read() and write() moved so far.
  [[nodiscard]] const SwapTraffic& traffic() const { return traffic_; }
  /// \return the tier with the files; null on meta.
  [[nodiscard]] const storage::NvmeTier* tier() const { return tier_.get(); }
  /// \return the options, as given.
  [[nodiscard]] const NvmeSwapOptions& options() const { return options_; }

 private:
  void transfer(int64_t part, bool writing);  // read() or write()

  nn::Runtime& host_;
  NvmeSwapOptions options_;
  std::unique_ptr<storage::NvmeTier> tier_;  // null on meta
  std::vector<int64_t> part_numels_;         // (parts)
  std::vector<SwappedState> states_;         // (states)
  std::vector<int64_t> files_;               // (parts × states) the tier's file indices
  std::vector<memory::Tensor> staging_;      // (2 × states) each of the largest part's numel
  int64_t file_bytes_ = 0;
  SwapTraffic traffic_;
};

}  // namespace vramlab::optim
