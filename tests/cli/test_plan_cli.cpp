// One plan through the command line: `vramlab train --json` prints the plan it ran, `vramlab train
// --plan` of that output reruns it with the same losses to the bit, and `vramlab estimate --plan`
// of it gives the bytes the same technique flags give.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_run.h"

namespace {

using nlohmann::json;
using vramlab::cli_test::CliResult;
using vramlab::cli_test::run_vramlab;
namespace fs = std::filesystem;

using vramlab::cli_test::json_lines;

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

class PlanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("plan_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// The run's own flags (model, shapes, steps, seed) stay flags; everything about how to train
// comes back from the plan.
TEST_F(PlanCli, APrintedPlanRerunsToTheSameLossesAndEstimatesToTheSameBytes) {
  const std::vector<std::string> run = {"train", "--layers", "3",   "--hidden", "64", "--heads",
                                        "4",     "--vocab",  "256", "--seq",    "32", "--batch",
                                        "3",     "--steps",  "3",   "--seed",   "5",  "--json"};
  const std::vector<std::vector<std::string>> plans = {
      {"--precision", "mixed-fp16", "--recompute", "every:2", "--dropout", "0.1", "--lr", "3e-3",
       "--clip-grad-norm", "0.7", "--grad-accum", "2", "--attention", "flash"},
      {"--precision", "bf16", "--stochastic-rounding", "--optimizer", "adamw-8bit", "--block-size",
       "64", "--min-8bit-size", "0", "--compress-activations", "int8-block", "--recompute",
       "selective", "--loss-scale", "static:512"},
  };
  for (const std::vector<std::string>& flags : plans) {
    const CliResult first = run_vramlab(with(run, flags), 120);
    ASSERT_EQ(first.exit_code, 0) << first.out;
    const std::vector<json> a = json_lines(first.out);
    ASSERT_EQ(a.size(), 4u) << first.out;
    const fs::path file = dir_ / "run.json";
    std::ofstream(file) << a.back().dump(2);

    const CliResult again = run_vramlab(with(run, {"--plan", file.string()}), 120);
    ASSERT_EQ(again.exit_code, 0) << again.out;
    const std::vector<json> b = json_lines(again.out);
    ASSERT_EQ(b.size(), 4u) << again.out;
    for (size_t s = 0; s < 3; ++s)
      EXPECT_EQ(a[s].at("loss").get<double>(), b[s].at("loss").get<double>()) << "step " << s;
    EXPECT_EQ(a.back().at("plan"), b.back().at("plan"));

    // The estimator reads the same plan; its technique flags that change bytes give the same.
    const std::vector<std::string> model = {"estimate", "--model", "gpt2-124m", "--batch",
                                            "2",        "--seq",   "256",       "--json"};
    const CliResult from_plan = run_vramlab(with(model, {"--plan", file.string()}));
    ASSERT_EQ(from_plan.exit_code, 0) << from_plan.out;
    std::vector<std::string> estimate_flags;
    for (size_t i = 0; i < flags.size(); ++i) {
      const std::string& f = flags[i];
      // train-only flags: no byte depends on them.
      if (f == "--dropout" || f == "--lr" || f == "--clip-grad-norm" || f == "--loss-scale") {
        ++i;
        continue;
      }
      if (f == "--stochastic-rounding") continue;
      estimate_flags.push_back(f);
    }
    const CliResult from_flags = run_vramlab(with(model, estimate_flags));
    ASSERT_EQ(from_flags.exit_code, 0) << from_flags.out;
    const json p = json::parse(from_plan.out), q = json::parse(from_flags.out);
    EXPECT_EQ(p.at("per_device_bytes"), q.at("per_device_bytes"));
    EXPECT_EQ(p.at("runtime_recompute"), q.at("runtime_recompute"));
    EXPECT_EQ(p.at("inputs"), q.at("inputs"));
  }
}

TEST_F(PlanCli, AFlagChangesThePlanOfAFile) {
  const fs::path file = dir_ / "plan.json";
  std::ofstream(file) << R"({"amp": {"precision": "mixed-bf16"}, "recompute": "full"})";
  const CliResult r = run_vramlab({"estimate", "--model", "gpt2-124m", "--plan", file.string(),
                                   "--recompute", "selective", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("plan").at("amp").at("precision"), "mixed-bf16");
  EXPECT_EQ(j.at("plan").at("recompute"), "selective");
}

TEST_F(PlanCli, ABadPlanFileIsOneLineNamingItAndExitsTwo) {
  const fs::path typo = dir_ / "typo.json";
  std::ofstream(typo) << R"({"optimizer": {"nmae": "lion"}})";
  const fs::path ranks = dir_ / "ranks.json";
  std::ofstream(ranks) << R"({"parallel": {"data_parallel": 4}})";
  const std::string missing = (dir_ / "missing.json").string();
  struct Case {
    std::vector<std::string> args;
    std::string named;  // what the message must name
  };
  const std::vector<Case> cases = {
      {{"train", "--model", "gpt2-tiny", "--plan", typo.string()}, "\"nmae\""},
      {{"estimate", "--model", "gpt2-tiny", "--plan", typo.string()}, typo.string()},
      {{"train", "--model", "gpt2-tiny", "--plan", missing}, missing},
      {{"train", "--model", "gpt2-tiny", "--steps", "1", "--plan", ranks.string()},
       "data_parallel 4"},
      {{"train", "--model", "gpt2-tiny", "--steps", "1", "--simulate-ranks", "2", "--plan",
        ranks.string()},
       "data_parallel 4"},
  };
  for (const Case& c : cases) {
    const CliResult r = run_vramlab(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(vramlab::cli_test::count_lines(r.out), 1) << r.out;
    EXPECT_NE(r.out.find(c.named), std::string::npos) << r.out;
  }
}

}  // namespace
