// `--loss-scale` parsing (see loss_scale_spec.h).
#include "common/amp/loss_scale_spec.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "common/platform/errors.h"

namespace vramlab::amp {

LossScaleSpec parse_loss_scale(std::string_view text) {
  if (text == "dynamic") return {LossScaleKind::dynamic, 65536.0};
  if (text == "none") return {LossScaleKind::none, 1.0};
  constexpr std::string_view kStatic = "static:";
  if (text.starts_with(kStatic)) {
    const std::string_view number = text.substr(kStatic.size());
    double value = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error == std::errc() && end == number.data() + number.size() && std::isfinite(value) &&
        value > 0)
      return {LossScaleKind::fixed, value};
    throw UsageError("loss scale '" + std::string(text) +
                     "': the static scale must be a finite number > 0, e.g. static:1024");
  }
  throw UsageError("unknown loss scale '" + std::string(text) +
                   "' (expected dynamic, static:S or none)");
}

std::string loss_scale_name(const LossScaleSpec& spec) {
  switch (spec.kind) {
    case LossScaleKind::dynamic:
      return "dynamic";
    case LossScaleKind::none:
      return "none";
    case LossScaleKind::fixed: {
      std::ostringstream text;
      text.precision(17);
      text << "static:" << spec.value;
      return text.str();
    }
  }
  return "none";
}

}  // namespace vramlab::amp
