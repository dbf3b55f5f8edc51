// Lesson 08's out-of-memory scenarios as runs on sim devices: each run fails with PyTorch's
// message, `vramlab diagnose` of its log and of the snapshot taken at the failure names the phase,
// the category (or fragmentation), and a fix, and the same run with that fix applied trains.
//   - the forward's attention probabilities (naive attention at T = 512): --attention flash;
//   - AdamW's states made at the first step(), after forward and backward fitted: 8-bit AdamW;
//   - fp32 logits and probabilities at a 32000-token vocabulary: the loss in chunks;
//   - lengths that vary from step to step: the request fails with more than it asks for free or
//     cached, in pieces (fragmentation): expandable segments;
//   - an evaluation with grad that keeps every batch's graph (`total_loss += loss`): no_grad;
//   - every step's logits kept (`outputs.append(logits)`): the memory a step made outlives it.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "tests/cli/cli_run.h"
#include "tests/temp_dir.h"

namespace {

using vramlab::cli_test::CliResult;

CliResult scenario_run(const std::string& args) {
  return vramlab::cli_test::run_vramlab(vramlab::cli_test::split_words(args), 120.0);
}

struct Scenario {
  std::string train;      // the failing run's arguments after `train`
  std::string phase;      // what diagnose names
  std::string category;   // the failed request's category
  bool fragmentation;     // what the message's numbers say
  std::string fix;        // the fix diagnose lists, applied by...
  std::string fix_flags;  // ...these flags (empty: the allocator setting below; "~X": drop X)
  bool leak = false;      // what the snapshot says: tensors kept from earlier steps
};

// Runs the scenario: the failure, its diagnosis, and the fix.
void run_scenario(const Scenario& s) {
  const vramlab::test_build::TempDir dir;
  const std::string pickle = dir.path + "/oom.pickle", log = dir.path + "/train.log";
  const CliResult failed = scenario_run("train " + s.train + " --snapshot-on-oom " + pickle);
  ASSERT_EQ(failed.exit_code, 1) << s.train << ": " << failed.out;
  EXPECT_NE(failed.out.find("out of memory. Tried to allocate"), std::string::npos) << failed.out;
  std::ofstream(log) << failed.out;
  const CliResult diagnosed = scenario_run("diagnose " + log + " --snapshot " + pickle + " --json");
  ASSERT_EQ(diagnosed.exit_code, 0) << diagnosed.out;
  const nlohmann::json d = nlohmann::json::parse(diagnosed.out);
  EXPECT_EQ(d.at("phase"), s.phase) << s.train << ": " << diagnosed.out;
  EXPECT_EQ(d.at("category"), s.category) << s.train << ": " << diagnosed.out;
  EXPECT_EQ(d.at("fragmentation"), s.fragmentation) << s.train << ": " << diagnosed.out;
  EXPECT_EQ(d.at("kept_from_earlier_steps_bytes").get<int64_t>() > 0, s.leak)
      << s.train << ": " << diagnosed.out;
  ASSERT_FALSE(d.at("fixes").empty());
  EXPECT_EQ(d.at("fixes").at(0).at("change"), s.fix) << s.train << ": " << diagnosed.out;
  if (!s.fix_flags.empty()) {
    std::string fixed_args = s.train + " " + s.fix_flags;
    if (s.fix_flags.front() == '~') {  // the fix is to leave flags out
      fixed_args = s.train;
      const std::string drop = s.fix_flags.substr(1);
      fixed_args.erase(fixed_args.find(drop), drop.size());
    }
    const CliResult fixed = scenario_run("train " + fixed_args);
    EXPECT_EQ(fixed.exit_code, 0) << s.train << " " << s.fix_flags << ": " << fixed.out;
    return;
  }
  setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
  const CliResult fixed = scenario_run("train " + s.train);
  unsetenv("PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_EQ(fixed.exit_code, 0) << s.train << " with expandable segments: " << fixed.out;
}

const std::string kLongSequences =
    "--layers 4 --hidden 128 --heads 4 --vocab 256 --max-seq 512 --seq 512 --batch 8 --steps 2";

TEST(OomScenario, TheForwardsAttentionProbabilities) {
  run_scenario({kLongSequences + " --device sim:192MiB", "forward", "activation", false,
                "--attention flash", "--attention flash"});
}

TEST(OomScenario, TheFirstOptimizerStepMakesTheStates) {
  run_scenario({"--model gpt2-tiny --batch 2 --seq 16 --steps 2 --device sim:64MiB",
                "first optimizer step", "optimizer_state", false, "--optimizer adamw-8bit",
                "--optimizer adamw-8bit"});
}

TEST(OomScenario, Fp32LogitsAtALargeVocabulary) {
  run_scenario(
      {"--layers 2 --hidden 64 --heads 4 --ffn 128 --vocab 32000 --max-seq 128 --seq 128 "
       "--batch 8 --steps 2 --device sim:256MiB",
       "forward", "activation", false, "--loss-chunks 8", "--loss-chunks 8"});
}

TEST(OomScenario, VaryingLengthsFragmentTheCache) {
  run_scenario(
      {"--layers 2 --hidden 128 --heads 4 --vocab 1024 --max-seq 512 --seq 512 --batch 4 "
       "--steps 30 --vary-seq 32 --device sim:100MiB",
       "backward", "temporary", true, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", ""});
}

TEST(OomScenario, AnEvaluationThatKeepsEveryGraph) {
  run_scenario(
      {"--model gpt2-tiny --batch 8 --seq 128 --steps 2 --device sim:256MiB "
       "--eval-batches 8 --eval-grad on --eval-keep-graphs",
       "evaluation", "temporary", false, "--eval-grad off", "~--eval-grad on --eval-keep-graphs"});
}

TEST(OomScenario, OutputsKeptFromStepToStep) {
  // Seven steps' logits fill the device by the eighth: the message's numbers alone read as
  // fragmentation; the snapshot shows what earlier steps left alive.
  run_scenario(
      {"--model gpt2-tiny --batch 8 --seq 128 --steps 12 --device sim:320MiB "
       "--keep-outputs",
       "backward", "gradient", true, "keep no tensor across steps (no --keep-outputs)",
       "~--keep-outputs", true});
}

// The varying lengths' and the evaluation's flags: a bad value or combination is one line naming
// it, exit 2.
TEST(OomScenario, VaryingLengthFlagsRefuseBadValues) {
  for (const auto& [bad, named] :
       {std::pair<std::string, std::string>{"--vary-seq 600", "--vary-seq 600"},
        {"--bucket-seq 64", "--bucket-seq 64"},
        {"--vary-seq 0", "--vary-seq"},
        {"--vary-seq 8 --bucket-seq 0", "--bucket-seq"},
        {"--eval-grad on", "--eval-batches"},
        {"--eval-batches 2 --eval-keep-graphs", "--eval-grad on"},
        {"--eval-batches 0", "--eval-batches"},
        {"--eval-batches 2 --eval-grad maybe", "maybe"},
        {"--keep-outputs --loss-chunks 4", "--keep-outputs"}}) {
    const CliResult refused =
        scenario_run("train --model gpt2-tiny --seq 128 --steps 1 --device meta " + bad);
    EXPECT_EQ(refused.exit_code, 2) << bad << ": " << refused.out;
    EXPECT_EQ(vramlab::cli_test::count_lines(refused.out), 1) << bad << ": " << refused.out;
    EXPECT_NE(refused.out.find(named), std::string::npos) << bad << ": " << refused.out;
  }
}

}  // namespace
