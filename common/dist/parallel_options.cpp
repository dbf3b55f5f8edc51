// ZeRO stage names (see parallel_options.h).
#include "common/dist/parallel_options.h"

#include <string>

#include "common/platform/errors.h"

namespace vramlab::dist {

ZeroStage zero_stage_from_int(int64_t stage) {
  if (stage < 0 || stage > 3)
    throw UsageError("--zero " + std::to_string(stage) +
                     " is not a ZeRO stage (expected 0, 1, 2 or 3)");
  return static_cast<ZeroStage>(stage);
}

std::string_view zero_stage_name(ZeroStage stage) {
  switch (stage) {
    case ZeroStage::ddp:
      return "ddp";
    case ZeroStage::optimizer_states:
      return "zero1";
    case ZeroStage::gradients:
      return "zero2";
    case ZeroStage::parameters:
      return "zero3";
  }
  return "unknown";
}

}  // namespace vramlab::dist
