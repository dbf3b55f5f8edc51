/// \file
/// \brief ModelFlags: the command-line description of a model shared by `vramlab train`,
/// `vramlab estimate` and the lesson binaries, with one set of rules and one help text.
///
/// The rules:
///   - `--model NAME` starts from a built-in configuration; each shape flag then replaces its
///     value. For a gpt2 model, `--heads` also sets the kv heads (fused qkv) and `--hidden` the
///     MLP width (4C).
///   - Without a name, `--layers --hidden --heads --vocab` are all needed. The family is
///     `--family` if given, else llama when `--ffn` is given or `--kv-heads` is below `--heads`,
///     else gpt2. A llama's MLP width is `--ffn`, else llama_ffn_width(C).
///   - The context (position-table rows) is `--max-seq`; for explicit shapes it defaults to the
///     command's `--seq` (the longest sequence it trains on), else to GPT-2's 1024.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/model/model_config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace vramlab {

/// The SwiGLU width of explicit llama shapes: ⌊8C/3⌋ rounded up to a multiple of 64. This is
/// Meta's rule in the Llama reference code (model.py, FeedForward: 2·4C/3 rounded up to
/// multiple_of) with multiple_of = 64; the released models use 256 or a multiplier, so their
/// widths come from the named configurations instead.
/// \param hidden C (> 0). \return the width.
/// \throws vramlab::UsageError when 8C overflows int64.
int64_t llama_ffn_width(int64_t hidden);

/// The model flags of a command, each unset until given.
struct ModelFlags {
  std::string name;                 ///< `--model`: a built-in configuration, "" for none.
  std::string family;               ///< `--family`: "gpt2" or "llama", "" to infer it.
  std::optional<int64_t> layers;    ///< `--layers`: L.
  std::optional<int64_t> hidden;    ///< `--hidden`: C.
  std::optional<int64_t> heads;     ///< `--heads`: H.
  std::optional<int64_t> kv_heads;  ///< `--kv-heads`: key/value heads.
  std::optional<int64_t> ffn;       ///< `--ffn`: MLP width F.
  std::optional<int64_t> vocab;     ///< `--vocab`: V.
  std::optional<int64_t> max_seq;   ///< `--max-seq`: the context length.

  /// \return true when any flag other than `--model` was given.
  [[nodiscard]] bool any_shape() const;

  /// Builds and validates the model the flags describe (the rules in the file comment).
  /// \param seq the command's `--seq`, if given: the default context of explicit shapes.
  /// \return the configuration.
  /// \throws vramlab::UsageError naming the flag and the bad value: a size < 1, an unknown model
  /// or family, missing shapes without a name, a family contradicting the named model, or what
  /// ModelConfig::validate() rejects (heads not dividing hidden, ...).
  [[nodiscard]] ModelConfig build(std::optional<int64_t> seq = std::nullopt) const;
};

/// Registers `--model --layers --hidden --heads --kv-heads --ffn --family --vocab --max-seq` on a
/// CLI11 app or subcommand, in a "Model" group of its help.
/// \param app the app or subcommand. \param flags where the values go; it must outlive parsing.
/// A non-empty flags.name is shown as the default model.
void add_model_options(CLI::App& app, ModelFlags& flags);

/// The lessons' small GPT-2: L = 2, C = 64, 4 heads, V = 128, a context of max(64, T). Every
/// optimizer and precision trains it to near the synthetic token stream's floor in a few hundred
/// steps, a run in seconds on two cores. Named "custom", as `vramlab train` names explicit shapes.
/// \param given the command's model flags: a --model is built as named; a shape flag changes the
/// small model. \param seq the command's T, if given (the context defaults to max(64, T), or 64).
/// \return the configuration. \throws vramlab::UsageError as ModelFlags::build.
ModelConfig lesson_small_model(const ModelFlags& given, std::optional<int64_t> seq);

}  // namespace vramlab
