// Lesson 09's measurements: one optimizer's run, its state bytes from the allocator's snapshot,
// and 8-bit AdamW against an fp32 shadow of its moments (see measure_optimizers.h).
#include "lessons/09-optimizer-memory/measure_optimizers.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "common/estimate/estimator.h"
#include "common/estimate/optimizer_state_counts.h"
#include "common/memory/expandable_segments_scope.h"
#include "common/memory/history.h"
#include "common/nn/runtime.h"
#include "common/optim/low_memory_optimizers.h"
#include "common/platform/errors.h"
#include "common/train/gradient_snapshot.h"
#include "common/train/trainer.h"
#include "kernels/cpu/optimizer_8bit.h"

namespace vramlab::lesson09 {

namespace {

using estimate::Optimizer;

// AdamW's m and v kept in double beside 8-bit AdamW, fed the gradients the 8-bit optimizer is
// about to use: the moments fp32 AdamW would hold after the same gradient history. The moments
// depend on the gradients alone (weight decay is decoupled), so the comparison isolates what the
// 8-bit storage loses.
class EightBitShadow {
 public:
  EightBitShadow(const std::vector<optim::TensorStateLayout>& layout, int64_t block_size)
      : layout_(layout), block_size_(block_size) {
    for (const optim::TensorStateLayout& t : layout_)
      if (t.eight_bit_quantized) quantized_ += t.numel;
    m_.assign(static_cast<size_t>(quantized_), 0.0);
    v_.assign(static_cast<size_t>(quantized_), 0.0);
  }

  // grads: (Ψ) the flat gradient block, as the optimizer step reads it (multiplier 1).
  void update(const std::vector<float>& grads) {
    const double b1 = hp_.beta1, b2 = hp_.beta2;
    last_grads_ = quantized_part(grads);
    for (size_t i = 0; i < last_grads_.size(); ++i) {
      const double g = last_grads_[i];
      m_[i] = b1 * m_[i] + (1.0 - b1) * g;
      v_[i] = b2 * v_[i] + (1.0 - b2) * g * g;
    }
    ++steps_;
  }

  // after: the 8-bit states once this step is done; before: the ones it started from (empty at
  // step 1, when they are zeros).
  QuantizationPoint compare(const optim::AdamW8bit::Dequantized& after,
                            const optim::AdamW8bit::Dequantized& before) const {
    QuantizationPoint p;
    p.step = steps_;
    const std::vector<float> m = as_float(m_), v = as_float(v_);
    p.m_error = relative_error(after.m, m);
    p.v_error = relative_error(after.v, v);
    p.m_rounding = relative_error(rounded(m, true), m);
    p.v_rounding = relative_error(rounded(v, false), v);
    // The step the kernel took: the stored states dequantised, this step's gradient mixed in in
    // f32, the parameter updated from those, and only then requantised.
    std::vector<float> m8(m.size()), v8(v.size());  // (Σ quantized numel) each
    const double b1 = hp_.beta1, b2 = hp_.beta2;
    for (size_t i = 0; i < m.size(); ++i) {
      const double g = last_grads_[i];
      const double m0 = before.m.empty() ? 0.0 : before.m[i];
      const double v0 = before.v.empty() ? 0.0 : before.v[i];
      m8[i] = static_cast<float>(b1 * m0 + (1.0 - b1) * g);
      v8[i] = static_cast<float>(b2 * v0 + (1.0 - b2) * g * g);
    }
    p.update_error = relative_error(direction(m8, v8), direction(m, v));
    return p;
  }

 private:
  static std::vector<float> as_float(const std::vector<double>& x) { return {x.begin(), x.end()}; }

  // The quantised tensors' elements of a flat (Ψ) block, in layout order.
  std::vector<float> quantized_part(const std::vector<float>& flat) const {
    std::vector<float> out;  // (Σ quantized numel)
    out.reserve(static_cast<size_t>(quantized_));
    for (const optim::TensorStateLayout& t : layout_)
      if (t.eight_bit_quantized)
        out.insert(out.end(), flat.begin() + t.offset, flat.begin() + t.offset + t.numel);
    return out;
  }

