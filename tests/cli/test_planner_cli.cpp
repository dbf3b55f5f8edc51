// vramlab plan from the command line: the JSON the issue names (fits, plan, predicted and measured
// peak, predicted step time, binding constraint, runner-up), the chosen plan read back by
// `vramlab estimate --plan`, the text form's parts, the shortfall when nothing fits, and bad input
// in one line with exit 2.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "tests/cli/cli_run.h"
#include "tests/temp_dir.h"

namespace {

using vramlab::cli_test::CliResult;
using vramlab::cli_test::count_lines;

CliResult planner(const std::string& args) {
  return vramlab::cli_test::run_vramlab(vramlab::cli_test::split_words("plan " + args));
}

const std::string k7bOn4090 = "--model llama2-7b --device rtx4090-24g --seq 2048 --global-batch 16";

TEST(PlannerCli, JsonNamesThePlanWhyAndTheRunnerUpAndTheRunFits) {
  const CliResult found = planner(k7bOn4090 + " --json");
  ASSERT_EQ(found.exit_code, 0) << found.out;
  const nlohmann::json j = nlohmann::json::parse(found.out);
  ASSERT_TRUE(j.at("fits").get<bool>());
  const int64_t capacity = int64_t{24} << 30;
  EXPECT_LE(j.at("predicted_peak_bytes").get<int64_t>(), capacity);
  EXPECT_LE(j.at("measured_peak_bytes").get<int64_t>(),
            j.at("measured_reserved_bytes").get<int64_t>());
  EXPECT_LE(j.at("measured_reserved_bytes").get<int64_t>(),
            j.at("predicted_peak_bytes").get<int64_t>());
  EXPECT_GT(j.at("predicted_step_seconds").get<double>(), 0.0);
  EXPECT_EQ(j.at("binding_constraint"), "device memory");  // 7B's 16 bytes a parameter do not fit
  const nlohmann::json& runner_up = j.at("runner_up");
  EXPECT_GE(runner_up.at("predicted_step_seconds").get<double>(),
            j.at("predicted_step_seconds").get<double>());
  EXPECT_NE(runner_up.at("plan"), j.at("plan"));
  // Mixed precision and its 2-byte parameters: one sequence on a 24 GB card needs the offload.
  EXPECT_EQ(j.at("plan").at("amp").at("precision"), "mixed-bf16");
  EXPECT_TRUE(j.at("plan").at("offload").at("optimizer").get<bool>());
  EXPECT_EQ(j.at("plan").at("parallel").at("data_parallel").get<int64_t>() *
                j.at("plan").at("batch").at("grad_accum").get<int64_t>() *
                j.at("micro_batch").get<int64_t>(),
            16);
  EXPECT_EQ(j.at("deepspeed_config").at("train_batch_size"), 16);
  EXPECT_FALSE(j.at("pytorch").empty());

  // The plan the planner printed is one `vramlab estimate --plan` reads: same model states.
  const vramlab::test_build::TempDir dir;
  const std::string file = dir.path + "/plan.json";
  std::ofstream(file) << found.out;
  const CliResult estimated = vramlab::cli_test::run_vramlab(vramlab::cli_test::split_words(
      "estimate --model llama2-7b --seq 2048 --batch " +
      std::to_string(j.at("micro_batch").get<int64_t>()) + " --plan " + file + " --json"));
  ASSERT_EQ(estimated.exit_code, 0) << estimated.out;
  const nlohmann::json e = nlohmann::json::parse(estimated.out);
  EXPECT_EQ(e.at("per_device_bytes").at("parameters"), j.at("predicted_memory").at("parameters"))
      << estimated.out;
}

TEST(PlannerCli, TextSaysThePlanWhyTheProofAndTheFrameworksLines) {
  const CliResult text = planner(k7bOn4090);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  for (const char* part : {"plan: mixed-bf16", "vramlab train --precision",
                           "predicted per GPU:", "why: binding constraint: device memory",
                           "largest category left:", "runner-up:", "measured on meta",
                           "DeepSpeed config:", "PyTorch:"})
    EXPECT_NE(text.out.find(part), std::string::npos) << part << "\n" << text.out;
  const CliResult no_run = planner(k7bOn4090 + " --no-run");
  ASSERT_EQ(no_run.exit_code, 0) << no_run.out;
  EXPECT_EQ(no_run.out.find("measured on meta"), std::string::npos) << no_run.out;
}

// A model small enough for this machine runs on sim too, the step computed: the same bytes as on
// meta, where nothing is.
TEST(PlannerCli, RunsASmallModelsPlanOnSimAsOnMeta) {
  const CliResult both =
      planner("--model gpt2-tiny --device t4-16g --seq 128 --global-batch 8 --run-on both --json");
  ASSERT_EQ(both.exit_code, 0) << both.out;
  const nlohmann::json j = nlohmann::json::parse(both.out);
  ASSERT_TRUE(j.contains("sim")) << both.out;
  EXPECT_TRUE(j.at("sim").at("fits").get<bool>()) << both.out;
  EXPECT_EQ(j.at("sim").at("peak_bytes"), j.at("measured_peak_bytes")) << both.out;
  EXPECT_EQ(j.at("sim").at("reserved_bytes"), j.at("measured_reserved_bytes")) << both.out;
}

// The shortfall searches again at 2, 4, 8, ... GPUs: a narrow space keeps it quick under the
// sanitizers (the whole space's shortfall is tests/planner's).
TEST(PlannerCli, NothingFitsSaysWhatWouldHaveToChange) {
  const std::string narrow = k7bOn4090 +
                             " --precisions mixed-bf16 --recomputes full --attentions flash "
                             "--activation-offload off --loss-chunks 1 --host-ram 64GiB";
  const CliResult none = planner(narrow + " --json");
  ASSERT_EQ(none.exit_code, 0) << none.out;
  const nlohmann::json j = nlohmann::json::parse(none.out);
  EXPECT_FALSE(j.at("fits").get<bool>());
  EXPECT_GT(j.at("shortfall").at("least_host_bytes_per_node").get<int64_t>(), int64_t{64} << 30);
  EXPECT_GT(j.at("shortfall").at("gpus_that_fit").get<int64_t>(), 1);
  const CliResult text = planner(narrow);
  EXPECT_NE(text.out.find("nothing fits"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("host RAM of"), std::string::npos) << text.out;
}

TEST(PlannerCli, BadInputIsOneLineNamingTheValue) {
  for (const auto& [bad, named] : {std::pair<std::string, std::string>{"--device cpu", "cpu"},
                                   {"--device meta:16GiB", "16GiB"},
                                   {"--device b200", "b200"},
                                   {"--precisions fp8", "fp8"},
                                   {"--precisions mixed-bf16,", "empty item"},
                                   {"--zero 4", "4"},
                                   {"--tp two", "two"},
                                   {"--offloads nvme", "nvme"},
                                   {"--activation-offload maybe", "maybe"},
                                   {"--optimizers adam", "adam"},
                                   {"--recomputes every:0", "every:0"},
                                   {"--loss-chunks 0", "--loss-chunks '0'"},
                                   {"--compressions int4", "int4"},
                                   {"--run-on gpu", "gpu"},
                                   {"--global-batch 0", "--global-batch"},
                                   {"--host-ram lots", "lots"},
                                   {"--intra-node-gbps 0", "--intra-node-gbps"},
                                   {"--seq 99999", "99999"}}) {
    const CliResult refused = planner("--model llama2-7b " + bad);
    EXPECT_EQ(refused.exit_code, 2) << bad << ": " << refused.out;
    EXPECT_EQ(count_lines(refused.out), 1) << bad << ": " << refused.out;
    EXPECT_NE(refused.out.find(named), std::string::npos) << bad << ": " << refused.out;
  }
}

}  // namespace
