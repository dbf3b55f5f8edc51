// Lesson 06's measurements: the attention core naive against flash on a fresh Runtime, training
// with either kernel, the per-layer saved bytes (see measure_attention.h).
#include "lessons/06-flash-attention/measure_attention.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include "common/estimate/runtime_activations.h"
#include "common/memory/expandable_segments_scope.h"
#include "common/model/saved_tensor_names.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/nn/step_observer.h"
#include "common/platform/errors.h"
#include "common/train/trainer.h"

namespace vramlab::lesson06 {

using memory::MemoryCategory;
using memory::Tensor;

namespace {

int64_t rounded(int64_t bytes) {
  return (bytes + 511) / 512 * 512;
}

int64_t checked_product(std::initializer_list<int64_t> factors) {
  int64_t p = 1;
  for (const int64_t f : factors) {
    if (f != 0 && p > std::numeric_limits<int64_t>::max() / f)
      throw UsageError("attention sizes overflow 64-bit byte counts");
    p *= f;
  }
  return p;
}

std::vector<float> normal_values(int64_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(n));  // (n)
  for (float& x : values) x = normal(rng);
  return values;
}

std::vector<float> to_host(nn::Runtime& runtime, const Tensor& t) {
  std::vector<float> host(static_cast<size_t>(t.numel()));  // (numel)
  runtime.copy_to_host(host.data(), t);
  return host;
}

// Reads what block 0 kept, after the forward (the backward frees it).
class LayerReader final : public nn::StepObserver {
 public:
  void after(const nn::PhaseEvent& event) override {
    if (event.phase != nn::StepPhase::forward || read_) return;
    read_ = true;
    for (const nn::SavedActivationInfo& s : event.saved->list()) {
      if (s.layer != 0) continue;
      layer_bytes += s.bytes;
      if (s.name == saved::att || s.name == saved::lse) attention_bytes += s.bytes;
    }
  }
  int64_t layer_bytes = 0;
  int64_t attention_bytes = 0;

 private:
  bool read_ = false;
};

}  // namespace

void validate(const CoreShape& s) {
  if (s.batch < 1) throw UsageError("--batch must be >= 1, got " + std::to_string(s.batch));
  if (s.heads < 1) throw UsageError("--heads must be >= 1, got " + std::to_string(s.heads));
  if (s.head_dim < 1)
    throw UsageError("--head-dim must be >= 1, got " + std::to_string(s.head_dim));
  if (s.kv_heads < 1 || s.heads % s.kv_heads != 0)
    throw UsageError("--kv-heads " + std::to_string(s.kv_heads) + " must divide --heads " +
                     std::to_string(s.heads));
}

int64_t saved_bytes_formula(AttentionKind attention, int64_t seq, const CoreShape& s) {
  if (attention == AttentionKind::naive) return checked_product({s.batch, s.heads, seq, seq, 4});
  return checked_product({s.batch, s.heads, seq, 4});
}

int64_t attention_core_peak_formula(AttentionKind attention, int64_t seq, const CoreShape& s) {
  const int64_t q_bytes = rounded(checked_product({s.batch, seq, s.heads, s.head_dim, 4}));
  const int64_t kv_bytes = rounded(checked_product({s.batch, seq, s.kv_heads, s.head_dim, 4}));
  // q, out, dout, dq; k, v, dk, dv; the saved tensor and the scratch of its size.
  return 4 * q_bytes + 4 * kv_bytes + 2 * rounded(saved_bytes_formula(attention, seq, s));
}

