// Lesson 04's measurements: one strategy's run on N ranks, under mpirun or as simulated ranks
// (see zero_runs.h).
#include "lessons/04-zero/zero_runs.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "common/dist/launch_ranks.h"
#include "common/dist/shard_layout.h"
#include "common/estimate/estimator.h"
#include "common/memory/history.h"
#include "common/nn/runtime.h"
#include "common/nn/step_observer.h"
#include "common/platform/errors.h"
#include "common/train/trainer.h"

namespace vramlab::lesson04 {

namespace {

using memory::MemoryCategory;
using nlohmann::json;

constexpr size_t index_of(MemoryCategory c) {
  return static_cast<size_t>(c);
}

// Rank 0's record of where each phase ran on the allocator's trace (the whole forward and
// backward left out: they enclose the others).
class SpanRecorder final : public nn::StepObserver {
 public:
  explicit SpanRecorder(memory::CachingAllocator& allocator) : allocator_(allocator) {}
  void before(const nn::PhaseEvent& event) override {
    if (!enclosing(event))
      open_ = {std::string(nn::step_phase_name(event.phase)), event.layer,
               static_cast<int64_t>(allocator_.trace().size()), 0};
  }
  void after(const nn::PhaseEvent& event) override {
    if (enclosing(event) || !recording_) return;
    open_.last_event = static_cast<int64_t>(allocator_.trace().size());
    spans_.push_back(open_);
  }
  void start() { recording_ = true; }
  static bool enclosing(const nn::PhaseEvent& event) {
    return event.phase == nn::StepPhase::forward || event.phase == nn::StepPhase::backward;
  }
  [[nodiscard]] const std::vector<PhaseSpan>& spans() const { return spans_; }

