// Lesson 07's runs, tables and JSON (see profile_report.h).
#include "lessons/07-profiling/profile_report.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/memory/memory_category.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "common/report/table.h"
#include "common/report/terminal.h"

namespace vramlab::lesson07 {

namespace {

using nlohmann::json;
using report::Align;
using report::format_bytes;
using report::format_count;

std::string signed_bytes(int64_t value) {
  std::string out(1, value < 0 ? '-' : '+');
  out += bytes(value < 0 ? -value : value);
  return out;
}

double ratio(double a, double b) {
  return b != 0.0 ? a / b : 0.0;
}

// The fastest of the steps: on a machine shared with other work, the least disturbed.
double fastest(const std::vector<double>& x) {
  return x.empty() ? 0.0 : *std::min_element(x.begin(), x.end());
}

// The steps after the first (which creates the optimizer states); the only one if there is one.
std::vector<double> later_steps(const std::vector<double>& seconds) {
  if (seconds.size() <= 1) return seconds;
  return {seconds.begin() + 1, seconds.end()};
}

std::string or_none(const std::string& text) {
  return text.empty() ? "(none)" : text;
}

// The innermost frames that say who asked (short names), joined by " ← ".
std::string stack_text(const std::vector<memory::StackFrame>& frames, size_t count) {
  std::string out;
  for (size_t i = 0; i < frames.size() && i < count; ++i)
    out += (i ? " ← " : "") + short_function(frames[i].function);
  return out.empty() ? "(no stack)" : out;
}

json frames_json(const std::vector<memory::StackFrame>& frames) {
  json out = json::array();
  for (const memory::StackFrame& f : frames)
    out.push_back({{"name", f.function}, {"filename", f.file}, {"line", f.line}});
  return out;
}

json allocation_json(const snapshot::Allocation& a) {
  return {{"name", a.tensor},
          {"bytes", a.bytes},
          {"module", a.module},
          {"phase", a.phase},
          {"category", a.category},
          {"alloc_event", a.alloc_event},
          {"frames", frames_json(a.frames)}};
}

json groups_json(const std::vector<snapshot::ByteGroup>& groups) {
  json out = json::array();
  for (const snapshot::ByteGroup& g : groups)
    out.push_back({{"key", g.key}, {"bytes", g.bytes}, {"count", g.count}});
  return out;
}

json run_summary_json(const ProfiledRun& run) {
  json j = {{"label", run.label},
            {"peak_bytes", run.peak.peak_bytes},
            {"allocator_peak_bytes", run.allocator_peak_bytes},
            {"reserved_peak_bytes", run.reserved_peak_bytes},
            {"peak_owner",
             {{"module", run.peak.peak_owner.module},
              {"phase", run.peak.peak_owner.phase},
              {"name", run.peak.peak_owner.tensor},
              {"bytes", run.peak.peak_owner.bytes}}},
            {"allocated_bytes", allocated_over_run(run)},
            {"attention_allocated_bytes", attention_allocated(run)},
            {"attention_forward_calls", attention_forward_calls(run)},
            {"step_seconds", run.step_seconds},
            {"losses", run.losses}};
  // The median of the steps after the first (which creates AdamW's states): a step's time.
  if (run.step_seconds.size() >= 2)
    j["later_steps_median_seconds"] = train::median(later_steps(run.step_seconds));
  return j;
}

json growth_json(const snapshot::Growth& g) {
  return {{"module", g.module},
          {"name", g.tensor},
          {"category", g.category},
          {"stack", g.stack},
          {"count_before", g.count_before},
          {"count_after", g.count_after},
          {"bytes_before", g.bytes_before},
          {"bytes_after", g.bytes_after}};
}

}  // namespace

std::string bytes(int64_t value) {
  return format_bytes(static_cast<uint64_t>(std::max<int64_t>(value, 0)));
}

std::string short_function(const std::string& function) {
  std::string out;
  int depth = 0;  // inside < > or ( )
  for (const char c : function) {
    if (c == '<' || c == '(') ++depth;
    if (depth == 0) out += c;
    if ((c == '>' || c == ')') && depth > 0) --depth;
  }
  constexpr std::string_view prefix = "vramlab::";
  for (size_t at = out.find(prefix); at != std::string::npos; at = out.find(prefix))
    out.erase(at, prefix.size());
  // A lambda's call operator ("f::{lambda#1}::operator() const"): name it by its lambda.
  for (const std::string_view suffix : {std::string_view(" const"), std::string_view("::operator")})
    if (out.ends_with(suffix)) out.erase(out.size() - suffix.size());
  // A return type before the name ("void nn::Attention::forward"): keep the name.
  if (const size_t space = out.rfind(' '); space != std::string::npos) out = out.substr(space + 1);
  return out.empty() ? function : out;
}

std::vector<ModuleBytes> module_bytes(const snapshot::PeakReport& peak) {
  std::map<std::string, ModuleBytes> by_module;
  for (const snapshot::Allocation& a : peak.live_at_peak) {
    ModuleBytes& m = by_module[or_none(a.module)];
    m.module = or_none(a.module);
    m.category_bytes.resize(memory::kMemoryCategoryCount, 0);
    const memory::MemoryCategory c =
        a.category.empty() ? memory::MemoryCategory::other : memory::parse_category(a.category);
    m.category_bytes[static_cast<size_t>(c)] += a.bytes;
    m.total += a.bytes;
  }
  std::vector<ModuleBytes> out;
  for (auto& [name, m] : by_module) out.push_back(std::move(m));
  std::stable_sort(out.begin(), out.end(),
                   [](const ModuleBytes& a, const ModuleBytes& b) { return a.total > b.total; });
  return out;
}

Lesson run_lesson(const LessonSettings& settings, void (*progress)(const std::string&)) {
  const auto say = [progress](const std::string& line) {
    if (progress) progress(line);
  };
  if (settings.top < 1) throw UsageError("--top must be >= 1, got " + std::to_string(settings.top));
  Lesson lesson;
  lesson.settings = settings;
  say("recording " + std::to_string(settings.run.steps) + " steps of " +
      settings.run.train.model.name + " on " + settings.run.device.name());
  lesson.baseline = profile_run(settings.run, "baseline");
  RunSettings checkpointed = settings.run;
  checkpointed.train.plan.recompute = recompute::parse_recompute_spec(settings.recompute);
  say("recording the same steps with --recompute " + settings.recompute);
  lesson.recompute = profile_run(checkpointed, "--recompute " + settings.recompute);
  if (settings.overhead) {
    say("timing the same steps without recording");
    lesson.unprofiled = unprofiled_step_times(settings.run);
    lesson.stack_capture_seconds = stack_capture_seconds();
  }
  say("the planted leak: snapshots after step " + std::to_string(settings.leak_after) +
      " and step " + std::to_string(settings.leak_after + settings.leak_steps));
  lesson.leak = hunt_leak(settings.run, settings.leak_after, settings.leak_steps);
  if (settings.scale) {
    say("at scale on meta: " + settings.scale_run.train.model.name);
    lesson.scale = profile_run(settings.scale_run, settings.scale_run.train.model.name);
    say("claim #97 on meta: " + settings.medium_run.train.model.name);
    nn::Runtime runtime(settings.medium_run.device);
    train::Trainer trainer(runtime, settings.medium_run.train);
    const train::StepResult step = trainer.step();
    const memory::CategoryStats stats = runtime.allocator().category_stats();
    using memory::MemoryCategory;
    MediumModelBytes m;
    m.model = settings.medium_run.train.model.name;
    m.parameter_count = settings.medium_run.train.model.parameter_count();
    // Peaks, requested bytes: the gradients are released after the step (grads_to_none).
    m.parameters = stats.requested(MemoryCategory::parameter).peak;
    m.gradients = stats.requested(MemoryCategory::gradient).peak;
    m.optimizer_states = stats.requested(MemoryCategory::optimizer_state).peak;
    m.activation_peak = step.activation_peak_bytes;
    lesson.medium = m;
  }
  return lesson;
}

json to_json(const Lesson& lesson) {
  const ProfiledRun& b = lesson.baseline;
  const snapshot::PeakReport& p = b.peak;
  json j;
  const ModelConfig& model = lesson.settings.run.train.model;
  j["model"] = {{"name", model.name},
                {"parameter_count", model.parameter_count()},
                {"heads", model.heads},
                {"ffn_hidden", model.ffn_hidden}};
  j["device"] = b.recording.device;
  j["batch"] = lesson.settings.run.train.batch;
  j["seq"] = lesson.settings.run.train.seq;
  j["steps"] = lesson.settings.run.steps;
  j["peak_bytes"] = p.peak_bytes;
  j["allocator_peak_bytes"] = b.allocator_peak_bytes;
  j["reserved_peak_bytes"] = b.reserved_peak_bytes;
  // memory_stats() after the last step, under PyTorch's names.
  j["memory_stats"] = {{"active.all.current", b.active_blocks_now},
                       {"active_bytes.all.current", b.active_bytes_now},
                       {"num_alloc_retries", b.num_alloc_retries}};
  j["peak_event"] = p.peak_event;
  j["peak_owner"] = {{"module", p.peak_owner.module}, {"phase", p.peak_owner.phase},
                     {"name", p.peak_owner.tensor},   {"category", p.peak_owner.category},
                     {"bytes", p.peak_owner.bytes},   {"frames", frames_json(p.peak_owner.frames)}};
  json top = json::array();
  for (size_t i = 0; i < p.live_at_peak.size() && i < static_cast<size_t>(lesson.settings.top); ++i)
    top.push_back(allocation_json(p.live_at_peak[i]));
  j["top_at_peak"] = top;
  json per_module = json::object();
  for (const snapshot::ByteGroup& g : p.by_module) per_module[g.key] = g.bytes;
  j["per_module_bytes"] = per_module;
  j["by_phase"] = groups_json(p.by_phase);
  j["by_category"] = groups_json(p.by_category);
  j["by_stack"] = groups_json(p.by_stack);
  std::vector<profile::OpRow> ops = b.by_op;
  if (ops.size() > static_cast<size_t>(lesson.settings.top))
    ops.resize(static_cast<size_t>(lesson.settings.top));
  j["op_table"] = profile::op_table_json(ops);
  j["recording"] = {{"trace_events", b.trace_events},
                    {"spans", b.recording.spans.size()},
                    {"distinct_stacks", b.distinct_stacks},
                    {"seconds", b.recording.seconds}};
  const double profiled = fastest(later_steps(b.step_seconds));
  const double plain = fastest(later_steps(lesson.unprofiled.wall_seconds));
  const double profiled_cpu = fastest(later_steps(b.step_cpu_seconds));
  const double plain_cpu = fastest(later_steps(lesson.unprofiled.cpu_seconds));
  j["overhead"] = {{"profiled_step_seconds", profiled},
                   {"unprofiled_step_seconds", plain},
                   {"profiled_step_cpu_seconds", profiled_cpu},
                   {"unprofiled_step_cpu_seconds", plain_cpu},
                   {"ratio", ratio(profiled_cpu, plain_cpu)},
                   {"stack_capture_seconds", lesson.stack_capture_seconds},
                   {"allocations_per_step",
                    recorded_allocations(b) / std::max<int64_t>(lesson.settings.run.steps, 1)}};
  j["comparison"] = {
      {"recompute", lesson.settings.recompute},
      {"baseline", run_summary_json(b)},
      {"with_recompute", run_summary_json(lesson.recompute)},
      {"peak_drop_bytes", b.peak.peak_bytes - lesson.recompute.peak.peak_bytes},
      {"allocated_growth_bytes", allocated_over_run(lesson.recompute) - allocated_over_run(b)}};
  const LeakHunt& leak = lesson.leak;
  json growth = json::array();
  for (size_t i = 0; i < leak.growth.size() && i < 5; ++i)
    growth.push_back(growth_json(leak.growth[i]));
  j["leak"] = {{"first_step", leak.first_step},
               {"second_step", leak.second_step},
               {"found", leak.found},
               {"owner", growth_json(leak.owner)},
               {"bytes_per_step", leak.bytes_per_step},
               {"frames", leak.owner_frames},
               {"growth", growth}};
  if (lesson.scale) {
    const ProfiledRun& s = *lesson.scale;
    json modules = json::object();
    for (size_t i = 0; i < s.peak.by_module.size() && i < 10; ++i)
      modules[s.peak.by_module[i].key] = s.peak.by_module[i].bytes;
    j["scale"] = {{"model", lesson.settings.scale_run.train.model.name},
                  {"device", s.recording.device},
                  {"batch", lesson.settings.scale_run.train.batch},
                  {"seq", lesson.settings.scale_run.train.seq},
                  {"peak_bytes", s.peak.peak_bytes},
                  {"allocator_peak_bytes", s.allocator_peak_bytes},
                  {"peak_owner",
                   {{"module", s.peak.peak_owner.module},
                    {"phase", s.peak.peak_owner.phase},
                    {"name", s.peak.peak_owner.tensor},
                    {"bytes", s.peak.peak_owner.bytes}}},
                  {"per_module_bytes", modules},
                  {"trace_events", s.trace_events},
                  {"seconds", s.recording.seconds}};
  }
  if (lesson.medium) {
    const MediumModelBytes& m = *lesson.medium;
    j["medium"] = {{"model", m.model},
                   {"parameter_count", m.parameter_count},
                   {"batch", lesson.settings.medium_run.train.batch},
                   {"seq", lesson.settings.medium_run.train.seq},
                   {"parameter_bytes", m.parameters},
                   {"gradient_bytes", m.gradients},
                   {"optimizer_state_bytes", m.optimizer_states},
                   {"activation_peak_bytes", m.activation_peak}};
  }
  return j;
}

std::string render_text(const Lesson& lesson, bool colour) {
  namespace st = report::style;
  const ProfiledRun& b = lesson.baseline;
  const snapshot::PeakReport& p = b.peak;
  const LessonSettings& s = lesson.settings;
  const size_t top = static_cast<size_t>(s.top);
  std::string out;
  char line[512];

  out += st::bold("Lesson 07: memory profiling", colour) + "\n";
  std::snprintf(
      line, sizeof line,
      "%s (%s parameters), B=%lld T=%lld, %lld steps on %s, recorded from before the "
      "model was built: %s trace events, %s spans, %s distinct C++ stacks\n",
      s.run.train.model.name.c_str(),
      report::format_count_short(static_cast<uint64_t>(s.run.train.model.parameter_count()))
          .c_str(),
      static_cast<long long>(s.run.train.batch), static_cast<long long>(s.run.train.seq),
      static_cast<long long>(s.run.steps), b.recording.device.c_str(),
      format_count(b.trace_events).c_str(),
      format_count(static_cast<int64_t>(b.recording.spans.size())).c_str(),
      format_count(b.distinct_stacks).c_str());
  out += line;

  out += "\n" + st::bold("The peak and what owns it", colour) + "\n";
  std::snprintf(line, sizeof line,
                "  peak allocated %s (%s B) at trace event %lld; the allocator's own "
                "requested-bytes peak: %s B (%s)\n",
                bytes(p.peak_bytes).c_str(), format_count(p.peak_bytes).c_str(),
                static_cast<long long>(p.peak_event), format_count(b.allocator_peak_bytes).c_str(),
                p.peak_bytes == b.allocator_peak_bytes ? "equal" : "DIFFERENT");
  out += line;
  const snapshot::Allocation& owner = p.peak_owner;
  std::snprintf(line, sizeof line,
                "  the allocation that reached it: %s, %s, module %s, phase %s, category %s\n",
                or_none(owner.tensor).c_str(), bytes(owner.bytes).c_str(),
                or_none(owner.module).c_str(), or_none(owner.phase).c_str(),
                or_none(owner.category).c_str());
  out += line;
  out += "  its stack: " + stack_text(owner.frames, 5) + "\n";
  for (const auto& [title, groups] :
       {std::pair{"phase that allocated it", &p.by_phase}, std::pair{"category", &p.by_category}}) {
    report::Table t({{std::string("live at the peak, by ") + title},
                     {"bytes", Align::kRight},
                     {"share", Align::kRight},
                     {"allocations", Align::kRight}});
    for (const snapshot::ByteGroup& g : *groups)
      t.add_row({g.key, bytes(g.bytes), report::format_percent(ratio(g.bytes, p.peak_bytes)),
                 format_count(g.count)});
    out += "\n" + t.render(colour, 2);
  }
  {
    report::Table t({{"live at the peak, by call stack (innermost first)"},
                     {"bytes", Align::kRight},
                     {"allocations", Align::kRight}});
    for (size_t i = 0; i < p.by_stack.size() && i < 6; ++i) {
      const snapshot::ByteGroup& g = p.by_stack[i];
      std::string key;
      // The key joins full names; shorten each for the terminal.
      size_t from = 0;
      while (true) {
        const size_t at = g.key.find(" ← ", from);
        key += (from ? " ← " : "") + short_function(g.key.substr(from, at - from));
        if (at == std::string::npos) break;
        from = at + std::string(" ← ").size();
      }
      t.add_row({key, bytes(g.bytes), format_count(g.count)});
    }
    out += "\n" + t.render(colour, 2);
  }

  out += "\n" + st::bold("Memory per module at the peak", colour) + "\n";
  {
    report::Table t({{"module"},
                     {"bytes", Align::kRight},
                     {"parameter", Align::kRight},
                     {"gradient", Align::kRight},
                     {"optim state", Align::kRight},
                     {"activation", Align::kRight},
                     {"other", Align::kRight}});
    using memory::MemoryCategory;
    const auto cat = [](const ModuleBytes& m, MemoryCategory c) {
      return m.category_bytes[static_cast<size_t>(c)];
    };
    for (const ModuleBytes& m : module_bytes(p)) {
      const int64_t rest =
          m.total - cat(m, MemoryCategory::parameter) - cat(m, MemoryCategory::gradient) -
          cat(m, MemoryCategory::optimizer_state) - cat(m, MemoryCategory::activation);
      t.add_row({m.module, bytes(m.total), bytes(cat(m, MemoryCategory::parameter)),
                 bytes(cat(m, MemoryCategory::gradient)),
                 bytes(cat(m, MemoryCategory::optimizer_state)),
                 bytes(cat(m, MemoryCategory::activation)), bytes(rest)});
    }
    out += t.render(colour, 2);
  }

  out += "\n" + st::bold("The largest allocations live at the peak", colour) + "\n";
  {
    report::Table t({{"tensor"},
                     {"bytes", Align::kRight},
                     {"module"},
                     {"phase"},
                     {"category"},
                     {"allocated from"}});
    for (size_t i = 0; i < p.live_at_peak.size() && i < top; ++i) {
      const snapshot::Allocation& a = p.live_at_peak[i];
      t.add_row({or_none(a.tensor), bytes(a.bytes), or_none(a.module), or_none(a.phase),
                 or_none(a.category), stack_text(a.frames, 2)});
    }
    out += t.render(colour, 2);
  }

  out +=
      "\n" + st::bold("Per-op table (torch.profiler's key_averages, by self bytes)", colour) + "\n";
  out += profile::format_op_table(b.by_op, profile::OpSort::self_bytes, top);

  const ProfiledRun& r = lesson.recompute;
  out += "\n" + st::bold("With checkpointing (" + r.label + ")", colour) + "\n";
  {
    report::Table t(
        {{""}, {"baseline", Align::kRight}, {r.label, Align::kRight}, {"change", Align::kRight}});
    t.add_row({"peak allocated", bytes(b.peak.peak_bytes), bytes(r.peak.peak_bytes),
               signed_bytes(r.peak.peak_bytes - b.peak.peak_bytes)});
    t.add_row({"allocated over the run (per-op total)", bytes(allocated_over_run(b)),
               bytes(allocated_over_run(r)),
               signed_bytes(allocated_over_run(r) - allocated_over_run(b))});
    t.add_row({"… by the attention modules", bytes(attention_allocated(b)),
               bytes(attention_allocated(r)),
               signed_bytes(attention_allocated(r) - attention_allocated(b))});
    t.add_row({"attention forward calls", format_count(attention_forward_calls(b)),
               format_count(attention_forward_calls(r)),
               "+" + format_count(attention_forward_calls(r) - attention_forward_calls(b))});
    t.add_row({"peak owner",
               or_none(b.peak.peak_owner.tensor) + " (" + or_none(b.peak.peak_owner.phase) + ")",
               or_none(r.peak.peak_owner.tensor) + " (" + or_none(r.peak.peak_owner.phase) + ")",
               ""});
    out += t.render(colour, 2);
    out +=
        "  The table's totals grow (the checkpointed forward runs twice, and the table adds "
        "every\n  allocation without subtracting frees); the peak drops (fewer activations are "
        "live at once).\n";
  }

  const LeakHunt& leak = lesson.leak;
  out += "\n" + st::bold("The planted leak: two snapshots", colour) + "\n";
  std::snprintf(line, sizeof line,
                "  snapshot A after step %lld, snapshot B after step %lld; what grew between "
                "them:\n",
                static_cast<long long>(leak.first_step), static_cast<long long>(leak.second_step));
  out += line;
  {
    report::Table t({{"tensor"},
                     {"module"},
                     {"category"},
                     {"count A", Align::kRight},
                     {"count B", Align::kRight},
                     {"bytes A", Align::kRight},
                     {"bytes B", Align::kRight}});
    for (size_t i = 0; i < leak.growth.size() && i < 5; ++i) {
      const snapshot::Growth& g = leak.growth[i];
      t.add_row({or_none(g.tensor), or_none(g.module), or_none(g.category),
                 format_count(g.count_before), format_count(g.count_after), bytes(g.bytes_before),
                 bytes(g.bytes_after)});
    }
    out += t.render(colour, 2);
  }
  std::string frames;
  for (size_t i = 0; i < leak.owner_frames.size() && i < 3; ++i)
    frames += (i ? " ← " : "") + short_function(leak.owner_frames[i]);
  std::snprintf(line, sizeof line, "  %s: %s grows by %s a step, allocated from %s\n",
                leak.found ? "found" : "NOT FOUND", or_none(leak.owner.tensor).c_str(),
                bytes(leak.bytes_per_step).c_str(), frames.empty() ? "(no stack)" : frames.c_str());
  out += leak.found ? st::green(line, colour) : st::red(line, colour);

  if (!lesson.unprofiled.cpu_seconds.empty()) {
    const double profiled = fastest(later_steps(b.step_seconds));
    const double plain = fastest(later_steps(lesson.unprofiled.wall_seconds));
    const double profiled_cpu = fastest(later_steps(b.step_cpu_seconds));
    const double plain_cpu = fastest(later_steps(lesson.unprofiled.cpu_seconds));
    std::snprintf(line, sizeof line,
                  "\nRecording overhead (stacks %s; the fastest of steps 2..%lld): a step takes %s "
                  "of CPU time recorded, %s not: %.2fx (wall time %s and %s)\n",
                  s.run.cpp_stacks ? "on" : "off", static_cast<long long>(s.run.steps),
                  report::format_duration_ms(profiled_cpu * 1e3).c_str(),
                  report::format_duration_ms(plain_cpu * 1e3).c_str(),
                  ratio(profiled_cpu, plain_cpu),
                  report::format_duration_ms(profiled * 1e3).c_str(),
                  report::format_duration_ms(plain * 1e3).c_str());
    out += line;
    // The steps' own times vary more than the recording costs on a busy machine; the stacks' cost
    // measured alone bounds it better.
    const int64_t allocs = recorded_allocations(b) / std::max<int64_t>(s.run.steps, 1);
    const double stacks_per_step = static_cast<double>(allocs) * lesson.stack_capture_seconds;
    std::snprintf(line, sizeof line,
                  "  one C++ stack costs %.2f us to capture (the fastest of 5 x 1,000); %lld "
                  "allocations a step: %s a step, %s of the fastest unrecorded step's CPU time\n",
                  lesson.stack_capture_seconds * 1e6, static_cast<long long>(allocs),
                  report::format_duration_ms(stacks_per_step * 1e3).c_str(),
                  report::format_percent(ratio(stacks_per_step, plain_cpu), 2).c_str());
    out += line;
  }

  if (lesson.scale) {
    const ProfiledRun& sc = *lesson.scale;
    out += "\n" + st::bold("At scale on meta: " + s.scale_run.train.model.name, colour) + "\n";
    std::snprintf(
        line, sizeof line,
        "  B=%lld T=%lld, %lld steps recorded in %.2f s (%s trace events): peak %s (the "
        "allocator's: %s), reached by %s in %s (%s)\n",
        static_cast<long long>(s.scale_run.train.batch),
        static_cast<long long>(s.scale_run.train.seq), static_cast<long long>(s.scale_run.steps),
        sc.recording.seconds, format_count(sc.trace_events).c_str(),
        bytes(sc.peak.peak_bytes).c_str(), bytes(sc.allocator_peak_bytes).c_str(),
        or_none(sc.peak.peak_owner.tensor).c_str(), or_none(sc.peak.peak_owner.module).c_str(),
        or_none(sc.peak.peak_owner.phase).c_str());
    out += line;
    report::Table t(
        {{"module (top 8 at the peak)"}, {"bytes", Align::kRight}, {"allocations", Align::kRight}});
    for (size_t i = 0; i < sc.peak.by_module.size() && i < 8; ++i)
      t.add_row({sc.peak.by_module[i].key, bytes(sc.peak.by_module[i].bytes),
                 format_count(sc.peak.by_module[i].count)});
    out += t.render(colour, 2);
  }
  return out;
}

}  // namespace vramlab::lesson07
