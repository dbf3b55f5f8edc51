// The profiler: spans of phases, modules and kernels that nest, allocations that fall inside the
// spans of their modules, one profiler per thread and per runtime, and what it restores.
//   build/tests/bin/test_profile --gtest_filter='Profiler.*:SpanKind.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/history.h"
#include "common/model/model_config.h"
#include "common/nn/kernel_backend.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/profile/profiler.h"
#include "common/train/trainer.h"

namespace vramlab::profile {
namespace {

using nlohmann::json;

train::TrainOptions options_for(const ModelConfig& model) {
  train::TrainOptions options;
  options.model = model;
  options.batch = 2;
  options.seq = 9;
  options.seed = 5;
  return options;
}

std::vector<ModelConfig> models() {
  return {gpt2_config("prof-gpt2", 2, 32, 4, 40, 16),
          llama_config("prof-llama", 2, 32, 4, 2, 64, 40, 16)};
}

bool contains(const Span& outer, const Span& inner) {
  return outer.start_ns <= inner.start_ns && inner.end_ns <= outer.end_ns;
}

std::string describe(const Span& s) {
  return std::string(span_kind_name(s.kind)) + " '" + s.name + "' [" + std::to_string(s.start_ns) +
         ", " + std::to_string(s.end_ns) + "] in '" + s.module + "' (" +
         std::string(memory::training_phase_name(s.phase)) + ")";
}

// Two steps of \p model on \p device, profiled from the first step on.
Recording profile_two_steps(const std::string& device, const ModelConfig& model) {
  nn::Runtime runtime(memory::parse_device(device));
  train::Trainer trainer(runtime, options_for(model));
  Profiler profiler(runtime);
  trainer.step();
  trainer.step();
  return profiler.stop();
}

void expect_nested_spans(const Recording& r) {
  ASSERT_FALSE(r.spans.empty());
  std::set<SpanKind> kinds;
  for (const Span& s : r.spans) {
    kinds.insert(s.kind);
    ASSERT_GE(s.start_ns, 0) << describe(s);
    ASSERT_GE(s.end_ns, s.start_ns) << describe(s);
    ASSERT_LE(s.end_ns, static_cast<std::int64_t>(r.seconds * 1e9) + 1) << describe(s);
    EXPECT_EQ(s.thread, 0);
  }
  EXPECT_EQ(kinds.size(), 3u) << "phases, modules and kernels";
  EXPECT_TRUE(std::is_sorted(r.spans.begin(), r.spans.end(), [](const Span& a, const Span& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.depth < b.depth;
  }));
  // Any two spans are disjoint or one holds the other (a stack walk over the sorted spans).
  std::vector<const Span*> open;
  for (const Span& s : r.spans) {
    while (!open.empty() && !contains(*open.back(), s)) {
      ASSERT_LE(open.back()->end_ns, s.start_ns)
          << describe(s) << " overlaps " << describe(*open.back());
      open.pop_back();
    }
    open.push_back(&s);
  }
  int kernels_in_modules = 0;
  for (const Span& s : r.spans) {
    if (s.kind == SpanKind::kernel && !s.module.empty()) {
      // Inside a span of its own module.
      const bool held = std::any_of(r.spans.begin(), r.spans.end(), [&](const Span& m) {
        return m.kind == SpanKind::module && m.name == s.module && contains(m, s);
      });
      EXPECT_TRUE(held) << describe(s);
      ++kernels_in_modules;
    }
    if (s.kind == SpanKind::module) {
      EXPECT_EQ(s.module, s.name);
      // Inside a span of its phase, and of its parent module.
      const bool in_phase = std::any_of(r.spans.begin(), r.spans.end(), [&](const Span& p) {
        return p.kind == SpanKind::phase && p.phase == s.phase && contains(p, s);
      });
      EXPECT_TRUE(in_phase) << describe(s);
      const size_t dot = s.name.rfind('.');
      if (s.name.starts_with("blocks.") && dot > 7) {
        const std::string parent = s.name.substr(0, dot);
        const bool in_parent = std::any_of(r.spans.begin(), r.spans.end(), [&](const Span& m) {
          return m.kind == SpanKind::module && m.name == parent && contains(m, s);
        });
        EXPECT_TRUE(in_parent) << describe(s) << " outside " << parent;
      }
    }
  }
  EXPECT_GT(kernels_in_modules, 0);
}

void expect_allocations_inside_their_modules(const Recording& r) {
  const json& trace = r.snapshot.at("device_traces").back();
  const std::int64_t end_ns = r.origin_ns + static_cast<std::int64_t>(r.seconds * 1e9) + 1;
  int checked = 0;
  for (const json& entry : trace) {
    if (entry.at("action") == "snapshot") continue;  // stop()'s own, after the end
    const std::int64_t t = entry.at("time_ns").get<std::int64_t>();
    EXPECT_GE(t, r.origin_ns) << entry.dump();
    EXPECT_LE(t, end_ns) << entry.dump();
    if (entry.at("action") != "alloc" || entry.at("module") == "") continue;
    const std::string module = entry.at("module");
    const std::int64_t at = t - r.origin_ns;
    const bool inside = std::any_of(r.spans.begin(), r.spans.end(), [&](const Span& s) {
      return s.kind == SpanKind::module && s.name == module && s.start_ns <= at && at <= s.end_ns;
    });
    EXPECT_TRUE(inside) << entry.at("tensor") << " at " << at << " ns outside every span of "
                        << module;
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

TEST(Profiler, SpansNestAndAllocationsFallInsideTheirModulesOnSim) {
  for (const ModelConfig& model : models()) {
    SCOPED_TRACE(model.name);
    const Recording r = profile_two_steps("sim:t4-16g", model);
    expect_nested_spans(r);
    expect_allocations_inside_their_modules(r);
    EXPECT_EQ(r.device, memory::parse_device("sim:t4-16g").name());
    EXPECT_GT(r.seconds, 0.0);
  }
}

TEST(Profiler, WorksOnMeta) {
  const Recording r = profile_two_steps("meta", models()[1]);
  expect_nested_spans(r);
  expect_allocations_inside_their_modules(r);
  const bool attention = std::any_of(r.spans.begin(), r.spans.end(), [](const Span& s) {
    return s.kind == SpanKind::kernel && s.name == "attention_forward" &&
           s.module.ends_with(".attn") && s.phase == memory::TrainingPhase::forward;
  });
  EXPECT_TRUE(attention);
}

TEST(Profiler, SnapshotCarriesCppFramesByDefault) {
  const Recording r = profile_two_steps("sim:t4-16g", models()[0]);
  bool named = false;
  for (const json& entry : r.snapshot.at("device_traces").back()) {
    if (entry.at("action") != "alloc" || entry.at("frames").size() < 2) continue;
    const json& frames = entry.at("frames");
    EXPECT_EQ(frames[0].at("filename"), entry.at("module"));
    EXPECT_EQ(frames[0].at("name"), entry.at("tensor"));
    for (size_t i = 1; i < frames.size(); ++i)
      named = named || frames[i].at("name").get<std::string>().starts_with("vramlab::nn::");
  }
  EXPECT_TRUE(named) << "no allocation's frames name a vramlab::nn function";
}

TEST(Profiler, StopTwiceThrows) {
  nn::Runtime runtime(memory::parse_device("meta"));
  Profiler profiler(runtime);
  (void)profiler.stop();
  EXPECT_THROW((void)profiler.stop(), std::logic_error);
}

TEST(Profiler, ASecondProfilerOnTheSameThreadOrRuntimeIsRefused) {
  nn::Runtime first(memory::parse_device("meta"));
  nn::Runtime second(memory::parse_device("meta"));
  Profiler profiler(first);
  EXPECT_THROW(Profiler{second}, UsageError);  // same thread
  bool refused = false;
  std::thread([&] {
    try {
      Profiler again(first);  // same runtime
    } catch (const UsageError&) {
      refused = true;
    }
  }).join();
  EXPECT_TRUE(refused);
  // Another thread may profile another runtime.
  bool allowed = false;
  std::thread([&] {
    Profiler other(second);
    allowed = true;
  }).join();
  EXPECT_TRUE(allowed);
  (void)profiler.stop();
  Profiler after_stop(first);  // the first one let go
}

struct QuietListener : memory::ScopeListener {
  void phase_changed(memory::TrainingPhase) noexcept override {}
  void module_entered(std::uint32_t) noexcept override {}
  void module_exited(std::uint32_t) noexcept override {}
};

struct QuietObserver : nn::KernelObserver {
  int kernels = 0;
  void kernel_started(std::string_view) noexcept override { ++kernels; }
  void kernel_finished(std::string_view, const nn::KernelWork&) noexcept override {}
};

TEST(Profiler, RestoresTheListenerObserverAndRecordModeItReplaced) {
  for (const bool stop_first : {false, true}) {
    SCOPED_TRACE(stop_first ? "stopped" : "destroyed");
    nn::Runtime runtime(memory::parse_device("sim:t4-16g"));
    QuietListener listener;
    QuietObserver observer;
    memory::ScopeListener* const outer = memory::set_scope_listener(&listener);
    runtime.kernels().set_observer(&observer);
    runtime.allocator().record_history(memory::RecordMode::state, 77, false);
    {
      Profiler profiler(runtime, ProfilerOptions{.cpp_stacks = true, .max_entries = 1000});
      const auto during = runtime.allocator().history_settings();
      EXPECT_EQ(during.mode, memory::RecordMode::all);
      EXPECT_EQ(during.max_entries, 1000u);
      EXPECT_TRUE(during.cpp_stacks);
      EXPECT_NE(runtime.kernels().observer(), &observer);
      if (stop_first) (void)profiler.stop();
    }
    EXPECT_EQ(runtime.kernels().observer(), &observer);
    EXPECT_EQ(memory::set_scope_listener(outer), &listener);
    const auto after = runtime.allocator().history_settings();
    EXPECT_EQ(after.mode, memory::RecordMode::state);
    EXPECT_EQ(after.max_entries, 77u);
    EXPECT_FALSE(after.cpp_stacks);
    runtime.kernels().set_observer(nullptr);
  }
}

TEST(Profiler, WithoutKernelsRecordsNoKernelSpans) {
  nn::Runtime runtime(memory::parse_device("sim:t4-16g"));
  train::Trainer trainer(runtime, options_for(models()[0]));
  Profiler profiler(runtime, ProfilerOptions{.kernels = false});
  EXPECT_EQ(runtime.kernels().observer(), nullptr);
  trainer.step();
  const Recording r = profiler.stop();
  EXPECT_FALSE(r.spans.empty());
  EXPECT_TRUE(std::none_of(r.spans.begin(), r.spans.end(),
                           [](const Span& s) { return s.kind == SpanKind::kernel; }));
}

TEST(SpanKind, Names) {
  EXPECT_EQ(span_kind_name(SpanKind::phase), "phase");
  EXPECT_EQ(span_kind_name(SpanKind::module), "module");
  EXPECT_EQ(span_kind_name(SpanKind::kernel), "kernel");
}

}  // namespace
}  // namespace vramlab::profile

#include "common/profile/chrome_trace.h"

namespace vramlab::profile {
namespace {

// The trace has a lane per stream of the device's clock: a copy on a side stream shows beside
// the compute stream's kernels, at the clock's times, and the clock stops keeping spans after.
TEST(Profiler, TheTraceHasALanePerStreamWithTheClocksSpans) {
  nn::Runtime runtime(memory::parse_device("sim:a100-40g"));
  stream::Clock& clock = runtime.clock();
  const stream::StreamId side = clock.new_stream("copy h2d");
  const memory::Tensor t =
      runtime.allocate({3, 1000}, DType::f32, memory::MemoryCategory::activation, "t");
  std::vector<float> host(3000, 0.5f);  // (3, 1000)
  runtime.fill_zero(t);                 // before the recording: not in it
  clock.synchronize();                  // so both streams start from the host's time
  Recording recording;
  {
    Profiler profiler(runtime);
    runtime.copy_to_device_async(t, host.data(), side);
    runtime.fill_zero(t);
    recording = profiler.stop();
  }
  EXPECT_FALSE(clock.keeps_spans());
  ASSERT_EQ(recording.stream_names, (std::vector<std::string>{"compute", "copy h2d"}));
  ASSERT_EQ(recording.stream_spans.size(), 2u);
  const nlohmann::json trace = chrome_trace(recording);
  std::set<std::string> lanes;
  std::vector<nlohmann::json> placed;
  for (const nlohmann::json& event : trace.at("traceEvents")) {
    if (event.at("pid") != 1) continue;
    if (event.at("name") == "thread_name") lanes.insert(event.at("args").at("name"));
    if (event.at("ph") == "X") placed.push_back(event);
  }
  EXPECT_EQ(lanes, (std::set<std::string>{"stream 0: compute", "stream 1: copy h2d"}));
  ASSERT_EQ(placed.size(), 2u);
  EXPECT_EQ(placed[0].at("name"), "copy h2d");
  EXPECT_EQ(placed[0].at("tid"), side);
  EXPECT_NEAR(placed[0].at("dur").get<double>(), 12000 / 31.5076923e9 * 1e6, 1e-6);
  EXPECT_EQ(placed[1].at("name"), "fill_zero");
  EXPECT_EQ(placed[1].at("tid"), 0);
  // The copy and the kernel start together: neither waits for the other.
  EXPECT_DOUBLE_EQ(placed[0].at("ts").get<double>(), placed[1].at("ts").get<double>());
}

}  // namespace
}  // namespace vramlab::profile

#include "common/estimate/forward_flops.h"
#include "common/profile/op_table.h"

namespace vramlab::profile {
namespace {

// Each kernel span carries the work its call counted (nn::KernelWork): over two steps the spans'
// FLOPs are twice a step's, three times the estimator's forward; the op table sums them per op,
// and the trace puts them in each kernel's args as torch.profiler's with_flops does.
TEST(Profiler, KernelSpansCarryTheirWorkAndTheOpTableAndTraceShowIt) {
  for (const ModelConfig& model : models()) {
    SCOPED_TRACE(model.name);
    const Recording r = profile_two_steps("meta", model);
    const train::TrainOptions o = options_for(model);
    const double step = 3.0 * estimate::model_forward_flops(model, o.batch, o.seq);
    double flops = 0.0, linear_forward = 0.0;
    for (const Span& s : r.spans) {
      if (s.kind != SpanKind::kernel) {
        EXPECT_EQ(s.flops, 0.0) << describe(s);
        EXPECT_EQ(s.bytes, 0.0) << describe(s);
        continue;
      }
      EXPECT_GT(s.bytes, 0.0) << describe(s);
      flops += s.flops;
      if (s.name == "linear_forward") linear_forward += s.flops;
    }
    EXPECT_DOUBLE_EQ(flops, 2.0 * step);

    double table_flops = 0.0;
    for (const OpRow& row : op_table(r, OpGrouping::op)) {
      table_flops += row.flops;
      if (row.name == "linear_forward") {
        EXPECT_DOUBLE_EQ(row.flops, linear_forward);
      }
    }
    EXPECT_DOUBLE_EQ(table_flops, 2.0 * step);
    for (const OpRow& row : op_table(r, OpGrouping::module)) EXPECT_EQ(row.flops, 0.0) << row.name;

    double trace_flops = 0.0;
    const nlohmann::json trace = chrome_trace(r);
    for (const nlohmann::json& event : trace.at("traceEvents"))
      if (event.value("cat", "") == "kernel")
        trace_flops += event.at("args").at("flops").get<double>();
    EXPECT_DOUBLE_EQ(trace_flops, 2.0 * step);
  }
}

}  // namespace
}  // namespace vramlab::profile
