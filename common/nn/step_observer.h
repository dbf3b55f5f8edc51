/// \file
/// \brief Observers of a training step's phases: zero-grad, forward (embedding, each block, final
/// norm + LM head, loss), backward (loss gradient + head, each block in reverse with the forward
/// of checkpointed blocks re-run before their span's backward, embedding) and
/// the optimizer step, each announced before it starts and after it ends.
///
/// A lesson that measures or changes one phase registers an observer instead of copying the step:
/// the model announces the phases it runs (DecoderModel::forward and backward, from the loops
/// that run the layers), train::Trainer the ones around them (zero-grad, optimizer step). The
/// event carries the step's SavedActivations, mutable, so an observer can change a block's policy
/// before that block runs. With no observer registered a phase costs one empty() test.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace vramlab::nn {

class DecoderModel;
class SavedActivations;

/// The phases of one training step, in the order they run.
enum class StepPhase {
  zero_grad,          ///< clearing (or releasing) the gradients.
  forward,            ///< the whole forward pass, embedding to loss.
  forward_embedding,  ///< token (and position) embedding.
  forward_layer,      ///< one transformer block (PhaseEvent::layer = its index).
  forward_head,       ///< final norm and LM head (the logits).
  loss,               ///< cross-entropy over the logits (probs, per-token losses, the mean).
  backward,           ///< the whole backward pass.
  backward_head,      ///< the loss gradient, the LM head and the final norm, backwards.
  /// A checkpointed block's forward re-run in backward (PhaseEvent::layer = its index), just
  /// before the backward of its span's last block.
  recompute_layer,
  backward_layer,      ///< one transformer block backwards (PhaseEvent::layer = its index).
  backward_embedding,  ///< the embedding's gradient.
  optimizer_step,      ///< the optimizer's update (its states are created at the first step).
};

/// \return the enumerator's spelling, e.g. "forward_layer".
constexpr std::string_view step_phase_name(StepPhase phase) {
  switch (phase) {
    case StepPhase::zero_grad:
      return "zero_grad";
    case StepPhase::forward:
      return "forward";
    case StepPhase::forward_embedding:
      return "forward_embedding";
    case StepPhase::forward_layer:
      return "forward_layer";
    case StepPhase::forward_head:
      return "forward_head";
    case StepPhase::loss:
      return "loss";
    case StepPhase::backward:
      return "backward";
    case StepPhase::backward_head:
      return "backward_head";
    case StepPhase::recompute_layer:
      return "recompute_layer";
    case StepPhase::backward_layer:
      return "backward_layer";
    case StepPhase::backward_embedding:
      return "backward_embedding";
    case StepPhase::optimizer_step:
      return "optimizer_step";
  }
  return "unknown";
}

/// What an observer is told about a phase.
struct PhaseEvent {
  StepPhase phase = StepPhase::forward;  ///< see StepPhase for the order.
  int64_t layer = -1;                    ///< block index for the per-block phases, else -1.
  /// The step's store: what forward saved so far (empty again after backward). Mutable: an
  /// observer may set a block's policy before the block runs.
  SavedActivations* saved = nullptr;
  /// The model: its parameters and gradients (model->parameters()) and its runtime and allocator
  /// (model->runtime()).
  DecoderModel* model = nullptr;
};

/// Told before and after every phase of a step; override what you need.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  /// Called when \p event's phase is about to start; the default does nothing.
  virtual void before(const PhaseEvent& event) { (void)event; }
  /// Called when \p event's phase has finished (not when it threw); the default does nothing.
  virtual void after(const PhaseEvent& event) { (void)event; }
};

/// The observers of one model's steps, told in registration order. Holds pointers: an observer
/// must outlive its registration, and must not add or remove observers while it is being told.
class StepObservers {
 public:
  /// Registers \p observer (again if it is already registered: it is then told twice).
  void add(StepObserver& observer) { observers_.push_back(&observer); }
  /// Unregisters every registration of \p observer.
  void remove(const StepObserver& observer) { std::erase(observers_, &observer); }
  /// \return true when nobody is registered (the phases then build no event).
  [[nodiscard]] bool empty() const { return observers_.empty(); }
  /// Tells every observer, in registration order, that a phase starts.
  void before(const PhaseEvent& event) const {
    for (StepObserver* o : observers_) o->before(event);
  }
  /// Tells every observer, in registration order, that a phase ended.
  void after(const PhaseEvent& event) const {
    for (StepObserver* o : observers_) o->after(event);
  }

 private:
  std::vector<StepObserver*> observers_;
};

}  // namespace vramlab::nn
