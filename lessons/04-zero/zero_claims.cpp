// Lesson 04's claims table: the seeds' ZeRO / FSDP claims (#53–#71, #121, #124, #126, #132,
// #133) against the bytes the ranks held and sent (see zero_report.h).
#include <cmath>
#include <functional>

#include "common/report/terminal.h"
#include "lessons/04-zero/zero_report.h"

namespace vramlab::lesson04 {

namespace {

using dist::Traffic;
using dist::ZeroStage;

std::string fixed(double v, int decimals = 2) {
  return report::format_fixed(v, decimals);
}

// Bytes per parameter a rank of one run holds: the whole model states, or one part.
double per_param(const StrategyRun* run, const std::function<int64_t(const ModelStates&)>& part) {
  if (!run || run->ranks.empty() || run->parameter_count == 0) return NAN;
  return static_cast<double>(part(run->ranks.front().model_state)) /
         static_cast<double>(run->parameter_count);
}

int64_t total(const ModelStates& m) {
  return m.total();
}
int64_t optimizer(const ModelStates& m) {
  return m.optimizer_states;
}
int64_t weights_and_grads(const ModelStates& m) {
  return m.parameters + m.gradients;
}

double sent_ratio(const std::vector<StrategyRun>& runs, ZeroStage stage) {
  const StrategyRun* a = find(runs, stage);
  const StrategyRun* ddp = find(runs, ZeroStage::ddp);
  if (!a || !ddp) return NAN;
  return static_cast<double>(a->ranks.front().model_bytes_sent()) /
         static_cast<double>(ddp->ranks.front().model_bytes_sent());
}

// Elements of Ψ' the traffic class moved, in passes of Ψ'(N−1)/N 2-byte elements.
double passes(const StrategyRun* run, Traffic traffic) {
  if (!run) return NAN;
  const double n = static_cast<double>(run->world_size);
  const double one = static_cast<double>(run->padded_parameter_count) * (n - 1.0) / n *
                     (run->precision == amp::Precision::fp32 ? 4.0 : 2.0);
  return static_cast<double>(run->ranks.front().last_step.of(traffic).bytes_sent) / one;
}

}  // namespace

std::vector<ClaimRow> claims(const Lesson& lesson) {
  std::vector<ClaimRow> rows;
  const auto& t = lesson.training;
  const StrategyRun* ddp = find(t, ZeroStage::ddp);
  const StrategyRun* z1 = find(t, ZeroStage::optimizer_states);
  const StrategyRun* z2 = find(t, ZeroStage::gradients);
  const StrategyRun* z3 = find(t, ZeroStage::parameters);
  const std::string n = ddp ? std::to_string(ddp->world_size) : "N";
  const auto cut = [](const StrategyRun* base, const StrategyRun* run) {
    return per_param(base, total) / per_param(run, total);
  };
  const auto& f = lesson.figure1;
  const StrategyRun* f0 = find(f, ZeroStage::ddp);
  const std::string at_scale = f0 ? ", N=" + std::to_string(f0->world_size) + ": " : "";

  if (ddp && z1)
    rows.push_back({53, "ZeRO-1: 4x reduction (000, 001, 004)",
                    "N=" + n + ": " + fixed(cut(ddp, z1)) + "x" +
                        (f0 ? at_scale + fixed(cut(f0, find(f, ZeroStage::optimizer_states))) + "x"
                            : std::string()),
                    "depends: 16/(4 + 12/N), 4x only as N grows"});
  if (ddp && z2)
    rows.push_back(
        {54, "ZeRO-2: 8x reduction (000, 001, 004)",
         "N=" + n + ": " + fixed(cut(ddp, z2)) + "x" +
             (f0 ? at_scale + fixed(cut(f0, find(f, ZeroStage::gradients))) + "x" : std::string()),
         "depends: 16/(2 + 14/N), 8x only as N grows"});
  if (ddp && z3)
    rows.push_back(
        {55, "ZeRO-3: linear (N x) reduction (000, 001, 003, 004)",
         "N=" + n + ": " + fixed(cut(ddp, z3)) + "x" +
             (f0 ? at_scale + fixed(cut(f0, find(f, ZeroStage::parameters))) + "x" : std::string()),
         "holds for the model states (padding aside)"});
  if (ddp && z1 && z2)
    rows.push_back({56, "ZeRO-2: 8x optimizer state savings (000)",
                    "optimizer states B/param: ddp " + fixed(per_param(ddp, optimizer)) +
                        ", zero1 " + fixed(per_param(z1, optimizer)) + ", zero2 " +
                        fixed(per_param(z2, optimizer)),
                    "does not hold: ZeRO-1 already divides them by N"});
  const StrategyRun* s_ddp = find(lesson.seed_mixed, ZeroStage::ddp);
  const StrategyRun* s_z3 = find(lesson.seed_mixed, ZeroStage::parameters);
  const auto activations = [](const StrategyRun* r) {
    return static_cast<double>(
        r->ranks.front().peak_by_category[static_cast<size_t>(memory::MemoryCategory::activation)]);
  };
  if (s_ddp && s_z3)
    rows.push_back({57, "ZeRO-3: N x total memory reduction (000)",
                    "7B, N=8: states " +
                        gb(static_cast<double>(s_ddp->ranks.front().model_state.total())) + " -> " +
                        gb(static_cast<double>(s_z3->ranks.front().model_state.total())) +
                        "; activations " + gb(activations(s_ddp)) + " -> " + gb(activations(s_z3)),
                    "ambiguous: model states only, not activations"});
  if (f0) {
    std::string measured = "largest Ψ in 32 GB, N=" + std::to_string(f0->world_size) + ":";
    for (const ZeroStage s : kStages)
      measured.append(" ").append(fixed(32e9 / per_param(find(f, s), total) / 1e9, 1)).append("B");
    rows.push_back({58, "enables training models N times larger (001)", measured,
                    "depends: only ZeRO-3 scales with N"});
  }
  if (z2 && z3 && ddp)
    rows.push_back({59, "FSDP: FULL_SHARD, SHARD_GRAD_OP, NO_SHARD (000)",
                    "B/param, N=" + n + ": zero3 " + fixed(per_param(z3, total)) + ", zero2 " +
                        fixed(per_param(z2, total)) + ", ddp " + fixed(per_param(ddp, total)),
                    "holds: ZeRO-3, ZeRO-2 and DDP"});
  if (z2 && z3)
    rows.push_back({60, "use ZeRO-2 for most workloads (000)",
                    "bytes sent vs ddp: zero2 " + fixed(sent_ratio(t, ZeroStage::gradients), 3) +
                        "x, zero3 " + fixed(sent_ratio(t, ZeroStage::parameters), 3) + "x",
                    "holds: DDP's traffic, 2 + 14/N B/param"});
  const StrategyRun* b_ddp = find(lesson.seed_bf16, ZeroStage::ddp);
  if (b_ddp && s_ddp)
    rows.push_back(
        {61, "7B, 8 GPUs, BF16: per GPU 56 GB (002)",
         "ddp: pure bf16 " + gb(static_cast<double>(b_ddp->ranks.front().model_state.total())) +
             ", mixed-bf16 " + gb(static_cast<double>(s_ddp->ranks.front().model_state.total())),
         "does not hold for mixed precision: no master counted"});
  if (!lesson.seed_bf16.empty() && !lesson.seed_mixed.empty()) {
    std::string measured = "pure bf16 / mixed-bf16, GB:";
    for (const ZeroStage s :
         {ZeroStage::optimizer_states, ZeroStage::gradients, ZeroStage::parameters}) {
      const StrategyRun* b = find(lesson.seed_bf16, s);
      const StrategyRun* m = find(lesson.seed_mixed, s);
      if (b && m)
        measured.append(" ")
            .append(dist::zero_stage_name(s))
            .append(" ")
            .append(fixed(static_cast<double>(b->ranks.front().model_state.total()) / 1e9))
            .append(" / ")
            .append(fixed(static_cast<double>(m->ranks.front().model_state.total()) / 1e9));
    }
    rows.push_back({62, "ZeRO-1/2/3 per GPU: 31.5 / 19.25 / 7 GB (002)", measured,
                    "depends: right for 8 B/param, not 16"});
  }
  if (z1)
    rows.push_back({63, "1B, 4 GPUs: optimizer 8 GB -> 2 GB per GPU (003)",
                    "zero1, N=" + n + ": " + fixed(per_param(z1, optimizer)) +
                        " B/param of optimizer states: " + gb(per_param(z1, optimizer) * 1e9),
                    "holds for m + v; ZeRO also shards the master"});
  if (z2)
    rows.push_back({64, "1B, 4 GPUs, ZeRO-2: ~8.5 GB per GPU (003)",
                    "zero2, N=" + n + ": " + fixed(per_param(z2, total)) +
                        " B/param: " + gb(per_param(z2, total) * 1e9),
                    "does not hold: the fp32 master is sharded too"});
  if (ddp)
    rows.push_back(
        {65, "1B, standard DDP: ~18 GB per GPU (003)",
         "ddp: " + fixed(per_param(ddp, total)) + " B/param: " + gb(per_param(ddp, total) * 1e9),
         "does not hold with 16-bit gradients (18 needs fp32)"});
  if (const StrategyRun* s_z3b = find(lesson.seed_mixed, ZeroStage::parameters))
    rows.push_back({66, "30B: 120 GB in DDP, 8 x 16 GB with ZeRO-3 (003)",
                    "zero3, N=8: " + fixed(per_param(s_z3b, total)) + " B/param: 30B -> " +
                        gb(per_param(s_z3b, total) * 30e9) + " per GPU",
                    "does not hold: 480 GB of states, 60 GB per GPU"});
  if (ddp && z3)
    rows.push_back(
        {67, "ZeRO-3: 1.5x DDP's communication (003, 004)",
         "zero3 / ddp bytes sent: " + fixed(sent_ratio(t, ZeroStage::parameters), 3) + "x",
         "holds; not 3 collectives vs 1: an all-reduce is 2"});
  if (z3)
    rows.push_back({68, "ZeRO-3: all-gather after the optimizer step (003)",
                    "zero3 parameters: " + fixed(passes(z3, Traffic::parameters), 3) +
                        " passes of Ψ'(N-1)/N (forward, backward)",
                    "does not hold: shards stay sharded after the step"});
  if (z1)
    rows.push_back({69, "ZeRO-1: one all-gather per step (003)",
                    "zero1: gradients " + fixed(passes(z1, Traffic::gradients), 3) +
                        " + parameters " + fixed(passes(z1, Traffic::parameters), 3) + " passes",
                    "ambiguous: the gradients are reduced too (2Ψ)"});
  if (z2)
    rows.push_back({70, "ZeRO-2: reduce-scatter + all-gather (003)",
                    "zero2: gradients " + fixed(passes(z2, Traffic::gradients), 3) +
                        " + parameters " + fixed(passes(z2, Traffic::parameters), 3) + " passes",
                    "holds: Ψ + Ψ = DDP's 2Ψ"});
  if (s_z3) {
    const double bytes = static_cast<double>(s_z3->ranks.front().model_bytes_sent());
    const double compute = 6.0 * static_cast<double>(s_z3->parameter_count) * 8192.0 / 400e12;
    rows.push_back({71, "interconnects fast enough, compute bound (003)",
                    "7B zero3, N=8: " + gb(bytes) + " sent per step: " + fixed(bytes / 450e9) +
                        " s NVLink, " + fixed(bytes / 50e9) + " s IB; compute " + fixed(compute) +
                        " s at 8K tokens",
                    "depends: within a node yes, across nodes no"});
  }
  const StrategyRun* s_z2 = find(lesson.seed_mixed, ZeroStage::gradients);
  if (ddp && z2 && s_z2) {
    const double psi = 4.15e9;
    rows.push_back({121, "ZeRO-2 sharding: -35 GB (000, 4.15B)",
                    "4.15B saves " + gb((per_param(ddp, total) - per_param(z2, total)) * psi) +
                        " at N=" + n + ", " +
                        gb((per_param(s_ddp, total) - per_param(s_z2, total)) * psi) + " at N=8",
                    "depends: 14Ψ(1 - 1/N), no whole N gives 35"});
    rows.push_back({124, "final memory 66 GB per GPU after ZeRO-2 (000)",
                    "4.15B zero2, N=8: states " + gb(per_param(s_z2, total) * psi) +
                        "; unsharded " + gb(per_param(s_ddp, total) * psi),
                    "ambiguous: 66 GB is the unsharded 16Ψ"});
  }
  if (!lesson.big.empty()) {
    const StrategyRun& b = lesson.big.front();
    const bool fits =
        static_cast<uint64_t>(b.ranks.front().peak_bytes) <= lesson.settings.big_capacity_bytes;
    rows.push_back({126, "70B on 8 x 80 GB: ~60 GB per GPU (002)",
                    "zero3: states " +
                        gb(static_cast<double>(b.ranks.front().model_state.total())) + ", peak " +
                        gb(static_cast<double>(b.ranks.front().peak_bytes)) + " per rank",
                    fits ? "holds in this run" : "does not hold: the states alone exceed 80 GB"});
  }
  if (z2 && s_z2)
    rows.push_back({132, "1.42B + ZeRO-2: ~6 GB per GPU (003)",
                    "1.42B zero2 states: " + gb(per_param(z2, total) * 1.42e9) + " at N=" + n +
                        ", " + gb(per_param(s_z2, total) * 1.42e9) + " at N=8",
                    "depends on N, plus un-checkpointed activations"});
  if (z3)
    rows.push_back({133, "1.42B + ZeRO-3 + CPU offload: ~3 GB per GPU (003)",
                    "zero3, N=" + n + ": weights + gradients " +
                        gb(per_param(z3, weights_and_grads) * 1.42e9) + ", all states " +
                        gb(per_param(z3, total) * 1.42e9),
                    "depends: gathered layers + activations dominate"});
  return rows;
}

}  // namespace vramlab::lesson04
