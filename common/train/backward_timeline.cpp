// The units' backward ends on the compute stream's clock (see backward_timeline.h).
#include "common/train/backward_timeline.h"

#include "common/dtype/dtype.h"
#include "common/nn/decoder_model.h"

namespace vramlab::train {

void BackwardTimeline::before(const nn::PhaseEvent& event) {
  if (event.phase == nn::StepPhase::backward) units_.clear();
  if (event.phase == nn::StepPhase::optimizer_step)
    backward_end_ = clock_.stream_time(stream::Clock::compute_stream());
}

void BackwardTimeline::after(const nn::PhaseEvent& event) {
  const nn::ParameterStore& params = event.model->parameters();
  int64_t unit = -1;
  if (event.phase == nn::StepPhase::backward_head) unit = params.layout().find_unit(-1, true);
  if (event.phase == nn::StepPhase::backward_layer) unit = params.layout().find_unit(event.layer);
  if (event.phase == nn::StepPhase::backward_embedding) unit = params.layout().find_unit(-1, false);
  if (unit < 0) return;
  const int64_t numel = params.layout().units()[static_cast<size_t>(unit)].padded_numel;
  units_.push_back({clock_.stream_time(stream::Clock::compute_stream()),
                    numel * static_cast<int64_t>(dtype_size_bytes(params.grads().dtype()))});
}

}  // namespace vramlab::train
