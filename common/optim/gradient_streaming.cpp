// ZeRO-Offload's gradient streaming (see gradient_streaming.h).
#include "common/optim/gradient_streaming.h"

#include <stdexcept>

#include "common/nn/decoder_model.h"

namespace vramlab::optim {

// Note [Gradient streaming]
// Backward finishes the units in reverse: the head (the final norm, and the LM head when it is
// not tied), the blocks from the last to the first, then the embedding (which a tied head's
// gradient also reaches, so it is final only there). Each unit's gradients are final when its
// backward ends (in the last micro-batch), so their copy to the host can start then, on a copy
// stream ordered after the compute stream by an event, while the compute stream runs the next
// unit's backward. Ren et al. (ZeRO-Offload, ATC 2021, §4.1) overlap the gradient offload with
// backward the same way, bucket by bucket. What is left exposed is the last unit's copy and any
// backlog when the link is slower than backward produces gradients: the host waits for the copy
// stream before its update (Optimizer::step). Under ZeRO-2 each rank streams its shard of a
// unit's gradients once the unit's reduce-scatter is done (dist::DataParallel, told before this
// observer): 1/N of the bytes, Ren et al.'s §4.2. Under DDP and ZeRO-1 the gradients are reduced
// after the whole backward (dist::DataParallel::finish_backward), so there the trainer does not
// register this observer and the step copies them all at once.

GradientStreaming::GradientStreaming(Optimizer& optimizer) : optimizer_(optimizer) {
  if (!optimizer.offloaded())
    throw std::logic_error("GradientStreaming needs an offloaded optimizer");
}

void GradientStreaming::before(const nn::PhaseEvent& event) {
  // A step that failed and is run again streams every unit again.
  if (event.phase == nn::StepPhase::zero_grad) optimizer_.forget_streamed_gradients();
}

void GradientStreaming::after(const nn::PhaseEvent& event) {
  if (!last_micro_batch_) return;
  const dist::ShardLayout& layout = event.model->parameters().layout();
  switch (event.phase) {
    case nn::StepPhase::backward_head:
      stream_unit(event, layout.find_unit(-1, true));
      break;
    case nn::StepPhase::backward_layer:
      stream_unit(event, layout.find_unit(event.layer));
      break;
    case nn::StepPhase::backward_embedding:
      stream_unit(event, layout.find_unit(-1, false));
      break;
    default:
      break;
  }
}

void GradientStreaming::stream_unit(nn::PhaseEvent const& event, int64_t unit) {
  if (unit < 0) return;
  nn::ParameterStore& params = event.model->parameters();
  const dist::ShardUnit& u = params.layout().units()[static_cast<size_t>(unit)];
  optimizer_.stream_gradients(params, u.offset, u.padded_numel);
}

}  // namespace vramlab::optim
