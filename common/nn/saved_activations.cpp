// SavedActivations: the per-step store of tensors kept for backward (see saved_activations.h).
#include "common/nn/saved_activations.h"

#include <algorithm>
#include <stdexcept>

#include "common/memory/history.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"
#include "common/model/saved_tensor_names.h"
#include "common/platform/errors.h"

namespace vramlab::nn {

SavedActivations::SavedActivations(Runtime& runtime, int64_t layers)
    : runtime_(runtime),
      plan_(static_cast<size_t>(std::max<int64_t>(layers, 0))),
      rng_offsets_(plan_.size(), 0),
      slots_(static_cast<size_t>(std::max<int64_t>(layers, 0)) + 1),
      storage_(make_activation_storage(ActivationCompression::none)) {}

void SavedActivations::set_storage(std::unique_ptr<ActivationStorage> storage) {
  if (storage == nullptr) throw std::logic_error("saved activations: no storage");
  for (const auto& entries : slots_)
    for (const Entry& e : entries)
      if (e.packed != nullptr)
        throw std::logic_error("saved activations: storage changed while '" + e.name +
                               "' is packed");
  storage_ = std::move(storage);
}

size_t SavedActivations::slot(int64_t layer) const {
  if (layer < -1 || layer >= static_cast<int64_t>(plan_.size()))
    throw std::logic_error("saved activations: layer " + std::to_string(layer) + " out of range");
  return static_cast<size_t>(layer + 1);
}

void SavedActivations::set_plan(std::vector<LayerPolicy> plan) {
  if (plan.size() != plan_.size())
    throw UsageError("activation plan: " + std::to_string(plan.size()) + " layer policies for " +
                     std::to_string(plan_.size()) + " layers");
  for (size_t l = 0; l < plan.size(); ++l) {
    const bool after_full = l > 0 && plan[l - 1].recompute == Recompute::full;
    if (plan[l].recompute == Recompute::full && !after_full && !plan[l].span_start)
      throw UsageError("activation plan: layer " + std::to_string(l) +
                       " recomputes in full after a layer that does not, so it must start a span");
  }
  plan_ = std::move(plan);
}

const LayerPolicy& SavedActivations::policy(int64_t layer) const {
  static const LayerPolicy outside_the_blocks{};
  return layer < 0 ? outside_the_blocks : plan_[slot(layer) - 1];
}

int64_t SavedActivations::span_first(int64_t layer) const {
  while (layer > 0 && !policy(layer).span_start) --layer;
  return layer;
}

bool SavedActivations::span_last(int64_t layer) const {
  const auto next = static_cast<size_t>(layer + 1);
  return next == plan_.size() || plan_[next].recompute != Recompute::full || plan_[next].span_start;
}

Tensor& SavedActivations::save(int64_t layer, std::string_view name, std::vector<int64_t> shape,
                               DType dtype, bool packable) {
  auto& entries = slots_[slot(layer)];
  for (const Entry& e : entries)
    if (e.name == name)
      throw std::logic_error("saved activations: '" + std::string(name) +
                             "' saved twice in layer " + std::to_string(layer));
  std::string full_name =
      layer < 0 ? std::string(name) : layer_module_name(layer) + "." + std::string(name);
  Tensor buffer =
      runtime_.allocate(shape, dtype, memory::MemoryCategory::activation, std::move(full_name));
  bytes_ += buffer.bytes();
  peak_bytes_ = std::max(peak_bytes_, bytes_);
  entries.push_back(Entry{std::string(name), std::move(buffer), next_order_++, packable, nullptr,
                          std::move(shape), dtype});
  return entries.back().buffer;
}

const Tensor& SavedActivations::get(int64_t layer, std::string_view name) const {
  for (const Entry& e : slots_[slot(layer)]) {
    if (e.name != name) continue;
    if (e.packed != nullptr)
      throw std::logic_error("saved activations: '" + std::string(name) + "' of layer " +
                             std::to_string(layer) + " is packed: unpack it first");
    return e.buffer;
  }
  throw std::logic_error("saved activations: nothing named '" + std::string(name) +
                         "' saved in layer " + std::to_string(layer));
}

SavedActivations::Entry& SavedActivations::entry(int64_t layer, std::string_view name) {
  for (Entry& e : slots_[slot(layer)])
    if (e.name == name) return e;
  throw std::logic_error("saved activations: nothing named '" + std::string(name) +
                         "' saved in layer " + std::to_string(layer));
}

void SavedActivations::pack(int64_t layer, std::string_view name) {
  if (!contains(layer, name)) return;
  Entry& e = entry(layer, name);
  if (!e.packable || e.packed != nullptr) return;
  std::unique_ptr<PackedActivation> packed = storage_->pack(runtime_, e.buffer);
  if (packed == nullptr) return;
  // Both forms exist until here, as with a pack hook: the peak counts them together.
  bytes_ += packed->bytes();
  peak_bytes_ = std::max(peak_bytes_, bytes_);
  bytes_ -= e.buffer.bytes();
  e.buffer.reset();
  e.packed = std::move(packed);
}

void SavedActivations::unpack(int64_t layer, std::string_view name) {
  if (!contains(layer, name)) return;
  Entry& e = entry(layer, name);
  if (e.packed == nullptr) return;
  const std::string full_name =
      layer < 0 ? std::string(name) : layer_module_name(layer) + "." + std::string(name);
  const int64_t packed_before = e.packed->bytes();  // a prefetched tensor counts from there
  e.buffer = storage_->unpack(runtime_, *e.packed, e.shape, e.dtype, full_name);
  const int64_t packed_after = e.packed->bytes();  // what the unpack left in the packed form
  bytes_ += e.buffer.bytes() - (packed_before - packed_after);
  peak_bytes_ = std::max(peak_bytes_, bytes_);
  bytes_ -= packed_after;
  e.packed.reset();
}

void SavedActivations::pack_layer(int64_t layer, std::string_view except) {
  const memory::ModuleScope module(layer_module_name(layer));
  std::vector<std::string> names;
  for (const Entry& e : slots_[slot(layer)])
    if (e.name != except) names.push_back(e.name);
  for (const std::string& name : names) pack(layer, name);
}

void SavedActivations::unpack_layer(int64_t layer) {
  const memory::ModuleScope module(layer_module_name(layer));
  std::vector<std::string> names;
  for (const Entry& e : slots_[slot(layer)]) names.push_back(e.name);
  for (const std::string& name : names) unpack(layer, name);
}

void SavedActivations::prefetch_entry(Entry& e) {
  if (e.packed == nullptr) return;
  const int64_t before = e.packed->bytes();
  storage_->prefetch(runtime_, *e.packed);
  bytes_ += e.packed->bytes() - before;
  peak_bytes_ = std::max(peak_bytes_, bytes_);
}

void SavedActivations::prefetch_layer(int64_t layer) {
  for (Entry& e : slots_[slot(layer)]) prefetch_entry(e);
}

void SavedActivations::pack_after_forward(int64_t layer) {
  if (layer < layers()) pack_layer(layer, saved::residual3);
  if (layer > 0) {
    const memory::ModuleScope module(layer_module_name(layer - 1));
    pack(layer - 1, saved::residual3);
  }
}

void SavedActivations::unpack_for_backward(int64_t layer) {
  if (layer < layers()) unpack_layer(layer);
  if (layer > 0) {
    const memory::ModuleScope module(layer_module_name(layer - 1));
    unpack(layer - 1, saved::residual3);
    prefetch_layer(layer - 1);
    // A recomputed span that ends at layer − 1 runs its forward again next, from its input.
    const int64_t previous = layer - 1;
    if (policy(previous).recompute == Recompute::full && span_last(previous)) {
      const int64_t first = span_first(previous);
      if (first > 0 && contains(first - 1, saved::residual3))
        prefetch_entry(entry(first - 1, saved::residual3));
    }
  }
}

void SavedActivations::unpack_span_input(int64_t first) {
  if (first == 0) return;
  const memory::ModuleScope module(layer_module_name(first - 1));
  unpack(first - 1, saved::residual3);
}

bool SavedActivations::contains(int64_t layer, std::string_view name) const {
  const auto& entries = slots_[slot(layer)];
  return std::any_of(entries.begin(), entries.end(),
                     [&](const Entry& e) { return e.name == name; });
}

void SavedActivations::release(int64_t layer, std::string_view name) {
  auto& entries = slots_[slot(layer)];
  const auto it =
      std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.name == name; });
  if (it == entries.end())
    throw std::logic_error("saved activations: cannot release '" + std::string(name) +
                           "': nothing of that name saved in layer " + std::to_string(layer));
  bytes_ -= it->bytes();
  entries.erase(it);
}

void SavedActivations::release_all_except(int64_t layer, std::string_view keep) {
  auto& entries = slots_[slot(layer)];
  for (auto it = entries.begin(); it != entries.end();) {
    if (it->name == keep) {
      ++it;
    } else {
      bytes_ -= it->bytes();
      it = entries.erase(it);
    }
  }
}

void SavedActivations::release_layer(int64_t layer) {
  auto& entries = slots_[slot(layer)];
  for (const Entry& e : entries) bytes_ -= e.bytes();
  entries.clear();
}

void SavedActivations::clear() {
  for (auto& entries : slots_) entries.clear();
  bytes_ = 0;
}

std::vector<SavedActivationInfo> SavedActivations::list() const {
  std::vector<std::pair<uint64_t, SavedActivationInfo>> ordered;
  for (size_t s = 0; s < slots_.size(); ++s)
    for (const Entry& e : slots_[s])
      ordered.push_back(
          {e.order, SavedActivationInfo{e.name, e.packed != nullptr, static_cast<int64_t>(s) - 1,
                                        e.shape, e.dtype, e.bytes()}});
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SavedActivationInfo> out;
  for (auto& [order, info] : ordered) out.push_back(std::move(info));
  return out;
}

}  // namespace vramlab::nn
