// SavedActivations: the per-step store of tensors kept for backward (see saved_activations.h).
#include "common/nn/saved_activations.h"

#include <algorithm>
#include <stdexcept>

#include "common/memory/memory_category.h"
#include "common/platform/errors.h"

namespace vramlab::nn {

SavedActivations::SavedActivations(Runtime& runtime, int64_t layers)
    : runtime_(runtime),
      plan_(static_cast<size_t>(std::max<int64_t>(layers, 0))),
      rng_offsets_(plan_.size(), 0),
      slots_(static_cast<size_t>(std::max<int64_t>(layers, 0)) + 1) {}

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
                               DType dtype, bool compressible) {
  auto& entries = slots_[slot(layer)];
  for (const Entry& e : entries)
    if (e.name == name)
      throw std::logic_error("saved activations: '" + std::string(name) +
                             "' saved twice in layer " + std::to_string(layer));
  std::string full_name =
      layer < 0 ? std::string(name) : "blocks." + std::to_string(layer) + "." + std::string(name);
  Tensor buffer = runtime_.allocate(std::move(shape), dtype, memory::MemoryCategory::activation,
                                    std::move(full_name));
  bytes_ += buffer.bytes();
  peak_bytes_ = std::max(peak_bytes_, bytes_);
  entries.push_back(
      Entry{std::string(name), std::move(buffer), next_order_++, compressible, {}, {}, dtype});
  return entries.back().buffer;
}

const Tensor& SavedActivations::get(int64_t layer, std::string_view name) const {
  for (const Entry& e : slots_[slot(layer)]) {
    if (e.name != name) continue;
    if (e.compressed())
      throw std::logic_error("saved activations: '" + std::string(name) + "' of layer " +
                             std::to_string(layer) + " is compressed: decompress it first");
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

int64_t SavedActivations::block_of(const Tensor& tensor) const {
  return compression_ == ActivationCompression::int8_block ? kInt8ActivationBlock
                                                           : std::max<int64_t>(tensor.numel(), 1);
}

void SavedActivations::compress(int64_t layer, std::string_view name) {
  if (compression_ == ActivationCompression::none || !contains(layer, name)) return;
  Entry& e = entry(layer, name);
  const DType type = e.buffer.dtype();
  if (!e.compressible || e.compressed() ||
      (type != DType::f32 && type != DType::bf16 && type != DType::f16))
    return;
  const int64_t block = block_of(e.buffer);
  const int64_t scales = (e.buffer.numel() + block - 1) / block;
  // The int8 form is allocated before the fp32 one is freed: both exist for a moment, as with a
  // pack hook.
  e.quantized = runtime_.allocate(e.buffer.shape(), DType::i8, memory::MemoryCategory::activation,
                                  e.buffer.name());
  e.scales = runtime_.allocate({scales}, DType::f32, memory::MemoryCategory::activation,
                               e.buffer.name() + ".scales");  // (ceil(numel / block))
  bytes_ += e.quantized.bytes() + e.scales.bytes();
  peak_bytes_ = std::max(peak_bytes_, bytes_);
  runtime_.kernels().quantize_int8(e.quantized.view(), e.scales.view(), e.buffer.view(), block);
  bytes_ -= e.buffer.bytes();
  e.buffer.reset();
}

void SavedActivations::compress_layer(int64_t layer, std::string_view except) {
  std::vector<std::string> names;
  for (const Entry& e : slots_[slot(layer)])
    if (e.name != except) names.push_back(e.name);
  for (const std::string& name : names) compress(layer, name);
}

void SavedActivations::decompress(int64_t layer, std::string_view name) {
  if (!contains(layer, name)) return;
  Entry& e = entry(layer, name);
  if (!e.compressed()) return;
  e.buffer = runtime_.allocate(e.quantized.shape(), e.dtype, memory::MemoryCategory::activation,
                               e.quantized.name());
  bytes_ += e.buffer.bytes();
  peak_bytes_ = std::max(peak_bytes_, bytes_);
  runtime_.kernels().dequantize_int8(e.buffer.view(), e.quantized.view(), e.scales.view(),
                                     block_of(e.buffer));
  bytes_ -= e.quantized.bytes() + e.scales.bytes();
  e.quantized.reset();
  e.scales.reset();
}

void SavedActivations::decompress_layer(int64_t layer) {
  std::vector<std::string> names;
  for (const Entry& e : slots_[slot(layer)]) names.push_back(e.name);
  for (const std::string& name : names) decompress(layer, name);
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
          {e.order, e.compressed()
                        ? SavedActivationInfo{e.name, true, static_cast<int64_t>(s) - 1,
                                              e.quantized.shape(), e.dtype, e.bytes()}
                        : SavedActivationInfo{e.name, false, static_cast<int64_t>(s) - 1,
                                              e.buffer.shape(), e.buffer.dtype(), e.bytes()}});
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SavedActivationInfo> out;
  for (auto& [order, info] : ordered) out.push_back(std::move(info));
  return out;
}

}  // namespace vramlab::nn
