/// \file
/// \brief `--loss-scale dynamic|static:S|none`: the loss-scaling kinds and their parser, from the
/// plan's vocabulary (common/plan/techniques.h), under the names amp's code uses.
#pragma once

#include "common/plan/techniques.h"

namespace vramlab::amp {

using plan::loss_scale_name;
using plan::LossScaleKind;
using plan::LossScaleSpec;
using plan::parse_loss_scale;

}  // namespace vramlab::amp
