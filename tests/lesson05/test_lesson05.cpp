// Lesson 05's measurements, on odd shapes: ZeRO-Offload's device and host bytes equal the
// estimator's and the parameter count's (2Ψ on the device, 12Ψ of AdamW's states on the host),
// exactly 2Ψ of gradients go down and 2Ψ of parameters come back a step, the losses are bitwise
// the ones without offload; on meta with overlap off every copy is exposed, with overlap on the
// parameters' copy back still is, and ZeRO-Infinity's efficiency is its formula; 13B fits one
// 32 GiB device only offloaded; every claim of the lesson is measured; the figure lays out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>
#include "common/dist/shard_layout.h"
#include "common/estimate/zero_infinity.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/report/svg_plot.h"
#include "common/workbook/claims.h"
#include "lessons/05-offload/claims_file.h"
#include "lessons/05-offload/offload_report.h"

namespace vramlab::lesson05 {
namespace {

// A GPT-2 with odd sizes: no dimension a power of two.
ModelConfig odd_model() {
  return gpt2_config("gpt2-odd", 3, 72, 3, 131, 64);
}

LessonSettings settings(std::vector<double> links, bool scale) {
  LessonSettings s;
  s.model = odd_model();
  s.batch = 3;
  s.seq = 19;
  s.steps = 3;
  s.device = memory::parse_device("sim:a100-40g");
  s.sweep_model = model_config_by_name("gpt2-1.5b");
  s.sweep_device = memory::parse_device("meta:a100-40g");
  s.sweep_seq = 1000;
  s.links_gbps = std::move(links);
  s.scale = scale;
  return s;
}

TEST(Lesson05, OffloadHoldsTheEstimatorsBytesMovesFourPsiAndTrainsBitwiseAsWithout) {
  for (const amp::Precision p : {amp::Precision::mixed_bf16, amp::Precision::mixed_fp16}) {
    SCOPED_TRACE(std::string(amp::precision_name(p)));
    LessonSettings s = settings({8}, false);
    s.precision = p;
    const Lesson lesson = run_lesson(s);
    ASSERT_EQ(lesson.runs.size(), 4u);
    const int64_t psi = s.model.parameter_count();
    const RunResult& none = lesson.runs[0];
    EXPECT_FALSE(none.offload);
    for (const RunResult& r : lesson.runs) {
      SCOPED_TRACE(r.label);
      ASSERT_TRUE(r.fits);
      EXPECT_TRUE(r.equals_estimate());
      if (r.options.plan.offload.optimizer_device == plan::OffloadDevice::nvme) {
        // ZeRO-Infinity on one rank, the states in real files: the device keeps no model state,
        // the host the parameters, the gradients and two units' states; the last step reads and
        // writes every state once (fp32 master, m, v), and the losses are the same.
        EXPECT_EQ(r.device.total(), 0);
        EXPECT_EQ(r.host.gradients + r.host.parameters, 4 * psi);
        EXPECT_LT(r.host.optimizer_states, 12 * psi);
        EXPECT_GE(r.nvme_bytes, 12 * psi);
        EXPECT_EQ(r.nvme_read_bytes, 12 * psi);
        EXPECT_EQ(r.nvme_write_bytes, 12 * psi);
        EXPECT_DOUBLE_EQ(r.nvme_seconds, 12.0 * static_cast<double>(psi) / 7e9 +
                                             12.0 * static_cast<double>(psi) / 5e9);
        EXPECT_GT(r.nvme_read_bytes_per_s, 0.0);  // the tier's own measure of this file system
        EXPECT_EQ(r.losses, none.losses);
        continue;
      }
      EXPECT_EQ(r.nvme_bytes, 0);
      EXPECT_EQ(r.device.parameters, 2 * psi);
      EXPECT_EQ(r.device.gradients, 2 * psi);  // plain training keeps its gradients
      EXPECT_EQ(r.losses, none.losses);        // the same update on the same numbers, bitwise
      ASSERT_EQ(r.losses.size(), 3u);
      EXPECT_TRUE(std::isfinite(r.losses.back()));
      if (!r.offload) continue;
      EXPECT_EQ(r.device.optimizer_states, 0);
      EXPECT_EQ(r.host.optimizer_states, 12 * psi);  // fp32 master, m, v
      EXPECT_EQ(r.host.gradients + r.host.parameters, 4 * psi);
      // ZeRO-Offload's minimum: 16-bit gradients down, 16-bit parameters up; the batch's tokens
      // go up in both runs.
      EXPECT_EQ(r.device_to_host_bytes, 2 * psi);
      EXPECT_EQ(r.host_to_device_bytes - none.host_to_device_bytes, 2 * psi);
      EXPECT_LT(r.device_peak_bytes, none.device_peak_bytes);
      EXPECT_GT(r.host_update_seconds, 0.0);
      EXPECT_NEAR(r.copy_seconds,
                  4.0 * static_cast<double>(psi) / r.link_bytes_per_s +
                      static_cast<double>(none.host_to_device_bytes) / r.link_bytes_per_s,
                  1e-12);
    }
    EXPECT_EQ(none.device.optimizer_states, 12 * psi);
    EXPECT_EQ(none.device_to_host_bytes, 0);
  }
}

TEST(Lesson05, OnMetaOverlapOffExposesEveryCopyAndOverlapOnStillTheParametersCopyBack) {
  const std::vector<double> links = {3, 17, 250};
  const Lesson lesson = run_lesson(settings(links, false));
  ASSERT_EQ(lesson.sweep.size(), links.size());
  const LessonSettings& s = lesson.settings;
  const double psi = static_cast<double>(s.sweep_model.parameter_count());
  double previous = 0.0;
  for (const SweepPoint& p : lesson.sweep) {
    SCOPED_TRACE(p.link_gbps);
    const double bw = p.link_gbps * 1e9;
    // Meta moves no data, but the clock charges the bytes: 2Ψ each way, and the batch's tokens
    // and targets (int32) up.
    const int64_t tokens = s.sweep_batch * s.sweep_seq;
    EXPECT_EQ(p.on.device_to_host_bytes, 2 * s.sweep_model.parameter_count());
    EXPECT_EQ(p.on.host_to_device_bytes, 2 * s.sweep_model.parameter_count() + 8 * tokens);
    EXPECT_NEAR(p.on.copy_seconds,
                static_cast<double>(p.on.device_to_host_bytes + p.on.host_to_device_bytes) / bw,
                1e-9 * p.on.copy_seconds);
    // Every copy of the model states exposed (the batch's own copy runs on the compute stream,
    // as the step's first work).
    EXPECT_NEAR(p.off.exposed_copy_seconds, 4.0 * psi / bw, 1e-9 * p.off.copy_seconds);
    // Overlap hides some of the gradients, never the parameters coming back after the update.
    EXPECT_LT(p.on.exposed_copy_seconds, p.off.exposed_copy_seconds);
    EXPECT_GE(p.on.exposed_copy_seconds, 2.0 * psi / bw * (1 - 1e-9));
    // The same kernels and the same update in both.
    EXPECT_NEAR(p.on.compute_seconds(), p.off.compute_seconds(), 1e-9 * p.on.compute_seconds());
    EXPECT_NEAR(p.on.host_update_seconds, p.off.host_update_seconds, 1e-12);
    const double ait = 8.0 * static_cast<double>(s.sweep_batch * s.sweep_seq) * psi / (4.0 * psi);
    const double peak = s.sweep_device.spec.peak_flops.bf16_tensor;
    EXPECT_NEAR(p.model_efficiency, ait * bw / (ait * bw + peak), 1e-12);
    EXPECT_GT(p.model_efficiency, previous);
    previous = p.model_efficiency;
  }
  // The timeline's lanes: with one copy stream the copies beside a compute kernel plus the
  // exposed time are all the copies; without overlap none runs beside compute. ZeRO-Infinity's
  // fetches (a lane of their own) and gradients can cross at once: its copies are at least
  // beside compute plus exposed, and some of its fetches hide.
  const nlohmann::json steps = to_json(lesson).at("timeline").at("steps");
  ASSERT_EQ(steps.size(), 3u);
  for (const nlohmann::json& step : steps) {
    const double copies = step.at("copy_seconds"), hidden = step.at("hidden_copy_seconds");
    const double exposed = step.at("exposed_copy_seconds");
    if (&step == &steps[2]) {
      EXPECT_GE(copies, (hidden + exposed) * (1 - 1e-9)) << step.dump();
    } else {
      EXPECT_NEAR(hidden + exposed, copies, 1e-9 * copies) << step.dump();
    }
  }
  EXPECT_GT(steps[0].at("hidden_copy_seconds").get<double>(), 0.0);
  EXPECT_EQ(steps[1].at("hidden_copy_seconds").get<double>(), 0.0);
  EXPECT_GT(steps[2].at("hidden_copy_seconds").get<double>(), 0.0);
  bool fetch_lane = false;
  for (const std::string& name : lesson.timeline_fetched.stream_names)
    fetch_lane = fetch_lane || name == "parameter fetch";
  EXPECT_TRUE(fetch_lane);
  EXPECT_FALSE(lesson.timeline.on.last_step_spans.empty());
}

TEST(Lesson05, ThirteenBillionFitsOne32GiBDeviceOnlyOffloadedAndEveryClaimIsMeasured) {
  LessonSettings s = settings({16}, true);
  s.sweep_model = model_config_by_name("llama2-7b");
  s.sweep_device = memory::parse_device("meta:a100-80g");
  s.sweep_seq = 4096;
  const Lesson lesson = run_lesson(s);
  const auto find = [&](const std::string& id) -> const RunResult& {
    for (const ScaleRun& r : lesson.scale)
      if (r.id == id) return r.run;
    ADD_FAILURE() << id;
    return lesson.scale.front().run;
  };
  const int64_t psi13 = model_config_by_name("llama2-13b").parameter_count();
  const RunResult& offloaded = find("13b-offload-32gib");
  ASSERT_TRUE(offloaded.fits) << offloaded.out_of_memory;
  EXPECT_EQ(offloaded.device.parameters, 2 * psi13);
  EXPECT_EQ(offloaded.device.gradients + offloaded.device.optimizer_states, 0);
  EXPECT_EQ(offloaded.host.optimizer_states, 12 * psi13);
  EXPECT_TRUE(offloaded.equals_estimate());
  EXPECT_LE(offloaded.device_peak_bytes, memory::parse_device("meta:32GiB").spec.capacity_bytes);
  EXPECT_FALSE(find("13b-none-32gib").fits);
  EXPECT_FALSE(find("13b-offload-24gb").fits);
  EXPECT_NE(find("13b-offload-24gb").out_of_memory.find("Tried to allocate"), std::string::npos);
  // ZeRO-Infinity: with the parameters offloaded too the device keeps no model state, and 13B
  // trains on the 24 GB device; the host holds the 16 bytes a parameter of the states, the staged
  // gradients and the parameters.
  const RunResult& infinity = find("13b-infinity-24gb");
  ASSERT_TRUE(infinity.fits) << infinity.out_of_memory;
  EXPECT_EQ(infinity.device.total(), 0);
  EXPECT_EQ(infinity.host.total(), offloaded.host.total());
  EXPECT_TRUE(infinity.equals_estimate());
  EXPECT_LE(infinity.device_peak_bytes,
            memory::parse_device("meta:rtx4090-24g").spec.capacity_bytes);
  const RunResult& roomy = find("sweep-model-none-roomy");
  const RunResult& cheap = find("sweep-model-offload");
  const RunResult& fetched = find("sweep-model-infinity");
  ASSERT_TRUE(roomy.fits && cheap.fits && fetched.fits);
  EXPECT_GT(roomy.device_peak_bytes, memory::parse_device("meta:a100-80g").spec.capacity_bytes);
  EXPECT_GT(cheap.step_seconds, roomy.step_seconds);
  // Every unit fetched for the forward and the backward, each block once more for its
  // recomputed forward, against one copy back of everything: more bytes up, a longer step, less
  // device memory.
  int64_t block_bytes = 0;
  const dist::ShardLayout layout(s.sweep_model.parameters(), 1);
  for (const dist::ShardUnit& u : layout.units())
    if (u.layer >= 0) block_bytes += 2 * u.padded_numel;  // bf16
  EXPECT_EQ(fetched.host_to_device_bytes - (2 * fetched.host.parameters + block_bytes),
            cheap.host_to_device_bytes - cheap.host.parameters);
  EXPECT_GT(fetched.step_seconds, cheap.step_seconds);
  EXPECT_LT(fetched.device_peak_bytes, cheap.device_peak_bytes);
  // The states on NVMe: the same device bytes as ZeRO-Infinity's, the host two units' states of
  // them, and every state read and written once a step at a typical drive's 7 GB/s and 5 GB/s.
  // The drive works one transfer at a time and the host's last update waits for the last read,
  // behind every write but the last two units': the step is longer than the one in host memory
  // by at least that, less the updates that overlapped it.
  for (const auto& [id, in_memory_id, model] :
       {std::tuple{"sweep-model-nvme", "sweep-model-infinity", s.sweep_model},
        std::tuple{"70b-nvme", "70b-infinity", model_config_by_name("llama2-70b")}}) {
    SCOPED_TRACE(id);
    const RunResult& drive = find(id);
    const RunResult& in_memory = find(in_memory_id);
    ASSERT_TRUE(drive.fits && in_memory.fits);
    EXPECT_TRUE(drive.equals_estimate());
    EXPECT_EQ(drive.device.total(), 0);
    EXPECT_EQ(drive.device_peak_bytes, in_memory.device_peak_bytes);
    const int64_t states = in_memory.host.optimizer_states;
    EXPECT_LT(drive.host.optimizer_states, states / 10);
    EXPECT_GE(drive.nvme_bytes, states);
    EXPECT_EQ(drive.nvme_read_bytes, states);
    EXPECT_EQ(drive.nvme_write_bytes, states);
    const double transfers = static_cast<double>(states) / 7e9 + static_cast<double>(states) / 5e9;
    EXPECT_NEAR(drive.nvme_seconds, transfers, 1e-9 * transfers);
    const dist::ShardLayout units_of(model.parameters(), 1);
    const std::vector<dist::ShardUnit>& units = units_of.units();
    const double last_writes =
        12.0 * static_cast<double>(units.back().numel + units[units.size() - 2].numel) / 5e9;
    EXPECT_GT(drive.step_seconds * (1 + 1e-9),
              in_memory.step_seconds + transfers - last_writes - in_memory.host_update_seconds);
  }

  // 70B with the parameters on NVMe too: the same device, the host one unit's 16-bit shard of
  // the 140 GB, the drive every parameter twice more a step (a fetch each for the forward, the
  // backward and the recomputed forward, and the update's write) and the step longer for it.
  {
    const RunResult& all = find("70b-all-nvme");
    const RunResult& states_only = find("70b-nvme");
    ASSERT_TRUE(all.fits);
    EXPECT_TRUE(all.equals_estimate());
    EXPECT_EQ(all.device_peak_bytes, states_only.device_peak_bytes);
    EXPECT_EQ(all.host.optimizer_states, states_only.host.optimizer_states);
    EXPECT_LT(all.host.parameters, states_only.host.parameters / 50);
    const int64_t shard = states_only.host.parameters;  // 2 bytes a parameter
    EXPECT_GE(all.nvme_bytes, states_only.nvme_bytes + shard);
    EXPECT_EQ(all.nvme_write_bytes, states_only.nvme_write_bytes + shard);
    EXPECT_GE(all.nvme_read_bytes, states_only.nvme_read_bytes + 2 * shard);
    EXPECT_GT(all.step_seconds, states_only.step_seconds);
  }

  std::vector<int> ids;
  for (const workbook::ClaimResult& c :
       workbook::evaluate_claims(files::claims_json(), "claims.json", to_json(lesson))) {
    ids.push_back(c.id);
    EXPECT_FALSE(c.measured.empty()) << c.id;
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int>{72, 73, 74, 75, 76}));

  const std::vector<std::string> problems = report::text_layout_problems(sweep_figure(lesson));
  EXPECT_TRUE(problems.empty()) << problems.front();
}

}  // namespace
}  // namespace vramlab::lesson05
