// An out-of-memory error's message parsed, and its diagnosis (see oom_diagnosis.h).
#include "common/snapshot/oom_diagnosis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "common/platform/errors.h"

namespace vramlab::snapshot {

namespace {

// A size as PyTorch's format_size writes it: "512 bytes", "1.50 KiB", "20.00 MiB", "79.15 GiB".
const char* const kSize = R"(([0-9]+(?:\.[0-9]+)?) (bytes|KiB|MiB|GiB|TiB))";

int64_t size_bytes(const std::string& number, const std::string& unit) {
  double scale = 1.0;
  if (unit == "KiB") scale = 1024.0;
  if (unit == "MiB") scale = 1024.0 * 1024.0;
  if (unit == "GiB") scale = 1024.0 * 1024.0 * 1024.0;
  if (unit == "TiB") scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  // Two decimals: the message is exact to 1% of its unit, and so is this.
  return static_cast<int64_t>(std::llround(std::stod(number) * scale));
}

int64_t size_at(const std::smatch& m, size_t first) {
  return size_bytes(m[first].str(), m[first + 1].str());
}

// The word before " out of memory" ahead of \p at: "CUDA", "sim:2GiB".
std::string device_before(const std::string& text, size_t at) {
  const size_t end = text.rfind(" out of memory", at);
  if (end == std::string::npos || end == 0) return "";
  const size_t space = text.find_last_of(" \t\n", end - 1);
  const size_t begin = space == std::string::npos ? 0 : space + 1;
  return text.substr(begin, end - begin);
}

void add(std::vector<OomFix>& fixes, std::string change, std::string effect, std::string cost) {
  fixes.push_back({std::move(change), std::move(effect), std::move(cost)});
}

}  // namespace

std::optional<OomMessage> parse_oom_message(std::string_view view) {
  const std::string text(view);
  std::smatch m;
  OomMessage out;
  // PyTorch 2.x (and vramlab's allocator).
  // Between "is free." and "Of the allocated memory" PyTorch may list other processes ("Process
  // 4711 has 1.00 GiB memory in use."), this one's use and a memory fraction's allowance.
  static const std::regex current(
      std::string("Tried to allocate ") + kSize + R"(\. GPU [0-9]+ has a total capacity of )" +
      kSize + " of which " + kSize + R"( is free\.([\s\S]*?)Of the allocated memory )" + kSize +
      " is allocated by PyTorch, and " + kSize + " is reserved by PyTorch but unallocated");
  if (std::regex_search(text, m, current)) {
    out.requested_bytes = size_at(m, 1);
    out.capacity_bytes = size_at(m, 3);
    out.free_bytes = size_at(m, 5);
    out.allocated_bytes = size_at(m, 8);
    out.reserved_unallocated_bytes = size_at(m, 10);
    out.device = device_before(text, static_cast<size_t>(m.position(0)));
    static const std::regex process(std::string("this process has ") + kSize + " memory in use");
    const std::string between = m[7].str();
    std::smatch p;
    if (std::regex_search(between, p, process)) out.process_bytes = size_at(p, 1);
    return out;
  }
  // PyTorch 1.x.
  static const std::regex older(std::string("Tried to allocate ") + kSize + R"( \(GPU [0-9]+; )" +
                                kSize + " total capacity; " + kSize + " already allocated; " +
                                kSize + " free; " + kSize + " reserved in total by PyTorch");
  if (std::regex_search(text, m, older)) {
    out.requested_bytes = size_at(m, 1);
    out.capacity_bytes = size_at(m, 3);
    out.allocated_bytes = size_at(m, 5);
    out.free_bytes = size_at(m, 7);
    out.reserved_unallocated_bytes = std::max<int64_t>(0, size_at(m, 9) - out.allocated_bytes);
    out.device = device_before(text, static_cast<size_t>(m.position(0)));
    return out;
  }
  return std::nullopt;
}

OomDiagnosis diagnose_oom(const OomMessage& message, const nlohmann::json* snapshot) {
  OomDiagnosis d;
  d.message = message;
  d.fragmentation =
      message.reserved_unallocated_bytes >= message.requested_bytes && message.requested_bytes > 0;
  bool states_existed = true;
  if (snapshot != nullptr) {
    // The trace's last "oom" entry is the failed request, with vramlab's labels.
    // And the optimizer's states made in this step: those allocated after the step's last
    // forward allocation (the trace may have lost older entries; the live states are checked
    // against these below).
    // And each address's last allocation, and where the failing pass began (the first forward
    // allocation after a backward or optimizer one): a live activation or temporary allocated
    // before it was kept from an earlier step (or micro-batch).
    const nlohmann::json* oom = nullptr;
    int64_t states_this_step = 0;
    int64_t index = 0, step_start = 0;
    bool after_backward = false;
    std::map<int64_t, int64_t> allocated_at;  // address -> its last alloc's index
    if (snapshot->contains("device_traces"))
      for (const nlohmann::json& trace : snapshot->at("device_traces"))
        for (const nlohmann::json& entry : trace) {
          ++index;
          if (!entry.is_object()) continue;
          const std::string action = entry.value("action", "");
          if (action == "oom") oom = &entry;
          if (action != "alloc") continue;
          const std::string phase = entry.value("phase", "");
          if (phase == "forward") {
            states_this_step = 0;
            if (after_backward) step_start = index;
            after_backward = false;
          }
          // A pass ends with its backward (or the optimizer's step): the next forward begins
          // another, and what the earlier one made should be gone.
          if (phase == "backward" || phase == "recompute" || phase == "optimizer")
            after_backward = true;
          if (entry.value("category", "") == "optimizer_state")
            states_this_step += entry.value("size", int64_t{0});
          allocated_at[entry.value("addr", int64_t{-1})] = index;
        }
    if (oom == nullptr)
      throw UsageError(
          "the snapshot has no \"oom\" entry in its trace: take it at the failure (vramlab train "
          "--snapshot-on-oom FILE, or an out-of-memory observer with history recorded)");
    d.phase = oom->value("phase", "");
    d.category = oom->value("category", "");
    d.module = oom->value("module", "");
    d.tensor = oom->value("tensor", "");
    std::map<std::string, int64_t> live;
    static const nlohmann::json kNone = nlohmann::json::array();
    const nlohmann::json& segments =
        snapshot->contains("segments") ? snapshot->at("segments") : kNone;
    for (const nlohmann::json& segment : segments) {
      int64_t address = segment.value("address", int64_t{0});
      for (const nlohmann::json& block :
           segment.contains("blocks") ? segment.at("blocks") : kNone) {
        // vramlab's blocks carry their address; PyTorch's lie one after another in the segment.
        const int64_t at = block.value("address", address);
        address = at + block.value("size", int64_t{0});
        if (block.value("state", "") != "active_allocated") continue;
        const std::string category = block.value("category", "other");
        live[category] += block.value("requested_size", int64_t{0});
        const auto made = allocated_at.find(at);
        if ((category == "activation" || category == "temporary") && step_start > 0 &&
            made != allocated_at.end() && made->second < step_start)
          d.kept_from_earlier_steps_bytes += block.value("requested_size", int64_t{0});
      }
    }
    // Every live state made in this step: the optimizer had none before (PyTorch's are made
    // lazily, at the first step()).
    const auto states = live.find("optimizer_state");
    states_existed = states != live.end() && states->second > states_this_step;
    d.live_by_category.assign(live.begin(), live.end());
    std::stable_sort(d.live_by_category.begin(), d.live_by_category.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    if (d.phase == "optimizer")
      d.phase = states_existed || d.category != "optimizer_state" ? "optimizer step"
                                                                  : "first optimizer step";
  }

  std::vector<OomFix>& f = d.fixes;
  // A leak first: whatever else the numbers say, memory a finished step should have freed is the
  // cause, and each step makes it worse.
  if (d.kept_from_earlier_steps_bytes > 0)
    add(f, "keep no tensor across steps (no --keep-outputs)",
        "read loss.item() and keep outputs as .detach().cpu(): what a step made is then freed by "
        "its end",
        "none");
  if (d.fragmentation)
    add(f, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "one growing segment per stream: pieces freed in different segments merge (holes between "
        "live blocks stay holes: then make the sizes vary less, e.g. bucket the sequence lengths)",
        "none to speak of (the driver maps 20 MiB pages as the segment grows)");
  if (d.fragmentation)
    add(f, "--bucket-seq N (with lengths that vary: --vary-seq)",
        "pads each batch's length up to a multiple of N, so fewer sizes reach the allocator and "
        "cached blocks fit the next batch",
        "the padding's compute");
  const bool activations = d.category == "activation" || d.phase == "forward" ||
                           d.phase == "backward" || d.phase == "recompute";
  if (d.phase == "evaluation") {
    add(f, "--eval-grad off",
        "torch.no_grad() (or torch.inference_mode()) around the loop: the forward saves nothing "
        "for a backward",
        "none: an evaluation needs no gradients");
    add(f, "no --eval-keep-graphs",
        "sum loss.item(), not the loss tensor: each batch's graph goes once its loss is read",
        "none");
  }
  // The loss's (B, T, V) tensors: the logits, the probabilities it saves, their gradient.
  const bool loss = d.module == "loss" || d.module == "lm_head" ||
                    d.tensor.find("logits") != std::string::npos ||
                    d.tensor.find("probs") != std::string::npos;
  if (loss)
    add(f, "--loss-chunks 8",
        "the cross-entropy over 8 slices of the tokens: no (B, T, V) probabilities saved, one "
        "slice's logits at a time",
        "one more LM-head matmul a step (the logits made again in the backward)");
  if (activations) {
    if (d.tensor.find(".att") != std::string::npos || d.module.find("attn") != std::string::npos)
      add(f, "--attention flash",
          "keeps the (B, H, T) log-sum-exp instead of the (B, H, T, T) attention probabilities",
          "none: faster at long sequences");
    add(f, "--recompute selective",
        "drops the attention's T-squared tensors, recomputed in backward",
        "a few percent more FLOPs");
    add(f, "--compress-activations int8", "saved activations in 8 bits instead of 32",
        "a quantisation error in the gradients");
    add(f, "--recompute full", "keeps one input per block and reruns the block in backward",
        "about a third more compute (a second forward)");
    add(f, "--offload-activations on", "saved activations to pinned host memory between the passes",
        "copies over the host link: hidden only when it is fast enough");
  }
  if (d.category == "optimizer_state" || d.phase == "first optimizer step" ||
      d.phase == "optimizer step") {
    add(f, "--optimizer adamw-8bit", "8-bit moments: 2 bytes a parameter instead of 8",
        "a blockwise quantisation error in the update");
    add(f, "--zero 1 over N ranks", "each rank keeps 1/N of the optimizer's states",
        "a reduce-scatter and an all-gather a step; N devices");
    add(f, "--offload optimizer", "the states and the update on the host (ZeRO-Offload)",
        "the host's update time and the copies over the link");
  }
  if (d.category == "gradient")
    add(f, "--zero 2 over N ranks", "each rank keeps 1/N of the gradients (and the states)",
        "a reduce-scatter per unit in backward; N devices");
  if (d.category == "parameter" || d.phase == "setup") {
    add(f, "--zero 3 over N ranks", "each rank keeps 1/N of the parameters, gathered per unit",
        "two all-gathers and a reduce-scatter a step; N devices");
    add(f, "--zero 3 --offload both", "the parameters and the states on the host (ZeRO-Infinity)",
        "every unit crosses the link twice a step");
  }
  add(f, "--batch B/2 --grad-accum 2", "halves what grows with the batch; the same global batch",
      "smaller kernels: lower throughput");
  return d;
}

}  // namespace vramlab::snapshot