 private:
  memory::CachingAllocator& allocator_;
  bool recording_ = false;
  PhaseSpan open_;
  std::vector<PhaseSpan> spans_;
};

// The live requested bytes per category along the trace, from what was live when it started.
std::vector<TimelinePoint> timeline_of(
    const std::vector<memory::TraceEntry>& trace,
    const std::array<int64_t, memory::kMemoryCategoryCount>& live_at_start) {
  std::vector<TimelinePoint> points;
  std::array<int64_t, memory::kMemoryCategoryCount> live = live_at_start;
  for (size_t i = 0; i < trace.size(); ++i) {
    const memory::TraceEntry& e = trace[i];
    const bool alloc = e.action == memory::TraceAction::alloc;
    if (!alloc && e.action != memory::TraceAction::free_requested) continue;
    const int64_t size = static_cast<int64_t>(e.size);
    live[index_of(e.category)] += alloc ? size : -size;
    points.push_back({static_cast<int64_t>(i), live, e.name, alloc, e.category, size});
  }
  return points;
}

json stats_to_json(const dist::CommunicationStats& s) {
  json calls = json::array();
  for (size_t c = 0; c < dist::kCollectiveCount; ++c)
    for (size_t t = 0; t < dist::kTrafficCount; ++t) {
      const dist::CallCounts& k = s.calls[c][t];
      if (k.calls == 0) continue;
      calls.push_back({{"collective", c},
                       {"traffic", t},
                       {"calls", k.calls},
                       {"bytes_sent", k.bytes_sent},
                       {"bytes_received", k.bytes_received},
                       {"seconds", k.seconds}});
    }
  return calls;
}

dist::CommunicationStats stats_from_json(const json& j) {
  dist::CommunicationStats s;
  for (const json& k : j) {
    dist::CallCounts& c =
        s.calls.at(k.at("collective").get<size_t>()).at(k.at("traffic").get<size_t>());
    c.calls = k.at("calls");
    c.bytes_sent = k.at("bytes_sent");
    c.bytes_received = k.at("bytes_received");
    c.seconds = k.at("seconds");
  }
  return s;
}

json states_to_json(const ModelStates& m) {
  return {{"parameters", m.parameters},
          {"gradients", m.gradients},
          {"optimizer_states", m.optimizer_states}};
}

ModelStates states_from_json(const json& j) {
  return {j.at("parameters"), j.at("gradients"), j.at("optimizer_states")};
}

StrategyRun strategy_header(const RunSettings& settings, dist::ZeroStage stage, int64_t world_size,
                            std::string backend) {
  StrategyRun run;
  run.stage = stage;
  run.world_size = world_size;
  run.backend = std::move(backend);
  run.device = settings.device.name();
  run.precision = settings.precision;
  run.parameter_count = settings.model.parameter_count();
  run.padded_parameter_count =
      dist::ShardLayout(settings.model.parameters(), world_size).padded_numel();
  return run;
}

}  // namespace

int64_t RankRun::model_bytes_sent() const {
  return last_step.of(dist::Traffic::gradients).bytes_sent +
         last_step.of(dist::Traffic::parameters).bytes_sent;
}

const std::vector<double>& StrategyRun::losses() const {
  static const std::vector<double> kNone;
  return ranks.empty() ? kNone : ranks.front().losses;
}

bool StrategyRun::equals_estimate() const {
  return !ranks.empty() && std::all_of(ranks.begin(), ranks.end(), [](const RankRun& r) {
    return r.model_state == r.estimate;
  });
}

int64_t StrategyRun::model_state_spread() const {
  if (ranks.empty()) return 0;
  const auto [lo, hi] =
      std::minmax_element(ranks.begin(), ranks.end(), [](const RankRun& a, const RankRun& b) {
        return a.model_state.total() < b.model_state.total();
      });
  return hi->model_state.total() - lo->model_state.total();
}

double paper_bytes_per_step(dist::ZeroStage stage, int64_t parameter_count, int64_t world_size,
                            int64_t element_bytes) {
  if (world_size < 1)
    throw UsageError("the rank count must be >= 1, got " + std::to_string(world_size));
  const double passes = stage == dist::ZeroStage::parameters ? 3.0 : 2.0;
  return passes * static_cast<double>(parameter_count) * static_cast<double>(world_size - 1) /
         static_cast<double>(world_size) * static_cast<double>(element_bytes);
}

ModelStates estimated_model_states(const ModelConfig& model, amp::Precision precision,
                                   dist::ZeroStage stage, int64_t world_size) {
  estimate::EstimateInputs in;
  in.model = model;
  in.seq = 1;
  in.plan.amp.precision = precision;
  in.plan.optimizer.name = estimate::Optimizer::adamw;
  in.plan.parallel.zero = stage;
  in.plan.parallel.data_parallel = world_size;
  const estimate::Estimate e = estimate::estimate_memory(in);
  return {e.parameters.bytes, e.gradients.bytes, e.optimizer_states.bytes};
}

RankRun run_rank(dist::Communicator& comm, const RunSettings& settings, dist::ZeroStage stage,
                 std::vector<TimelinePoint>* timeline, std::vector<PhaseSpan>* spans) {
  if (settings.steps < 1)
    throw UsageError("--steps must be >= 1, got " + std::to_string(settings.steps));
  train::TrainOptions options;
  options.model = settings.model;
  options.batch = settings.batch;
  options.seq = settings.seq;
  options.seed = settings.seed;
  options.plan.optimizer.learning_rate = settings.learning_rate;
  options.plan.optimizer.name = estimate::Optimizer::adamw;
  options.plan.amp.precision = settings.precision;
  options.plan.recompute = settings.recompute;
  // Zeroed, not released: after each step the allocator holds the gradients too, so the model
  // states read there are all three.
  options.grads_to_none = false;
  options.set_groups(&comm);
  options.plan.parallel.zero = stage;
  options.plan.parallel.prefetch = settings.prefetch;

  RankRun run;
  run.rank = comm.rank();
  nn::Runtime runtime(settings.device);
  memory::CachingAllocator& allocator = runtime.allocator();
  const bool records = settings.timeline && comm.rank() == 0 && timeline != nullptr;
  train::Trainer trainer(runtime, options);
  SpanRecorder recorder(allocator);
  if (records) trainer.add_observer(recorder);
  std::array<int64_t, memory::kMemoryCategoryCount> live_at_start{};
  for (int64_t s = 1; s <= settings.steps; ++s) {
    if (records && s == settings.steps) {
      const memory::CategoryStats now = allocator.category_stats();
      for (const MemoryCategory c : memory::kAllMemoryCategories)
        live_at_start[index_of(c)] = now.requested(c).current;
      allocator.record_history(memory::RecordMode::all);
      recorder.start();
    }
    const train::StepResult step = trainer.step();
    run.losses.push_back(step.loss);
    run.seconds += step.seconds;
    run.last_step = step.communication;
  }
  if (records) {
    trainer.remove_observer(recorder);
    *timeline = timeline_of(allocator.trace(), live_at_start);
    if (spans) *spans = recorder.spans();
    allocator.record_history(memory::RecordMode::off);
  }
  const memory::CategoryStats stats = allocator.category_stats();
  run.model_state = {stats.requested(MemoryCategory::parameter).current,
                     stats.requested(MemoryCategory::gradient).current,
                     stats.requested(MemoryCategory::optimizer_state).current};
  if (const dist::DataParallel* dp = trainer.data_parallel())
    run.gathered_peak_bytes = dp->gathered_peak_bytes();
  const train::MemoryReport report = trainer.memory_report();
  run.peak_bytes = report.peak_total_bytes;
  for (size_t c = 0; c < memory::kMemoryCategoryCount; ++c)
    run.peak_by_category[c] = report.peak_bytes[c];
  run.estimate =
      estimated_model_states(settings.model, settings.precision, stage, comm.world_size());
  return run;
}

StrategyRun run_strategy(const RunSettings& settings, dist::ZeroStage stage,
                         const dist::LaunchSpec& spec) {
  StrategyRun run = strategy_header(settings, stage, dist::launched_world_size(spec),
                                    spec.simulate_ranks > 0 ? "simulated" : "mpi");
  dist::launch_ranks(spec, [&](const dist::LaunchedRank& rank) {
    const RankRun mine = rank.speaks()
                             ? run_rank(*rank.world, settings, stage, &run.timeline, &run.spans)
                             : run_rank(*rank.world, settings, stage);
    const std::vector<std::string> all = dist::gather_to_rank0(rank, rank_to_json(mine).dump());
    // Rank 0 of this process writes run.ranks; the others (threads or processes) only send.
    if (!rank.speaks()) return;
    for (const std::string& text : all) run.ranks.push_back(rank_from_json(json::parse(text)));
  });
  return run;
}

StrategyRun run_simulated(const RunSettings& settings, dist::ZeroStage stage, int64_t world_size) {
  return run_strategy(settings, stage,
                      {world_size, 1, settings.device.kind == memory::DeviceKind::meta});
}

json rank_to_json(const RankRun& r) {
  return {{"rank", r.rank},
          {"model_state", states_to_json(r.model_state)},
          {"estimate", states_to_json(r.estimate)},
          {"peak_bytes", r.peak_bytes},
          {"peak_by_category", r.peak_by_category},
          {"gathered_peak_bytes", r.gathered_peak_bytes},
          {"last_step", stats_to_json(r.last_step)},
          {"losses", r.losses},
          {"seconds", r.seconds}};
}

RankRun rank_from_json(const json& j) {
  RankRun r;
  r.rank = j.at("rank");
  r.model_state = states_from_json(j.at("model_state"));
  r.estimate = states_from_json(j.at("estimate"));
  r.peak_bytes = j.at("peak_bytes");
  r.peak_by_category = j.at("peak_by_category");
  r.gathered_peak_bytes = j.at("gathered_peak_bytes");
  r.last_step = stats_from_json(j.at("last_step"));
  r.losses = j.at("losses").get<std::vector<double>>();
  r.seconds = j.at("seconds");
  return r;
}

}  // namespace vramlab::lesson04
