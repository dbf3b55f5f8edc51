// The runtime's saved-activation layout (llm.c style) per layer and outside the layers.
#include "common/estimate/runtime_activations.h"

#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab::estimate {

namespace {

void check_inputs(const ModelConfig& model, int64_t micro_batch, int64_t seq) {
  model.validate();
  if (micro_batch <= 0)
    throw UsageError("micro-batch must be positive, got " + std::to_string(micro_batch));
  if (seq <= 0) throw UsageError("sequence length must be positive, got " + std::to_string(seq));
}

int64_t sum_bytes(const std::vector<SavedActivationSpec>& specs, DType dtype) {
  const auto element_bytes = static_cast<int64_t>(dtype_size_bytes(dtype));
  int64_t total = 0;
  for (const auto& s : specs)
    total = checked_add(total, checked_mul(s.numel(), element_bytes, "activation bytes"),
                        "activation bytes");
  return total;
}

}  // namespace

int64_t SavedActivationSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n = checked_mul(n, d, ("numel of activation " + name).c_str());
  return n;
}

std::vector<SavedActivationSpec> runtime_saved_activations_per_layer(const ModelConfig& model,
                                                                     int64_t micro_batch,
                                                                     int64_t seq) {
  check_inputs(model, micro_batch, seq);
  const int64_t B = micro_batch, T = seq, C = model.hidden, H = model.heads, F = model.ffn_hidden;
  if (model.family == ModelFamily::gpt2) {
    return {
        {"ln1", {B, T, C}},       {"ln1_mean", {B, T}},
        {"ln1_rstd", {B, T}},     {"qkv", {B, T, checked_mul(3, C, "qkv width")}},
        {"preatt", {B, H, T, T}}, {"att", {B, H, T, T}},
        {"atty", {B, T, C}},      {"residual2", {B, T, C}},
        {"ln2", {B, T, C}},       {"ln2_mean", {B, T}},
        {"ln2_rstd", {B, T}},     {"fch", {B, T, F}},
        {"fch_gelu", {B, T, F}},  {"residual3", {B, T, C}},
    };
  }
  const int64_t kvC = model.kv_hidden();
  return {
      {"norm1", {B, T, C}},  {"norm1_rstd", {B, T}}, {"q", {B, T, C}},
      {"k", {B, T, kvC}},    {"v", {B, T, kvC}},     {"preatt", {B, H, T, T}},
      {"att", {B, H, T, T}}, {"atty", {B, T, C}},    {"residual2", {B, T, C}},
      {"norm2", {B, T, C}},  {"norm2_rstd", {B, T}}, {"gate", {B, T, F}},
      {"up", {B, T, F}},     {"swiglu", {B, T, F}},  {"residual3", {B, T, C}},
  };
}

std::vector<SavedActivationSpec> runtime_saved_activations_outside_layers(const ModelConfig& model,
                                                                          int64_t micro_batch,
                                                                          int64_t seq) {
  check_inputs(model, micro_batch, seq);
  const int64_t B = micro_batch, T = seq, C = model.hidden, V = model.vocab;
  std::vector<SavedActivationSpec> out = {{"encoded", {B, T, C}}, {"lnf", {B, T, C}}};
  if (model.norm == NormKind::layernorm) out.push_back({"lnf_mean", {B, T}});
  out.push_back({"lnf_rstd", {B, T}});
  out.push_back({"logits", {B, T, V}});
  out.push_back({"probs", {B, T, V}});
  out.push_back({"losses", {B, T}});
  return out;
}

int64_t runtime_activation_bytes_per_layer(const ModelConfig& model, int64_t b, int64_t s,
                                           DType dtype) {
  return sum_bytes(runtime_saved_activations_per_layer(model, b, s), dtype);
}

int64_t runtime_activation_bytes_outside_layers(const ModelConfig& model, int64_t b, int64_t s,
                                                DType dtype) {
  return sum_bytes(runtime_saved_activations_outside_layers(model, b, s), dtype);
}

int64_t runtime_activation_bytes_total(const ModelConfig& model, int64_t b, int64_t s,
                                       DType dtype) {
  const char* what = "activation bytes";
  return checked_add(
      checked_mul(runtime_activation_bytes_per_layer(model, b, s, dtype), model.layers, what),
      runtime_activation_bytes_outside_layers(model, b, s, dtype), what);
}

}  // namespace vramlab::estimate
