// Lesson 01's report: analysis (with the exercises), terminal text and JSON (see
// breakdown_report.h).
#include "lessons/01-memory-breakdown/breakdown_report.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/estimate/runtime_activations.h"
#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/tensor_view.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/report/text_wrap.h"
#include "lessons/01-memory-breakdown/api/layer_activations.h"

namespace vramlab::lesson01 {

namespace {

// What the runtime's optimizer allocates at its first step (common/optim), for the notes column.
const char* optimizer_state_layout_text(estimate::Optimizer optimizer) {
  switch (optimizer) {
    case estimate::Optimizer::sgd:
      return "plain SGD keeps no state";
    case estimate::Optimizer::sgd_momentum:
      return "SGD momentum, one fp32 block, made at the first step";
    case estimate::Optimizer::adamw:
      return "AdamW m and v, two fp32 blocks, made at the first step";
    case estimate::Optimizer::adamw_8bit:
      return "8-bit m and v codes with an fp32 absmax per block, per tensor (lesson 09)";
    case estimate::Optimizer::lion:
      return "Lion momentum, one fp32 block, made at the first step";
    case estimate::Optimizer::adam_mini:
      return "Adam-mini m, and one v per block of its partition (lesson 09)";
    case estimate::Optimizer::adafactor:
      return "Adafactor row and column factors per matrix (lesson 09)";
  }
  return "";
}

using memory::MemoryCategory;
using report::format_bytes;

std::string signed_bytes(int64_t bytes) {
  if (bytes == 0) return "0 B";
  std::string text(1, bytes > 0 ? '+' : '-');
  text += format_bytes(static_cast<uint64_t>(bytes > 0 ? bytes : -bytes));
  return text;
}

// Why the allocator holds more than was requested: 512-B rounding, and in the large pool a block
// whose remainder would be 1 MiB or less is not split (PyTorch's should_split), so it counts whole.
std::string block_slack(int64_t slack_bytes) {
  if (slack_bytes == 0) return ", no rounding";
  if (slack_bytes < 512)
    return ", + " + format_bytes(static_cast<uint64_t>(slack_bytes)) + " rounding to 512 B";
  return ", + " + format_bytes(static_cast<uint64_t>(slack_bytes)) +
         " of 512-B rounding and unsplit large-pool blocks";
}

std::string per_param(int64_t bytes, int64_t parameters) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f",
                static_cast<double>(bytes) / static_cast<double>(parameters));
  return text;
}

// Runs one exercise function; records NOT IMPLEMENTED (or any error) instead of stopping.
template <typename F>
auto try_exercise(std::vector<ExerciseStatus>& statuses, const std::string& id, F&& f)
    -> std::optional<decltype(f())> {
  try {
    auto value = f();
    statuses.push_back({id, true, ""});
    return value;
  } catch (const std::exception& e) {
    statuses.push_back({id, false, e.what()});
    return std::nullopt;
  }
}

CategoryRow model_state_row(std::string key, std::string label, MemoryCategory category,
                            int64_t measured, int64_t requested,
                            const estimate::ComponentEstimate& est, const std::string& what) {
  CategoryRow row{std::move(key), std::move(label), category,   measured,
                  requested,      est.bytes,        est.source, ""};
  row.why = what + "; ";
  row.why += requested == est.bytes
                 ? "= formula"
                 : "requested " + format_bytes(static_cast<uint64_t>(requested)) +
                       " differs from the formula: a bug";
  row.why += block_slack(measured - requested);
  return row;
}

}  // namespace

