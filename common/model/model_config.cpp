// ModelConfig: validation, the per-tensor parameter layout of the GPT-2 and Llama families, and
// the table of built-in configurations.
#include "common/model/model_config.h"

#include <cstdint>
#include <utility>

#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab {

namespace {

// Far beyond any real model; keeps the per-tensor list (a dozen entries per layer) small.
constexpr int64_t kMaxLayers = 100000;

// Checks every size is positive and the head arithmetic works; does not look at the total.
void validate_shapes(const ModelConfig& c) {
  const std::pair<const char*, int64_t> sizes[] = {
      {"layers", c.layers},     {"hidden", c.hidden},         {"heads", c.heads},
      {"kv_heads", c.kv_heads}, {"ffn_hidden", c.ffn_hidden}, {"vocab", c.vocab},
      {"max_seq", c.max_seq}};
  for (const auto& [what, value] : sizes)
    if (value <= 0)
      throw UsageError("model '" + c.name + "': " + what + " must be positive, got " +
                       std::to_string(value));
  if (c.layers > kMaxLayers)
    throw UsageError("model '" + c.name + "': layers (" + std::to_string(c.layers) +
                     ") exceeds the supported maximum of " + std::to_string(kMaxLayers));
  if (c.hidden % c.heads != 0)
    throw UsageError("model '" + c.name + "': heads (" + std::to_string(c.heads) +
                     ") must divide hidden (" + std::to_string(c.hidden) + ")");
  if (c.heads % c.kv_heads != 0)
    throw UsageError("model '" + c.name + "': kv_heads (" + std::to_string(c.kv_heads) +
                     ") must divide heads (" + std::to_string(c.heads) + ")");
  // The enums are closed, but a cast or an uninitialised copy can still carry another value.
  if (c.family != ModelFamily::gpt2 && c.family != ModelFamily::llama)
    throw UsageError("model '" + c.name + "': invalid family value " +
                     std::to_string(static_cast<int>(c.family)));
  if (c.norm != NormKind::layernorm && c.norm != NormKind::rmsnorm)
    throw UsageError("model '" + c.name + "': invalid norm value " +
                     std::to_string(static_cast<int>(c.norm)));
  if (c.mlp != MlpKind::gelu && c.mlp != MlpKind::swiglu)
    throw UsageError("model '" + c.name + "': invalid mlp value " +
                     std::to_string(static_cast<int>(c.mlp)));
  if (c.family == ModelFamily::llama && !(c.rope_theta > 0.0))
    throw UsageError("model '" + c.name +
                     "': rope_theta must be positive for the llama family, got " +
                     std::to_string(c.rope_theta));
  if (c.family == ModelFamily::gpt2 && c.kv_heads != c.heads)
    throw UsageError(
        "model '" + c.name + "': the gpt2 family has a fused (3C, C) qkv, so kv_heads (" +
        std::to_string(c.kv_heads) + ") must equal heads (" + std::to_string(c.heads) + ")");
}

void validate_tensor_parallel_shapes(const ModelConfig& c, int64_t t) {
  if (t < 1)
    throw UsageError("model '" + c.name + "': tensor-parallel degree must be at least 1, got " +
                     std::to_string(t));
  const std::pair<const char*, int64_t> split[] = {
      {"heads", c.heads}, {"kv_heads", c.kv_heads}, {"ffn_hidden", c.ffn_hidden}};
  for (const auto& [what, value] : split)
    if (value % t != 0)
      throw UsageError("model '" + c.name + "': tensor-parallel degree " + std::to_string(t) +
                       " must divide " + what + " (" + std::to_string(value) + ")");
}

// Tensor-parallel rank r's part of the tensor list of a shape-valid config, with the first
// \p layers_to_build blocks; every numel is overflow-checked. t must divide heads, kv_heads and F.
std::vector<ParameterSpec> build_parameters(const ModelConfig& c, int64_t layers_to_build,
                                            int64_t tp_rank, int64_t tp_size) {
  const int64_t C = c.hidden;
  const int64_t F = c.ffn_hidden;
  const int64_t kvC = c.kv_hidden();
  const int64_t t = tp_size;
  using Split = TensorParallelSplit;
  std::vector<ParameterSpec> out;
  auto add = [&](std::string name, std::vector<int64_t> shape, int64_t layer, InitKind init,
                 Split split = Split::replicated, int64_t bands = 1) {
    ParameterSpec spec{std::move(name), std::move(shape), layer, init, split, bands, tp_rank, t};
    (void)spec.numel();  // throws on overflow
    out.push_back(std::move(spec));
  };
  const bool gpt2 = c.family == ModelFamily::gpt2;
  const bool layernorm = c.norm == NormKind::layernorm;
  auto add_norm = [&](const std::string& prefix, int64_t layer) {
    add(prefix + ".weight", {C}, layer, InitKind::ones);                // (C)
    if (layernorm) add(prefix + ".bias", {C}, layer, InitKind::zeros);  // (C)
  };
  // Column-parallel: 1/t of the output rows (of each of `bands` bands) and of the bias.
  auto add_column_parallel = [&](const std::string& prefix, int64_t out_features,
                                 int64_t in_features, int64_t layer, int64_t bands = 1) {
    add(prefix + ".weight", {out_features / t, in_features}, layer, InitKind::normal, Split::rows,
        bands);  // (out/t, in)
    if (c.bias)
      add(prefix + ".bias", {out_features / t}, layer, InitKind::zeros, Split::rows,
          bands);  // (out/t)
  };
  // Row-parallel: 1/t of the input columns; the bias, added after the all-reduce, is whole.
  auto add_row_parallel = [&](const std::string& prefix, int64_t out_features, int64_t in_features,
                              int64_t layer) {
    add(prefix + ".weight", {out_features, in_features / t}, layer, InitKind::residual_normal,
        Split::columns);                                                        // (out, in/t)
    if (c.bias) add(prefix + ".bias", {out_features}, layer, InitKind::zeros);  // (out)
  };
  add(gpt2 ? "wte" : "embed", {c.vocab, C}, -1, InitKind::normal);                      // (V, C)
  if (c.learned_position_embeddings) add("wpe", {c.max_seq, C}, -1, InitKind::normal);  // (maxT, C)
  for (int64_t l = 0; l < layers_to_build; ++l) {
    const std::string p = layer_module_name(l) + ".";
    add_norm(p + (gpt2 ? "ln1" : "norm1"), l);
    if (gpt2) {
      add_column_parallel(p + "attn.qkv", checked_mul(3, C, "qkv rows"), C, l, 3);  // (3C/t, C)
    } else {
      add_column_parallel(p + "attn.q", C, C, l);    // (C/t, C)
      add_column_parallel(p + "attn.k", kvC, C, l);  // (kvC/t, C)
      add_column_parallel(p + "attn.v", kvC, C, l);  // (kvC/t, C)
    }
    add_row_parallel(p + (gpt2 ? "attn.proj" : "attn.o"), C, C, l);  // (C, C/t)
    add_norm(p + (gpt2 ? "ln2" : "norm2"), l);
    if (c.mlp == MlpKind::gelu) {
      add_column_parallel(p + "mlp.fc", F, C, l);  // (F/t, C)
      add_row_parallel(p + "mlp.proj", C, F, l);   // (C, F/t)
    } else {
      add_column_parallel(p + "mlp.gate", F, C, l);  // (F/t, C)
      add_column_parallel(p + "mlp.up", F, C, l);    // (F/t, C)
      add_row_parallel(p + "mlp.down", C, F, l);     // (C, F/t)
    }
  }
  add_norm(gpt2 ? "lnf" : "normf", -1);
  if (!c.tied_embeddings) add("lm_head.weight", {c.vocab, C}, -1, InitKind::normal);  // (V, C)
  return out;
}

struct NamedConfig {
  std::string_view name;
  ModelConfig (*make)();
};

// The built-in table. GPT-2 sizes from the GPT-2 paper's Table 2 (V=50257, T=1024); Llama-2 and
// Llama-3 from the released config.json files (hidden, intermediate, heads, kv heads, vocab,
// rope_theta).
const NamedConfig kConfigs[] = {
    {"gpt2-mini", [] { return gpt2_config("gpt2-mini", 2, 64, 4, 256, 32); }},
    {"gpt2-tiny", [] { return gpt2_config("gpt2-tiny", 4, 256, 4, 4096, 128); }},
    {"gpt2-124m", [] { return gpt2_config("gpt2-124m", 12, 768, 12, 50257, 1024); }},
    {"gpt2-355m", [] { return gpt2_config("gpt2-355m", 24, 1024, 16, 50257, 1024); }},
    {"gpt2-774m", [] { return gpt2_config("gpt2-774m", 36, 1280, 20, 50257, 1024); }},
    {"gpt2-1.5b", [] { return gpt2_config("gpt2-1.5b", 48, 1600, 25, 50257, 1024); }},
    {"llama-tiny", [] { return llama_config("llama-tiny", 4, 256, 4, 2, 688, 4096, 128); }},
    {"llama2-7b", [] { return llama_config("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096); }},
    {"llama2-13b", [] { return llama_config("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096); }},
    {"llama2-70b", [] { return llama_config("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096); }},
    {"llama3-8b",
     [] { return llama_config("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, 500000.0); }},
    {"llama3-70b",
     [] { return llama_config("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, 500000.0); }},
};

// Exact count from one block's tensors (all blocks have the same shapes) for one of t
// tensor-parallel ranks, overflow-checked, without building the whole list.
int64_t count_parameters(const ModelConfig& c, int64_t tp_size = 1) {
  validate_shapes(c);
  validate_tensor_parallel_shapes(c, tp_size);
  int64_t outside = 0;
  int64_t one_layer = 0;
  for (const auto& s : build_parameters(c, 1, 0, tp_size)) {
    if (s.layer < 0)
      outside = checked_add(outside, s.numel(), "parameter count");
    else
      one_layer = checked_add(one_layer, s.numel(), "parameter count");
  }
  return checked_add(outside, checked_mul(one_layer, c.layers, "parameter count"),
                     "parameter count");
}

}  // namespace

int64_t ParameterSpec::numel() const {
  // The message is built only on overflow: full_index() calls this once per element.
  int64_t n = 1;
  for (int64_t d : shape) {
    int64_t product = 0;
    if (__builtin_mul_overflow(n, d, &product))
      (void)checked_mul(n, d, ("numel of parameter " + name).c_str());  // throws, naming it
    n = product;
  }
  return n;
}

std::vector<int64_t> ParameterSpec::full_shape() const {
  std::vector<int64_t> full = shape;
  if (split == TensorParallelSplit::rows) full.at(0) *= tp_size;
  if (split == TensorParallelSplit::columns) full.at(1) *= tp_size;
  return full;
}

int64_t ParameterSpec::full_index(int64_t local) const {
  const int64_t n = numel();
  if (local < 0 || local >= n)
    throw InternalError("parameter " + name + ": element " + std::to_string(local) +
                        " outside [0, " + std::to_string(n) + ")");
  switch (split) {
    case TensorParallelSplit::replicated:
      return local;
    case TensorParallelSplit::rows: {
      // Row `row` of this part is row `within` of band `band`'s rank-r slice.
      const int64_t columns = n / shape[0];
      const int64_t row = local / columns;
      const int64_t band_rows = shape[0] / split_bands;  // this rank's rows of one band
      const int64_t band = row / band_rows;
      const int64_t within = row % band_rows;
      const int64_t full_row = (band * tp_size + tp_rank) * band_rows + within;
      return full_row * columns + local % columns;
    }
    case TensorParallelSplit::columns: {
      const int64_t columns = shape[1];
      return local / columns * (columns * tp_size) + tp_rank * columns + local % columns;
    }
  }
  throw InternalError("parameter " + name + ": invalid split value " +
                      std::to_string(static_cast<int>(split)));
}

void ModelConfig::validate() const {
  (void)count_parameters(*this);
}

void ModelConfig::validate_tensor_parallel(int64_t tp_size) const {
  (void)count_parameters(*this, tp_size);
}

std::vector<ParameterSpec> ModelConfig::parameters() const {
  return parameters(0, 1);
}

std::vector<ParameterSpec> ModelConfig::parameters(int64_t tp_rank, int64_t tp_size) const {
  (void)count_parameters(*this, tp_size);
  if (tp_rank < 0 || tp_rank >= tp_size)
    throw UsageError("model '" + name + "': tensor-parallel rank " + std::to_string(tp_rank) +
                     " outside [0, " + std::to_string(tp_size) + ")");
  return build_parameters(*this, layers, tp_rank, tp_size);
}

int64_t ModelConfig::parameter_count() const {
  return count_parameters(*this);
}

int64_t ModelConfig::rank_parameter_count(int64_t tp_size) const {
  return count_parameters(*this, tp_size);
}

ModelConfig gpt2_config(std::string name, int64_t layers, int64_t hidden, int64_t heads,
                        int64_t vocab, int64_t max_seq) {
  ModelConfig c;
  c.name = std::move(name);
  c.family = ModelFamily::gpt2;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.kv_heads = heads;
  // 4C, saturated so that an absurd hidden is reported by validate(), not wrapped here.
  c.ffn_hidden = hidden > INT64_MAX / 4 ? INT64_MAX : 4 * hidden;
  c.vocab = vocab;
  c.max_seq = max_seq;
  c.tied_embeddings = true;
  c.learned_position_embeddings = true;
  c.norm = NormKind::layernorm;
  c.mlp = MlpKind::gelu;
  c.bias = true;
  return c;
}

ModelConfig llama_config(std::string name, int64_t layers, int64_t hidden, int64_t heads,
                         int64_t kv_heads, int64_t ffn_hidden, int64_t vocab, int64_t max_seq,
                         double rope_theta) {
  ModelConfig c;
  c.name = std::move(name);
  c.family = ModelFamily::llama;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.ffn_hidden = ffn_hidden;
  c.vocab = vocab;
  c.max_seq = max_seq;
  c.tied_embeddings = false;
  c.learned_position_embeddings = false;
  c.norm = NormKind::rmsnorm;
  c.mlp = MlpKind::swiglu;
  c.bias = false;
  c.rope_theta = rope_theta;
  return c;
}

std::vector<std::string_view> model_config_names() {
  std::vector<std::string_view> names;
  for (const auto& entry : kConfigs) names.push_back(entry.name);
  return names;
}

ModelConfig model_config_by_name(std::string_view name) {
  for (const auto& entry : kConfigs)
    if (entry.name == name) return entry.make();
  std::string valid;
  for (const auto& entry : kConfigs) valid += (valid.empty() ? "" : ", ") + std::string(entry.name);
  throw UsageError("unknown model '" + std::string(name) + "' (expected one of: " + valid + ")");
}

std::string layer_module_name(int64_t layer) {
  return "blocks." + std::to_string(layer);
}

}  // namespace vramlab
