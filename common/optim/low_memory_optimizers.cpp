// Lion, Adam-mini, Adafactor and 8-bit AdamW over a ParameterStore (see low_memory_optimizers.h).
#include "common/optim/low_memory_optimizers.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/memory/memory_category.h"
#include "common/platform/errors.h"
#include "kernels/cpu/optimizer_8bit.h"

namespace vramlab::optim {

namespace {

// The store must be the model's: the layout's offsets index into it.
void require_layout(const std::vector<optim::TensorStateLayout>& layout,
                    const nn::ParameterStore& params, const char* optimizer) {
  const auto& views = params.views();
  bool same = views.size() == layout.size();
  for (size_t i = 0; same && i < views.size(); ++i)
    same = views[i].name == layout[i].name && views[i].offset == layout[i].offset &&
           views[i].numel == layout[i].numel;
  if (!same)
    throw std::logic_error(std::string(optimizer) +
                           ": the parameter store is not laid out as the model it was built for");
}

// A 1-D slice of a flat block.
memory::TensorView slice(const memory::TensorView& block, int64_t offset, int64_t numel) {
  return block.slice(offset, {numel});
}
memory::TensorView slice_or_none(const memory::TensorView& block, int64_t offset, int64_t numel) {
  return block.none() ? memory::TensorView() : slice(block, offset, numel);
}

}  // namespace

// ---- Lion ----------------------------------------------------------------------------------

Lion::Lion(nn::Runtime& runtime, const kernels::cpu::LionHyperparameters& hp,
           const amp::PrecisionPolicy& precision)
    : Optimizer(runtime, precision), hp_(hp) {
  require_hyperparameter(std::isfinite(hp.learning_rate) && hp.learning_rate > 0, "learning rate",
                         hp.learning_rate);
  require_hyperparameter(hp.beta1 >= 0 && hp.beta1 < 1, "beta1", hp.beta1);
  require_hyperparameter(hp.beta2 >= 0 && hp.beta2 < 1, "beta2", hp.beta2);
  require_hyperparameter(hp.weight_decay >= 0, "weight decay", hp.weight_decay);
}

void Lion::update(nn::ParameterStore& params, float grad_multiplier) {
  update_parts(params, {"lion.exp_avg"},
               [&](const Update& u, const std::vector<memory::TensorView>& states) {
                 runtime_.kernels().lion_update(u.values, u.grads, states[0], u.working_copy, hp_,
                                                update_step(grad_multiplier, u.first_element));
               });
}

int64_t Lion::state_bytes() const {
  return elementwise_state_bytes();
}

// ---- Adam-mini -----------------------------------------------------------------------------

AdamMini::AdamMini(nn::Runtime& runtime, const ModelConfig& model,
                   const kernels::cpu::AdamWHyperparameters& hp,
                   const amp::PrecisionPolicy& precision)
    : Optimizer(runtime, precision), layout_(optim::optimizer_state_layout(model)), hp_(hp) {
  require_adamw_hyperparameters(hp);
}

void AdamMini::update(nn::ParameterStore& params, float grad_multiplier) {
  require_gradients(params);
  require_layout(layout_, params, "adam-mini");
  const memory::TensorView values = updated_values(params);
  if (m_.empty()) {
    // Both or neither (see AdamW::step).
    memory::Tensor m = make_state(params.numel(), "adam_mini.exp_avg");
    memory::Tensor v = make_state(state_totals(layout_).adam_mini_v, "adam_mini.v");
    m_ = std::move(m);
    v_ = std::move(v);
  }
  ++steps_;
  const memory::TensorView grads = params.grads().view();
  const memory::TensorView working = working_copy(params, master_);
  const nn::UpdateStep this_step = update_step(grad_multiplier);
  int64_t v_offset = 0;  // v of the next block, in layout order
  for (const optim::TensorStateLayout& t : layout_) {
    for (const optim::BlockRun& run : t.adam_mini_runs) {
      const int64_t at = t.offset + run.offset;
      const int64_t n = run.block_size * run.count;
      runtime_.kernels().adam_mini_update(
          slice(values, at, n), slice(grads, at, n), slice(m_.view(), at, n),
          slice(v_.view(), v_offset, run.count), slice_or_none(working, at, n), run.block_size, hp_,
          this_step);
      v_offset += run.count;
    }
  }
}

int64_t AdamMini::state_bytes() const {
  return m_.bytes() + v_.bytes() + master_.bytes();
}

// ---- Adafactor -----------------------------------------------------------------------------

Adafactor::Adafactor(nn::Runtime& runtime, const ModelConfig& model,
                     const kernels::cpu::AdafactorHyperparameters& hp,
                     const amp::PrecisionPolicy& precision)
    : Optimizer(runtime, precision), layout_(optim::optimizer_state_layout(model)), hp_(hp) {
  require_hyperparameter(std::isfinite(hp.learning_rate) && hp.learning_rate > 0, "learning rate",
                         hp.learning_rate);
  require_hyperparameter(hp.beta2_decay < 0, "beta2 decay", hp.beta2_decay);
  require_hyperparameter(hp.epsilon2 > 0, "epsilon2", hp.epsilon2);
  require_hyperparameter(hp.clip_threshold > 0, "clip threshold", hp.clip_threshold);
  require_hyperparameter(hp.weight_decay >= 0, "weight decay", hp.weight_decay);
}

void Adafactor::update(nn::ParameterStore& params, float grad_multiplier) {
  require_gradients(params);
  require_layout(layout_, params, "adafactor");
  const memory::TensorView values = updated_values(params);
  if (variance_.empty())
    variance_ = make_state(state_totals(layout_).adafactor, "adafactor.variance");
  ++steps_;
  const memory::TensorView grads = params.grads().view();
  const memory::TensorView working = working_copy(params, master_);
  const nn::UpdateStep this_step = update_step(grad_multiplier);
  int64_t at_state = 0;  // the next tensor's factors
  for (const optim::TensorStateLayout& t : layout_) {
    const int64_t row_elements = t.adafactor_factored ? t.rows : t.cols;
    const memory::TensorView row_var = slice(variance_.view(), at_state, row_elements);
    const memory::TensorView col_var = t.adafactor_factored
                                           ? slice(variance_.view(), at_state + t.rows, t.cols)
                                           : memory::TensorView();
    runtime_.kernels().adafactor_update(slice(values, t.offset, t.numel),
                                        slice(grads, t.offset, t.numel), row_var, col_var,
                                        slice_or_none(working, t.offset, t.numel), t.rows, t.cols,
                                        t.adafactor_factored, hp_, this_step);
    at_state += t.adafactor_factored ? t.rows + t.cols : t.numel;
  }
}

int64_t Adafactor::state_bytes() const {
  return variance_.bytes() + master_.bytes();
}

// ---- 8-bit AdamW ---------------------------------------------------------------------------

AdamW8bit::AdamW8bit(nn::Runtime& runtime, const ModelConfig& model,
                     const kernels::cpu::AdamWHyperparameters& hp,
                     const plan::EightBitOptions& eight_bit, const amp::PrecisionPolicy& precision)
    : Optimizer(runtime, precision),
      layout_(optim::optimizer_state_layout(model, eight_bit)),
      hp_(hp),
      eight_bit_(eight_bit) {
  require_adamw_hyperparameters(hp);
}

void AdamW8bit::update(nn::ParameterStore& params, float grad_multiplier) {
  require_gradients(params);
  require_layout(layout_, params, "adamw-8bit");
  const memory::TensorView values = updated_values(params);
  if (!states_allocated_) {
    const StateTotals counts = state_totals(layout_);
    // All six or none: an out-of-memory error on any of them frees the others, so a retry (or
    // the next step) starts clean rather than with half the states.
    using memory::MemoryCategory;
    const auto zeros = [this](int64_t numel, const char* name, DType dtype) {
      return numel > 0 ? runtime_.zeros({numel}, MemoryCategory::optimizer_state, name, dtype)
                       : memory::Tensor();
    };
    memory::Tensor qm = zeros(counts.eight_bit_quantized, "adamw_8bit.state1", DType::u8);
    memory::Tensor qv = zeros(counts.eight_bit_quantized, "adamw_8bit.state2", DType::u8);
    memory::Tensor absmax_m = zeros(counts.eight_bit_absmax, "adamw_8bit.absmax1", DType::f32);
    memory::Tensor absmax_v = zeros(counts.eight_bit_absmax, "adamw_8bit.absmax2", DType::f32);
    memory::Tensor m32 = zeros(counts.eight_bit_fp32, "adamw_8bit.exp_avg_fp32", DType::f32);
    memory::Tensor v32 = zeros(counts.eight_bit_fp32, "adamw_8bit.exp_avg_sq_fp32", DType::f32);
    qm_ = std::move(qm);
    qv_ = std::move(qv);
    absmax_m_ = std::move(absmax_m);
    absmax_v_ = std::move(absmax_v);
    m32_ = std::move(m32);
    v32_ = std::move(v32);
    states_allocated_ = true;
  }
  ++steps_;
  const memory::TensorView grads = params.grads().view();
  const memory::TensorView working = working_copy(params, master_);
  const nn::UpdateStep this_step = update_step(grad_multiplier);
  int64_t at_q = 0;      // next quantized element
  int64_t at_block = 0;  // next absmax
  int64_t at_fp32 = 0;   // next fp32 element
  for (const optim::TensorStateLayout& t : layout_) {
    const memory::TensorView param = slice(values, t.offset, t.numel);
    const memory::TensorView grad = slice(grads, t.offset, t.numel);
    const memory::TensorView work = slice_or_none(working, t.offset, t.numel);
    if (t.eight_bit_quantized) {
      runtime_.kernels().adamw_8bit_update(param, grad, slice(qm_.view(), at_q, t.numel),
                                           slice(qv_.view(), at_q, t.numel),
                                           slice(absmax_m_.view(), at_block, t.absmax_blocks),
                                           slice(absmax_v_.view(), at_block, t.absmax_blocks), work,
                                           eight_bit_.block_size, hp_, this_step);
      at_q += t.numel;
      at_block += t.absmax_blocks;
    } else {
      runtime_.kernels().adamw_update(param, grad, slice(m32_.view(), at_fp32, t.numel),
                                      slice(v32_.view(), at_fp32, t.numel), work, hp_, this_step);
      at_fp32 += t.numel;
    }
  }
}

int64_t AdamW8bit::state_bytes() const {
  return qm_.bytes() + qv_.bytes() + absmax_m_.bytes() + absmax_v_.bytes() + m32_.bytes() +
         v32_.bytes() + master_.bytes();
}

AdamW8bit::Dequantized AdamW8bit::dequantized_states() const {
  Dequantized out;
  if (qm_.empty() || runtime_.kernel_kind() == nn::KernelKind::meta) return out;
  const int64_t n = qm_.numel();
  std::vector<uint8_t> qm(static_cast<size_t>(n));                // (Σ quantized numel)
  std::vector<uint8_t> qv(static_cast<size_t>(n));                // (Σ quantized numel)
  std::vector<float> am(static_cast<size_t>(absmax_m_.numel()));  // (Σ blocks)
  std::vector<float> av(static_cast<size_t>(absmax_v_.numel()));  // (Σ blocks)
  runtime_.copy_to_host(qm.data(), qm_);
  runtime_.copy_to_host(qv.data(), qv_);
  runtime_.copy_to_host(am.data(), absmax_m_);
  runtime_.copy_to_host(av.data(), absmax_v_);
  out.m.resize(static_cast<size_t>(n));
  out.v.resize(static_cast<size_t>(n));
  int64_t at_q = 0;
  int64_t at_block = 0;
  for (const optim::TensorStateLayout& t : layout_) {
    if (!t.eight_bit_quantized) continue;
    kernels::cpu::dequantize_blockwise(out.m.data() + at_q, qm.data() + at_q, am.data() + at_block,
                                       t.numel, eight_bit_.block_size,
                                       kernels::cpu::dynamic_quantization_map(true));
    kernels::cpu::dequantize_blockwise(out.v.data() + at_q, qv.data() + at_q, av.data() + at_block,
                                       t.numel, eight_bit_.block_size,
                                       kernels::cpu::dynamic_quantization_map(false));
    at_q += t.numel;
    at_block += t.absmax_blocks;
  }
  return out;
}

}  // namespace vramlab::optim
