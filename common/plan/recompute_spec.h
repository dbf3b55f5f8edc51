/// \file
/// \brief The `--recompute` values: how a recompute schedule is asked for on the command line and
/// in a plan (recompute/recompute_spec.h makes the schedule each one gives a chain).
///
/// The forms:
///   - `none`: nothing recomputed.
///   - `full`: every layer recomputed, each its own span: every layer checkpointed, as
///     Hugging Face's gradient_checkpointing_enable() wraps each decoder layer.
///   - `every:K` (K ≥ 1): layers 0, K, 2K, … recomputed, each its own one-layer span;
///     `every:2` checkpoints half the layers, `every:1` is `full`. A K of the chain's length or
///     more recomputes layer 0 only: the spec is parsed without knowing the chain, and one spec
///     can serve models of different depths.
///   - `sqrt`: Chen et al. 2016 ("Training Deep Nets with Sublinear Memory Cost"): every layer
///     recomputed, in spans of k = ⌈√L⌉ consecutive layers (the paper's "segments"; the last
///     one shorter), so about √L span outputs are kept.
///   - `selective`: every layer recomputes only its attention probabilities (Korthikanti et al.
///     2022, "Reducing Activation Recomputation in Large Transformer Models" §5).
///   - `budget:BYTES`: the cheapest schedule whose activation peak is at most BYTES
///     (optimal_schedule()). BYTES is a plain integer or a size with a unit as `--device sim:SIZE`
///     takes it: B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024),
///     e.g. budget:20GiB.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vramlab::plan {

/// A parsed `--recompute` value (file comment).
struct RecomputeSpec {
  /// Which form.
  enum class Kind { none, full, every, sqrt, selective, budget };
  Kind kind = Kind::none;    ///< The form.
  int64_t every = 0;         ///< K of `every:K` (≥ 1); 0 for the other forms.
  int64_t budget_bytes = 0;  ///< BYTES of `budget:BYTES` (> 0); 0 for the other forms.

  /// \param other the spec to compare with. \return true when all fields are equal.
  bool operator==(const RecomputeSpec& other) const = default;
};

/// \param text one of the forms of the file comment, e.g. "every:4" or "budget:20GiB".
/// \return the spec.
/// \throws vramlab::UsageError naming \p text and listing the forms when it is none of them, K
/// is not an integer ≥ 1, or BYTES is not a positive size.
RecomputeSpec parse_recompute_spec(std::string_view text);

/// The spec as parse_recompute_spec() reads it back: "every:4", "budget:20GiB" (the largest
/// binary unit that divides the budget exactly, else plain bytes).
/// \param spec a spec. \return the text.
std::string to_string(const RecomputeSpec& spec);

}  // namespace vramlab::plan
