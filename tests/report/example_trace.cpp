// Synthetic Chrome traces and their brute-force layout (see example_trace.h).
#include "tests/report/example_trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace vramlab::report::testing {
namespace {

using nlohmann::json;

json complete(const std::string& name, const std::string& category, double ts, double dur,
              const json& pid, const json& tid, json args = json::object()) {
  return {{"name", name}, {"cat", category}, {"ph", "X"},  {"ts", ts},
          {"dur", dur},   {"pid", pid},      {"tid", tid}, {"args", std::move(args)}};
}

json metadata(const char* name, const json& pid, const json& tid, json args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

}  // namespace

json make_vramlab_style_trace(uint64_t seed, size_t steps, size_t layers) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> kernel_us(0.7, 90.0);
  std::uniform_int_distribution<int> kernels_per_module(1, 4);
  std::uniform_int_distribution<int> category_pick(0, 3);
  const char* categories[] = {"parameter", "activation", "gradient", "temporary"};
  json events = json::array({metadata("process_name", 1, 0, {{"name", "vramlab sim:a100-40g"}}),
                             metadata("thread_name", 1, 0, {{"name", "trainer"}}),
                             metadata("thread_name", 1, 1, {{"name", "loader"}})});
  std::map<std::string, double> allocated;
  double reserved = 0.0;
  double now = 0.0;
  for (size_t step = 0; step < steps; ++step) {
    for (const char* phase : {"forward", "backward", "optimizer"}) {
      const double phase_start = now;
      const size_t module_count = std::string(phase) == "optimizer" ? 1 : layers;
      for (size_t m = 0; m < module_count; ++m) {
        const size_t layer = std::string(phase) == "backward" ? layers - 1 - m : m;
        const std::string module = "blocks." + std::to_string(layer);
        const double module_start = now;
        const int kernels = kernels_per_module(rng);
        for (int k = 0; k < kernels; ++k) {
          const double dur = kernel_us(rng);
          events.push_back(complete(k % 2 == 0 ? "matmul_forward" : "attention_forward", "kernel",
                                    now, dur, 1, 0, {{"module", module}, {"phase", phase}}));
          // An allocation during the kernel moves the counters.
          const std::string category = categories[category_pick(rng)];
          allocated[category] += std::floor(dur * 4096.0);
          reserved = std::max(reserved, [&] {
            double total = 0.0;
            for (const auto& [name, bytes] : allocated) total += bytes;
            return total * 1.25;
          }());
          json by_category = json::object();
          for (const auto& [name, bytes] : allocated) by_category[name] = bytes;
          events.push_back({{"name", "allocated bytes"},
                            {"ph", "C"},
                            {"ts", now + dur / 2},
                            {"pid", 1},
                            {"args", by_category}});
          events.push_back({{"name", "reserved bytes"},
                            {"ph", "C"},
                            {"ts", now + dur / 2},
                            {"pid", 1},
                            {"args", {{"reserved", reserved}}}});
          now += dur + 0.25;
        }
        events.push_back(complete(module, "module", module_start, now - module_start, 1, 0,
                                  {{"module", module}, {"phase", phase}}));
        now += 0.5;
      }
      events.push_back(
          complete(phase, "phase", phase_start, now - phase_start, 1, 0, {{"phase", phase}}));
      now += 1.0;
    }
    allocated["activation"] = 0.0;
    allocated["temporary"] = 0.0;
    events.push_back(complete("next_batch", "kernel", now - 30.0, 20.0, 1, 1));
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"device", "sim:a100-40g"}}}};
}