Breakdown analyse(const StepSettings& settings, StepMeasurement measurement) {
  Breakdown b;
  b.settings = settings;
  b.measurement = std::move(measurement);
  b.estimate = estimate_step(settings);
  const StepMeasurement& m = b.measurement;
  const estimate::Estimate& e = b.estimate;
  const ModelConfig& model = settings.model;
  const int64_t psi = m.parameter_count;
  const estimate::Optimizer opt = estimate::parse_optimizer(settings.optimizer);

  b.rows.push_back(model_state_row(
      "parameters", "parameters", MemoryCategory::parameter, m.peak_of(MemoryCategory::parameter),
      m.parameter_requested_bytes, e.parameters, "one fp32 block of Ψ weights"));
  b.rows.push_back(model_state_row("gradients", "gradients", MemoryCategory::gradient,
                                   m.peak_of(MemoryCategory::gradient), m.gradient_requested_bytes,
                                   e.gradients, "one fp32 block, made when backward starts"));
  b.rows.push_back(
      model_state_row("optimizer_states", "optimizer states", MemoryCategory::optimizer_state,
                      m.peak_of(MemoryCategory::optimizer_state), m.optimizer_state_requested_bytes,
                      e.optimizer_states, optimizer_state_layout_text(opt)));

  CategoryRow act{"activations",
                  "activations (saved)",
                  MemoryCategory::activation,
                  m.peak_of(MemoryCategory::activation),
                  m.saved_requested_bytes,
                  e.runtime_activation_bytes,
                  e.runtime_activation_source,
                  ""};
  const int64_t act_rounding = act.measured_bytes - m.saved_requested_bytes;
  act.why = std::to_string(m.saved.size()) + " saved tensors";
  act.why += m.saved_requested_bytes == e.runtime_activation_bytes
                 ? " = runtime layout exactly"
                 : " differ from the runtime layout by " +
                       signed_bytes(m.saved_requested_bytes - e.runtime_activation_bytes);
  act.why += block_slack(act_rounding);
  b.rows.push_back(act);

  // The largest temporary of the step, from the trace.
  for (const memory::TraceEntry& t : m.trace)
    if (t.action == memory::TraceAction::alloc && t.category == MemoryCategory::temporary &&
        static_cast<int64_t>(t.size) > b.largest_temporary_bytes) {
      b.largest_temporary_bytes = static_cast<int64_t>(t.size);
      b.largest_temporary_name = t.name;
    }
  CategoryRow tmp{"temporaries",
                  "temporaries",
                  MemoryCategory::temporary,
                  m.peak_of(MemoryCategory::temporary),
                  std::nullopt,
                  std::nullopt,
                  "not in the published formulas",
                  ""};
  tmp.why = "backward scratch, not in the formulas; largest " +
            (b.largest_temporary_name.empty()
                 ? std::string("none")
                 : b.largest_temporary_name + " " +
                       format_bytes(static_cast<uint64_t>(b.largest_temporary_bytes)));
  b.rows.push_back(tmp);

  const int64_t input_estimate = 2 * settings.batch * settings.seq * 4;
  CategoryRow in{"inputs",
                 "inputs",
                 MemoryCategory::input,
                 m.peak_of(MemoryCategory::input),
                 m.input_requested_bytes,
                 input_estimate,
                 "tokens and targets: 2 × B × T int32",
                 ""};
  in.why = "two (B, T) int32 blocks; rounding " + signed_bytes(in.measured_bytes - input_estimate);
  b.rows.push_back(in);

  b.estimated_peak_bytes = e.total_bytes - e.activations.bytes + e.runtime_activation_bytes;
  b.layers = activations_by_layer(m.saved, model.layers);

  // Exercise 01.1: bytes per parameter, fp32 as the runtime trains and ZeRO's mixed precision.
  b.exercise_fp32 = try_exercise(b.exercises, "01.1", [&] {
    return model_state_breakdown(psi, estimate::Precision::fp32, opt);
  });
  if (b.exercise_fp32)
    b.exercise_mixed = try_exercise(b.exercises, "01.1", [&] {
      return model_state_breakdown(psi, estimate::Precision::mixed_bf16, opt);
    });
  // Exercise 01.2: the bytes of one block (its layout is GPT-2's with naive attention).
  if (model.family == ModelFamily::gpt2 && settings.attention == AttentionKind::naive) {
    b.exercise_layer_bytes = try_exercise(b.exercises, "01.2", [&] {
      return layer_activation_bytes(
          LayerShape{settings.batch, settings.seq, model.hidden, model.heads, model.ffn_hidden},
          DType::f32);
    });
  }
  // Exercise 01.3: the peak of the step's trace and what is live at it.
  std::vector<std::string> owners;
  const std::vector<TraceEvent> events = trace_events(m.trace, &owners);
  b.exercise_peak = try_exercise(b.exercises, "01.3", [&] { return find_peak(events); });
  if (b.exercise_peak && b.exercise_peak->peak_event_index >= 0 &&
      b.exercise_peak->peak_event_index < static_cast<int64_t>(events.size())) {
    const auto last = static_cast<size_t>(b.exercise_peak->peak_event_index);
    std::map<std::string, const TraceEvent*> live;
    for (size_t i = 0; i <= last; ++i) {
      if (events[i].action == TraceAction::kAlloc)
        live[events[i].name] = &events[i];
      else
        live.erase(events[i].name);
    }
    b.peak_owner = owners[last];
    for (const std::string& name : b.exercise_peak->live_at_peak) {
      const auto it = live.find(name);
      if (it != live.end())
        b.live_at_peak.push_back({name, it->second->category, it->second->size_bytes});
    }
    std::stable_sort(b.live_at_peak.begin(), b.live_at_peak.end(),
                     [](const LiveTensor& x, const LiveTensor& y) { return x.bytes > y.bytes; });
  }
  return b;
}

