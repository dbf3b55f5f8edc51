// Lesson 07's claims table: the seeds' profiling claims (#89–#97) against the recorded runs (see
// profile_report.h).
#include <algorithm>
#include <cstdio>

#include "common/report/terminal.h"
#include "lessons/07-profiling/profile_report.h"

namespace vramlab::lesson07 {

namespace {

constexpr char kSeed000[] = "000_53040387022c16cd.txt";
constexpr char kSeed001[] = "001_2f40dc4e556be27d.txt";
constexpr char kSeed002[] = "002_4aaeff05ca33da14.txt";
constexpr char kSeed003[] = "003_10620cd92a735ae4.txt";

std::string fixed(double value, int decimals) {
  return report::format_fixed(value, decimals);
}

std::string percent_change(int64_t before, int64_t after) {
  return report::format_percent(before ? static_cast<double>(after - before) / before : 0.0, 0,
                                true);
}

}  // namespace

std::vector<ClaimRow> claims(const Lesson& lesson) {
  const ProfiledRun& b = lesson.baseline;
  const ProfiledRun& r = lesson.recompute;
  std::vector<ClaimRow> rows;
  const std::string seeds_000_002 = std::string(kSeed000) + ", " + kSeed002;
  const std::string seeds_001_003 = std::string(kSeed001) + ", " + kSeed003;

  rows.push_back({89, "_record_memory_history() and _dump_snapshot() show where memory goes",
                  seeds_000_002,
                  report::format_count(b.trace_events) + " trace events with module, phase and " +
                      report::format_count(b.distinct_stacks) +
                      " distinct C++ stacks; snapshot.pickle in _dump_snapshot's format",
                  "holds: real PyTorch APIs; this lesson's Profiler records the same history"});

  const double peak = static_cast<double>(b.peak.peak_bytes);
  rows.push_back({90, "memory_allocated() / 1024**3 printed as GB", seeds_001_003,
                  "peak " + report::format_count(b.peak.peak_bytes) + " B = " +
                      fixed(peak / 1e9, 4) + " GB = " + fixed(peak / 1073741824.0, 4) + " GiB",
                  "ambiguous: / 1024**3 gives GiB, 7.4% below GB; label it GiB"});

  rows.push_back({91, "utilisation = allocated / total", kSeed001,
                  "allocated peak " + bytes(b.peak.peak_bytes) + ", reserved peak " +
                      bytes(b.reserved_peak_bytes) + " (the cache holds the difference)",
                  "holds only for allocated: nvidia-smi >= reserved >= allocated (plus the CUDA "
                  "context on a real GPU)"});

  rows.push_back(
      {92, "stats['active.all.current'] / 1024**2 in MB", kSeed001,
       "active.all.current = " + report::format_count(b.active_blocks_now) +
           " (blocks); / 2^20 = " + fixed(static_cast<double>(b.active_blocks_now) / 1048576.0, 4) +
           " \"MB\"; active_bytes.all.current = " + bytes(b.active_bytes_now),
       "does not hold: a count of blocks; the bytes are active_bytes.all.current"});

  rows.push_back({93, "num_alloc_retries signals memory pressure", kSeed001,
                  "num_alloc_retries = " + report::format_count(b.num_alloc_retries) +
                      " (peak reserved " + bytes(b.reserved_peak_bytes) + " of the device)",
                  "holds: it counts device allocations that failed, freed the cache and retried; "
                  "a run far from full has none"});

  if (b.step_seconds.size() >= 2 && r.step_seconds.size() >= 2) {
    const double first = b.step_seconds.front();
    const double later_b = train::median({b.step_seconds.begin() + 1, b.step_seconds.end()});
    const double later_r = train::median({r.step_seconds.begin() + 1, r.step_seconds.end()});
    rows.push_back({94, "savings m1/m2 and penalty t2/t1 from one run each, no warm-up", kSeed001,
                    "peak " + fixed(peak / static_cast<double>(r.peak.peak_bytes), 2) +
                        "x lower (one model at a time), step " + fixed(later_r / later_b, 2) +
                        "x slower (median of steps 2.." + std::to_string(b.step_seconds.size()) +
                        "); step 1 took " + fixed(first / later_b, 2) + "x a later one",
                    "ambiguous: the memory ratio holds measured as peaks of one model at a time; "
                    "one timed step per run is no speed ratio (compare medians after a warm-up)"});
  }

  if (!b.by_op.empty()) {
    const profile::OpRow* top = &b.by_op.front();
    for (const profile::OpRow& row : b.by_op)
      if (row.self_bytes > top->self_bytes) top = &row;
    const ModelConfig& model = lesson.settings.run.train.model;
    const bool attention = top->name.find("attn") != std::string::npos ||
                           top->name.find("attention") != std::string::npos;
    const snapshot::Allocation* largest =
        b.peak.live_at_peak.empty() ? nullptr : &b.peak.live_at_peak.front();
    rows.push_back(
        {95, "aten::bmm in attention is the largest allocator", kSeed003,
         "largest self bytes: " + top->name + " " + bytes(top->self_bytes) +
             (largest
                  ? "; largest tensor at the peak: " + largest->tensor + " " + bytes(largest->bytes)
                  : ""),
         attention ? "holds here: the attention allocates most"
                   : "does not hold here: the attention's (B, H, T, T) scores lead only when H·T "
                     "exceeds the MLP's width (here H·T = " +
                         std::to_string(model.heads * lesson.settings.run.train.seq) + ", MLP " +
                         std::to_string(model.ffn_hidden) + ")"});
  }

  {
    const int64_t att_b = attention_allocated(b);
    const int64_t att_r = attention_allocated(r);
    const bool grows = att_r > att_b && allocated_over_run(r) > allocated_over_run(b);
    const bool drops = r.peak.peak_bytes < b.peak.peak_bytes;
    rows.push_back({96, "with checkpointing the aten::bmm entries shrink dramatically", kSeed003,
                    "attention rows " + bytes(att_b) + " -> " + bytes(att_r) + " (" +
                        percent_change(att_b, att_r) + "), all rows " +
                        percent_change(allocated_over_run(b), allocated_over_run(r)) + "; peak " +
                        bytes(b.peak.peak_bytes) + " -> " + bytes(r.peak.peak_bytes) + " (" +
                        percent_change(b.peak.peak_bytes, r.peak.peak_bytes) + ")",
                    grows && drops
                        ? "does not hold: the rows grow (the forward runs again); what drops is "
                          "the peak"
                        : "not settled by this run (the rows did not grow or the peak did not "
                          "drop)"});
  }

  if (lesson.medium) {
    const MediumModelBytes& m = *lesson.medium;
    const auto gb = [](int64_t v) { return fixed(static_cast<double>(v) / 1e9, 2) + " GB"; };
    rows.push_back(
        {97, "350M: params 1.4 GB fp32, Adam states 2.8 GB, activations 10-20 GB", kSeed003,
         m.model + " (" + report::format_count_short(static_cast<uint64_t>(m.parameter_count)) +
             "), b=16 s=1024 fp32: params " + gb(m.parameters) + ", gradients " + gb(m.gradients) +
             ", AdamW states " + gb(m.optimizer_states) + ", saved activations " +
             gb(m.activation_peak),
         m.activation_peak > 20'000'000'000
             ? "does not hold for the activations: params and states are right, the gradients "
               "are left out, and the activations are " +
                   fixed(static_cast<double>(m.activation_peak) / 20e9, 1) +
                   "x 20 GB without checkpointing"
             : "holds for this configuration (activations within 20 GB); the gradients are "
               "left out"});
  }
  return rows;
}

}  // namespace vramlab::lesson07
