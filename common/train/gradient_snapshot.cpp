// GradientSnapshot (see gradient_snapshot.h).
#include "common/train/gradient_snapshot.h"

#include "common/dtype/bulk_convert.h"
#include "common/nn/decoder_model.h"

namespace vramlab::train {

void GradientSnapshot::before(const nn::PhaseEvent& event) {
  if (event.phase != nn::StepPhase::optimizer_step || event.model == nullptr) return;
  nn::DecoderModel& model = *event.model;
  if (model.runtime().kernel_kind() == nn::KernelKind::meta) return;
  const memory::Tensor& grads = model.parameters().grads();  // (numel)
  const auto n = static_cast<size_t>(grads.numel());
  values_.resize(n);
  if (grads.dtype() == DType::f32) {
    model.runtime().copy_to_host(values_.data(), grads);
    return;
  }
  std::vector<uint16_t> bits(n);  // (numel) bf16 or f16 patterns
  model.runtime().copy_to_host(bits.data(), grads);
  if (grads.dtype() == DType::bf16)
    convert_bf16_to_f32(bits.data(), values_.data(), n);
  else
    convert_f16_to_f32(bits.data(), values_.data(), n);
}

}  // namespace vramlab::train