json make_pytorch_style_trace(uint64_t seed, size_t ops) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> op_us(3.0, 400.0);
  std::uniform_int_distribution<int> child_count(0, 3);
  const double epoch = 1'700'000'000'000'000.0 + static_cast<double>(seed % 1000);
  const int pid = 4242;
  const int cpu_tid = 4242;
  const json gpu_tid = "stream 7";
  json events =
      json::array({metadata("process_name", pid, 0, {{"name", "python3"}}),
                   metadata("process_sort_index", pid, 0, {{"sort_index", 1}}),
                   metadata("thread_name", pid, cpu_tid, {{"name", "thread 4242 (python3)"}}),
                   metadata("thread_sort_index", pid, cpu_tid, {{"sort_index", 4242}}),
                   metadata("process_name", 0, 0, {{"name", "CUDA GPU 0"}}),
                   metadata("process_sort_index", 0, 0, {{"sort_index", 5000000}}),
                   metadata("thread_name", 0, gpu_tid, {{"name", "stream 7 7"}})});
  events.push_back({{"name", "Iteration Start: PyTorch Profiler"},
                    {"ph", "i"},
                    {"s", "g"},
                    {"ts", epoch},
                    {"pid", "Traces"},
                    {"tid", "PyTorch Profiler"}});
  const char* names[] = {"aten::linear", "aten::addmm", "aten::relu",
                         "aten::empty",  "aten::copy_", "aten::softmax"};
  std::uniform_int_distribution<int> name_pick(0, 5);
  double now = epoch + 10.0;
  double gpu_free_at = now;
  int external_id = 1;
  for (size_t op = 0; op < ops; ++op) {
    const bool annotated = op % 3 == 0;
    if (annotated) {
      events.push_back({{"name", "## forward ##"},
                        {"ph", "B"},
                        {"cat", "user_annotation"},
                        {"ts", now},
                        {"pid", pid},
                        {"tid", cpu_tid}});
      now += 1.5;
    }
    // Quarter microseconds: exact in doubles at epoch magnitudes, so sums nest exactly.
    const double dur = std::round(op_us(rng) * 4.0) / 4.0;
    const std::string name = names[name_pick(rng)];
    events.push_back(complete(name, "cpu_op", now, dur, pid, cpu_tid,
                              {{"External id", external_id},
                               {"Input Dims", json::array({json::array({32, 768}), json::array()})},
                               {"Input type", json::array({"float", ""})}}));
    // Children fill the op from its start, one after another, never past its end.
    double child_at = now;
    const int children = child_count(rng);
    for (int c = 0; c < children; ++c) {
      const double child_dur = std::floor(dur / (children + 1) * 4.0) / 4.0;
      events.push_back(
          complete(names[name_pick(rng)], "cpu_op", child_at, child_dur, pid, cpu_tid));
      child_at += child_dur;
    }
    // The kernel the op launched, on the GPU stream, and the flow arrow linking them.
    const double kernel_start = std::max(gpu_free_at, now + 5.0);
    const double kernel_dur = std::round(dur * 2.4) / 4.0;
    events.push_back(complete("void gemm_kernel<float, 128>(float const*, float*)", "kernel",
                              kernel_start, kernel_dur, 0, gpu_tid,
                              {{"External id", external_id}, {"stream", 7}}));
    gpu_free_at = kernel_start + kernel_dur;
    events.push_back({{"ph", "s"},
                      {"id", external_id},
                      {"pid", pid},
                      {"tid", cpu_tid},
                      {"ts", now},
                      {"cat", "ac2g"},
                      {"name", "ac2g"}});
    events.push_back({{"ph", "f"},
                      {"id", external_id},
                      {"pid", 0},
                      {"tid", gpu_tid},
                      {"ts", kernel_start},
                      {"cat", "ac2g"},
                      {"name", "ac2g"},
                      {"bp", "e"}});
    events.push_back({{"name", "[memory]"},
                      {"ph", "i"},
                      {"s", "t"},
                      {"cat", "cpu_instant_event"},
                      {"ts", now + 1.0},
                      {"pid", pid},
                      {"tid", cpu_tid},
                      {"args",
                       {{"Total Reserved", 2 << 20},
                        {"Total Allocated", 1 << 20},
                        {"Bytes", 4096},
                        {"Addr", 94'000'000 + op * 4096}}}});
    now += dur + 2.0;
    if (annotated) {
      events.push_back({{"ph", "E"}, {"ts", now}, {"pid", pid}, {"tid", cpu_tid}});
      now += 1.0;
    }
    ++external_id;
  }
  return {{"schemaVersion", 1},
          {"deviceProperties", json::array({{{"id", 0}, {"name", "NVIDIA A100-SXM4-40GB"}}})},
          {"traceEvents", std::move(events)},
          {"traceName", "step.pt.trace.json"}};
}