std::string render_text(const Breakdown& b, bool colour) {
  using namespace report::style;
  using report::Align;
  using report::Column;
  using report::RowStyle;
  using report::Table;
  const StepSettings& s = b.settings;
  const StepMeasurement& m = b.measurement;
  const estimate::Estimate& e = b.estimate;
  const ModelConfig& model = s.model;
  const int64_t psi = m.parameter_count;
  std::string out;
  auto line = [&out](const std::string& text) { out += text + "\n"; };

  line(bold("Lesson 01: where every byte of one training step goes", colour));
  char head[512];
  std::snprintf(
      head, sizeof head,
      "%s (%s): %s parameters, L=%lld C=%lld H=%lld V=%lld | B=%lld T=%lld | %s, fp32 | %s",
      model.name.c_str(), std::string(model_family_name(model.family)).c_str(),
      report::format_count(psi).c_str(), static_cast<long long>(model.layers),
      static_cast<long long>(model.hidden), static_cast<long long>(model.heads),
      static_cast<long long>(model.vocab), static_cast<long long>(s.batch),
      static_cast<long long>(s.seq),
      s.optimizer == "adamw"          ? "AdamW"
      : s.optimizer == "sgd-momentum" ? "SGD (momentum 0.9)"
                                      : "SGD (no momentum)",
      s.device.name().c_str());
  line(head);
  if (s.device.kind == memory::DeviceKind::meta) {
    std::snprintf(
        head, sizeof head,
        "one step (forward, backward, optimizer) in %s on meta: shapes and allocations only, "
        "no arithmetic",
        report::format_duration_ms(m.step_seconds * 1e3).c_str());
  } else {
    std::snprintf(head, sizeof head,
                  "one step (forward, backward, optimizer) in %s, loss %.4f nats",
                  report::format_duration_ms(m.step_seconds * 1e3).c_str(), m.loss);
  }
  line(head);
  line("");

  line(bold("Memory per category", colour) +
       " (measured: the caching allocator's peak of that category; estimate: vramlab estimate, "
       "fp32)");
  Table t({{"category"},
           {"measured", Align::kRight},
           {"estimate", Align::kRight},
           {"difference", Align::kRight},
           {"why"}});
  for (const CategoryRow& r : b.rows) {
    const std::string est =
        r.estimated_bytes ? format_bytes(static_cast<uint64_t>(*r.estimated_bytes)) : "-";
    const std::string diff =
        r.estimated_bytes ? signed_bytes(r.measured_bytes - *r.estimated_bytes) : "-";
    t.add_row({r.label, format_bytes(static_cast<uint64_t>(r.measured_bytes)), est, diff, r.why});
  }
  t.add_rule();
  t.add_row({"peak (allocated)", format_bytes(static_cast<uint64_t>(m.peak_allocated_bytes)),
             format_bytes(static_cast<uint64_t>(b.estimated_peak_bytes)),
             signed_bytes(m.peak_allocated_bytes - b.estimated_peak_bytes),
             "a moment, not the sum of the rows (see below)"},
            RowStyle::kBold);
  t.add_row({"reserved (segments)", format_bytes(static_cast<uint64_t>(m.peak_reserved_bytes)), "-",
             signed_bytes(m.peak_reserved_bytes - m.peak_allocated_bytes),
             "segments not used by tensors: granularity, fragmentation"});
  out += t.render(colour, 2);
  char korth[256];
  std::snprintf(korth, sizeof korth,
                "  Korthikanti et al. count %s of activations for this step (%s per layer, scaled "
                "to 4-byte elements): ",
                format_bytes(static_cast<uint64_t>(e.activations.bytes)).c_str(),
                format_bytes(static_cast<uint64_t>(e.activation_bytes_per_layer)).c_str());
  line(std::string(korth) +
       "it counts dropout masks (this runtime has none) and leaves out the "
       "norm statistics and everything outside the blocks.");
  line("");

  // Saved activations per layer, runs of equal layers folded into one row.
  line(bold("Saved activations per layer", colour) +
       " (from the SavedActivations store after forward; estimate: runtime layout)");
  Table la({{"layer"},
            {"tensors", Align::kRight},
            {"measured", Align::kRight},
            {"runtime layout", Align::kRight},
            {"exercise 01.2", Align::kRight},
            {"difference", Align::kRight}});
  const int64_t outside_est =
      estimate::runtime_activation_bytes_outside_layers(model, s.batch, s.seq, DType::f32);
  la.add_row({"outside the blocks", std::to_string(b.layers.front().tensors),
              format_bytes(static_cast<uint64_t>(b.layers.front().bytes)),
              format_bytes(static_cast<uint64_t>(outside_est)), "-",
              signed_bytes(b.layers.front().bytes - outside_est)});
  for (size_t i = 1; i < b.layers.size();) {
    size_t j = i;
    while (j + 1 < b.layers.size() && b.layers[j + 1].bytes == b.layers[i].bytes &&
           b.layers[j + 1].tensors == b.layers[i].tensors)
      ++j;
    const std::string name =
        i == j ? "block " + std::to_string(i - 1)
               : "blocks " + std::to_string(i - 1) + "-" + std::to_string(j - 1) + " (each)";
    const std::string ex = b.exercise_layer_bytes
                               ? format_bytes(static_cast<uint64_t>(*b.exercise_layer_bytes)) +
                                     (*b.exercise_layer_bytes == b.layers[i].bytes ? "" : " (!)")
                               : "-";
    la.add_row({name, std::to_string(b.layers[i].tensors),
                format_bytes(static_cast<uint64_t>(b.layers[i].bytes)),
                format_bytes(static_cast<uint64_t>(e.runtime_activation_bytes_per_layer)), ex,
                signed_bytes(b.layers[i].bytes - e.runtime_activation_bytes_per_layer)});
    i = j + 1;
  }
  out += la.render(colour, 2);
  if (model.layers > 0) {
    line("  one block's tensors (block 0), largest first:");
    std::vector<nn::SavedActivationInfo> block0;
    for (const auto& info : m.saved)
      if (info.layer == 0) block0.push_back(info);
    std::stable_sort(block0.begin(), block0.end(),
                     [](const auto& x, const auto& y) { return x.bytes > y.bytes; });
    Table bt({{"tensor"}, {"shape"}, {"bytes", Align::kRight}, {"share", Align::kRight}});
    for (const auto& info : block0) {
      char share[16];
      std::snprintf(share, sizeof share, "%.1f%%",
                    100.0 * static_cast<double>(info.bytes) /
                        static_cast<double>(std::max<int64_t>(1, b.layers[1].bytes)));
      bt.add_row({info.name, memory::format_shape(info.shape),
                  format_bytes(static_cast<uint64_t>(info.bytes)), share});
    }
    out += bt.render(colour, 4);
  }
  line("");

  // Bytes per parameter.
  line(bold("Bytes per parameter", colour) +
       " (measured = allocator bytes / Ψ; exercise 01.1 = your model_state_breakdown)");
  Table bp({{"component"},
            {"measured", Align::kRight},
            {"01.1 fp32", Align::kRight},
            {"01.1 mixed bf16 (ZeRO)", Align::kRight}});
  const auto measured_of = [&](const char* key) {
    for (const CategoryRow& r : b.rows)
      if (r.key == key) return r.measured_bytes;
    return int64_t{0};
  };
  const int64_t w = measured_of("parameters"), g = measured_of("gradients"),
                o = measured_of("optimizer_states");
  auto ex = [&](const std::optional<ModelStateBreakdown>& x, int64_t ModelStateBreakdown::*field) {
    return x ? per_param((*x).*field, psi) : std::string("-");
  };
  bp.add_row({"weights", per_param(w, psi),
              ex(b.exercise_fp32, &ModelStateBreakdown::weights_bytes),
              ex(b.exercise_mixed, &ModelStateBreakdown::weights_bytes)});
  bp.add_row({"gradients", per_param(g, psi),
              ex(b.exercise_fp32, &ModelStateBreakdown::gradients_bytes),
              ex(b.exercise_mixed, &ModelStateBreakdown::gradients_bytes)});
  bp.add_row({"optimizer states", per_param(o, psi),
              ex(b.exercise_fp32, &ModelStateBreakdown::optimizer_state_bytes),
              ex(b.exercise_mixed, &ModelStateBreakdown::optimizer_state_bytes)});
  bp.add_row({"fp32 master weights", "0.00",
              ex(b.exercise_fp32, &ModelStateBreakdown::master_weights_bytes),
              ex(b.exercise_mixed, &ModelStateBreakdown::master_weights_bytes)});
  bp.add_rule();
  bp.add_row({"model states", per_param(w + g + o, psi),
              b.exercise_fp32 ? per_param(b.exercise_fp32->total_bytes(), psi) : "-",
              b.exercise_mixed ? per_param(b.exercise_mixed->total_bytes(), psi) : "-"},
             RowStyle::kBold);
  bp.add_row({"activations (this B, T)", per_param(measured_of("activations"), psi), "-", "-"});
  out += bp.render(colour, 2);
  if (b.exercise_fp32 && b.exercise_fp32->total_bytes() !=
                             e.parameters.bytes + e.gradients.bytes + e.optimizer_states.bytes)
    line("  " + yellow("exercise 01.1 disagrees with the estimator's model states: check your "
                       "bytes_per_param.cpp",
                       colour));
  line("");

  // The peak.
  line(bold("The peak", colour) + " (exercise 01.3's find_peak on the allocator's trace)");
  if (b.exercise_peak) {
    const PeakReport& p = *b.exercise_peak;
    // Exercise 01.3 rounds every tensor to 512 B; the allocator also counts a large-pool block
    // whole when its remainder (1 MiB or less) is not split off, so it may hold up to 1 MiB more
    // per live tensor above 1 MiB.
    int64_t unsplit_slack_bytes = 0;
    for (const LiveTensor& lt : b.live_at_peak)
      if (lt.bytes > static_cast<int64_t>(memory::kSmallSize))
        unsplit_slack_bytes += memory::kSmallSize;
    const int64_t gap = m.peak_allocated_bytes - p.peak_bytes;
    std::string verdict;
    if (gap == 0)
      verdict = green(" (same)", colour);
    else if (gap > 0 && gap <= unsplit_slack_bytes)
      verdict =
          " (" + format_bytes(static_cast<uint64_t>(gap)) +
          " more: large-pool blocks whose remainder of 1 MiB or less was not split count whole)";
    else
      verdict =
          red(" (differs by " + signed_bytes(gap) + ": check your peak_from_trace.cpp)", colour);
    line("  " + format_bytes(static_cast<uint64_t>(p.peak_bytes)) + " at event " +
         std::to_string(p.peak_event_index) + " (" + b.peak_owner + "), " +
         std::to_string(p.live_at_peak.size()) + " tensors live; the allocator's " +
         "allocated_bytes.all.peak is " +
         format_bytes(static_cast<uint64_t>(m.peak_allocated_bytes)) + verdict);
    std::map<MemoryCategory, std::pair<int64_t, int64_t>> by_cat;  // count, bytes
    for (const LiveTensor& lt : b.live_at_peak) {
      ++by_cat[lt.category].first;
      by_cat[lt.category].second += lt.bytes;
    }
    Table pc({{"live at the peak"}, {"tensors", Align::kRight}, {"bytes", Align::kRight}});
    for (const auto& [cat, cb] : by_cat)
      pc.add_row({std::string(memory::category_name(cat)), std::to_string(cb.first),
                  format_bytes(static_cast<uint64_t>(cb.second))});
    out += pc.render(colour, 2);
    Table lt({{"largest live tensors"}, {"category"}, {"bytes", Align::kRight}});
    for (size_t i = 0; i < b.live_at_peak.size() && i < 8; ++i)
      lt.add_row({b.live_at_peak[i].name,
                  std::string(memory::category_name(b.live_at_peak[i].category)),
                  format_bytes(static_cast<uint64_t>(b.live_at_peak[i].bytes))});
    if (b.live_at_peak.size() > 8)
      lt.add_row({"... " + std::to_string(b.live_at_peak.size() - 8) + " more", "", ""});
    out += lt.render(colour, 2);
  } else {
    line(
        "  exercise 01.3 gave no answer, so the live tensors are not listed here (the timeline "
        "shows them).");
  }
  line("");

  line(bold("What the differences mean", colour));
  line(
      "  - rounding: the caching allocator hands out blocks in multiples of 512 B (PyTorch's "
      "round_size), and a request above 1 MiB keeps a leftover of 1 MiB or less instead of "
      "splitting it off (should_split), so a 19.07 MiB block can count as 20 MiB.");
  line(
      "  - temporaries: the logits live only until the loss (its backward needs the "
      "probabilities alone), and the gradients of the attention matrix, of the MLP and of the "
      "norms only inside one layer's backward; no formula counts them, yet they add to the "
      "peak.");
  line(
      "  - the peak is a moment, not a sum: in this first step the optimizer states are created "
      "after backward freed the activations (lazily, as in PyTorch); from step 2 on they are live "
      "all the time, so the steady-state peak is closer to the estimate.");
  line(
      "  - reserved - allocated: memory held in segments (2 MiB small pool, 20 MiB or a 2 MiB "
      "multiple for large requests) that no tensor uses at that moment; fragmentation shows here.");
  for (const ExerciseStatus& x : b.exercises)
    if (!x.ok) line("  " + yellow("exercise " + x.id + ": " + x.error, colour));
  return out;
}

