// bench_report: how fast vramlab writes a snapshot pickle and renders the HTML memory timeline for
// a training trace of ~100k events (the size at which PyTorch's viewer starts summarizing).
// Run: build/bench/bin/bench_report   (MB/s = pickle bytes produced per second)
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include "common/report/memory_timeline_html.h"
#include "common/snapshot/snapshot_pickle.h"
#include "tests/report/example_snapshot.h"

namespace {

// ~105k trace events: 48 layers, 45 steps (built once; building takes about a second).
const nlohmann::json& hundred_thousand_event_snapshot() {
  static const nlohmann::json snapshot = [] {
    vramlab::report::testing::ExampleWorkload workload;
    workload.layer_count = 48;
    workload.step_count = 45;
    workload.hidden_bytes = 256 * 1024;
    return vramlab::report::testing::make_example_snapshot(workload);
  }();
  return snapshot;
}

void BM_EncodePickle100kEvents(benchmark::State& state) {
  const nlohmann::json& snapshot = hundred_thousand_event_snapshot();
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string pickle = vramlab::snapshot::encode_pickle(snapshot);
    bytes = pickle.size();
    benchmark::DoNotOptimize(pickle.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["events"] = static_cast<double>(snapshot["device_traces"][0].size());
  state.counters["pickle_MiB"] = static_cast<double>(bytes) / (1 << 20);
}
BENCHMARK(BM_EncodePickle100kEvents)->Unit(benchmark::kMillisecond);

void BM_RenderTimelineHtml100kEvents(benchmark::State& state) {
  const nlohmann::json& snapshot = hundred_thousand_event_snapshot();
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string page = vramlab::report::render_memory_timeline_html(snapshot, "bench");
    bytes = page.size();
    benchmark::DoNotOptimize(page.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["page_MiB"] = static_cast<double>(bytes) / (1 << 20);
}
BENCHMARK(BM_RenderTimelineHtml100kEvents)->Unit(benchmark::kMillisecond);

}  // namespace
