// Every `vramlab` command as a learner meets it first: --help exits 0 and documents --json, and a
// command one help text points to (`vramlab estimate --list-models`) exists with that flag. The
// model list is the one --model accepts, with the parameter counts the estimator uses.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_run.h"

namespace {

namespace fs = std::filesystem;

using Result = vramlab::cli_test::CliResult;

using vramlab::cli_test::run_vramlab;

const std::vector<std::string> kCommands = {
    "doctor", "formats", "alloc", "estimate", "train", "maxbatch", "plan", "diagnose", "profile",
    "list",   "check",   "hint",  "solution", "reset", "watch",    "run",  "verify"};

TEST(HelpCli, EveryCommandTakesHelpAndJsonAndEveryFlagAHelpNamesExists) {
  const Result top = run_vramlab({"--help"});
  ASSERT_EQ(top.exit_code, 0) << top.out;
  std::string all_help = top.out;
  for (const auto& command : kCommands) {
    const Result r = run_vramlab({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.out;
    EXPECT_NE(r.out.find("--json"), std::string::npos) << command << ": " << r.out;
    EXPECT_NE(top.out.find(command), std::string::npos) << command << " missing from --help";
    all_help += r.out;
  }
  // "vramlab COMMAND --flag" anywhere in a help text: COMMAND's own help must list --flag.
  const std::regex mention(R"(vramlab ([a-z]+) (--[a-z][a-z-]*))");
  int mentions = 0;
  for (auto it = std::sregex_iterator(all_help.begin(), all_help.end(), mention);
       it != std::sregex_iterator(); ++it) {
    ++mentions;
    const std::string command = (*it)[1], flag = (*it)[2];
    const Result r = run_vramlab({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << it->str() << ": " << r.out;
    EXPECT_NE(r.out.find("  " + flag + " "), std::string::npos) << it->str() << ": " << r.out;
  }
  EXPECT_GT(mentions, 0) << "train --help names vramlab estimate --list-models";
}

TEST(HelpCli, ListModelsNamesEveryModelTheEstimatorTakesWithItsParameterCount) {
  const Result list = run_vramlab({"estimate", "--list-models", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.out;
  const auto models = nlohmann::json::parse(list.out).at("models");
  ASSERT_GE(models.size(), 2u);
  for (const auto& m : models) {
    const std::string name = m.at("name");
    const Result e = run_vramlab({"estimate", "--model", name, "--seq", "16", "--json"});
    ASSERT_EQ(e.exit_code, 0) << name << ": " << e.out;
    const auto j = nlohmann::json::parse(e.out);
    EXPECT_EQ(j.at("parameter_count"), m.at("parameters")) << name;
    EXPECT_EQ(j.at("inputs").at("layers"), m.at("layers")) << name;
    EXPECT_EQ(j.at("inputs").at("vocab"), m.at("vocab")) << name;
  }
  const Result text = run_vramlab({"estimate", "--list-models"});
  ASSERT_EQ(text.exit_code, 0) << text.out;
  for (const auto& m : models)
    EXPECT_NE(text.out.find(m.at("name").get<std::string>()), std::string::npos) << text.out;
}

}  // namespace
