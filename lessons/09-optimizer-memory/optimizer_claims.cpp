// Lesson 09's claims table: the seeds' optimizer-memory claims (#108–#119) against the measured
// bytes and losses (see optimizer_report.h).
#include <cmath>
#include <cstdio>
#include <functional>

#include "common/report/terminal.h"
#include "lessons/09-optimizer-memory/optimizer_report.h"

namespace vramlab::lesson09 {

namespace {

using estimate::Optimizer;

// Where the bytes of the claims come from: the first large model on meta, else the small model.
struct Source {
  std::string model;
  std::function<const OptimizerRun*(amp::Precision, Optimizer)> find;
};

Source source_of(const Lesson& lesson) {
  if (!lesson.scale.empty()) {
    const std::string model = lesson.scale.front().model;
    return {model, [&lesson, model](amp::Precision p, Optimizer o) {
              return find_scale(lesson, model, p, o);
            }};
  }
  return {lesson.settings.train.model.name, [&lesson](amp::Precision p, Optimizer o) {
            const std::vector<OptimizerRun>& runs =
                p == lesson.settings.train.precision ? lesson.training : lesson.compared;
            for (const OptimizerRun& r : runs)
              if (r.precision == p && r.optimizer == o) return &r;
            return static_cast<const OptimizerRun*>(nullptr);
          }};
}

}  // namespace

std::vector<ClaimRow> claims(const Lesson& lesson) {
  const Source src = source_of(lesson);
  const auto bpp = [&](amp::Precision p, Optimizer o) -> double {
    const OptimizerRun* r = src.find(p, o);
    return r ? r->bytes.state_bytes_per_param() : NAN;
  };
  const auto has = [&](amp::Precision p, Optimizer o) { return src.find(p, o) != nullptr; };
  const auto b = [](double v) { return report::format_fixed(v, 2); };
  using amp::Precision;
  const std::string on = " (" + src.model + ")";
  std::vector<ClaimRow> rows;

  if (has(Precision::mixed_bf16, Optimizer::adamw))
    rows.push_back(
        {108, "Adam: 12 B/param (fp32 master + 2 moments)",
         "adamw, mixed-bf16: " + b(bpp(Precision::mixed_bf16, Optimizer::adamw)) + " B/param" + on,
         "holds under mixed precision (fp32 training: 8, no master)"});
  if (const OptimizerRun* r = src.find(Precision::fp32, Optimizer::adamw))
    rows.push_back({109, "Adam m + v: 8 B/param; 7B: 56 GB",
                    "adamw, fp32: " + b(bpp(Precision::fp32, Optimizer::adamw)) + " B/param, " +
                        report::format_bytes_decimal(static_cast<uint64_t>(r->bytes.state_bytes)) +
                        on,
                    "holds (56 GB is 7e9 × 8 B)"});
  if (has(Precision::fp32, Optimizer::adamw_8bit))
    rows.push_back(
        {110, "8-bit Adam: 2 bytes per param",
         "adamw-8bit, fp32: " + b(bpp(Precision::fp32, Optimizer::adamw_8bit)) + " B/param" + on,
         "holds: 1 + 1 + 8/B of absmax"});
  if (has(Precision::fp32, Optimizer::adamw) && has(Precision::fp32, Optimizer::adamw_8bit)) {
    const double saved =
        bpp(Precision::fp32, Optimizer::adamw) - bpp(Precision::fp32, Optimizer::adamw_8bit);
    rows.push_back({111, "saves 6 B/param: 6 GB per 1B params",
                    b(saved) + " B/param: " + report::format_fixed(saved, 2) + " GB per 1e9 params",
                    "holds (5.56 GiB)"});
  }
  const OptimizerRun* adamw_run = find_training(lesson, Optimizer::adamw);
  const OptimizerRun* eight_run = find_training(lesson, Optimizer::adamw_8bit);
  if (adamw_run && eight_run)
    rows.push_back({112, "8-bit Adam: slight CPU overhead",
                    "no host work: a device kernel; steps " +
                        report::format_fixed(eight_run->seconds, 2) + " s vs adamw " +
                        report::format_fixed(adamw_run->seconds, 2) + " s",
                    "does not hold: the cost is on the GPU"});
  const double gap8 = final_loss_gap(lesson, Optimizer::adamw_8bit);
  if (std::isfinite(gap8)) {
    std::string measured = "final loss " + report::format_percent(gap8, 1, true) + " vs adamw";
    if (eight_run && !eight_run->quantization.empty())
      measured += ", update " +
                  report::format_fixed(100.0 * eight_run->quantization.back().update_error, 1) +
                  "% off fp32's";
    rows.push_back({113, "8-bit Adam: negligible drop in performance", measured,
                    std::abs(gap8) <= kFinalLossTolerance ? "holds (block-wise, dynamic map)"
                                                          : "does not hold in this run"});
  }
  if (has(Precision::mixed_bf16, Optimizer::adamw_8bit))
    rows.push_back({114, "8-bit: 8 bytes/param instead of 12",
                    "adamw-8bit, mixed-bf16: " +
                        b(bpp(Precision::mixed_bf16, Optimizer::adamw_8bit)) + " B/param" + on,
                    "does not hold: 4 + 2.03 = 6"});
  if (has(Precision::fp32, Optimizer::adam_mini))
    rows.push_back(
        {115, "Adam-mini: 6 bytes/param",
         "fp32: " + b(bpp(Precision::fp32, Optimizer::adam_mini)) +
             (has(Precision::mixed_bf16, Optimizer::adam_mini)
                  ? ", mixed-bf16: " + b(bpp(Precision::mixed_bf16, Optimizer::adam_mini))
                  : std::string()) +
             " B/param" + on,
         "does not hold: m + a few v, 8 with master"});
  if (const OptimizerRun* r = src.find(Precision::fp32, Optimizer::adam_mini)) {
    const int64_t psi = r->bytes.parameter_count;
    const int64_t v_values = (r->bytes.moment_bytes - 4 * psi) / 4;
    rows.push_back(
        {116, "Adam-mini shares m and v in a layer",
         "m: 4Ψ B; v: " + std::to_string(v_values) + " values for Ψ = " + std::to_string(psi) + on,
         "does not hold: only v is shared, per block"});
  }
  if (has(Precision::mixed_bf16, Optimizer::lion))
    rows.push_back({117, "Lion: 8 bytes/param (no v state)",
                    "mixed-bf16: " + b(bpp(Precision::mixed_bf16, Optimizer::lion)) +
                        ", fp32: " + b(bpp(Precision::fp32, Optimizer::lion)) + " B/param" + on,
                    "holds with the fp32 master (m alone: 4)"});
  if (has(Precision::bf16, Optimizer::adamw))
    rows.push_back(
        {118, "Adam's m and v are always fp32",
         "adamw, pure bf16: " + b(bpp(Precision::bf16, Optimizer::adamw)) + " B/param" + on,
         "depends: states take the parameters' type"});
  if (has(Precision::fp32, Optimizer::sgd) && has(Precision::fp32, Optimizer::sgd_momentum)) {
    std::string measured = "sgd " + b(bpp(Precision::fp32, Optimizer::sgd)) + ", sgd-momentum " +
                           b(bpp(Precision::fp32, Optimizer::sgd_momentum)) + " B/param";
    const double gap = final_loss_gap(lesson, Optimizer::sgd);
    const double gap_momentum = final_loss_gap(lesson, Optimizer::sgd_momentum);
    if (std::isfinite(gap) && std::isfinite(gap_momentum))
      measured += "; loss " + report::format_percent(gap, 1, true) + ", " +
                  report::format_percent(gap_momentum, 1, true);
    rows.push_back({119, "use SGD instead of Adam", measured, "holds for memory; trains slower"});
  }
  return rows;
}

}  // namespace vramlab::lesson09