CoreRun run_attention_core(const memory::Device& device, AttentionKind attention, int64_t seq,
                           const CoreShape& shape, uint64_t seed, bool keep_outputs) {
  validate(shape);
  if (seq < 1) throw UsageError("sequence length must be >= 1, got " + std::to_string(seq));
  const int64_t B = shape.batch, T = seq, H = shape.heads, Hkv = shape.kv_heads, D = shape.head_dim;
  CoreRun run;
  run.attention = attention;
  run.seq = T;
  run.device = device.name();

  const memory::ExpandableSegmentsScope expandable(device);
  nn::Runtime runtime(device);
  const nn::KernelBackend& kernels = runtime.kernels();
  const bool computes = device.kind != memory::DeviceKind::meta;
  Tensor q = runtime.allocate({B, T, H, D}, DType::f32, MemoryCategory::activation, "q");
  Tensor k = runtime.allocate({B, T, Hkv, D}, DType::f32, MemoryCategory::activation, "k");
  Tensor v = runtime.allocate({B, T, Hkv, D}, DType::f32, MemoryCategory::activation, "v");
  Tensor dout = runtime.allocate({B, T, H, D}, DType::f32, MemoryCategory::temporary, "dout");
  if (computes) {
    // One stream for both kernels: the same seed gives naive and flash the same inputs.
    std::mt19937_64 rng(seed);
    runtime.copy_to_device(q, normal_values(q.numel(), rng).data());
    runtime.copy_to_device(k, normal_values(k.numel(), rng).data());
    runtime.copy_to_device(v, normal_values(v.numel(), rng).data());
    runtime.copy_to_device(dout, normal_values(dout.numel(), rng).data());
  }

  const bool flash = attention == AttentionKind::flash;
  Tensor out = runtime.allocate({B, T, H, D}, DType::f32, MemoryCategory::activation, "out");
  Tensor saved = flash ? runtime.allocate({B, H, T}, DType::f32, MemoryCategory::activation, "lse")
                       : runtime.allocate({B, H, T, T}, DType::f32, MemoryCategory::activation,
                                          "att");  // (B, H, T) or (B, H, T, T)
  run.saved_bytes = saved.bytes();
  const auto start = std::chrono::steady_clock::now();
  if (flash)
    kernels.flash_attention_forward(out.view(), saved.view(), q.view(), k.view(), v.view(), B, T, H,
                                    Hkv, D);
  else
    kernels.attention_forward(out.view(), saved.view(), saved.view(), q.view(), k.view(), v.view(),
                              B, T, H, Hkv, D);

  // The backward accumulates, so the gradients start at zero (outside the timed kernels).
  const auto forward_end = std::chrono::steady_clock::now();
  Tensor dq = runtime.zeros({B, T, H, D}, MemoryCategory::temporary, "dq");
  Tensor dk = runtime.zeros({B, T, Hkv, D}, MemoryCategory::temporary, "dk");
  Tensor dv = runtime.zeros({B, T, Hkv, D}, MemoryCategory::temporary, "dv");
  Tensor scratch = flash ? runtime.temporary({B, H, T}, "delta")
                         : runtime.temporary({B, H, T, T}, "dpreatt");  // (B, H, T) or (B, H, T, T)
  run.scratch_bytes = scratch.bytes();
  const auto backward_start = std::chrono::steady_clock::now();
  if (flash)
    kernels.flash_attention_backward(dq.view(), dk.view(), dv.view(), scratch.view(), dout.view(),
                                     q.view(), k.view(), v.view(), out.view(), saved.view(), B, T,
                                     H, Hkv, D);
  else
    kernels.attention_backward(dq.view(), dk.view(), dv.view(), scratch.view(), dout.view(),
                               q.view(), k.view(), v.view(), saved.view(), B, T, H, Hkv, D);
  const auto end = std::chrono::steady_clock::now();
  if (computes) {
    run.seconds = std::chrono::duration<double>(forward_end - start).count() +
                  std::chrono::duration<double>(end - backward_start).count();
  }
  scratch.reset();
  run.peak_bytes = runtime.allocator().stats().allocated_bytes[memory::kAggregate].peak;
  if (keep_outputs && computes) {
    run.out = to_host(runtime, out);
    run.dq = to_host(runtime, dq);
    run.dk = to_host(runtime, dk);
    run.dv = to_host(runtime, dv);
  }
  return run;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size())
    throw InternalError("max_abs_diff of " + std::to_string(a.size()) + " and " +
                        std::to_string(b.size()) + " values");
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  return m;
}

double max_abs(const std::vector<float>& a) {
  double m = 0.0;
  for (const float x : a) m = std::max(m, std::abs(static_cast<double>(x)));
  return m;
}

TrainingRun run_training(const TrainSettings& settings, AttentionKind attention) {
  if (settings.steps < 1)
    throw UsageError("--steps must be >= 1, got " + std::to_string(settings.steps));
  train::TrainOptions options;
  options.model = settings.model;
  options.batch = settings.batch;
  options.seq = settings.seq;
  options.seed = settings.seed;
  options.plan.optimizer.learning_rate = settings.learning_rate;
  options.plan.attention = attention;
  TrainingRun run;
  run.attention = attention;

  const memory::ExpandableSegmentsScope expandable(settings.device);
  nn::Runtime runtime(settings.device);
  train::Trainer trainer(runtime, options);
  LayerReader reader;
  trainer.add_observer(reader);
  for (int64_t s = 0; s < settings.steps; ++s) {
    const train::StepResult step = trainer.step();
    if (s == 0) run.activation_peak_bytes = step.activation_peak_bytes;
    run.losses.push_back(step.loss);
    run.seconds += step.seconds;
  }
  trainer.remove_observer(reader);
  run.layer_saved_bytes = reader.layer_bytes;
  run.layer_attention_saved_bytes = reader.attention_bytes;
  run.layer_saved_estimate = estimate::runtime_activation_bytes_per_layer(
      settings.model, settings.batch, settings.seq, DType::f32, attention);
  return run;
}

double max_loss_diff(const TrainingRun& a, const TrainingRun& b) {
  double m = 0.0;
  const size_t n = std::min(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::abs(a.losses[i] - b.losses[i]));
  return m;
}

}  // namespace vramlab::lesson06
