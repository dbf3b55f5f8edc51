// Lesson 04's runs, tables and JSON (see zero_report.h).
#include "lessons/04-zero/zero_report.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/dtype/dtype.h"
#include "common/model/model_flags.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/report/text_wrap.h"

namespace vramlab::lesson04 {

namespace {

using dist::Traffic;
using dist::ZeroStage;
using nlohmann::json;
using report::Align;
using report::wrap_note;

std::string stage_text(ZeroStage s) {
  return std::string(dist::zero_stage_name(s));
}

std::string per_param(int64_t bytes, int64_t psi) {
  return report::format_fixed(
      static_cast<double>(bytes) / static_cast<double>(std::max<int64_t>(1, psi)), 2);
}

// 2 bytes per element moved under mixed or pure 16-bit precision, 4 in fp32.
int64_t element_bytes(amp::Precision p) {
  return p == amp::Precision::fp32 ? 4 : 2;
}

std::string model_text(const ModelConfig& m) {
  return m.name + " (L=" + std::to_string(m.layers) + ", C=" + std::to_string(m.hidden) +
         ", H=" + std::to_string(m.heads) + ", V=" + std::to_string(m.vocab) + ")";
}

std::string paper_formula(ZeroStage s) {
  switch (s) {
    case ZeroStage::ddp:
      return "2Ψ + 2Ψ + 12Ψ";
    case ZeroStage::optimizer_states:
      return "2Ψ + 2Ψ + 12Ψ/N";
    case ZeroStage::gradients:
      return "2Ψ + (2Ψ + 12Ψ)/N";
    case ZeroStage::parameters:
      return "(2Ψ + 2Ψ + 12Ψ)/N";
  }
  return "";
}

RunSettings scale_settings(const LessonSettings& s, const ModelConfig& model,
                           amp::Precision precision, int64_t seq) {
  RunSettings r;
  r.model = model;
  r.batch = 1;
  r.seq = std::min<int64_t>(seq, model.max_seq);
  r.device = memory::parse_device("meta");
  r.seed = s.train.seed;
  // Two steps: the first makes the optimizer states after its backward, so only the second
  // holds them together with the activations and the gathered units, as every later step does.
  r.steps = 2;
  r.precision = precision;
  r.learning_rate = s.train.learning_rate;
  return r;
}

void say(void (*progress)(const std::string&), const std::string& line) {
  if (progress) progress(line);
}

}  // namespace

std::string gb(double bytes) {
  return report::format_fixed(bytes / 1e9, 2) + " GB";
}

ModelConfig figure1_model() {
  ModelFlags flags;
  flags.family = "gpt2";
  flags.layers = 36;
  flags.hidden = 4096;
  flags.heads = 32;
  flags.vocab = 50257;
  flags.max_seq = 1024;
  ModelConfig m = flags.build();
  m.name = "gpt-7.5b";
  return m;
}

std::vector<StrategyRun> run_training(const LessonSettings& settings, bool under_mpirun,
                                      void (*progress)(const std::string&)) {
  std::vector<StrategyRun> runs;
  RunSettings train = settings.train;
  const dist::LaunchSpec spec{under_mpirun ? 0 : settings.ranks, 1,
                              train.device.kind == memory::DeviceKind::meta};
  const int64_t n = dist::launched_world_size(spec);
  for (const ZeroStage stage : settings.stages) {
    train.timeline = stage == ZeroStage::parameters;
    std::string line = "training " + std::to_string(train.steps) + " steps on " + std::to_string(n);
    line += under_mpirun ? " mpi" : " simulated";
    line += " ranks: ";
    line += stage_text(stage);
    say(progress, line);
    runs.push_back(run_strategy(train, stage, spec));
  }
  return runs;
}

void run_scale(Lesson& lesson, void (*progress)(const std::string&)) {
  const LessonSettings& s = lesson.settings;
  for (const ZeroStage stage : kStages) {
    say(progress, "at scale on meta: " + s.figure1_model.name + " on " +
                      std::to_string(s.figure1_ranks) + " ranks, " + stage_text(stage));
    lesson.figure1.push_back(
        run_simulated(scale_settings(s, s.figure1_model, amp::Precision::mixed_bf16, 1024), stage,
                      s.figure1_ranks));
  }
  for (const ZeroStage stage : kStages) {
    say(progress, "at scale on meta: " + s.seed_model.name + " on " + std::to_string(s.seed_ranks) +
                      " ranks, " + stage_text(stage));
    lesson.seed_bf16.push_back(run_simulated(
        scale_settings(s, s.seed_model, amp::Precision::bf16, 4096), stage, s.seed_ranks));
    lesson.seed_mixed.push_back(run_simulated(
        scale_settings(s, s.seed_model, amp::Precision::mixed_bf16, 4096), stage, s.seed_ranks));
  }
  say(progress, "at scale on meta: " + s.big_model.name + " on " + std::to_string(s.big_ranks) +
                    " ranks, zero3");
  RunSettings big = scale_settings(s, s.big_model, amp::Precision::mixed_bf16, s.big_seq);
  big.recompute = recompute::parse_recompute_spec("full");
  lesson.big.push_back(run_simulated(big, ZeroStage::parameters, s.big_ranks));
}

const StrategyRun* find(const std::vector<StrategyRun>& runs, ZeroStage stage) {
  for (const StrategyRun& r : runs)
    if (r.stage == stage) return &r;
  return nullptr;
}

double loss_difference(const Lesson& lesson, ZeroStage stage) {
  const StrategyRun* ddp = find(lesson.training, ZeroStage::ddp);
  const StrategyRun* run = find(lesson.training, stage);
  if (!ddp || !run || ddp->losses().size() != run->losses().size()) return NAN;
  double worst = 0.0;
  for (size_t i = 0; i < ddp->losses().size(); ++i) {
    const double a = run->losses()[i], b = ddp->losses()[i];
    worst = std::max(worst, b == 0.0 ? std::abs(a - b) : std::abs(a - b) / std::abs(b));
  }
  return worst;
}

bool losses_bitwise_equal(const Lesson& lesson, ZeroStage stage) {
  const StrategyRun* ddp = find(lesson.training, ZeroStage::ddp);
  const StrategyRun* run = find(lesson.training, stage);
  if (!ddp || !run || ddp->losses().size() != run->losses().size()) return false;
  return std::memcmp(ddp->losses().data(), run->losses().data(),
                     ddp->losses().size() * sizeof(double)) == 0;
}

bool reduction_order_fixed(const Lesson& lesson) {
  if (lesson.training.empty()) return true;
  const StrategyRun& r = lesson.training.front();
  return r.backend == "simulated" || r.world_size <= 2;
}

json run_to_json(const StrategyRun& run) {
  json j;
  j["strategy"] = stage_text(run.stage);
  j["world_size"] = run.world_size;
  j["backend"] = run.backend;
  j["device"] = run.device;
  j["precision"] = std::string(amp::precision_name(run.precision));
  j["parameter_count"] = run.parameter_count;
  j["padded_parameter_count"] = run.padded_parameter_count;
  j["paper_bytes_per_step"] = paper_bytes_per_step(run.stage, run.parameter_count, run.world_size,
                                                   element_bytes(run.precision));
  j["equals_estimator"] = run.equals_estimate();
  j["per_rank"] = json::array();
  for (const RankRun& r : run.ranks) {
    json traffic;
    for (size_t t = 0; t < dist::kTrafficCount; ++t)
      traffic[std::string(dist::traffic_name(static_cast<Traffic>(t)))] =
          r.last_step.of(static_cast<Traffic>(t)).bytes_sent;
    json calls;
    for (size_t c = 0; c < dist::kCollectiveCount; ++c) {
      const auto collective = static_cast<dist::Collective>(c);
      if (const int64_t n = r.last_step.of(collective).calls; n > 0)
        calls[std::string(dist::collective_name(collective))] = n;
    }
    json peaks;
    for (const memory::MemoryCategory c : memory::kAllMemoryCategories)
      peaks[std::string(memory::category_name(c))] = r.peak_by_category[static_cast<size_t>(c)];
    j["per_rank"].push_back({{"rank", r.rank},
                             {"model_state_bytes",
                              {{"parameters", r.model_state.parameters},
                               {"gradients", r.model_state.gradients},
                               {"optimizer_states", r.model_state.optimizer_states}}},
                             {"estimator_bytes",
                              {{"parameters", r.estimate.parameters},
                               {"gradients", r.estimate.gradients},
                               {"optimizer_states", r.estimate.optimizer_states}}},
                             {"peak_bytes", r.peak_bytes},
                             {"peak_bytes_by_category", peaks},
                             {"gathered_peak_bytes", r.gathered_peak_bytes},
                             {"bytes_sent", r.bytes_sent()},
                             {"bytes_sent_by_traffic", traffic},
                             {"calls", calls},
                             {"seconds", r.seconds}});
  }
  j["losses"] = run.losses();
  return j;
}

json to_json(const Lesson& lesson) {
  const LessonSettings& s = lesson.settings;
  json j;
  j["lesson"] = "04";
  j["launch"] = lesson.launch;
  const ModelConfig& m = s.train.model;
  j["model"] = {{"name", m.name},
                {"layers", m.layers},
                {"hidden", m.hidden},
                {"heads", m.heads},
                {"vocab", m.vocab},
                {"parameter_count", m.parameter_count()},
                {"batch", s.train.batch},
                {"seq", s.train.seq},
                {"steps", s.train.steps},
                {"precision", std::string(amp::precision_name(s.train.precision))},
                {"device", s.train.device.name()},
                {"seed", s.train.seed}};
  if (!lesson.training.empty()) {
    j["world_size"] = lesson.training.front().world_size;
    j["backend"] = lesson.training.front().backend;
  }
  j["reduction_order_fixed"] = reduction_order_fixed(lesson);
  j["runs"] = json::array();
  for (const StrategyRun& r : lesson.training) {
    json o = run_to_json(r);
    const double diff = loss_difference(lesson, r.stage);
    o["loss_vs_ddp"] = std::isfinite(diff) ? json(diff) : json(nullptr);
    o["losses_bitwise_ddp"] = losses_bitwise_equal(lesson, r.stage);
    j["runs"].push_back(std::move(o));
  }
  // One strategy (--strategies S): its run is also the top-level object, the shape
  // {strategy, world_size, per_rank, losses}, so a script needs no runs[0].
  if (j["runs"].size() == 1)
    for (const char* key : {"strategy", "per_rank", "losses"}) j[key] = j["runs"][0][key];
  json scale = json::object();
  const auto runs = [](const std::vector<StrategyRun>& v) {
    json a = json::array();
    for (const StrategyRun& r : v) {
      json o = run_to_json(r);
      // Every rank of a meta run holds the same bytes: rank 0 stands for them (the spread says
      // how far the others are).
      o["per_rank"] = json::array({o["per_rank"][0]});
      o["model_state_spread_bytes"] = r.model_state_spread();
      a.push_back(std::move(o));
    }
    return a;
  };
  if (!lesson.figure1.empty()) scale["figure1"] = runs(lesson.figure1);
  if (!lesson.seed_bf16.empty()) scale["seed_7b_bf16"] = runs(lesson.seed_bf16);
  if (!lesson.seed_mixed.empty()) scale["seed_7b_mixed_bf16"] = runs(lesson.seed_mixed);
  if (!lesson.big.empty()) {
    scale["llama2_70b_zero3"] = runs(lesson.big);
    scale["llama2_70b_capacity_bytes"] = s.big_capacity_bytes;
  }
  j["scale"] = scale;
  return j;
}

namespace {

void add_state_rows(report::Table& t, const StrategyRun& run) {
  const RankRun& r = run.ranks.front();
  const int64_t psi = run.parameter_count;
  t.add_row({stage_text(run.stage), report::format_bytes_or_zero(r.model_state.parameters),
             report::format_bytes_or_zero(r.model_state.gradients),
             report::format_bytes_or_zero(r.model_state.optimizer_states),
             report::format_bytes_or_zero(r.model_state.total()),
             per_param(r.model_state.total(), psi), paper_formula(run.stage),
             run.equals_estimate() ? "yes, every rank" : "NO",
             report::format_bytes_or_zero(r.peak_bytes)});
}

// The ZeRO-3 timeline of one block on rank 0: the block's forward and backward spans, with the
// gathered bytes before each and the activations it left.
std::string timeline_text(const StrategyRun& run, int64_t layer) {
  std::string out;
  const auto live_at = [&](int64_t event, memory::MemoryCategory c) -> int64_t {
    int64_t bytes = -1;
    for (const TimelinePoint& p : run.timeline)
      if (p.event < event) bytes = p.bytes[static_cast<size_t>(c)];
    return bytes;
  };
  using memory::MemoryCategory;
  report::Table t({{"phase"},
                   {"parameters before", Align::kRight},
                   {"gathered", Align::kRight},
                   {"activations before", Align::kRight},
                   {"after", Align::kRight},
                   {"parameters after", Align::kRight}});
  for (const PhaseSpan& span : run.spans) {
    if (span.layer != layer) continue;
    // The gather happened just before the span opened (the strategy's before() runs first):
    // the parameter allocations since the previous span closed.
    int64_t previous_end = 0;
    for (const PhaseSpan& other : run.spans)
      if (other.last_event <= span.first_event)
        previous_end = std::max(previous_end, other.last_event);
    int64_t gathered = 0;
    for (const TimelinePoint& p : run.timeline)
      if (p.event >= previous_end && p.event < span.first_event && p.alloc &&
          p.category == MemoryCategory::parameter)
        gathered += p.size;
    const int64_t params_before = live_at(previous_end + 1, MemoryCategory::parameter);
    t.add_row({span.phase + " " + std::to_string(span.layer),
               report::format_bytes_or_zero(params_before),
               "+" + report::format_bytes_or_zero(gathered),
               report::format_bytes_or_zero(live_at(span.first_event, MemoryCategory::activation)),
               report::format_bytes_or_zero(live_at(span.last_event, MemoryCategory::activation)),
               report::format_bytes_or_zero(live_at(span.last_event, MemoryCategory::parameter))});
  }
  if (t.row_count() == 0) return out;
  out += t.render(false);
  return out;
}

}  // namespace

std::string render_text(const Lesson& lesson, bool colour) {
  const LessonSettings& s = lesson.settings;
  const ModelConfig& m = s.train.model;
  std::string out;
  out += report::style::bold("Lesson 04: ZeRO 1/2/3 and FSDP", colour) + "\n\n";
  if (!lesson.launch.empty()) out += wrap_note(lesson.launch);
  if (!lesson.training.empty()) {
    const StrategyRun& first = lesson.training.front();
    const int64_t psi = m.parameter_count();
    out += "\n" + std::to_string(first.world_size) + " " + first.backend + " ranks training " +
           model_text(m) + ", Ψ = " + report::format_count(psi) + ", B=" + std::to_string(s.train.batch) +
           " sequences per rank, T=" + std::to_string(s.train.seq) + ", " +
           std::to_string(s.train.steps) + " steps per strategy, AdamW, " +
           std::string(amp::precision_name(s.train.precision)) + ", on " + s.train.device.name() +
           "\n";
    out += "\nPer rank after the last step (rank 0; every rank holds the same bytes)\n";
    report::Table t({{"strategy"},
                     {"parameters", Align::kRight},
                     {"gradients", Align::kRight},
                     {"optimizer states", Align::kRight},
                     {"model states", Align::kRight},
                     {"B/param", Align::kRight},
                     {"ZeRO's formula"},
                     {"= estimator"},
                     {"peak", Align::kRight}});
    for (const StrategyRun& r : lesson.training) add_state_rows(t, r);
    out += t.render(colour);
    out += wrap_note(
        "bytes: what the allocator's parameter, gradient and optimizer_state categories hold "
        "(requested bytes) after the last step; under mixed precision a parameter is 2 bytes, "
        "its gradient 2, and AdamW keeps the fp32 master, m and v: 12. N = " +
        std::to_string(first.world_size) + ", so ZeRO-3 holds 16/N = " +
        report::format_fixed(16.0 / static_cast<double>(first.world_size), 2) +
        " B/param plus FSDP's padding (Ψ' = " + report::format_count(first.padded_parameter_count) +
        " elements, every unit padded to a multiple of N). \"yes\": every rank's three numbers "
        "equal `vramlab estimate --zero K --dp N` to the byte. peak: the allocator's most bytes "
        "at once (rounded blocks), activations and the gathered units included.");

    out += "\nBytes sent per rank in one step, beside the ZeRO paper's volumes (§7)\n";
    report::Table c({{"strategy"},
                     {"gradients", Align::kRight},
                     {"parameters", Align::kRight},
                     {"metrics", Align::kRight},
                     {"paper's", Align::kRight},
                     {"measured / paper", Align::kRight},
                     {"vs ddp", Align::kRight},
                     {"calls"}});
    const StrategyRun* ddp = find(lesson.training, ZeroStage::ddp);
    for (const StrategyRun& run : lesson.training) {
      const RankRun& r = run.ranks.front();
      const double paper = paper_bytes_per_step(run.stage, run.parameter_count, run.world_size,
                                                element_bytes(run.precision));
      std::string calls;
      for (size_t k = 0; k < dist::kCollectiveCount; ++k) {
        const auto collective = static_cast<dist::Collective>(k);
        const dist::CallCounts counts = r.last_step.of(collective);
        if (counts.calls == 0) continue;
        calls += (calls.empty() ? "" : ", ") + std::to_string(counts.calls) + " " +
                 std::string(dist::collective_name(collective));
      }
      c.add_row({stage_text(run.stage),
                 report::format_bytes_or_zero(r.last_step.of(Traffic::gradients).bytes_sent),
                 report::format_bytes_or_zero(r.last_step.of(Traffic::parameters).bytes_sent),
                 report::format_bytes_or_zero(r.last_step.of(Traffic::metrics).bytes_sent),
                 report::format_bytes_or_zero(static_cast<int64_t>(std::llround(paper))),
                 report::format_fixed(static_cast<double>(r.model_bytes_sent()) / paper, 4),
                 ddp ? report::format_fixed(
                           static_cast<double>(r.model_bytes_sent()) /
                               static_cast<double>(ddp->ranks.front().model_bytes_sent()),
                           4) +
                           "x"
                     : "-",
                 calls});
    }
    out += c.render(colour);
    out += wrap_note(
        "counted as the ring algorithm sends them: an all-reduce of n elements is a "
        "reduce-scatter and an all-gather, each (N−1)/N·n. paper's: 2Ψ(N−1)/N elements for DDP, "
        "ZeRO-1 and ZeRO-2 (one reduce-scatter of the gradients, one all-gather of the updated "
        "parameters), 3Ψ(N−1)/N for ZeRO-3 (the parameters all-gathered in the forward and again "
        "in the backward, the gradients reduce-scattered), 2 bytes each in 16-bit. Above 1: the "
        "padding (every unit a multiple of N). metrics: the loss for the report, the gradient "
        "norm and the inf check, apart.");

    out += "\nLosses: every strategy against DDP's, step by step\n";
    report::Table l({{"strategy"},
                     {"step 1", Align::kRight},
                     {"last step", Align::kRight},
                     {"max |Δ| / DDP's", Align::kRight},
                     {"bitwise DDP's"}});
    for (const StrategyRun& run : lesson.training) {
      const double diff = loss_difference(lesson, run.stage);
      l.add_row({stage_text(run.stage),
                 run.losses().empty() ? "-" : report::format_fixed(run.losses().front(), 6),
                 run.losses().empty() ? "-" : report::format_fixed(run.losses().back(), 6),
                 std::isfinite(diff) ? report::format_fixed(diff, 9) : "-",
                 losses_bitwise_equal(lesson, run.stage) ? "yes" : "no"});
    }
    out += l.render(colour);
    // Under MPI the ZeRO stages all reduce-scatter the same units, in the same order of ranks:
    // whether they agree with one another bit for bit is worth saying apart from DDP.
    bool zero_stages_agree = true;
    int64_t zero_stages = 0;
    const StrategyRun* first_zero = nullptr;
    for (const StrategyRun& run : lesson.training) {
      if (run.stage == ZeroStage::ddp) continue;
      ++zero_stages;
      if (!first_zero) {
        first_zero = &run;
        continue;
      }
      zero_stages_agree = zero_stages_agree && run.losses().size() == first_zero->losses().size() &&
                          std::memcmp(run.losses().data(), first_zero->losses().data(),
                                      run.losses().size() * sizeof(double)) == 0;
    }
    const std::string agree =
        zero_stages > 1 && zero_stages_agree
            ? " The ZeRO stages, which all reduce-scatter the same units, agree with one another "
              "bit for bit."
            : "";
    // Which order OpenMPI adds in is its own choice (the algorithm, per message size and
    // machine), so an MPI run may or may not come out bitwise; the note holds either way.
    out += wrap_note(
        reduction_order_fixed(lesson)
            ? "the ranks sum in a fixed order (simulated ranks sum in rank order; a sum of two "
              "MPI ranks is commutative), so every strategy's gradients, and so its losses, are "
              "DDP's bit for bit."
            : "OpenMPI picks the order of an all-reduce's and a reduce-scatter's additions, and "
              "bf16 sums are not associative: the strategies agree with DDP to rounding, and bit "
              "for bit only where OpenMPI's order happens to be DDP's (run with --simulated for "
              "a fixed order)." +
                  agree);

    if (const StrategyRun* z3 = find(lesson.training, ZeroStage::parameters);
        z3 && !z3->spans.empty()) {
      const int64_t layer = std::min<int64_t>(1, m.layers - 1);
      out += "\nZeRO-3 on rank 0, block " + std::to_string(layer) +
             ", last step: gather → compute → release\n";
      out += timeline_text(*z3, layer);
      out += wrap_note(
          "before each pass over a block the rank all-gathers the block's parameters (gathered: "
          "the full unit, N shards); the block computes, leaving its activations; then the unit is "
          "released and only the rank's shard remains (parameters after). The backward gathers it "
          "again: ZeRO-3's second all-gather.");
    }
  }

  if (!lesson.figure1.empty()) {
    const StrategyRun& any = lesson.figure1.front();
    const int64_t psi = any.parameter_count;
    out += "\nAt scale on meta: the ZeRO paper's Figure 1, " + model_text(s.figure1_model) +
           ", Ψ = " + report::format_count(psi) + ", Nd = " + std::to_string(any.world_size) +
           " simulated ranks, mixed-bf16 AdamW\n";
    report::Table f({{"strategy"},
                     {"paper (Ψ = 7.5B)", Align::kRight},
                     {"formula", Align::kRight},
                     {"measured per rank", Align::kRight},
                     {"B/param", Align::kRight},
                     {"ranks differ by", Align::kRight},
                     {"= estimator"}});
    const char* paper[] = {"120 GB", "31.4 GB", "16.6 GB", "1.9 GB"};
    for (const StrategyRun& run : lesson.figure1) {
      const RankRun& r = run.ranks.front();
      const double n = static_cast<double>(run.world_size), p = static_cast<double>(psi);
      const double formula[] = {16 * p, 4 * p + 12 * p / n, 2 * p + 14 * p / n, 16 * p / n};
      const auto k = static_cast<size_t>(run.stage);
      f.add_row({stage_text(run.stage), paper[k], gb(formula[k]),
                 gb(static_cast<double>(r.model_state.total())),
                 per_param(r.model_state.total(), psi),
                 report::format_bytes_or_zero(run.model_state_spread()),
                 run.equals_estimate() ? "yes, every rank" : "NO"});
    }
    out += f.render(colour);
    out += wrap_note(
        "measured per rank: parameters + gradients + optimizer states in each simulated rank's "
        "own allocator after two steps (requested bytes, decimal GB as the paper's). The paper "
        "rounds Ψ to 7.5B; this GPT has " +
        report::format_fixed(static_cast<double>(psi) / 1e9, 2) +
        "B parameters, so its bytes are " +
        report::format_fixed(static_cast<double>(psi) / 7.5e9 * 100.0, 1) +
        "% of the paper's. ranks differ by: largest minus smallest rank, 0 because FSDP's padding "
        "gives every rank an equal shard.");
  }

  if (!lesson.seed_mixed.empty()) {
    const int64_t psi = lesson.seed_mixed.front().parameter_count;
    out += "\nThe seeds' 7B on 8 GPUs: " + s.seed_model.name + ", Ψ = " + report::format_count(psi) + ", " +
           std::to_string(s.seed_ranks) + " simulated ranks on meta, B=1, T=4096\n";
    report::Table t({{"strategy"},
                     {"Guide per GPU", Align::kRight},
                     {"pure bf16", Align::kRight},
                     {"mixed-bf16", Align::kRight},
                     {"activations", Align::kRight},
                     {"peak (mixed)", Align::kRight},
                     {"= estimator"}});
    const char* seed[] = {"56 GB", "31.5 GB", "19.25 GB", "7 GB"};
    for (size_t k = 0; k < lesson.seed_mixed.size(); ++k) {
      const StrategyRun& mixed = lesson.seed_mixed[k];
      const StrategyRun* bf16 = find(lesson.seed_bf16, mixed.stage);
      const RankRun& r = mixed.ranks.front();
      t.add_row({stage_text(mixed.stage), seed[static_cast<size_t>(mixed.stage)],
                 bf16 ? gb(static_cast<double>(bf16->ranks.front().model_state.total())) : "-",
                 gb(static_cast<double>(r.model_state.total())),
                 gb(static_cast<double>(
                     r.peak_by_category[static_cast<size_t>(memory::MemoryCategory::activation)])),
                 gb(static_cast<double>(r.peak_bytes)),
                 mixed.equals_estimate() && (!bf16 || bf16->equals_estimate()) ? "yes, every rank"
                                                                               : "NO"});
    }
    out += t.render(colour);
    out += wrap_note(
        "Guide per GPU is what the Memory Optimization Guide states: it counts 8 bytes per "
        "parameter (bf16 weights 2, gradients 2, Adam's m and v 4), which is pure bf16 "
        "training, measured to the byte in the pure bf16 column; it leaves out the fp32 master "
        "weights that mixed precision keeps (the standard 16 B/param, the mixed-bf16 column), "
        "the activations (the same under every stage: ZeRO does not "
        "shard them), ZeRO-3's gathered units, and the allocator's rounding (peak).");
  }

  if (!lesson.big.empty()) {
    const StrategyRun& run = lesson.big.front();
    const RankRun& r = run.ranks.front();
    const int64_t psi = run.parameter_count;
    const bool fits = static_cast<uint64_t>(r.peak_bytes) <= s.big_capacity_bytes;
    out += "\nLlama 2 70B on " + std::to_string(run.world_size) + " x " +
           gb(static_cast<double>(s.big_capacity_bytes)) +
           " with ZeRO-3 (B=1, T=" + std::to_string(s.big_seq) +
           ", every block recomputed), per rank on meta\n";
    report::Table t({{"Ψ", Align::kRight},
                     {"model states", Align::kRight},
                     {"activations", Align::kRight},
                     {"peak", Align::kRight},
                     {"capacity", Align::kRight},
                     {"fits"}});
    t.add_row({report::format_count(psi), gb(static_cast<double>(r.model_state.total())),
               gb(static_cast<double>(
                   r.peak_by_category[static_cast<size_t>(memory::MemoryCategory::activation)])),
               gb(static_cast<double>(r.peak_bytes)), gb(static_cast<double>(s.big_capacity_bytes)),
               fits ? "yes" : "NO"});
    out += t.render(colour);
    const double per_rank_states = 16.0 * static_cast<double>(psi);
    const int64_t needed = static_cast<int64_t>(
        std::ceil(per_rank_states / static_cast<double>(s.big_capacity_bytes)));
    out +=
        wrap_note("ZeRO-3 divides 16Ψ = " + gb(per_rank_states) +
                  " of model states by N = " + std::to_string(run.world_size) + ": " +
                  gb(per_rank_states / static_cast<double>(run.world_size)) +
                  " per rank before one activation. The model states alone need N >= " +
                  std::to_string(needed) +
                  " GPUs of 80 GB, more with the activations and the gathered "
                  "units; or offload the optimizer states (lesson 05): the GPU then keeps 2Ψ/N.");
  }
  return out;
}

}  // namespace vramlab::lesson04
