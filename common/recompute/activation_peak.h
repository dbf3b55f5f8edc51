/// \file
/// \brief The bytes of saved activations a training step holds under a recompute schedule, event
/// by event, and their peak. This is the contract with the runtime: its saved-activation store
/// goes through exactly these values (A below), so the predicted peak is the measured one.
///
/// With E, H, F_l, S_l, O_l as in ChainCosts:
///   - Forward starts at A = E. Layer l runs with A += F_l, then drops to what its plan keeps:
///     none keeps F_l, selective keeps S_l, full keeps O_l, and a full layer that continues a
///     span also drops O_{l−1} (it was only the input of l).
///   - After the last layer the head saves A += H; its backward frees H.
///   - Backward goes from the last layer to the first. A none or selective layer's backward runs
///     at the current A (the selective recompute uses temporaries, not the store) and frees what
///     the layer keeps. A full span [a, b) is reached at layer b−1: its kept O_{b−1} is
///     freed, layers a..b−1 are re-run saving everything (A += F_a + … + F_{b−1}), then their
///     backwards each free their F.
///
/// The peak is the largest A. With the sizes validate_chain_costs() accepts (O ≤ S ≤ F), it is
/// the largest of: a none or selective layer's forward, the head's forward, and the end of each
/// span's recompute; a backward never raises A, and a span's forward stays below its
/// recompute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/recompute/chain_costs.h"
#include "common/recompute/recompute_schedule.h"

namespace vramlab::recompute {

/// One change of the saved-activation store.
struct ActivationEvent {
  /// What happened: "start", "forward layer 3", "layer 3 kept", "forward head", "backward head",
  /// "recompute span 4-7" (layers 4 to 7, both included; "recompute span 3" for a
  /// one-layer span), "backward layer 3".
  std::string label;
  int64_t bytes = 0;  ///< A, the bytes live in the store after the event.

  /// \param other the event to compare with. \return true when label and bytes are equal.
  bool operator==(const ActivationEvent& other) const = default;
};

/// Every value A takes during one step (file comment), in order. A "forward layer l" event is the
/// layer's forward with all it saves; "layer l kept" follows once it has dropped what its plan
/// does not keep; a "recompute span a-b" event is the end of the span's re-run (after its
/// kept output was freed and its layers saved everything again). The step ends at A = E, the
/// embedding's saved output, which the embedding's backward frees after the layers.
/// \param costs the chain (validate_chain_costs()). \param schedule a valid schedule for it.
/// \return the events, starting with "start" at E.
/// \throws vramlab::InternalError for an invalid chain or schedule.
std::vector<ActivationEvent> activation_timeline(const ChainCosts& costs,
                                                 const RecomputeSchedule& schedule);

/// The largest A of activation_timeline(), without building the labels.
/// \param costs the chain (validate_chain_costs()). \param schedule a valid schedule for it.
/// \return the peak in bytes.
/// \throws vramlab::InternalError for an invalid chain or schedule.
int64_t activation_peak_bytes(const ChainCosts& costs, const RecomputeSchedule& schedule);

}  // namespace vramlab::recompute
