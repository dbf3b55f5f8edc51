// The activation storage strategies of today: in place, and int8 with absmax scales
// (activation_storage.h).
#include "common/nn/activation_storage.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/memory/memory_category.h"

namespace vramlab::nn {

namespace {

using recompute::ActivationCompression;

// Keeps every tensor as it is.
class InPlaceStorage final : public ActivationStorage {
 public:
  [[nodiscard]] std::string_view name() const override { return "none"; }
  [[nodiscard]] std::unique_ptr<PackedActivation> pack(Runtime& runtime,
                                                       const Tensor& tensor) override {
    (void)runtime;
    (void)tensor;
    return nullptr;
  }
  [[nodiscard]] Tensor unpack(Runtime& runtime, PackedActivation& packed,
                              const std::vector<int64_t>& shape, DType dtype,
                              const std::string& name) override {
    (void)runtime, (void)packed, (void)shape, (void)dtype, (void)name;
    throw std::logic_error("activation storage 'none' packs nothing, so it unpacks nothing");
  }
};

// int8 values and their fp32 absmax scales.
class Int8Packed final : public PackedActivation {
 public:
  Int8Packed(Tensor values, Tensor scales)
      : values_(std::move(values)), scales_(std::move(scales)) {}
  // The values go back to the allocator before the scales, in the order they were allocated.
  ~Int8Packed() override {
    values_.reset();
    scales_.reset();
  }
  Int8Packed(const Int8Packed&) = delete;
  Int8Packed& operator=(const Int8Packed&) = delete;
  [[nodiscard]] int64_t bytes() const override { return values_.bytes() + scales_.bytes(); }
  [[nodiscard]] const Tensor& values() const { return values_; }
  [[nodiscard]] const Tensor& scales() const { return scales_; }

 private:
  Tensor values_;  // i8, the tensor's shape
  Tensor scales_;  // f32, (ceil(numel / block))
};

// Quantises floating-point tensors to int8 with one absmax scale per block of `block` elements,
// or per tensor (block 0).
class Int8Storage final : public ActivationStorage {
 public:
  Int8Storage(std::string_view name, int64_t block) : name_(name), block_(block) {}
  [[nodiscard]] std::string_view name() const override { return name_; }

  [[nodiscard]] std::unique_ptr<PackedActivation> pack(Runtime& runtime,
                                                       const Tensor& tensor) override {
    const DType type = tensor.dtype();
    if (type != DType::f32 && type != DType::bf16 && type != DType::f16) return nullptr;
    const int64_t block = block_of(tensor.numel());
    Tensor values = runtime.allocate(tensor.shape(), DType::i8, memory::MemoryCategory::activation,
                                     tensor.name());
    Tensor scales = runtime.allocate({(tensor.numel() + block - 1) / block}, DType::f32,
                                     memory::MemoryCategory::activation, tensor.name() + ".scales");
    runtime.kernels().quantize_int8(values.view(), scales.view(), tensor.view(), block);
    return std::make_unique<Int8Packed>(std::move(values), std::move(scales));
  }

  [[nodiscard]] Tensor unpack(Runtime& runtime, PackedActivation& packed,
                              const std::vector<int64_t>& shape, DType dtype,
                              const std::string& name) override {
    const auto& int8 = dynamic_cast<const Int8Packed&>(packed);
    Tensor tensor = runtime.allocate(shape, dtype, memory::MemoryCategory::activation, name);
    runtime.kernels().dequantize_int8(tensor.view(), int8.values().view(), int8.scales().view(),
                                      block_of(tensor.numel()));
    return tensor;
  }

 private:
  [[nodiscard]] int64_t block_of(int64_t numel) const {
    return block_ > 0 ? block_ : std::max<int64_t>(numel, 1);
  }
  std::string_view name_;
  int64_t block_;  // elements per scale; 0: one scale for the whole tensor
};

}  // namespace

std::unique_ptr<ActivationStorage> make_activation_storage(ActivationCompression compression) {
  switch (compression) {
    case ActivationCompression::none:
      return std::make_unique<InPlaceStorage>();
    case ActivationCompression::int8:
      return std::make_unique<Int8Storage>(recompute::compression_name(compression), 0);
    case ActivationCompression::int8_block:
      return std::make_unique<Int8Storage>(recompute::compression_name(compression),
                                           recompute::kInt8ActivationBlock);
  }
  throw std::logic_error("make_activation_storage: unknown compression");
}

}  // namespace vramlab::nn
