// SavedActivations: the per-step store of tensors kept for backward (see saved_activations.h).
#include "common/nn/saved_activations.h"

#include <algorithm>
#include <stdexcept>

#include "common/memory/memory_category.h"
#include "common/platform/errors.h"

namespace vramlab::nn {

std::string_view activation_policy_name(ActivationPolicy policy) {
  switch (policy) {
    case ActivationPolicy::save:
      return "save";
    case ActivationPolicy::recompute:
      return "recompute";
    case ActivationPolicy::offload:
      return "offload";
    case ActivationPolicy::compress:
      return "compress";
  }
  return "unknown";
}

SavedActivations::SavedActivations(Runtime& runtime, int64_t layers)
    : runtime_(runtime),
      policies_(static_cast<size_t>(std::max<int64_t>(layers, 0)), ActivationPolicy::save),
      slots_(static_cast<size_t>(std::max<int64_t>(layers, 0)) + 1) {}

size_t SavedActivations::slot(int64_t layer) const {
  if (layer < -1 || layer >= static_cast<int64_t>(policies_.size()))
    throw std::logic_error("saved activations: layer " + std::to_string(layer) + " out of range");
  return static_cast<size_t>(layer + 1);
}

void SavedActivations::set_policy(int64_t layer, ActivationPolicy policy) {
  if (layer < 0 || layer >= static_cast<int64_t>(policies_.size()))
    throw UsageError("activation policy: layer " + std::to_string(layer) + " out of range [0, " +
                     std::to_string(policies_.size()) + ")");
  if (policy != ActivationPolicy::save)
    throw UsageError("activation policy '" + std::string(activation_policy_name(policy)) +
                     "' (layer " + std::to_string(layer) +
                     "): not implemented by the runtime yet (only 'save' is)");
  policies_[static_cast<size_t>(layer)] = policy;
}

ActivationPolicy SavedActivations::policy(int64_t layer) const {
  return layer < 0 ? ActivationPolicy::save : policies_[slot(layer) - 1];
}

Tensor& SavedActivations::save(int64_t layer, std::string_view name, std::vector<int64_t> shape,
                               DType dtype) {
  auto& entries = slots_[slot(layer)];
  for (const Entry& e : entries)
    if (e.name == name)
      throw std::logic_error("saved activations: '" + std::string(name) +
                             "' saved twice in layer " + std::to_string(layer));
  std::string full_name =
      layer < 0 ? std::string(name) : "blocks." + std::to_string(layer) + "." + std::string(name);
  Tensor buffer = runtime_.allocate(std::move(shape), dtype, memory::MemoryCategory::activation,
                                    std::move(full_name));
  entries.push_back(Entry{std::string(name), std::move(buffer), next_order_++});
  return entries.back().buffer;
}

const Tensor& SavedActivations::get(int64_t layer, std::string_view name) const {
  for (const Entry& e : slots_[slot(layer)])
    if (e.name == name) return e.buffer;
  throw std::logic_error("saved activations: nothing named '" + std::string(name) +
                         "' saved in layer " + std::to_string(layer));
}

void SavedActivations::release_layer(int64_t layer) {
  slots_[slot(layer)].clear();
}

void SavedActivations::clear() {
  for (auto& entries : slots_) entries.clear();
}

std::vector<SavedActivationInfo> SavedActivations::list() const {
  std::vector<std::pair<uint64_t, SavedActivationInfo>> ordered;
  for (size_t s = 0; s < slots_.size(); ++s)
    for (const Entry& e : slots_[s])
      ordered.push_back(
          {e.order, SavedActivationInfo{e.name, static_cast<int64_t>(s) - 1, e.buffer.shape(),
                                        e.buffer.dtype(), e.buffer.bytes()}});
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SavedActivationInfo> out;
  for (auto& [order, info] : ordered) out.push_back(std::move(info));
  return out;
}

int64_t SavedActivations::bytes() const {
  int64_t total = 0;
  for (const auto& entries : slots_)
    for (const Entry& e : entries) total += e.buffer.bytes();
  return total;
}

}  // namespace vramlab::nn
