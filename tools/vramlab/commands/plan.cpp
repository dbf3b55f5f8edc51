// vramlab plan: the cheapest plan that fits a machine, why, the runner-up, and the proof (the
// plan run on meta devices of the machine's preset, its measured peak beside the predicted one).
//
//   vramlab plan --model llama2-7b --device a100-80g [--gpus 8] [--seq 4096] [--global-batch 64]
//                [--host-ram 1TiB] [--nvme] [--optimizers adamw,adamw-8bit] [--json]
//
// Exit codes: 0 searched (a plan found or not: the output says), 2 bad input.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/memory/oom_error.h"
#include "common/model/model_flags.h"
#include "common/planner/plan_export.h"
#include "common/planner/plan_run.h"
#include "common/planner/search.h"
#include "common/platform/byte_size.h"
#include "common/platform/errors.h"
#include "common/platform/flag_checks.h"
#include "common/platform/integer_text.h"
#include "common/platform/printable.h"
#include "tools/vramlab/commands.h"

namespace vramlab::cli {
namespace {

using nlohmann::json;

struct PlanCommandOptions {
  ModelFlags model;
  std::optional<int64_t> seq;
  std::string device = "a100-80g";
  int64_t gpus = 1;
  int64_t gpus_per_node = planner::kTypicalGpusPerNode;
  std::optional<int64_t> global_batch;
  std::string host_ram;
  bool nvme = false;
  double intra_node_gbps = planner::kTypicalIntraNodeBytesPerS / 1e9;
  double inter_node_gbps = planner::kTypicalInterNodeBytesPerS / 1e9;
  double host_memory_gbps = memory::kTypicalHostMemoryBytesPerS / 1e9;
  std::string precisions, recomputes, optimizers, zero_stages, tensor_parallel, offloads,
      attentions, activation_offload, loss_chunks, compressions;
  bool run = true;
  std::string run_on = "meta";  // --run-on meta | sim | both
  bool json = false;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items(1);
  for (const char c : text) {
    if (c == ',')
      items.emplace_back();
    else
      items.back() += c;
  }
  return items;
}

// A comma-separated list of one knob's values, each parsed by \p parse (which names a bad one).
template <typename T, typename Parse>
std::vector<T> parse_list(const std::string& flag, const std::string& text, Parse parse) {
  std::vector<T> values;
  if (text.empty()) return values;
  for (const std::string& item : split_list(text)) {
    if (item.empty()) throw UsageError(flag + " '" + text + "': an empty item");
    values.push_back(parse(item));
  }
  return values;
}

memory::Device plan_device(const std::string& text) {
  memory::Device device = memory::parse_device(
      text.find(':') == std::string::npos && text != "meta" && text != "sim" && text != "cpu"
          ? "meta:" + text
          : text);
  if (device.spec.capacity_bytes == 0 || device.spec.peak_flops.fp32 <= 0.0)
    throw UsageError("--device " + text + ": give a preset (" + memory::device_preset_names() +
                     "): the planner needs its capacity and its rates");
  return device;
}

planner::SearchSpace parse_space(const PlanCommandOptions& o) {
  planner::SearchSpace s;
  s.precisions = parse_list<plan::Precision>("--precisions", o.precisions, plan::parse_precision);
  s.recomputes =
      parse_list<plan::RecomputeSpec>("--recomputes", o.recomputes, plan::parse_recompute_spec);
  s.optimizers =
      o.optimizers == "all"
          ? std::vector<plan::Optimizer>{plan::Optimizer::adamw, plan::Optimizer::adamw_8bit,
                                         plan::Optimizer::lion, plan::Optimizer::adam_mini,
                                         plan::Optimizer::adafactor}
          : parse_list<plan::Optimizer>("--optimizers", o.optimizers, plan::parse_optimizer);
  s.zero_stages = parse_list<plan::ZeroStage>("--zero", o.zero_stages, [](const std::string& v) {
    if (v.size() != 1 || v[0] < '0' || v[0] > '3')
      throw UsageError("--zero '" + v + "': expected stages 0 to 3");
    return plan::zero_stage_from_int(v[0] - '0');
  });
  s.tensor_parallel = parse_list<int64_t>("--tp", o.tensor_parallel, [](const std::string& v) {
    return platform::parse_integer_in("--tp", v, 1, 4096);
  });
  s.offloads =
      parse_list<planner::OffloadChoice>("--offloads", o.offloads, planner::parse_offload_choice);
  s.attentions =
      parse_list<plan::AttentionKind>("--attentions", o.attentions, plan::parse_attention_kind);
  s.compressions = parse_list<plan::ActivationCompression>("--compressions", o.compressions,
                                                           plan::parse_compression);
  s.loss_chunks = parse_list<int64_t>("--loss-chunks", o.loss_chunks, [](const std::string& v) {
    return platform::parse_integer_in("--loss-chunks", v, 1, plan::kMaxLossChunks);
  });
  s.activation_offload =
      parse_list<bool>("--activation-offload", o.activation_offload, [](const std::string& v) {
        if (v == "on") return true;
        if (v == "off") return false;
        throw UsageError("--activation-offload '" + v + "': expected on, off or on,off");
      });
  return s;
}

std::string describe(const planner::Candidate& c) {
  const plan::Plan& p = c.plan;
  std::string text = std::string(plan::precision_name(p.amp.precision)) + ", recompute " +
                     plan::to_string(p.recompute) + ", " +
                     std::string(plan::attention_kind_name(p.attention)) + " attention, " +
                     std::string(plan::optimizer_name(p.optimizer.name)) + ", " +
                     std::string(plan::zero_stage_name(p.parallel.zero));
  if (p.parallel.tensor_parallel > 1) text += ", TP " + std::to_string(p.parallel.tensor_parallel);
  text += ", DP " + std::to_string(p.parallel.data_parallel);
  const planner::OffloadChoice offload{p.offload.optimizer, p.offload.parameters,
                                       p.offload.optimizer_device};
  if (p.offload.optimizer) text += ", offload " + planner::offload_choice_name(offload);
  if (p.activations.offload) text += ", activations offloaded";
  if (p.activations.loss_chunks > 1)
    text += ", loss in " + std::to_string(p.activations.loss_chunks) + " chunks";
  if (p.activations.compression != plan::ActivationCompression::none)
    text += ", activations in " + std::string(plan::compression_name(p.activations.compression));
  text += ", B=" + std::to_string(c.micro_batch) + " x " + std::to_string(p.batch.grad_accum) +
          " micro-batches";
  return text;
}

std::string flags_of(const planner::Candidate& c) {
  const plan::Plan& p = c.plan;
  std::string flags = "--precision " + std::string(plan::precision_name(p.amp.precision)) +
                      " --recompute " + plan::to_string(p.recompute) + " --attention " +
                      std::string(plan::attention_kind_name(p.attention)) + " --optimizer " +
                      std::string(plan::optimizer_name(p.optimizer.name)) + " --zero " +
                      std::to_string(static_cast<int64_t>(p.parallel.zero)) + " --batch " +
                      std::to_string(c.micro_batch) + " --grad-accum " +
                      std::to_string(p.batch.grad_accum);
  if (p.parallel.tensor_parallel > 1)
    flags += " --tp " + std::to_string(p.parallel.tensor_parallel);
  if (p.activations.offload) flags += " --offload-activations on";
  if (p.activations.loss_chunks > 1)
    flags += " --loss-chunks " + std::to_string(p.activations.loss_chunks);
  if (p.activations.compression != plan::ActivationCompression::none)
    flags +=
        " --compress-activations " + std::string(plan::compression_name(p.activations.compression));
  if (p.offload.optimizer) {
    flags += std::string(" --offload ") + (p.offload.parameters ? "both" : "optimizer");
    if (p.offload.optimizer_device == plan::OffloadDevice::nvme)
      flags += " --offload-optimizer-device nvme";
    if (p.offload.param_device == plan::OffloadDevice::nvme)
      flags += " --offload-param-device nvme";
  }
  return flags;
}

std::string gib(int64_t bytes) {
  return memory::format_size(static_cast<uint64_t>(bytes));
}

json priced_json(const planner::Priced& p) {
  return {{"plan", plan::to_json(p.candidate.plan)},
          {"micro_batch", p.candidate.micro_batch},
          {"predicted_peak_bytes", p.memory.device_peak},
          {"predicted_host_bytes_per_node", p.memory.host_per_node},
          {"predicted_step_seconds", p.time.total()},
          {"predicted_memory",
           {{"parameters", p.memory.parameters},
            {"gradients", p.memory.gradients},
            {"optimizer_states", p.memory.optimizer_states},
            {"activations", p.memory.activations},
            {"working", p.memory.working},
            {"in_flight", p.memory.in_flight},
            {"slack", p.memory.slack}}},
          {"predicted_time",
           {{"compute_s", p.time.compute_s},
            {"optimizer_s", p.time.optimizer_s},
            {"communication_s", p.time.communication_s},
            {"offload_s", p.time.offload_s}}}};
}

void run_plan(const PlanCommandOptions& o) {
  planner::Problem problem;
  problem.model = o.model.build(o.seq);
  problem.seq = o.seq.value_or(problem.model.max_seq);
  problem.machine.device = plan_device(o.device);
  problem.machine.gpus = o.gpus;
  problem.machine.gpus_per_node = o.gpus_per_node;
  if (!o.host_ram.empty())
    problem.machine.host_ram_bytes = static_cast<int64_t>(platform::parse_size_bytes(o.host_ram));
  problem.machine.nvme = o.nvme;
  problem.machine.intra_node_bytes_per_s =
      platform::bandwidth_flag("--intra-node-gbps", o.intra_node_gbps);
  problem.machine.inter_node_bytes_per_s =
      platform::bandwidth_flag("--inter-node-gbps", o.inter_node_gbps);
  problem.machine.host_memory_bytes_per_s =
      platform::bandwidth_flag("--host-memory-gbps", o.host_memory_gbps);
  problem.global_batch = o.global_batch.value_or(o.gpus);
  problem.space = parse_space(o);
  const planner::SearchResult r = planner::search_plans(problem);
  if (o.run_on != "meta" && o.run_on != "sim" && o.run_on != "both")
    throw UsageError("--run-on '" + o.run_on + "': expected meta, sim or both");
  std::optional<planner::MeasuredRun> measured, on_sim;
  std::string sim_refused;
  if (r.chosen && o.run && o.run_on != "sim")
    measured = planner::run_plan(problem, r.chosen->candidate, memory::DeviceKind::meta);
  if (r.chosen && o.run && o.run_on != "meta") {
    try {
      on_sim = planner::run_plan(problem, r.chosen->candidate, memory::DeviceKind::sim);
    } catch (const UsageError& e) {
      sim_refused = e.what();  // beyond this machine's memory: said, not run
    }
  }

  if (o.json) {
    json out = {{"model", problem.model.name},
                {"device", problem.machine.device.name()},
                {"gpus", problem.machine.gpus},
                {"seq", problem.seq},
                {"global_batch", problem.global_batch},
                {"host_ram_bytes", problem.machine.host_ram_bytes},
                {"candidates", r.candidates},
                {"runnable", r.runnable},
                {"fitting", r.fitting},
                {"fits", r.chosen.has_value()},
                {"binding_constraint", planner::binding_name(r.binding)}};
    if (r.chosen) {
      out.update(priced_json(*r.chosen));
      out["largest_category"] = r.chosen->memory.largest_category();
      out["measured_peak_bytes"] = measured && measured->fits ? json(measured->peak_bytes) : json();
      out["measured_reserved_bytes"] =
          measured && measured->fits ? json(measured->reserved_bytes) : json();
      out["measured_step_seconds"] =
          measured && measured->fits ? json(measured->step_seconds) : json();
      out["measured_out_of_memory"] =
          measured && !measured->fits ? json(measured->out_of_memory) : json();
      if (on_sim)
        out["sim"] = {{"fits", on_sim->fits},
                      {"peak_bytes", on_sim->fits ? json(on_sim->peak_bytes) : json()},
                      {"reserved_bytes", on_sim->fits ? json(on_sim->reserved_bytes) : json()},
                      {"out_of_memory", on_sim->fits ? json() : json(on_sim->out_of_memory)}};
      else if (!sim_refused.empty())
        out["sim"] = {{"refused", sim_refused}};
      out["deepspeed_config"] = planner::deepspeed_config(r.chosen->candidate);
      out["pytorch"] = planner::pytorch_lines(r.chosen->candidate);
    }
    out["runner_up"] = r.runner_up ? json{{"plan", plan::to_json(r.runner_up->candidate.plan)},
                                          {"micro_batch", r.runner_up->candidate.micro_batch},
                                          {"predicted_peak_bytes", r.runner_up->memory.device_peak},
                                          {"predicted_step_seconds", r.runner_up->time.total()}}
                                   : json();
    if (r.shortfall)
      out["shortfall"] = {
          {"least_device_bytes", r.shortfall->least_device_bytes},
          {"larger_preset",
           r.shortfall->larger_preset.empty() ? json() : json(r.shortfall->larger_preset)},
          {"least_host_bytes_per_node", r.shortfall->least_host_bytes},
          {"gpus_that_fit", r.shortfall->gpus_that_fit}};
    std::printf("%s\n", out.dump().c_str());
    return;
  }

  std::printf("vramlab plan %s on %lld x %s, T=%lld, %lld sequences per step%s\n",
              problem.model.name.c_str(), static_cast<long long>(problem.machine.gpus),
              problem.machine.device.spec.spec_name.c_str(), static_cast<long long>(problem.seq),
              static_cast<long long>(problem.global_batch),
              problem.machine.host_ram_bytes > 0
                  ? (", host RAM " + gib(problem.machine.host_ram_bytes) + " per node").c_str()
                  : ", host RAM not limited (--host-ram)");
  std::printf("searched %lld candidates: %lld the runtime runs, %lld fit\n",
              static_cast<long long>(r.candidates), static_cast<long long>(r.runnable),
              static_cast<long long>(r.fitting));
  if (!r.chosen) {
    const planner::Shortfall& s = *r.shortfall;
    std::printf("nothing fits. What would have to change:\n");
    const auto capacity = static_cast<int64_t>(problem.machine.device.spec.capacity_bytes);
    if (s.least_device_bytes > capacity)
      std::printf("  a device of at least %s (the least any plan needs; this one has %s)%s\n",
                  gib(s.least_device_bytes).c_str(), gib(capacity).c_str(),
                  s.larger_preset.empty() ? ": larger than every preset"
                                          : (": " + s.larger_preset + " or larger").c_str());
    else
      std::printf(
          "  not the device: plans that need %s fit its %s, and the host is what they "
          "overflow\n",
          gib(s.least_device_bytes).c_str(), gib(capacity).c_str());
    if (s.least_host_bytes > 0)
      std::printf("  host RAM of %s per node (with offload)\n", gib(s.least_host_bytes).c_str());
    if (s.gpus_that_fit > 0)
      std::printf("  or %lld GPUs, the global batch unchanged\n",
                  static_cast<long long>(s.gpus_that_fit));
    return;
  }
  const planner::Priced& c = *r.chosen;
  std::printf("\nplan: %s\n", describe(c.candidate).c_str());
  std::printf("  vramlab train %s\n", flags_of(c.candidate).c_str());
  std::printf(
      "predicted per GPU: %s = parameters %s + gradients %s + optimizer states %s + "
      "activations %s + working %s (of %s)\n",
      gib(c.memory.device_peak).c_str(), gib(c.memory.parameters).c_str(),
      gib(c.memory.gradients).c_str(), gib(c.memory.optimizer_states).c_str(),
      gib(c.memory.activations).c_str(), gib(c.memory.working).c_str(),
      gib(static_cast<int64_t>(problem.machine.device.spec.capacity_bytes)).c_str());
  if (c.memory.host_per_node > 0)
    std::printf("predicted host RAM per node: %s\n", gib(c.memory.host_per_node).c_str());
  std::printf(
      "predicted step: %.3f s = compute %.3f + optimizer %.3f + communication %.3f + "
      "offload %.3f\n",
      c.time.total(), c.time.compute_s, c.time.optimizer_s, c.time.communication_s,
      c.time.offload_s);
  std::printf("\nwhy: binding constraint: %s", planner::binding_name(r.binding).c_str());
  if (r.fastest && r.binding != planner::Binding::none)
    std::printf(" (the fastest plan, %.3f s, needs %s per GPU%s)", r.fastest->time.total(),
                gib(r.fastest->memory.device_peak).c_str(),
                r.fastest->memory.host_per_node > 0
                    ? (" and " + gib(r.fastest->memory.host_per_node) + " of host RAM").c_str()
                    : "");
  std::printf("\n     largest category left: %s\n", c.memory.largest_category().c_str());
  if (r.runner_up)
    std::printf("     runner-up: %s: %.3f s (%+.1f%%), %s per GPU\n",
                describe(r.runner_up->candidate).c_str(), r.runner_up->time.total(),
                100.0 * (r.runner_up->time.total() / c.time.total() - 1.0),
                gib(r.runner_up->memory.device_peak).c_str());
  if (measured) {
    if (measured->fits)
      std::printf(
          "\nmeasured on meta (%lld rank%s, 2 steps, expandable segments): peak %s "
          "(predicted %s), reserved %s; step %.3f s on the stream clock (kernels' "
          "rooflines and the host link; no collectives)\n",
          static_cast<long long>(problem.machine.gpus), problem.machine.gpus == 1 ? "" : "s",
          gib(measured->peak_bytes).c_str(), gib(c.memory.device_peak).c_str(),
          gib(measured->reserved_bytes).c_str(), measured->step_seconds);
    else
      std::printf(
          "\nmeasured on meta: OUT OF MEMORY: the cost model was wrong for this plan "
          "(%s)\n",
          measured->out_of_memory.c_str());
  }
  if (on_sim)
    std::printf(on_sim->fits ? "measured on sim (the step computed, in host memory): peak %s, "
                               "reserved %s\n"
                             : "measured on sim: OUT OF MEMORY (%s)\n",
                on_sim->fits ? gib(on_sim->peak_bytes).c_str() : on_sim->out_of_memory.c_str(),
                gib(on_sim->reserved_bytes).c_str());
  else if (!sim_refused.empty())
    std::printf("not run on sim: %s\n", platform::printable(sim_refused).c_str());
  std::printf("\nDeepSpeed config:\n%s\n", planner::deepspeed_config(c.candidate).dump(2).c_str());
  std::printf("\nPyTorch:\n");
  for (const std::string& line : planner::pytorch_lines(c.candidate))
    std::printf("  %s\n", line.c_str());
}

}  // namespace

void add_plan_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<PlanCommandOptions>();
  auto* cmd = app.add_subcommand(
      "plan",
      "Find the plan that fits a machine at the least predicted step time, say why, and prove it "
      "by running it on meta devices");
  add_model_options(*cmd, opts->model);
  cmd->add_option("--seq", opts->seq, "Sequence length T (default the model's context)")
      ->check(platform::integer_in(1));
  cmd->add_option("--device", opts->device,
                  "A GPU preset (" + memory::device_preset_names() + "), default a100-80g");
  cmd->add_option("--gpus", opts->gpus, "GPUs in the run (default 1)")
      ->check(platform::integer_in(1, 4096));
  cmd->add_option("--gpus-per-node", opts->gpus_per_node,
                  "GPUs sharing a node's NVLink and host RAM (default 8); tensor parallelism "
                  "stays inside one")
      ->check(platform::integer_in(1, 4096));
  cmd->add_option("--global-batch", opts->global_batch,
                  "Sequences per optimizer step over all GPUs (default: one per GPU)")
      ->check(platform::integer_in(1));
  cmd->add_option(
      "--host-ram", opts->host_ram,
      "Host RAM per node the offloaded states may use, e.g. 512GiB (default: no limit)");
  cmd->add_flag("--nvme", opts->nvme, "The nodes have an NVMe drive offload may use");
  cmd->add_option("--intra-node-gbps", opts->intra_node_gbps,
                  "Collectives' bandwidth inside a node in GB/s (default 300, NVLink 3)");
  cmd->add_option("--inter-node-gbps", opts->inter_node_gbps,
                  "Collectives' bandwidth across nodes in GB/s (default 25, HDR InfiniBand)");
  cmd->add_option("--host-memory-gbps", opts->host_memory_gbps,
                  "The host's memory bandwidth in GB/s for an offloaded update (default 204.8)");
  cmd->add_option("--precisions", opts->precisions,
                  "Precisions to search, comma-separated (default fp32 and mixed-bf16, "
                  "mixed-fp16 on a device without bf16 tensor cores)");
  cmd->add_option("--recomputes", opts->recomputes,
                  "Recompute schedules to search (default none,selective,every:2,sqrt,full)");
  cmd->add_option("--optimizers", opts->optimizers,
                  "Optimizers to search, or all (default adamw: another optimizer changes the "
                  "training)");
  cmd->add_option("--zero", opts->zero_stages, "ZeRO stages to search (default 0,1,2,3)");
  cmd->add_option("--tp", opts->tensor_parallel,
                  "Tensor-parallel degrees to search (default every divisor of the GPUs within a "
                  "node)");
  cmd->add_option("--offloads", opts->offloads,
                  "Offloads to search: none, optimizer, both, optimizer-nvme, both-nvme (default "
                  "the first three, and the NVMe ones with --nvme)");
  cmd->add_option("--attentions", opts->attentions,
                  "Attention kernels to search (default "
                  "naive,flash)");
  cmd->add_option("--compressions", opts->compressions,
                  "Saved-activation storage to search: none, int8, int8-block (default none: int8 "
                  "changes the gradients, so it is opt-in)");
  cmd->add_option("--loss-chunks", opts->loss_chunks,
                  "Chunk counts of the loss to search (default 1,8)");
  cmd->add_option("--activation-offload", opts->activation_offload,
                  "Saved activations offloaded: off, on or both (default off,on)");
  cmd->add_flag("!--no-run", opts->run, "Do not run the chosen plan");
  cmd->add_option("--run-on", opts->run_on,
                  "meta (default: every allocation, nothing computed) | sim (the step computed, "
                  "in host memory: small models) | both");
  cmd->add_flag("--json", opts->json,
                "One JSON object: fits, plan, predicted and measured peak, predicted step time, "
                "binding constraint, runner-up");
  cmd->callback([opts, &exit_code] {
    run_plan(*opts);
    exit_code = 0;
  });
}

}  // namespace vramlab::cli
