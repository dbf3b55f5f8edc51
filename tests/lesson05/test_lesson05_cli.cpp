// The lesson 05 binary on the command line, on a short run: --json has the record per run
// (offload, device_peak_bytes, host_bytes {pinned, pageable}, nvme_bytes, bytes_moved {h2d, d2h,
// nvme_read, nvme_write}, step_seconds, step_seconds_no_overlap, exposed_copy_seconds), the sweep's
// points, the delayed update's loss curve and time, the claims and the exercises' results; the
// figure is written where --out-dir says; the text names every table. (Bad input exiting 2 is
// checked by plain ctest cases, see CMakeLists.txt.)
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/cli_run.h"

namespace {

namespace fs = std::filesystem;
using vramlab::cli_test::CliResult;

// The binary with \p args and its figures in DIR/figures; stdout and stderr together.
CliResult run_lesson(const std::string& args, const fs::path& dir) {
  fs::remove_all(dir);
  std::vector<std::string> argv = {LESSON05_BINARY};
  for (const std::string& word : vramlab::cli_test::split_words(args)) argv.push_back(word);
  argv.insert(argv.end(), {"--out-dir", (dir / "figures").string()});
  return vramlab::cli_test::run_command(argv, 120.0);
}

const std::string kShortRun =
    "--steps 2 --batch 3 --seq 19 --sweep-model gpt2-124m --sweep-seq 1000 --links 2,50 "
    "--dpu-steps 4 --dpu-from 2";

TEST(Lesson05Cli, JsonHasEveryRunsRecordTheSweepAndTheClaims) {
  const fs::path dir = fs::path(LESSON05_TEST_DIR) / "json";
  const CliResult r = run_lesson(kShortRun + " --json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // --json: stdout and stderr hold the object and nothing else.
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const int64_t psi = j.at("model").at("parameter_count");
  ASSERT_EQ(j.at("runs").size(), 4u);
  for (const nlohmann::json& run : j.at("runs")) {
    SCOPED_TRACE(run.dump());
    EXPECT_TRUE(run.at("equals_estimator").get<bool>());
    EXPECT_GT(run.at("device_peak_bytes").get<int64_t>(), 0);
    EXPECT_TRUE(run.at("losses_equal_no_offload").get<bool>());
    if (run.at("offload") == "both") {  // ZeRO-Infinity with the states on NVMe
      EXPECT_EQ(run.at("nvme_bytes"), run.at("estimate").at("nvme_bytes"));
      EXPECT_EQ(run.at("bytes_moved").at("nvme_read").get<int64_t>(), 12 * psi);
      EXPECT_EQ(run.at("bytes_moved").at("nvme_write").get<int64_t>(), 12 * psi);
      EXPECT_GT(run.at("nvme_measured_gbps").at("write").get<double>(), 0.0);
      continue;
    }
    EXPECT_EQ(run.at("nvme_bytes"), 0);
    const bool offload = run.at("offload") == "optimizer";
    // Pinned by default: the staged gradients and parameters and the master (2 + 2 + 4 bytes a
    // parameter) in power-of-two blocks; m and v (8) pageable.
    EXPECT_EQ(run.at("host_bytes").at("pageable").get<int64_t>(), offload ? 8 * psi : 0);
    EXPECT_EQ(run.at("host_bytes").at("pinned_model_states"),
              run.at("estimate").at("host_pinned_bytes"));
    EXPECT_GT(run.at("host_bytes").at("pinned").get<int64_t>(), 0);  // the staged batch
    EXPECT_EQ(run.at("bytes_moved").at("d2h").get<int64_t>(), offload ? 2 * psi : 0);
    EXPECT_EQ(run.at("bytes_moved").at("nvme_write"), 0);
    EXPECT_GT(run.at("step_seconds").get<double>(), 0.0);
    EXPECT_GE(run.at("exposed_copy_seconds").get<double>(), 0.0);
    EXPECT_EQ(run.at("step_seconds_no_overlap").is_number(),
              offload && run.at("overlap").get<bool>());
  }
  const nlohmann::json& points = j.at("sweep").at("points");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].at("link_gbps"), 2.0);
  EXPECT_GT(points[0].at("exposed_off_seconds").get<double>(),
            points[1].at("exposed_off_seconds").get<double>());
  // The delayed update: the same numbers up to its first step, the next forward one update behind.
  const nlohmann::json& dpu = j.at("delayed_update");
  ASSERT_EQ(dpu.at("losses").size(), 4u);
  for (const nlohmann::json& row : dpu.at("losses")) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row.at("loss_delayed_from_2") == row.at("loss_at_once"),
              row.at("step").get<int64_t>() <= 2);
  }
  ASSERT_EQ(dpu.at("time").size(), 2u);
  EXPECT_EQ(dpu.at("time")[1].at("host_update_seconds"), 0.0);
  EXPECT_EQ(dpu.at("time")[1].at("delayed_update_seconds"),
            dpu.at("time")[0].at("host_update_seconds"));
  EXPECT_GT(dpu.at("speedup").get<double>(), 1.0);
  EXPECT_TRUE(fs::exists(dir / "figures" / "offload_dpu_losses.svg"));
  EXPECT_EQ(j.at("claims").size(), 5u);
  // Activation offload: the small model's bytes equal the estimator's and its losses are the
  // same; the sweep model's four runs (kept, offloaded, recomputed, both) likewise, the offloaded
  // ones pinning host memory.
  const nlohmann::json& acts = j.at("activation_offload");
  EXPECT_TRUE(acts.at("small_losses_equal").get<bool>());
  ASSERT_EQ(acts.at("small").size(), 2u);
  for (const nlohmann::json& run : acts.at("small")) EXPECT_TRUE(run.at("equals_estimator"));
  EXPECT_GT(acts.at("small")[1].at("pinned_activation_bytes").get<int64_t>(), 0);
  EXPECT_LT(acts.at("small")[1].at("activation_peak_bytes").get<int64_t>(),
            acts.at("small")[0].at("activation_peak_bytes").get<int64_t>());
  const nlohmann::json& large = acts.at("large").at("runs");
  ASSERT_EQ(large.size(), 4u);
  for (const nlohmann::json& run : large) {
    SCOPED_TRACE(run.dump());
    ASSERT_TRUE(run.at("fits").get<bool>());
    EXPECT_TRUE(run.at("equals_estimator").get<bool>());
    const bool offloaded =
        run.at("label").get<std::string>().find("offloaded") != std::string::npos;
    EXPECT_EQ(run.at("pinned_activation_bytes").get<int64_t>() > 0, offloaded);
  }
  // The exercises' references, run on the sweep's steps and the offloaded runs, agree with the
  // clock and the pinned allocator.
  ASSERT_EQ(j.at("exercises").size(), 3u);
  EXPECT_EQ(j.at("exercises")[0].at("id"), "05.1");
  EXPECT_EQ(j.at("exercises")[1].at("id"), "05.2");
  EXPECT_EQ(j.at("exercises")[2].at("id"), "05.3");
  for (const nlohmann::json& e : j.at("exercises"))
    EXPECT_TRUE(e.at("agrees").get<bool>()) << j.at("exercises").dump();
  EXPECT_TRUE(fs::exists(dir / "figures" / "offload_link_sweep.svg"));
  EXPECT_TRUE(fs::exists(dir / "figures" / "lesson.json"));
}

TEST(Lesson05Cli, TextNamesEveryTableAndNoScaleSkipsTheLargeModels) {
  const fs::path dir = fs::path(LESSON05_TEST_DIR) / "text";
  const CliResult r = run_lesson(kShortRun + " --no-scale", dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* heading :
       {"ZeRO-Offload on sim:a100-40g", "The last step on the device's clock",
        "The link swept on meta:a100-80g", "The delayed parameter update (--offload-dpu N)",
        "Its loss curves", "Activation offload (--offload-activations on)", "The seeds' claims"})
    EXPECT_NE(r.out.find(heading), std::string::npos) << heading << " in\n" << r.out;
  EXPECT_EQ(r.out.find("At scale on meta"), std::string::npos);
}

}  // namespace
