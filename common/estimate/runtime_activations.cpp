// The runtime's saved-activation layout (llm.c style) per layer and outside the layers.
#include "common/estimate/runtime_activations.h"

#include "common/model/checked_int.h"
#include "common/model/saved_tensor_names.h"
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
    total = checked_add(
        total,
        checked_mul(s.numel(), s.always_f32 ? int64_t{4} : element_bytes, "activation bytes"),
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
                                                                     int64_t seq,
                                                                     AttentionKind attention) {
  check_inputs(model, micro_batch, seq);
  const int64_t B = micro_batch, T = seq, C = model.hidden, H = model.heads, F = model.ffn_hidden;
  // What the attention core keeps besides q, k, v and its output atty.
  const SavedActivationSpec core = attention == AttentionKind::flash
                                       ? SavedActivationSpec{saved::lse, {B, H, T}, true}
                                       : SavedActivationSpec{saved::att, {B, H, T, T}};
  if (model.family == ModelFamily::gpt2) {
    return {
        {saved::ln1, {B, T, C}},
        {saved::mean_of(saved::ln1), {B, T}, true},
        {saved::rstd_of(saved::ln1), {B, T}, true},
        {saved::qkv, {B, T, checked_mul(3, C, "qkv width")}},
        core,
        {saved::atty, {B, T, C}},
        {saved::residual2, {B, T, C}},
        {saved::ln2, {B, T, C}},
        {saved::mean_of(saved::ln2), {B, T}, true},
        {saved::rstd_of(saved::ln2), {B, T}, true},
        {saved::fch, {B, T, F}},
        {saved::fch_gelu, {B, T, F}},
        {saved::residual3, {B, T, C}},
    };
  }
  const int64_t kvC = model.kv_hidden();
  return {
      {saved::norm1, {B, T, C}},  {saved::rstd_of(saved::norm1), {B, T}, true},
      {saved::q, {B, T, C}},      {saved::k, {B, T, kvC}},
      {saved::v, {B, T, kvC}},    core,
      {saved::atty, {B, T, C}},   {saved::residual2, {B, T, C}},
      {saved::norm2, {B, T, C}},  {saved::rstd_of(saved::norm2), {B, T}, true},
      {saved::gate, {B, T, F}},   {saved::up, {B, T, F}},
      {saved::swiglu, {B, T, F}}, {saved::residual3, {B, T, C}},
  };
}

std::vector<SavedActivationSpec> runtime_saved_activations_outside_layers(const ModelConfig& model,
                                                                          int64_t micro_batch,
                                                                          int64_t seq,
                                                                          int64_t loss_chunks) {
  check_inputs(model, micro_batch, seq);
  const int64_t B = micro_batch, T = seq, C = model.hidden, V = model.vocab;
  std::vector<SavedActivationSpec> out = {{saved::encoded, {B, T, C}}, {saved::lnf, {B, T, C}}};
  if (model.norm == NormKind::layernorm) out.push_back({saved::mean_of(saved::lnf), {B, T}, true});
  out.push_back({saved::rstd_of(saved::lnf), {B, T}, true});
  if (loss_chunks <= 1) out.push_back({saved::probs, {B, T, V}});
  out.push_back({saved::losses, {B, T}, true});
  return out;
}

int64_t runtime_activation_bytes_per_layer(const ModelConfig& model, int64_t b, int64_t s,
                                           DType dtype, AttentionKind attention) {
  return sum_bytes(runtime_saved_activations_per_layer(model, b, s, attention), dtype);
}

int64_t runtime_activation_bytes_outside_layers(const ModelConfig& model, int64_t b, int64_t s,
                                                DType dtype, int64_t loss_chunks) {
  return sum_bytes(runtime_saved_activations_outside_layers(model, b, s, loss_chunks), dtype);
}

int64_t runtime_activation_bytes_total(const ModelConfig& model, int64_t b, int64_t s, DType dtype,
                                       AttentionKind attention, int64_t loss_chunks) {
  const char* what = "activation bytes";
  return checked_add(checked_mul(runtime_activation_bytes_per_layer(model, b, s, dtype, attention),
                                 model.layers, what),
                     runtime_activation_bytes_outside_layers(model, b, s, dtype, loss_chunks),
                     what);
}

}  // namespace vramlab::estimate
