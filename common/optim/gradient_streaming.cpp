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
// stream before its update (Optimizer::step). This observer serves one rank with the whole
// gradient on the device. Under ZeRO-2 the device keeps no gradient shard at all: the
// data-parallel strategy hands each unit's reduced shard to the optimizer as it is made
// (Optimizer::take_gradient_shard), 1/N of the bytes (Ren et al. §4.2), and the device holds
// gradients only while a unit's backward runs. Under DDP and ZeRO-1 the gradients are reduced
// after the whole backward (dist::DataParallel::finish_backward), so the step copies them then.
// The trainer forgets what a failed step streamed (Optimizer::forget_streamed_gradients).

GradientStreaming::GradientStreaming(Optimizer& optimizer) : optimizer_(optimizer) {
  if (!optimizer.offloaded())
    throw std::logic_error("GradientStreaming needs an offloaded optimizer");
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
