// The planner's search (see search.h).
#include "common/planner/search.h"

#include <limits>

#include "common/nn/roofline.h"
#include "common/platform/errors.h"

namespace vramlab::planner {

namespace {

using plan::RecomputeSpec;
using Kind = plan::RecomputeSpec::Kind;

template <typename T>
const std::vector<T>& or_default(const std::vector<T>& given, const std::vector<T>& fallback) {
  return given.empty() ? fallback : given;
}

void check_problem(const Problem& p) {
  p.model.validate();
  if (p.seq < 1 || p.seq > p.model.max_seq)
    throw UsageError("--seq " + std::to_string(p.seq) + " outside [1, " +
                     std::to_string(p.model.max_seq) + "] for model '" + p.model.name + "'");
  if (p.global_batch < 1)
    throw UsageError("--global-batch must be >= 1, got " + std::to_string(p.global_batch));
  if (p.machine.gpus < 1)
    throw UsageError("--gpus must be >= 1, got " + std::to_string(p.machine.gpus));
  if (p.machine.gpus_per_node < 1)
    throw UsageError("--gpus-per-node must be >= 1, got " +
                     std::to_string(p.machine.gpus_per_node));
  if (p.machine.device.spec.capacity_bytes == 0)
    throw UsageError("device " + p.machine.device.name() +
                     " has no capacity to plan for: give a preset (e.g. meta:a100-80g)");
  if (p.machine.host_ram_bytes < 0)
    throw UsageError("--host-ram must be >= 0, got " + std::to_string(p.machine.host_ram_bytes));
}

// On one data-parallel rank a ZeRO stage shards over a group of one: it is DDP again unless its
// offload makes it differ (ZeRO-Offload's gradients streamed to the host from stage 2 on; the
// parameters offloaded under stage 3), so the search lists it only then.
bool single_rank_stage_differs(plan::ZeroStage zero, const OffloadChoice& offload) {
  switch (zero) {
    case plan::ZeroStage::ddp:
      return true;
    case plan::ZeroStage::optimizer_states:
      return false;
    case plan::ZeroStage::gradients:
      return offload.optimizer && !offload.parameters;
    case plan::ZeroStage::parameters:
      return offload.parameters;
  }
  return true;
}

bool better(const Priced& a, const Priced& b) {
  return a.time.total() < b.time.total();
}

}  // namespace

std::string offload_choice_name(const OffloadChoice& choice) {
  if (!choice.optimizer) return "none";
  const std::string what = choice.parameters ? "both" : "optimizer";
  return choice.device == plan::OffloadDevice::nvme ? what + "-nvme" : what;
}

OffloadChoice parse_offload_choice(std::string_view text) {
  using D = plan::OffloadDevice;
  for (const OffloadChoice choice :
       {OffloadChoice{}, OffloadChoice{true, false, D::cpu}, OffloadChoice{true, true, D::cpu},
        OffloadChoice{true, false, D::nvme}, OffloadChoice{true, true, D::nvme}})
    if (offload_choice_name(choice) == text) return choice;
  throw UsageError("--offloads '" + std::string(text) +
                   "': expected none, optimizer, both, optimizer-nvme or both-nvme");
}

std::string binding_name(Binding binding) {
  switch (binding) {
    case Binding::none:
      return "none";
    case Binding::device_memory:
      return "device memory";
    case Binding::host_memory:
      return "host memory";
    case Binding::both:
      return "device and host memory";
  }
  return "none";
}

SearchSpace default_space(const Problem& problem) {
  SearchSpace s;
  const memory::PeakFlops& peak = problem.machine.device.spec.peak_flops;
  s.precisions = {plan::Precision::fp32, peak.bf16_tensor > peak.fp32
                                             ? plan::Precision::mixed_bf16
                                             : plan::Precision::mixed_fp16};
  s.recomputes = {RecomputeSpec{}, RecomputeSpec{Kind::selective, 0, 0},
                  RecomputeSpec{Kind::every, 2, 0}, RecomputeSpec{Kind::sqrt, 0, 0},
                  RecomputeSpec{Kind::full, 0, 0}};
  s.compressions = {plan::ActivationCompression::none};
  s.loss_chunks = {1, 8};
  s.activation_offload = {false, true};
  s.attentions = {plan::AttentionKind::naive, plan::AttentionKind::flash};
  s.optimizers = {plan::Optimizer::adamw};
  s.zero_stages = {plan::ZeroStage::ddp, plan::ZeroStage::optimizer_states,
                   plan::ZeroStage::gradients, plan::ZeroStage::parameters};
  const int64_t within_node = std::min(problem.machine.gpus, problem.machine.gpus_per_node);
  for (int64_t t = 1; t <= within_node; ++t)
    if (problem.machine.gpus % t == 0) s.tensor_parallel.push_back(t);
  s.offloads = {OffloadChoice{}, OffloadChoice{true, false, plan::OffloadDevice::cpu},
                OffloadChoice{true, true, plan::OffloadDevice::cpu}};
  if (problem.machine.nvme) {
    s.offloads.push_back({true, false, plan::OffloadDevice::nvme});
    s.offloads.push_back({true, true, plan::OffloadDevice::nvme});
  }
  return s;
}

std::vector<Candidate> enumerate_candidates(const Problem& problem) {
  const SearchSpace d = default_space(problem);
  const SearchSpace& s = problem.space;
  std::vector<Candidate> out;
  for (const int64_t t : or_default(s.tensor_parallel, d.tensor_parallel)) {
    if (t < 1 || problem.machine.gpus % t != 0) continue;
    const int64_t N = problem.machine.gpus / t;
    if (problem.global_batch % N != 0) continue;
    const int64_t per_rank = problem.global_batch / N;
    for (const plan::ZeroStage zero : or_default(s.zero_stages, d.zero_stages))
      for (const OffloadChoice& offload : or_default(s.offloads, d.offloads)) {
        if (N == 1 && !single_rank_stage_differs(zero, offload)) continue;
        for (const plan::Precision precision : or_default(s.precisions, d.precisions))
          for (const plan::Optimizer optimizer : or_default(s.optimizers, d.optimizers))
            for (const plan::AttentionKind attention : or_default(s.attentions, d.attentions))
              for (const RecomputeSpec& recompute : or_default(s.recomputes, d.recomputes))
                for (const plan::ActivationCompression compression :
                     or_default(s.compressions, d.compressions))
                  for (const bool act_offload :
                       or_default(s.activation_offload, d.activation_offload))
                    for (const int64_t chunks : or_default(s.loss_chunks, d.loss_chunks))
                      for (int64_t B = per_rank; B >= 1; --B) {
                        if (per_rank % B != 0) continue;
                        Candidate c;
                        c.plan = problem.base;
                        c.plan.amp.precision = precision;
                        c.plan.amp.loss_scale.reset();  // the precision's default
                        c.plan.recompute = recompute;
                        c.plan.activations.compression = compression;
                        c.plan.activations.offload = act_offload;
                        c.plan.activations.loss_chunks = chunks;
                        c.plan.attention = attention;
                        c.plan.optimizer.name = optimizer;
                        c.plan.parallel.data_parallel = N;
                        c.plan.parallel.tensor_parallel = t;
                        c.plan.parallel.zero = zero;
                        c.plan.offload.optimizer = offload.optimizer;
                        c.plan.offload.parameters = offload.parameters;
                        c.plan.offload.optimizer_device = offload.device;
                        c.plan.offload.param_device =
                            offload.parameters ? offload.device : plan::OffloadDevice::cpu;
                        c.plan.batch.grad_accum = per_rank / B;
                        c.plan.batch.micro_batch_sizes.clear();
                        c.micro_batch = B;
                        out.push_back(std::move(c));
                      }
      }
  }
  return out;
}

Priced price(const Problem& problem, const Candidate& candidate) {
  Priced p;
  p.candidate = candidate;
  const estimate::Estimate e = estimate_candidate(problem.model, problem.seq, candidate);
  p.memory = predict_memory(problem.model, problem.seq, candidate, problem.machine, e);
  p.time = predict_time(problem.model, problem.seq, candidate, problem.machine, e);
  p.fits_device =
      static_cast<uint64_t>(p.memory.device_peak) <= problem.machine.device.spec.capacity_bytes;
  const bool host_ok = problem.machine.host_ram_bytes == 0 ||
                       p.memory.host_per_node <= problem.machine.host_ram_bytes;
  p.fits_host = host_ok && (p.memory.nvme_per_node == 0 || problem.machine.nvme);
  return p;
}

bool same_techniques(const Candidate& a, const Candidate& b) {
  plan::Plan pa = a.plan, pb = b.plan;
  pa.batch = pb.batch = {};
  return pa == pb;
}

namespace {

// The search of one machine, without the shortfall's re-searches; \p priced, if given, gets
// every runnable candidate priced.
SearchResult search_once(const Problem& problem, std::vector<Priced>* priced = nullptr) {
  SearchResult r;
  std::vector<Priced> runnable;
  for (const Candidate& c : enumerate_candidates(problem)) {
    ++r.candidates;
    try {
      runnable.push_back(price(problem, c));
    } catch (const UsageError&) {
      // A plan the runtime does not run (is_runnable()): never offered.
    }
  }
  r.runnable = static_cast<int64_t>(runnable.size());
  for (const Priced& p : runnable) {
    if (!r.fastest || better(p, *r.fastest)) r.fastest = p;
    if (!p.fits()) continue;
    ++r.fitting;
    if (!r.chosen || better(p, *r.chosen)) r.chosen = p;
  }
  if (!r.chosen) {
    if (priced != nullptr) *priced = std::move(runnable);
    return r;
  }
  bool device = false, host = false;
  for (const Priced& p : runnable) {
    if (p.fits() && !same_techniques(p.candidate, r.chosen->candidate) &&
        (!r.runner_up || better(p, *r.runner_up)))
      r.runner_up = p;
    if (better(p, *r.chosen)) {
      device = device || !p.fits_device;
      host = host || !p.fits_host;
    }
  }
  r.binding = device && host ? Binding::both
              : device       ? Binding::device_memory
              : host         ? Binding::host_memory
                             : Binding::none;
  if (priced != nullptr) *priced = std::move(runnable);
  return r;
}

}  // namespace

SearchResult search_plans(const Problem& problem) {
  check_problem(problem);
  if (!nn::Roofline::of(problem.machine.device.spec))
    throw UsageError("device " + problem.machine.device.name() +
                     " has no peak rates or bandwidth to price a step with: give a preset "
                     "(e.g. meta:a100-80g)");
  std::vector<Priced> priced;
  SearchResult r = search_once(problem, &priced);
  if (r.chosen) return r;
  Shortfall s;
  s.least_device_bytes = std::numeric_limits<int64_t>::max();
  for (const Priced& p : priced) {
    s.least_device_bytes = std::min(s.least_device_bytes, p.memory.device_peak);
    if (p.fits_device && (s.least_host_bytes == 0 || p.memory.host_per_node < s.least_host_bytes))
      s.least_host_bytes = p.memory.host_per_node;
  }
  if (s.least_device_bytes == std::numeric_limits<int64_t>::max()) s.least_device_bytes = 0;
  for (const memory::DevicePreset& preset : memory::device_presets())  // smallest first
    if (s.least_device_bytes > 0 &&
        preset.capacity_bytes >= static_cast<uint64_t>(s.least_device_bytes)) {
      s.larger_preset = preset.name;
      break;
    }
  for (int64_t gpus = 2 * problem.machine.gpus; gpus <= 64 * problem.machine.gpus; gpus *= 2) {
    Problem more = problem;
    more.machine.gpus = gpus;
    more.space.tensor_parallel.clear();  // the larger machine's own degrees
    if (search_once(more).chosen) {
      s.gpus_that_fit = gpus;
      break;
    }
  }
  r.shortfall = s;
  return r;
}

}  // namespace vramlab::planner
