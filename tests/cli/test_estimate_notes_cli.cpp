// `vramlab estimate` with inputs that are valid but do nothing, such as ZeRO over one
// data-parallel rank: the estimate is printed (exit 0) with a note in the text and in --json.
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

using Result = vramlab::cli_test::CliResult;

// `vramlab estimate ARGS...`
Result estimate(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"estimate"};
  all.insert(all.end(), args.begin(), args.end());
  return vramlab::cli_test::run_vramlab(all);
}

namespace fs = std::filesystem;

TEST(EstimateNotes, ZeroOverOneRankPartitionsNothingAndSaysSo) {
  for (const char* stage : {"1", "2", "3"}) {
    const Result one = estimate({"--model", "gpt2-124m", "--zero", stage, "--dp", "1", "--json"});
    ASSERT_EQ(one.exit_code, 0) << one.out;
    const auto j = nlohmann::json::parse(one.out);
    EXPECT_FALSE(j.at("zero_partitions").get<bool>()) << stage;
    ASSERT_EQ(j.at("notes").size(), 1u) << one.out;
    const std::string note = j.at("notes").at(0);
    EXPECT_NE(note.find(std::string("ZeRO stage ") + stage + " with --dp 1 partitions nothing"),
              std::string::npos)
        << note;
    // The note is true: the model states are those of stage 0.
    const Result none = estimate({"--model", "gpt2-124m", "--zero", "0", "--json"});
    ASSERT_EQ(none.exit_code, 0) << none.out;
    EXPECT_EQ(j.at("per_device_bytes").at("total"),
              nlohmann::json::parse(none.out).at("per_device_bytes").at("total"))
        << stage;
    const Result text = estimate({"--model", "gpt2-124m", "--zero", stage, "--dp", "1"});
    ASSERT_EQ(text.exit_code, 0) << text.out;
    EXPECT_NE(text.out.find("note: " + note), std::string::npos) << text.out;
  }
  for (const std::vector<std::string>& quiet :
       {std::vector<std::string>{"--zero", "3", "--dp", "8"}, {"--zero", "0", "--dp", "1"}}) {
    std::vector<std::string> args = {"--model", "gpt2-124m", "--json"};
    args.insert(args.end(), quiet.begin(), quiet.end());
    const Result r = estimate(args);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j.at("notes").empty()) << r.out;
    EXPECT_EQ(j.at("zero_partitions").get<bool>(), quiet[1] != "0") << r.out;
  }
}

}  // namespace