nlohmann::json to_json(const Breakdown& b) {
  using nlohmann::json;
  const StepSettings& s = b.settings;
  const StepMeasurement& m = b.measurement;
  const estimate::Estimate& e = b.estimate;
  json measured = json::object(), estimated = json::object(), requested = json::object(),
       sources = json::object(), why = json::object();
  for (const CategoryRow& r : b.rows) {
    measured[r.key] = r.measured_bytes;
    estimated[r.key] = r.estimated_bytes ? json(*r.estimated_bytes) : json(nullptr);
    requested[r.key] = r.requested_bytes ? json(*r.requested_bytes) : json(nullptr);
    sources[r.key] = r.source;
    why[r.key] = r.why;
  }
  json layers = json::array();
  for (const LayerActivations& l : b.layers)
    layers.push_back(
        {{"layer", l.layer},
         {"tensors", l.tensors},
         {"bytes", l.bytes},
         {"estimated_bytes", l.layer < 0 ? estimate::runtime_activation_bytes_outside_layers(
                                               s.model, s.batch, s.seq, DType::f32)
                                         : e.runtime_activation_bytes_per_layer}});
  json saved = json::array();
  for (const auto& info : m.saved)
    saved.push_back(
        {{"name", info.name}, {"layer", info.layer}, {"shape", info.shape}, {"bytes", info.bytes}});
  json live = json::array();
  for (const LiveTensor& lt : b.live_at_peak)
    live.push_back(
        {{"name", lt.name}, {"category", memory::category_name(lt.category)}, {"bytes", lt.bytes}});
  auto breakdown_json = [](const std::optional<ModelStateBreakdown>& x) {
    if (!x) return json(nullptr);
    return json{{"weights", x->weights_bytes},
                {"gradients", x->gradients_bytes},
                {"optimizer_states", x->optimizer_state_bytes},
                {"master_weights", x->master_weights_bytes}};
  };
  const double psi = static_cast<double>(m.parameter_count);
  json exercises = json::array();
  for (const ExerciseStatus& x : b.exercises)
    exercises.push_back({{"id", x.id}, {"ok", x.ok}, {"error", x.error}});
  return json{
      {"lesson", "01"},
      {"model",
       {{"name", s.model.name},
        {"family", model_family_name(s.model.family)},
        {"layers", s.model.layers},
        {"hidden", s.model.hidden},
        {"heads", s.model.heads},
        {"kv_heads", s.model.kv_heads},
        {"ffn_hidden", s.model.ffn_hidden},
        {"vocab", s.model.vocab}}},
      {"parameter_count", m.parameter_count},
      {"batch", s.batch},
      {"seq", s.seq},
      {"optimizer", s.optimizer},
      {"precision", "fp32"},
      {"device", {{"name", s.device.name()}, {"capacity_bytes", s.device.spec.capacity_bytes}}},
      {"loss", m.loss},
      {"step_seconds", m.step_seconds},
      {"measured_bytes", measured},
      {"requested_bytes", requested},
      {"estimated_bytes", estimated},
      {"estimate_sources", sources},
      {"differences_explained", why},
      {"korthikanti_activation_bytes", e.activations.bytes},
      {"peak_bytes", m.peak_allocated_bytes},
      {"estimated_peak_bytes", b.estimated_peak_bytes},
      {"reserved_peak_bytes", m.peak_reserved_bytes},
      {"reserved_minus_allocated_bytes", m.peak_reserved_bytes - m.peak_allocated_bytes},
      {"largest_temporary",
       {{"name", b.largest_temporary_name}, {"bytes", b.largest_temporary_bytes}}},
      {"activations_per_layer", layers},
      {"saved_activations", saved},
      {"bytes_per_parameter",
       {{"measured",
         {{"weights", static_cast<double>(m.peak_of(MemoryCategory::parameter)) / psi},
          {"gradients", static_cast<double>(m.peak_of(MemoryCategory::gradient)) / psi},
          {"optimizer_states",
           static_cast<double>(m.peak_of(MemoryCategory::optimizer_state)) / psi}}},
        {"exercise_01_1_fp32_bytes", breakdown_json(b.exercise_fp32)},
        {"exercise_01_1_mixed_bf16_bytes", breakdown_json(b.exercise_mixed)}}},
      {"exercise_01_2_layer_bytes",
       b.exercise_layer_bytes ? json(*b.exercise_layer_bytes) : json(nullptr)},
      {"peak",
       {{"event_index", b.exercise_peak ? json(b.exercise_peak->peak_event_index) : json(nullptr)},
        {"exercise_01_3_peak_bytes",
         b.exercise_peak ? json(b.exercise_peak->peak_bytes) : json(nullptr)},
        {"owner", b.peak_owner},
        {"live", live}}},
      {"exercises", exercises}};
}

