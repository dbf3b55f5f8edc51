// Lesson 04's exercises beside the runtime (see exercise_results.h).
#include "lessons/04-zero/exercise_results.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <random>
#include <span>

#include "common/dist/shard_layout.h"
#include "common/dist/simulated_communicator.h"
#include "lessons/04-zero/api/model_state_per_rank.h"
#include "lessons/04-zero/api/ring_collectives.h"
#include "lessons/04-zero/api/shard_ranges.h"
#include "lessons/04-zero/api/zero3_schedule.h"

namespace vramlab::lesson04 {

namespace {

using dist::ZeroStage;

// Runs one exercise; a stub's NOT IMPLEMENTED (or any error) becomes the line's text.
template <typename F>
ExerciseResult attempt(const std::string& id, F&& f) {
  ExerciseResult r{id, false, false, ""};
  try {
    f(r);
    r.ran = true;
  } catch (const std::exception& e) {
    r.text = e.what();
    r.text = r.text.substr(0, r.text.find('\n'));
  }
  return r;
}

int64_t element_bytes(amp::Precision p) {
  return p == amp::Precision::fp32 ? 4 : 2;
}

// 04.1: every unit's shard on every rank, against the runtime's layout; the ZeRO-3 parameter
// bytes they add up to, against what rank 0 held.
ExerciseResult shards(const Lesson& lesson) {
  return attempt("04.1", [&](ExerciseResult& r) {
    const StrategyRun* z3 = find(lesson.training, ZeroStage::parameters);
    const int64_t n = z3 ? z3->world_size : lesson.settings.ranks;
    const dist::ShardLayout layout(lesson.settings.train.model.parameters(), n);
    int64_t shard = 0, wrong = 0;
    for (const dist::ShardUnit& u : layout.units())
      for (int64_t rank = 0; rank < n; ++rank) {
        const dist::ShardRange mine = shard_range(u.numel, n, rank);
        const dist::ShardRange runtime = dist::shard_range(u.numel, n, rank);
        wrong += mine.first != runtime.first || mine.count != runtime.count ||
                 mine.padding != runtime.padding;
        if (rank == 0) shard += mine.count;
      }
    r.agrees = wrong == 0;
    r.text = std::to_string(layout.units().size()) + " units x " + std::to_string(n) + " ranks, " +
             std::to_string(wrong) + " ranges unlike dist::ShardLayout's; a shard of " +
             std::to_string(shard) + " elements";
    if (z3) {
      const int64_t bytes = shard * element_bytes(z3->precision);
      r.agrees = r.agrees && bytes == z3->ranks.front().model_state.parameters;
      r.text += " = " + std::to_string(bytes) + " B of zero3 parameters (measured " +
                std::to_string(z3->ranks.front().model_state.parameters) + ")";
    }
  });
}

// 04.2: the learner's ring all-reduce on N simulated ranks against the communicator's, on random
// data of the model's size: the sums (within the reordering bound) and the bytes each rank sent.
ExerciseResult ring(const Lesson& lesson) {
  return attempt("04.2", [&](ExerciseResult& r) {
    const int64_t n =
        lesson.training.empty() ? lesson.settings.ranks : lesson.training.front().world_size;
    const int64_t psi = lesson.settings.train.model.parameter_count();
    std::vector<double> worst(static_cast<size_t>(n), 0.0);    // (N) max |diff| / bound
    std::vector<int64_t> sent(static_cast<size_t>(n), 0);      // (N) bytes the ring sent
    std::vector<int64_t> expected(static_cast<size_t>(n), 0);  // (N) the ring count
    dist::run_simulated_ranks(n, true, [&](dist::Communicator& comm) {
      std::mt19937_64 rng(1000 + static_cast<uint64_t>(comm.rank()));
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> mine(static_cast<size_t>(psi));  // (Ψ) this rank's "gradients"
      for (float& x : mine) x = normal(rng);
      std::vector<float> reference = mine;        // (Ψ)
      std::vector<float> magnitude(mine.size());  // (Ψ) |x|, summed for the rounding bound
      for (size_t i = 0; i < mine.size(); ++i) magnitude[i] = std::abs(mine[i]);
      comm.all_reduce(memory::TensorView(reference.data(), DType::f32, {psi}),
                      dist::Traffic::other);
      comm.all_reduce(memory::TensorView(magnitude.data(), DType::f32, {psi}),
                      dist::Traffic::other);
      comm.reset_stats();
      ring_all_reduce(comm, std::span<float>(mine));
      const auto k = static_cast<size_t>(comm.rank());
      sent[k] = comm.stats().of(dist::Collective::send).bytes_sent;
      expected[k] = dist::ring_bytes_sent(dist::Collective::all_reduce, psi, 4, comm.rank(), n);
      // Any order of N float additions is within (N − 1)·ε·Σ|x| of the exact sum, so two orders
      // are within twice that of each other.
      const double eps = 0x1p-24;
      for (size_t i = 0; i < mine.size(); ++i) {
        const double bound = 2.0 * static_cast<double>(n - 1) * eps * magnitude[i] + 1e-30;
        worst[k] =
            std::max(worst[k], std::abs(static_cast<double>(mine[i] - reference[i])) / bound);
      }
    });
    const double worst_all = *std::max_element(worst.begin(), worst.end());
    r.agrees = worst_all <= 1.0 && sent == expected;
    r.text = std::to_string(n) + " ranks x " + std::to_string(psi) + " floats: sums within " +
             std::to_string(static_cast<int>(std::ceil(100.0 * worst_all))) +
             "% of the reordering bound; rank 0 sent " + std::to_string(sent.front()) +
             " B (the ring's count: " + std::to_string(expected.front()) + ")";
  });
}

// 04.3: ZeRO-3's peak of gathered parameters predicted from the schedule, against the peak the
// strategy counted on rank 0.
ExerciseResult gathered_peak(const Lesson& lesson) {
  return attempt("04.3", [&](ExerciseResult& r) {
    const StrategyRun* z3 = find(lesson.training, ZeroStage::parameters);
    const int64_t n = z3 ? z3->world_size : lesson.settings.ranks;
    const ModelConfig& model = lesson.settings.train.model;
    Zero3Schedule s;
    const dist::ShardLayout layout(model.parameters(), n);
    for (const dist::ShardUnit& u : layout.units()) s.unit_numel.push_back(u.numel);
    if (s.unit_numel.size() == static_cast<size_t>(model.layers) + 1) s.unit_numel.push_back(0);
    s.element_bytes = element_bytes(lesson.settings.train.precision);
    s.world_size = n;
    s.tied_embeddings = model.tied_embeddings;
    s.prefetch = lesson.settings.train.prefetch;
    const int64_t predicted = zero3_peak_gathered_bytes(s);
    r.text = "zero3_peak_gathered_bytes = " + std::to_string(predicted);
    r.agrees = true;
    if (z3) {
      r.agrees = predicted == z3->ranks.front().gathered_peak_bytes;
      r.text += " (measured " + std::to_string(z3->ranks.front().gathered_peak_bytes) + ")";
    }
  });
}

// 04.4: one rank's model-state bytes for every stage the lesson ran, against rank 0's.
ExerciseResult state_bytes(const Lesson& lesson) {
  return attempt("04.4", [&](ExerciseResult& r) {
    const ModelConfig& model = lesson.settings.train.model;
    const std::vector<ParameterSpec> specs = model.parameters();
    r.agrees = true;
    for (const StrategyRun& run : lesson.training) {
      const dist::ShardLayout layout(specs, run.world_size);
      ParallelModelStates states;
      for (size_t t = 0; t < specs.size(); ++t)
        states.tensors.push_back(
            {specs[t].numel(), layout.unit_of_tensor(static_cast<int64_t>(t)), false});
      states.precision = run.precision;
      states.stage = run.stage;
      states.data_parallel = run.world_size;
      const RankModelStateBytes mine = model_state_bytes_per_rank(states);
      const ModelStates& measured = run.ranks.front().model_state;
      const bool same = mine.parameters == measured.parameters &&
                        mine.gradients == measured.gradients &&
                        mine.optimizer_states == measured.optimizer_states;
      r.agrees = r.agrees && same;
      r.text += (r.text.empty() ? "" : ", ") + std::string(dist::zero_stage_name(run.stage)) + " " +
                std::to_string(mine.parameters + mine.gradients + mine.optimizer_states) +
                (same ? " B" : " B (measured " + std::to_string(measured.total()) + ")");
    }
  });
}

}  // namespace

std::vector<ExerciseResult> exercise_results(const Lesson& lesson) {
  return {shards(lesson), ring(lesson), gathered_peak(lesson), state_bytes(lesson)};
}

}  // namespace vramlab::lesson04