json expected_trace_layout(const json& trace) {
  const json& events = trace.is_array() ? trace : trace.at("traceEvents");
  struct Span {
    std::string name;
    double start;
    double dur;
    size_t order;
  };
  std::map<std::string, std::vector<Span>> lanes;
  std::map<std::string, std::vector<Span>> open;
  std::map<std::string, size_t> thread_instants;
  std::map<std::string, std::vector<std::pair<double, json>>> counter_samples;
  size_t instant_count = 0;
  size_t not_drawn = 0;
  double origin = INFINITY;
  for (size_t order = 0; order < events.size(); ++order) {
    const json& event = events[order];
    const std::string ph = event.value("ph", "");
    if (ph == "M") continue;
    if (ph != "X" && ph != "B" && ph != "E" && ph != "i" && ph != "I" && ph != "C") {
      ++not_drawn;
      continue;
    }
    const double ts = event.at("ts").get<double>();
    origin = std::min(origin, ts);
    const json pid = event.value("pid", json(0));
    const std::string lane = json::array({pid, event.value("tid", json(0))}).dump();
    const std::string name = event.value("name", "");
    if (ph == "X") {
      lanes[lane].push_back({name, ts, event.value("dur", 0.0), order});
    } else if (ph == "B") {
      open[lane].push_back({name, ts, 0.0, order});
    } else if (ph == "E") {
      Span span = open[lane].back();
      open[lane].pop_back();
      span.dur = ts - span.start;
      lanes[lane].push_back(span);
    } else if (ph == "i" || ph == "I") {
      ++instant_count;
      if (event.value("s", "t") == "t") ++thread_instants[lane];
    } else {
      const json id = event.contains("id") ? event["id"] : json(nullptr);
      counter_samples[json::array({pid, name, id}).dump()].push_back({ts, event.at("args")});
    }
  }
  json lane_json = json::object();
  size_t span_count = 0;
  std::map<std::string, bool> lane_keys;
  for (auto& [lane, spans] : lanes) {
    json rows = json::array();
    // Depth = spans containing it: starting no later, ending no earlier, starting before its
    // start ends; an identical interval earlier in the file is the outer one.
    for (const Span& span : spans) {
      int depth = 0;
      for (const Span& other : spans) {
        if (&other == &span) continue;
        const bool same = other.start == span.start && other.dur == span.dur;
        const bool contains = other.start <= span.start &&
                              span.start + span.dur <= other.start + other.dur &&
                              span.start < other.start + other.dur;
        if (contains && (!same || other.order < span.order)) ++depth;
      }
      rows.push_back({span.name, span.start - origin, span.dur, depth, span.order});
    }
    std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
      if (a[1] != b[1]) return a[1].get<double>() < b[1].get<double>();
      if (a[2] != b[2]) return a[2].get<double>() > b[2].get<double>();
      return a[4].get<size_t>() < b[4].get<size_t>();
    });
    for (json& row : rows) row.erase(4);
    span_count += rows.size();
    lane_json[lane] = std::move(rows);
    lane_keys[lane] = true;
  }
  for (const auto& [lane, count] : thread_instants) lane_keys[lane] = count > 0;
  json counters = json::object();
  size_t sample_count = 0;
  for (auto& [key, samples] : counter_samples) {
    std::stable_sort(samples.begin(), samples.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::map<std::string, double> last;
    json totals = json::array();
    for (const auto& [ts, args] : samples) {
      for (const auto& [series, value] : args.items()) {
        if (value.is_number()) last[series] = value.get<double>();
      }
      double total = 0.0;
      for (const auto& [series, value] : last) total += std::max(0.0, value);
      totals.push_back(total);
    }
    sample_count += samples.size();
    counters[key] = std::move(totals);
  }
  return {{"span_count", span_count},         {"lane_count", lane_keys.size()},
          {"counter_count", counters.size()}, {"sample_count", sample_count},
          {"instant_count", instant_count},   {"not_drawn", not_drawn},
          {"lanes", std::move(lane_json)},    {"counters", std::move(counters)}};
}

}  // namespace vramlab::report::testing