std::string render_scale(const Scale& scale, bool colour) {
  using report::Align;
  const auto gb = [](int64_t bytes) {
    return report::format_bytes_decimal(static_cast<uint64_t>(bytes));
  };
  std::string out =
      "\n" + report::style::bold("At scale on meta: one fp32 AdamW step each", colour) + "\n";
  report::Table steps({{"model"},
                       {"B", Align::kRight},
                       {"T", Align::kRight},
                       {"parameters", Align::kRight},
                       {"gradients", Align::kRight},
                       {"optimizer", Align::kRight},
                       {"activations", Align::kRight},
                       {"peak", Align::kRight}});
  for (const ScaleStep& s : scale.steps)
    steps.add_row({s.model, std::to_string(s.batch), std::to_string(s.seq), gb(s.parameters),
                   gb(s.gradients), gb(s.optimizer_states), gb(s.activations), gb(s.peak)});
  out += steps.render(colour);
  out += report::wrap_note(
      "GB = 10^9 bytes, as the tutorials count. The first step's peak comes in the optimizer "
      "step, when AdamW's states are made after backward freed the activations; from the second "
      "step on the states stay live, so the peak is about model states + activations.");
  out += "\n" +
         report::style::bold(
             "The estimator (vramlab estimate): a bare parameter count's model "
             "states, and the 1.3B shape with its activations",
             colour) +
         "\n";
  report::Table formulas({{"plan"},
                          {"parameters", Align::kRight},
                          {"gradients", Align::kRight},
                          {"optimizer", Align::kRight},
                          {"activations", Align::kRight},
                          {"device", Align::kRight},
                          {"host", Align::kRight}});
  for (const ScaleFormula& f : scale.formulas)
    formulas.add_row(
        {f.model.empty() ? f.name : f.model + ", B=" + std::to_string(f.batch) + ", " + f.name,
         gb(f.parameters), gb(f.gradients), gb(f.optimizer_states),
         f.model.empty() ? "-" : gb(f.activations), gb(f.device), gb(f.host)});
  out += formulas.render(colour);
  out += report::wrap_note(
      "activations: Korthikanti et al. 2022's 16-bit count for one micro-batch (the runtime "
      "trains in fp32, so the 16-bit rows are the estimator's). ZeRO over one rank shards "
      "nothing; with offload the states live in host memory.");
  return out;
}

}  // namespace vramlab::lesson01
