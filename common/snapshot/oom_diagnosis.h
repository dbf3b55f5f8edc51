/// \file
/// \brief What an out-of-memory error says, and what to do about it: PyTorch's message (its
/// current format, the one vramlab's allocator writes, and the older one of PyTorch 1.x) parsed
/// into numbers, and with a snapshot taken at the failure (`vramlab train --snapshot-on-oom`, or
/// PyTorch's OOM-observer recipe) the phase, category, module and tensor of the request that
/// failed; then whether fragmentation is the cause and the fixes in order of cost, each with the
/// flag that applies it (`vramlab diagnose`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace vramlab::snapshot {

/// The numbers of an out-of-memory message.
struct OomMessage {
  std::string device;                      ///< what ran out: "CUDA", "sim:2GiB", ...
  int64_t requested_bytes = 0;             ///< "Tried to allocate ..."
  int64_t capacity_bytes = 0;              ///< the device's total capacity
  int64_t free_bytes = 0;                  ///< what the device had free (the driver's view)
  int64_t allocated_bytes = 0;             ///< allocated by PyTorch (live tensors)
  int64_t reserved_unallocated_bytes = 0;  ///< cached by the allocator, not in use
  std::optional<int64_t> process_bytes;    ///< "this process has ... in use" (non-PyTorch included)
};

/// Parses \p text (a whole log is fine: the first message in it counts), in PyTorch 2.x's format
/// ("Tried to allocate X. GPU 0 has a total capacity of C of which F is free. [Including
/// non-PyTorch memory, this process has P memory in use.] Of the allocated memory A is allocated by
/// PyTorch, and R is reserved by PyTorch but unallocated.") or 1.x's ("Tried to allocate X (GPU 0;
/// C total capacity; A already allocated; F free; R' reserved in total by PyTorch)"). \return the
/// numbers, or nullopt when \p text holds no such message.
std::optional<OomMessage> parse_oom_message(std::string_view text);

/// One way out, with what it costs.
struct OomFix {
  std::string change;  ///< the flag or setting that applies it, e.g. "--attention flash"
  std::string effect;  ///< what it does to the bytes that overflowed
  std::string cost;    ///< what it costs (time, accuracy, devices)
};

/// The diagnosis.
struct OomDiagnosis {
  OomMessage message;  ///< the numbers it starts from
  /// Fragmentation, not capacity: the allocator held at least the request's bytes cached but in
  /// no piece large enough (reserved-but-unallocated ≥ the request).
  bool fragmentation = false;
  /// From the snapshot (empty without one): "forward", "backward", "recompute", "first optimizer
  /// step" (the optimizer's states did not exist yet: created lazily, as PyTorch's are),
  /// "optimizer step", "evaluation" (a forward outside training), "setup" (the model or the
  /// batch did not fit) or "none".
  std::string phase;
  std::string category;  ///< the failed request's: parameter, activation, optimizer_state, ...
  std::string module;    ///< its module path ("blocks.3.attn")
  std::string tensor;    ///< its tensor's name ("blocks.3.att")
  /// Activations and temporaries still alive from an earlier step (a training step's are freed
  /// by its end): what a loop keeps across steps, e.g. `outputs.append(logits)` without
  /// `.detach().cpu()`. From the snapshot's trace; 0 without one.
  int64_t kept_from_earlier_steps_bytes = 0;
  /// The live bytes per category at the failure (from the snapshot's blocks), largest first.
  std::vector<std::pair<std::string, int64_t>> live_by_category;
  std::vector<OomFix> fixes;  ///< cheapest first
};

/// Diagnoses \p message, with \p snapshot (PyTorch's _snapshot() schema, vramlab's labels) when
/// given. \throws vramlab::UsageError for a snapshot without the trace's "oom" entry (one not
/// taken at the failure, or without history recorded).
OomDiagnosis diagnose_oom(const OomMessage& message, const nlohmann::json* snapshot);

}  // namespace vramlab::snapshot