  // x quantised and dequantised once, tensor by tensor, as the 8-bit optimizer stores it.
  std::vector<float> rounded(const std::vector<float>& x, bool is_signed) const {
    const auto& code = kernels::cpu::dynamic_quantization_map(is_signed);
    std::vector<float> out(x.size());  // (Σ quantized numel)
    std::vector<uint8_t> codes;        // (numel) of one tensor
    std::vector<float> absmax;         // (⌈numel / B⌉) of one tensor
    int64_t at = 0;
    for (const optim::TensorStateLayout& t : layout_) {
      if (!t.eight_bit_quantized) continue;
      codes.resize(static_cast<size_t>(t.numel));
      absmax.resize(
          static_cast<size_t>(kernels::cpu::quantization_block_count(t.numel, block_size_)));
      kernels::cpu::quantize_blockwise(codes.data(), absmax.data(), x.data() + at, t.numel,
                                       block_size_, code);
      kernels::cpu::dequantize_blockwise(out.data() + at, codes.data(), absmax.data(), t.numel,
                                         block_size_, code);
      at += t.numel;
    }
    return out;
  }

  // AdamW's bias-corrected step direction m̂ / (√v̂ + ε), before the learning rate.
  std::vector<float> direction(const std::vector<float>& m, const std::vector<float>& v) const {
    const double t = static_cast<double>(steps_);
    const double c1 = 1.0 - std::pow(static_cast<double>(hp_.beta1), t);
    const double c2 = 1.0 - std::pow(static_cast<double>(hp_.beta2), t);
    std::vector<float> u(m.size());  // (Σ quantized numel)
    for (size_t i = 0; i < m.size(); ++i)
      u[i] = static_cast<float>((m[i] / c1) / (std::sqrt(std::max(0.0, v[i] / c2)) + hp_.epsilon));
    return u;
  }

  std::vector<optim::TensorStateLayout> layout_;
  int64_t block_size_;
  kernels::cpu::AdamWHyperparameters hp_;  // the factory's: torch.optim.AdamW's betas and ε
  int64_t quantized_ = 0;
  int64_t steps_ = 0;
  std::vector<double> m_;          // (Σ quantized numel)
  std::vector<double> v_;          // (Σ quantized numel)
  std::vector<float> last_grads_;  // (Σ quantized numel) this step's gradient
};

// The allocator's live blocks, by what they hold.
void read_snapshot(memory::CachingAllocator& allocator, StateBytes& b) {
  const nlohmann::json snapshot = allocator.snapshot();
  for (const auto& segment : snapshot.at("segments")) {
    for (const auto& block : segment.at("blocks")) {
      if (block.at("state") != "active_allocated") continue;
      const std::string category = block.at("category");
      const int64_t requested = block.at("requested_size");
      const std::string name = block.at("tensor");
      if (category == "parameter") {
        b.parameter_bytes += requested;
      } else if (category == "gradient") {
        b.gradient_bytes += requested;
      } else if (category == "optimizer_state") {
        b.allocator_requested += requested;
        b.allocator_allocated += block.at("size").get<int64_t>();
        ++b.allocator_blocks;
        if (name == "master weights")
          b.master_bytes += requested;
        else if (name.find("absmax") != std::string::npos)
          b.absmax_bytes += requested;
        else
          b.moment_bytes += requested;
      }
    }
  }
}

}  // namespace

float learning_rate(const LearningRates& rates, Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::sgd:
      return rates.sgd;
    case Optimizer::sgd_momentum:
      return rates.sgd_momentum;
    case Optimizer::adamw:
    case Optimizer::adamw_8bit:
    case Optimizer::adam_mini:
      return rates.adamw;
    case Optimizer::lion:
      return rates.lion;
    case Optimizer::adafactor:
      return rates.adafactor;
  }
  throw InternalError("learning_rate: an optimizer without a case");
}

bool StateBytes::equals_estimate() const {
  return state_bytes == allocator_requested && state_bytes == estimate.optimizer_states() &&
         master_bytes == estimate.master_weights &&
         moment_bytes + absmax_bytes == estimate.optimizer_moments &&
         absmax_bytes == estimate_absmax_bytes && parameter_bytes == estimate.parameters &&
         gradient_bytes == estimate.gradients;
}

double StateBytes::state_bytes_per_param() const {
  return static_cast<double>(state_bytes) /
         static_cast<double>(std::max<int64_t>(1, parameter_count));
}

double StateBytes::model_state_bytes_per_param() const {
  return static_cast<double>(parameter_bytes + gradient_bytes + state_bytes) /
         static_cast<double>(std::max<int64_t>(1, parameter_count));
}

