// The offloaded optimizer's states on the NVMe tier (see state_swap.h).
#include "common/optim/state_swap.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "common/memory/memory_category.h"
#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab::optim {

StateSwap::StateSwap(nn::Runtime& host, NvmeSwapOptions options)
    : host_(host),
      options_(std::move(options)),
      tier_(nn::open_drive(host_, options_, "--offload-optimizer-device")) {}

StateSwap::~StateSwap() = default;

void StateSwap::prepare(const std::vector<int64_t>& part_numels, std::vector<SwappedState> states) {
  if (prepared()) throw std::logic_error("StateSwap::prepare: prepared already");
  int64_t largest = 0;
  for (const int64_t n : part_numels) largest = std::max(largest, n);
  std::vector<int64_t> files;
  int64_t file_bytes = 0;
  try {
    for (size_t p = 0; p < part_numels.size(); ++p)
      for (const SwappedState& s : states) {
        const int64_t bytes = checked_mul(
            part_numels[p], static_cast<int64_t>(dtype_size_bytes(s.dtype)), "state bytes");
        if (tier_) files.push_back(tier_->create("part" + std::to_string(p) + "." + s.name, bytes));
        file_bytes = checked_add(file_bytes, storage::nvme_aligned_bytes(bytes), "NVMe bytes");
      }
    std::vector<memory::Tensor> staging;
    for (int set = 0; set < 2; ++set)
      for (const SwappedState& s : states)
        staging.push_back(host_.allocate({largest}, s.dtype,
                                         memory::MemoryCategory::optimizer_state,
                                         s.name + " (staged from NVMe)"));
    staging_ = std::move(staging);
  } catch (...) {
    // A drive too small for the last file, or a host too small for the staging: the files made
    // so far go (a retry makes them again).
    if (tier_) tier_->remove_files();
    throw;
  }
  part_numels_ = part_numels;
  states_ = std::move(states);
  files_ = std::move(files);
  file_bytes_ = file_bytes;
}

std::vector<memory::TensorView> StateSwap::staged(int64_t part) const {
  const int64_t numel = part_numels_.at(static_cast<size_t>(part));
  const size_t set = static_cast<size_t>(part % 2) * states_.size();
  std::vector<memory::TensorView> views;
  for (size_t s = 0; s < states_.size(); ++s)
    views.push_back(staging_[set + s].view().slice(0, {numel}));
  return views;
}

int64_t StateSwap::part_bytes(int64_t part) const {
  const int64_t numel = part_numels_.at(static_cast<size_t>(part));
  int64_t bytes = 0;
  for (const SwappedState& s : states_)
    bytes += numel * static_cast<int64_t>(dtype_size_bytes(s.dtype));
  return bytes;
}

void StateSwap::transfer(int64_t part, bool writing) {
  const std::vector<memory::TensorView> views = staged(part);
  for (size_t s = 0; tier_ && s < views.size(); ++s) {
    const int64_t file = files_[static_cast<size_t>(part) * states_.size() + s];
    if (writing)
      tier_->write(file, views[s].data(), views[s].bytes());
    else
      tier_->read(file, views[s].data(), views[s].bytes());
  }
  (writing ? traffic_.write_bytes : traffic_.read_bytes) += part_bytes(part);
}

int64_t StateSwap::staging_bytes() const {
  int64_t bytes = 0;
  for (const memory::Tensor& t : staging_) bytes += t.bytes();
  return bytes;
}

}  // namespace vramlab::optim
