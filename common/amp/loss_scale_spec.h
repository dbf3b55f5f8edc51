/// \file
/// \brief `--loss-scale dynamic|static:S|none`: which loss scaling a training run uses.
#pragma once

#include <string>
#include <string_view>

namespace vramlab::amp {

/// The kinds of loss scaling.
enum class LossScaleKind {
  dynamic,  ///< GradScaler: start at 2^16, back off on inf/NaN, grow after clean steps
  fixed,    ///< one scale for the whole run (DeepSpeed's "loss_scale": S); inf steps are skipped
  none,     ///< no scaling and no check (what fp16 without a scaler does)
};

/// A parsed `--loss-scale`.
struct LossScaleSpec {
  LossScaleKind kind = LossScaleKind::none;  ///< which kind
  double value = 1.0;                        ///< the scale of `static:S`
};

/// Parses "dynamic", "static:S" (S a finite number > 0, e.g. 1024 or 2^10 written as 1024) or
/// "none". \throws vramlab::UsageError naming the text otherwise.
LossScaleSpec parse_loss_scale(std::string_view text);
/// \return the spelling parse_loss_scale accepts, e.g. "static:1024".
std::string loss_scale_name(const LossScaleSpec& spec);

}  // namespace vramlab::amp
