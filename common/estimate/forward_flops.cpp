// Forward FLOPs of the runtime's blocks and head (see forward_flops.h).
#include "common/estimate/forward_flops.h"

namespace vramlab::estimate {

double attention_scores_flops(const ModelConfig& model, int64_t B, int64_t T) {
  const auto b = static_cast<double>(B), t = static_cast<double>(T);
  return b * static_cast<double>(model.hidden) * t * (t + 1.0);
}

double block_forward_flops(const ModelConfig& model, int64_t B, int64_t T) {
  const double N = static_cast<double>(B) * static_cast<double>(T);
  const auto C = static_cast<double>(model.hidden), kvC = static_cast<double>(model.kv_hidden());
  const auto F = static_cast<double>(model.ffn_hidden);
  const double projections = 2.0 * N * C * (2.0 * C + 2.0 * kvC);  // q, k, v and the output
  const double mlp = 2.0 * N * C * F * (model.mlp == MlpKind::gelu ? 2.0 : 3.0);
  return projections + mlp + 2.0 * attention_scores_flops(model, B, T);  // QKᵀ and AV
}

double model_forward_flops(const ModelConfig& model, int64_t B, int64_t T) {
  const double head = 2.0 * static_cast<double>(B) * static_cast<double>(T) *
                      static_cast<double>(model.hidden) * static_cast<double>(model.vocab);
  return static_cast<double>(model.layers) * block_forward_flops(model, B, T) + head;
}

}  // namespace vramlab::estimate