estimate::ModelStateBytes estimated_model_states(const ModelConfig& model, amp::Precision precision,
                                                 Optimizer optimizer,
                                                 const plan::EightBitOptions& eight_bit) {
  estimate::EstimateInputs in;
  in.model = model;
  in.seq = 1;
  in.plan.amp.precision = precision;
  in.plan.optimizer.name = optimizer;
  in.plan.optimizer.eight_bit.block_size = eight_bit.block_size;
  in.plan.optimizer.eight_bit.min_8bit_size = eight_bit.min_8bit_size;
  in.plan.optimizer.eight_bit.fp32_embeddings = eight_bit.fp32_embeddings;
  return estimate::estimate_memory(in).unpartitioned;
}

OptimizerRun run_optimizer(const RunSettings& settings, Optimizer optimizer, float learning_rate) {
  if (settings.steps < 1)
    throw UsageError("--steps must be >= 1, got " + std::to_string(settings.steps));
  train::TrainOptions options;
  options.model = settings.model;
  options.batch = settings.batch;
  options.seq = settings.seq;
  options.seed = settings.seed;
  options.plan.optimizer.learning_rate = learning_rate;
  options.plan.optimizer.name = optimizer;
  options.plan.optimizer.eight_bit = settings.eight_bit;
  options.plan.amp.precision = settings.precision;
  // Zeroed, not released: the snapshot after the step then holds the gradients too.
  options.grads_to_none = false;
  OptimizerRun run;
  run.optimizer = optimizer;
  run.precision = settings.precision;
  run.learning_rate = learning_rate;

  const memory::ExpandableSegmentsScope expandable(settings.device);
  nn::Runtime runtime(settings.device);
  // Live blocks only (no trace): the snapshot's "tensor" names each state tensor.
  runtime.allocator().record_history(memory::RecordMode::state);
  train::Trainer trainer(runtime, options);
  const bool computes = settings.device.kind != memory::DeviceKind::meta;
  const bool shadowed =
      optimizer == Optimizer::adamw_8bit && settings.quantization_every > 0 && computes;
  std::vector<optim::TensorStateLayout> layout;
  if (shadowed) layout = optim::optimizer_state_layout(settings.model, settings.eight_bit);
  EightBitShadow shadow(layout, settings.eight_bit.block_size);
  train::GradientSnapshot gradients;
  if (shadowed) trainer.add_observer(gradients);
  const auto measured = [&](int64_t s) {
    return shadowed && s <= settings.steps &&
           (s == 1 || s % settings.quantization_every == 0 || s == settings.steps);
  };
  optim::AdamW8bit::Dequantized before;  // the states the next measured step starts from
  for (int64_t s = 1; s <= settings.steps; ++s) {
    const train::StepResult step = trainer.step();
    run.losses.push_back(step.loss);
    run.seconds += step.seconds;
    if (!shadowed) continue;
    shadow.update(gradients.values());
    if (!measured(s) && !measured(s + 1)) continue;
    const auto& eight_bit = dynamic_cast<const optim::AdamW8bit&>(trainer.optimizer());
    optim::AdamW8bit::Dequantized after = eight_bit.dequantized_states();
    if (measured(s)) run.quantization.push_back(shadow.compare(after, before));
    before = measured(s + 1) ? std::move(after) : optim::AdamW8bit::Dequantized{};
  }
  if (shadowed) trainer.remove_observer(gradients);

  StateBytes& b = run.bytes;
  b.parameter_count = settings.model.parameter_count();
  b.state_bytes = trainer.optimizer().state_bytes();
  read_snapshot(runtime.allocator(), b);
  b.estimate =
      estimated_model_states(settings.model, settings.precision, optimizer, settings.eight_bit);
  if (optimizer == Optimizer::adamw_8bit) {
    const estimate::OptimizerStateCounts counts =
        estimate::optimizer_state_counts(settings.model, settings.eight_bit);
    b.estimate_absmax_bytes = 2 * 4 * counts.eight_bit_absmax;
  }
  return run;
}

double final_loss(const std::vector<double>& losses) {
  if (losses.empty()) return 0.0;
  const size_t n = std::max<size_t>(1, losses.size() / 10);
  double sum = 0.0;
  for (size_t i = losses.size() - n; i < losses.size(); ++i) sum += losses[i];
  return sum / static_cast<double>(n);
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size())
    throw InternalError("relative_error of " + std::to_string(a.size()) + " and " +
                        std::to_string(b.size()) + " values");
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    diff += d * d;
    norm += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  if (norm == 0.0) return diff == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(diff / norm);
}

}  // namespace vramlab::lesson09
