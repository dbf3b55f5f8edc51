// Known-wrong variant of exercise 04.3 (kept for `vramlab verify`, never linked into a lesson):
// counts each gathered unit as n_u elements instead of the padded p_u = ceil(n_u/N)·N the
// all-gather fills.
// The exercise's tests must fail for it.
#include <algorithm>
#include <string>

#include "common/model/checked_int.h"
#include "common/platform/errors.h"
#include "lessons/04-zero/api/zero3_schedule.h"

namespace vramlab::lesson04 {

namespace {

// The bytes of each unit once gathered: p_u = ⌈n_u/N⌉·N elements, padding included.
std::vector<int64_t> gathered_unit_bytes(const Zero3Schedule& s) {
  if (s.unit_numel.size() < 2)
    throw UsageError("a model has at least an embedding and a head unit, got " +
                     std::to_string(s.unit_numel.size()) + " units");
  if (s.element_bytes < 1)
    throw UsageError("element_bytes must be >= 1, got " + std::to_string(s.element_bytes));
  if (s.world_size < 1)
    throw UsageError("a world needs >= 1 rank, got " + std::to_string(s.world_size));
  std::vector<int64_t> bytes;
  for (const int64_t n : s.unit_numel) {
    if (n < 0) throw UsageError("a unit of " + std::to_string(n) + " elements");
    const int64_t padded = n;
    bytes.push_back(checked_mul(padded, s.element_bytes, "a gathered unit's bytes"));
  }
  return bytes;
}

}  // namespace

std::vector<int64_t> zero3_gathered_bytes_per_phase(const Zero3Schedule& schedule) {
  const std::vector<int64_t> bytes = gathered_unit_bytes(schedule);
  const auto units = static_cast<int64_t>(bytes.size());
  const int64_t layers = units - 2, embedding = 0, head = units - 1;
  const auto block = [](int64_t l) { return 1 + l; };
  const bool tied = schedule.tied_embeddings;

  std::vector<bool> gathered(bytes.size(), false);
  int64_t held = 0;
  std::vector<int64_t> per_phase;
  const auto gather = [&](int64_t unit) {
    if (gathered[static_cast<size_t>(unit)]) return;  // already full: no second copy
    gathered[static_cast<size_t>(unit)] = true;
    held = checked_add(held, bytes[static_cast<size_t>(unit)], "gathered bytes");
  };
  const auto release = [&](int64_t unit) {
    if (!gathered[static_cast<size_t>(unit)]) return;
    gathered[static_cast<size_t>(unit)] = false;
    held -= bytes[static_cast<size_t>(unit)];
  };
  const auto phase = [&] { per_phase.push_back(held); };

  // Forward. A tied embedding stays gathered until the LM head has used it.
  gather(embedding);
  phase();  // forward_embedding
  if (!tied) release(embedding);
  for (int64_t l = 0; l < layers; ++l) {
    gather(block(l));
    if (schedule.prefetch && l + 1 < layers) gather(block(l + 1));
    phase();  // forward_layer l
    release(block(l));
  }
  gather(head);
  phase();  // forward_head
  release(head);
  release(embedding);

  // Backward, in reverse: the tied embedding is needed from the head's backward on.
  if (tied) gather(embedding);
  gather(head);
  phase();  // backward_head
  release(head);
  for (int64_t l = layers - 1; l >= 0; --l) {
    gather(block(l));
    if (schedule.prefetch && l >= 1) gather(block(l - 1));
    phase();  // backward_layer l
    release(block(l));
  }
  gather(embedding);
  phase();  // backward_embedding
  release(embedding);
  return per_phase;
}

int64_t zero3_peak_gathered_bytes(const Zero3Schedule& schedule) {
  const std::vector<int64_t> per_phase = zero3_gathered_bytes_per_phase(schedule);
  return *std::max_element(per_phase.begin(), per_phase.end());
}

}  // namespace vramlab::lesson04
