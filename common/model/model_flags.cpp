// ModelFlags: the model flags' rules and their CLI11 registration (see model_flags.h).
#include "common/model/model_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <utility>

#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab {

namespace {

// GPT-2's context, the default when neither --max-seq nor --seq says otherwise.
constexpr int64_t kDefaultMaxSeq = 1024;

void require_positive(const char* flag, const std::optional<int64_t>& value) {
  if (value && *value < 1)
    throw UsageError(std::string(flag) + " must be >= 1, got " + std::to_string(*value));
}

int64_t gpt2_ffn_width(int64_t hidden) {
  return checked_mul(4, hidden, "gpt2 MLP width (4 x --hidden)");
}

ModelConfig from_name(const ModelFlags& f) {
  ModelConfig c = model_config_by_name(f.name);
  if (!f.family.empty() && parse_model_family(f.family) != c.family)
    throw UsageError("--family " + f.family + " contradicts --model " + f.name + " (a " +
                     std::string(model_family_name(c.family)) + " model)");
  const bool gpt2 = c.family == ModelFamily::gpt2;
  if (f.layers) c.layers = *f.layers;
  if (f.hidden) {
    c.hidden = *f.hidden;
    if (gpt2) c.ffn_hidden = gpt2_ffn_width(c.hidden);
  }
  if (f.heads) {
    c.heads = *f.heads;
    if (gpt2) c.kv_heads = *f.heads;
  }
  if (f.kv_heads) c.kv_heads = *f.kv_heads;
  if (f.ffn) c.ffn_hidden = *f.ffn;
  if (f.vocab) c.vocab = *f.vocab;
  if (f.max_seq) c.max_seq = *f.max_seq;
  return c;
}

ModelConfig from_shapes(const ModelFlags& f, std::optional<int64_t> seq) {
  for (const auto& [flag, value] :
       {std::pair{"--layers", f.layers}, std::pair{"--hidden", f.hidden},
        std::pair{"--heads", f.heads}, std::pair{"--vocab", f.vocab}})
    if (!value)
      throw UsageError(std::string("explicit shapes need ") + flag +
                       " as well (give --model NAME, or all of --layers --hidden --heads --vocab)");
  const int64_t max_seq = f.max_seq.value_or(seq.value_or(kDefaultMaxSeq));
  const ModelFamily family = !f.family.empty() ? parse_model_family(f.family)
                             : f.ffn || (f.kv_heads && *f.kv_heads != *f.heads) ? ModelFamily::llama
                                                                                : ModelFamily::gpt2;
  if (family == ModelFamily::llama)
    return llama_config("custom", *f.layers, *f.hidden, *f.heads, f.kv_heads.value_or(*f.heads),
                        f.ffn ? *f.ffn : llama_ffn_width(*f.hidden), *f.vocab, max_seq);
  ModelConfig c = gpt2_config("custom", *f.layers, *f.hidden, *f.heads, *f.vocab, max_seq);
  if (f.kv_heads) c.kv_heads = *f.kv_heads;  // validate() names it unless it equals --heads
  if (f.ffn) c.ffn_hidden = *f.ffn;
  return c;
}

}  // namespace

int64_t llama_ffn_width(int64_t hidden) {
  const int64_t eight_c = checked_mul(8, hidden, "llama MLP width (8 x --hidden)");
  return (eight_c / 3 + 63) / 64 * 64;
}

bool ModelFlags::any_shape() const {
  return !family.empty() || layers || hidden || heads || kv_heads || ffn || vocab || max_seq;
}

ModelConfig ModelFlags::build(std::optional<int64_t> seq) const {
  require_positive("--layers", layers);
  require_positive("--hidden", hidden);
  require_positive("--heads", heads);
  require_positive("--kv-heads", kv_heads);
  require_positive("--ffn", ffn);
  require_positive("--vocab", vocab);
  require_positive("--max-seq", max_seq);
  require_positive("--seq", seq);
  ModelConfig c = name.empty() ? from_shapes(*this, seq) : from_name(*this);
  c.validate();
  return c;
}

void add_model_options(CLI::App& app, ModelFlags& flags) {
  const char* group = "Model";
  std::string names;
  for (auto name : model_config_names()) names += (names.empty() ? "" : ", ") + std::string(name);
  auto* model = app.add_option("--model", flags.name,
                               "Named model: " + names +
                                   ". The shape flags replace its values (a gpt2's --heads also "
                                   "sets its kv heads, --hidden its 4C MLP). Without a name "
                                   "(\"\"), give all of --layers --hidden --heads --vocab");
  if (!flags.name.empty()) model->capture_default_str();
  model->group(group);
  app.add_option("--layers", flags.layers, "Transformer blocks L")->group(group);
  app.add_option("--hidden", flags.hidden, "Model width C (h in Korthikanti et al.)")->group(group);
  app.add_option("--heads", flags.heads, "Attention heads H (a in Korthikanti et al.)")
      ->group(group);
  app.add_option("--kv-heads", flags.kv_heads,
                 "Key/value heads; fewer than --heads makes explicit shapes a llama "
                 "(grouped-query attention)")
      ->group(group);
  app.add_option("--ffn", flags.ffn,
                 "MLP width F (makes explicit shapes a llama; a llama's default is 8C/3 rounded "
                 "up to a multiple of 64)")
      ->group(group);
  app.add_option("--family", flags.family,
                 "gpt2 | llama for explicit shapes (default: llama with --ffn or with "
                 "--kv-heads below --heads, else gpt2)")
      ->group(group);
  app.add_option("--vocab", flags.vocab, "Vocabulary size V")->group(group);
  app.add_option("--max-seq", flags.max_seq,
                 "Context length (position-table rows); explicit shapes default to --seq, "
                 "else 1024")
      ->group(group);
}

ModelConfig lesson_small_model(const ModelFlags& given, std::optional<int64_t> seq) {
  if (!given.name.empty()) return given.build(seq);
  ModelFlags flags = given;
  flags.name = "gpt2-tiny";
  if (!flags.layers) flags.layers = 2;
  if (!flags.hidden) flags.hidden = 64;
  if (!flags.heads) flags.heads = 4;
  if (!flags.vocab) flags.vocab = 128;
  if (!flags.max_seq) flags.max_seq = std::max<int64_t>(64, seq.value_or(64));
  ModelConfig model = flags.build(seq);
  model.name = "custom";
  return model;
}

}  // namespace vramlab
