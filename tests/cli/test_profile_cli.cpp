// `vramlab train --profile DIR` and `vramlab profile` as processes: a real run writes its six files
// (one directory per simulated rank), `vramlab profile` reads its pickle and its JSON to the same
// summary, whose numbers agree with each other and with train's; --compare finds what a second run
// keeps more of; every bad value of every new flag exits 2 with one line naming it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_run.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Result = vramlab::cli_test::CliResult;
using vramlab::cli_test::count_lines;

Result vramlab(const std::vector<std::string>& args) {
  return vramlab::cli_test::run_vramlab(args, 120.0);
}

// A one-layer model, two steps on a simulated GPU: seconds, with every phase and module.
std::vector<std::string> tiny_train(const std::string& profile_dir,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"train",    "--layers", "1",         "--hidden", "24",
                                   "--heads",  "2",        "--vocab",   "29",       "--seq",
                                   "7",        "--batch",  "2",         "--steps",  "2",
                                   "--device", "sim",      "--profile", profile_dir};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

using vramlab::cli_test::last_json_line;

class ProfileCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vramlab-profile-cli-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Trains the tiny model with a profile into dir_/NAME and returns train's JSON summary.
  json profiled_run(const std::string& name, std::vector<std::string> extra = {}) {
    extra.push_back("--json");
    const Result r = vramlab(tiny_train(path(name), extra));
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return last_json_line(r.out);
  }

  fs::path dir_;
};

const char* const kFiles[] = {"snapshot.pickle", "snapshot.json", "trace.json",
                              "ops.txt",         "ops.json",      "timeline.html"};

TEST_F(ProfileCli, TrainWritesTheFilesAndProfileReadsPickleAndJsonAlike) {
  const json summary = profiled_run("run");
  ASSERT_TRUE(summary.contains("profile")) << summary.dump();
  const json& profile = summary.at("profile");
  EXPECT_EQ(profile.at("directory"), path("run"));
  EXPECT_TRUE(profile.at("stacks").get<bool>());
  for (const char* file : kFiles) EXPECT_GT(fs::file_size(dir_ / "run" / file), 0u) << file;
  EXPECT_EQ(profile.at("files").at("snapshot_pickle"), path("run/snapshot.pickle"));

  const Result from_pickle = vramlab({"profile", path("run/snapshot.pickle"), "--json"});
  const Result from_json = vramlab({"profile", path("run/snapshot.json"), "--json"});
  ASSERT_EQ(from_pickle.exit_code, 0) << from_pickle.out;
  ASSERT_EQ(from_json.exit_code, 0) << from_json.out;
  json a = json::parse(from_pickle.out);
  json b = json::parse(from_json.out);
  a.erase("snapshot");
  b.erase("snapshot");
  EXPECT_EQ(a, b) << json::diff(a, b).dump().substr(0, 400);

  // The keys scripts and the lesson read, and numbers that agree with each other and with train.
  for (const char* key :
       {"peak_bytes", "peak_event", "peak_owner", "live_at_peak", "per_module_bytes", "by_module",
        "by_phase", "by_category", "by_stack", "top_at_peak"})
    EXPECT_TRUE(a.contains(key)) << key << " missing: " << from_pickle.out.substr(0, 300);
  const int64_t peak = a.at("peak_bytes");
  EXPECT_EQ(peak, profile.at("peak_bytes").get<int64_t>());
  EXPECT_GT(peak, 0);
  EXPECT_EQ(a.at("live_at_peak").at("bytes").get<int64_t>(), peak);
  int64_t per_module_sum = 0;
  for (const auto& [module, bytes] : a.at("per_module_bytes").items())
    per_module_sum += bytes.get<int64_t>();
  EXPECT_EQ(per_module_sum, peak);
  for (const char* grouping : {"by_module", "by_phase", "by_category", "by_stack"}) {
    int64_t sum = 0, count = 0;
    for (const json& group : a.at(grouping)) {
      sum += group.at("bytes").get<int64_t>();
      count += group.at("count").get<int64_t>();
    }
    EXPECT_EQ(sum, peak) << grouping;
    EXPECT_EQ(count, a.at("live_at_peak").at("count").get<int64_t>()) << grouping;
  }
  // A transformer's step has modules and phases: the run's allocations carry them.
  EXPECT_GE(a.at("by_module").size(), 2u) << a.at("by_module").dump();
  const json& owner = a.at("peak_owner");
  ASSERT_TRUE(owner.is_object()) << owner.dump();
  EXPECT_EQ(owner.at("module"), profile.at("peak_owner").at("module"));
  EXPECT_EQ(owner.at("phase"), profile.at("peak_owner").at("phase"));
  EXPECT_FALSE(owner.at("phase").get<std::string>().empty()) << owner.dump();

  const json& top = a.at("top_at_peak");
  ASSERT_EQ(top.size(), std::min<size_t>(10, a.at("live_at_peak").at("count").get<size_t>()));
  bool any_frames = false;
  for (size_t i = 0; i < top.size(); ++i) {
    for (const char* key : {"name", "bytes", "module", "phase", "frames"})
      EXPECT_TRUE(top[i].contains(key)) << key << ": " << top[i].dump();
    if (i > 0) {
      EXPECT_LE(top[i].at("bytes").get<int64_t>(), top[i - 1].at("bytes").get<int64_t>());
    }
    any_frames = any_frames || !top[i].at("frames").empty();
  }
  EXPECT_TRUE(any_frames) << "stacks were on, yet no allocation at the peak has frames";

  const Result three = vramlab({"profile", path("run/snapshot.pickle"), "--json", "--top", "3"});
  ASSERT_EQ(three.exit_code, 0) << three.out;
  EXPECT_EQ(json::parse(three.out).at("top_at_peak").size(), 3u);
}

TEST_F(ProfileCli, TheTextSummaryNamesThePeakAndItsGroupsWithoutColourOffATerminal) {
  profiled_run("run");
  const Result text = vramlab({"profile", path("run/snapshot.pickle"), "--top", "4"});
  ASSERT_EQ(text.exit_code, 0) << text.out;
  for (const char* needle : {"peak allocated", "reached by", "live at the peak", "module", "phase",
                             "category", "call stack", "the 4 largest allocations"})
    EXPECT_NE(text.out.find(needle), std::string::npos) << needle << "\n" << text.out;
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos) << "colour codes in a pipe";
}

TEST_F(ProfileCli, TrainPrintsWhereTheFilesAreAndThePeak) {
  const Result r = vramlab(tiny_train(path("text")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("profile: " + path("text")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peak "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory_viz"), std::string::npos) << r.out;
}

TEST_F(ProfileCli, StacksOffRecordsOwnersWithoutFrames) {
  profiled_run("nostacks", {"--profile-stacks", "off"});
  const Result r = vramlab({"profile", path("nostacks/snapshot.json"), "--json", "--top", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json j = json::parse(r.out);
  for (const json& allocation : j.at("top_at_peak"))
    EXPECT_TRUE(allocation.at("frames").empty()) << allocation.dump();
  EXPECT_GE(j.at("by_module").size(), 2u);
  ASSERT_EQ(j.at("by_stack").size(), 1u) << j.at("by_stack").dump();
  EXPECT_EQ(j.at("by_stack")[0].at("key"), "(no stack)");
}

TEST_F(ProfileCli, CompareFindsWhatTheSecondRunKeepsMore) {
  // AdamW keeps two state tensors per parameter that SGD does not: owners that did not exist
  // before, so they come first as leak suspects.
  profiled_run("sgd", {"--optimizer", "sgd"});
  profiled_run("adamw", {"--optimizer", "adamw"});
  const Result r = vramlab(
      {"profile", "--compare", path("sgd/snapshot.pickle"), path("adamw/snapshot.json"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_GT(j.at("growth_bytes").get<int64_t>(), 0);
  EXPECT_EQ(j.at("growth_bytes").get<int64_t>(),
            j.at("live_bytes_after").get<int64_t>() - j.at("live_bytes_before").get<int64_t>());
  int64_t growth_sum = 0, optimizer_growth = 0;
  bool suspects_first = true, seen_other = false;
  for (const json& owner : j.at("changed")) {
    const int64_t growth = owner.at("growth_bytes");
    EXPECT_EQ(growth,
              owner.at("bytes_after").get<int64_t>() - owner.at("bytes_before").get<int64_t>());
    growth_sum += growth;
    if (owner.at("category") == "optimizer_state") optimizer_growth += growth;
    const bool suspect = owner.at("leak_suspect");
    if (suspect && seen_other) suspects_first = false;
    seen_other = seen_other || !suspect;
  }
  EXPECT_EQ(growth_sum, j.at("growth_bytes").get<int64_t>());
  EXPECT_TRUE(suspects_first) << j.at("changed").dump().substr(0, 600);
  ASSERT_FALSE(j.at("changed").empty());
  EXPECT_EQ(j.at("changed")[0].at("category"), "optimizer_state") << j.at("changed")[0].dump();
  EXPECT_EQ(j.at("changed")[0].at("count_before"), 0);
  EXPECT_GT(optimizer_growth, 0);

  // A snapshot against itself: nothing changed.
  const Result same = vramlab(
      {"profile", "--compare", path("sgd/snapshot.pickle"), path("sgd/snapshot.json"), "--json"});
  ASSERT_EQ(same.exit_code, 0) << same.out;
  EXPECT_TRUE(json::parse(same.out).at("changed").empty()) << same.out;
  const Result text =
      vramlab({"profile", "--compare", path("sgd/snapshot.pickle"), path("adamw/snapshot.pickle")});
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("leak suspects"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("optimizer_state"), std::string::npos) << text.out;
}

TEST_F(ProfileCli, SimulatedRanksWriteOneDirectoryEach) {
  const json summary = profiled_run("ranks", {"--simulate-ranks", "2", "--zero", "1"});
  EXPECT_EQ(summary.at("profile").at("directory"), path("ranks/rank0"));
  for (const char* rank : {"rank0", "rank1"}) {
    for (const char* file : kFiles)
      EXPECT_TRUE(fs::exists(dir_ / "ranks" / rank / file)) << rank << "/" << file;
    const Result r = vramlab({"profile", path(std::string("ranks/") + rank + "/snapshot.pickle")});
    EXPECT_EQ(r.exit_code, 0) << rank << ": " << r.out;
  }
}

// One line on stderr naming the value, exit 2, for each case.
void expect_usage_error(const std::vector<std::string>& args, const std::string& named) {
  const Result r = vramlab(args);
  std::string joined;
  for (const std::string& a : args) joined += a + " ";
  EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << joined << "\n" << r.out;
  EXPECT_NE(r.out.find(named), std::string::npos) << joined << ": '" << named << "' not in\n"
                                                  << r.out;
}

TEST_F(ProfileCli, BadInputExitsTwoNamingTheValue) {
  profiled_run("run");
  const std::string snapshot = path("run/snapshot.pickle");
  for (const char* top : {"0", "-1", "99999999999", "NaN", "1e3", "seven"})
    expect_usage_error({"profile", snapshot, "--top", top}, top);
  expect_usage_error({"profile", "--compare", snapshot, snapshot, "--top", "0"}, "0");
  expect_usage_error({"profile", snapshot, "--device-index", "-2"}, "-2");
  expect_usage_error({"profile", snapshot, "--device-index", "5"}, "device 5");
  expect_usage_error({"profile", path("missing.pickle")}, path("missing.pickle"));
  expect_usage_error({"profile", path("run")}, "directory");
  std::ofstream(path("notes.txt")) << "the peak was high\n";
  expect_usage_error({"profile", path("notes.txt")}, path("notes.txt"));
  std::ofstream(path("other.json")) << R"({"traceEvents": []})";
  expect_usage_error({"profile", path("other.json")}, path("other.json"));
  const std::string cut = path("cut.pickle");
  {
    std::ostringstream full;
    full << std::ifstream(snapshot, std::ios::binary).rdbuf();
    const std::string bytes = full.str();
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  expect_usage_error({"profile", cut}, "truncated");
  expect_usage_error({"profile", "--compare", snapshot, path("missing.json")},
                     path("missing.json"));
  expect_usage_error({"profile", "--compare", snapshot}, "--compare");
  expect_usage_error({"profile", snapshot, "--compare", snapshot, snapshot}, "not both");
  expect_usage_error({"profile"}, "SNAPSHOT");

  expect_usage_error(tiny_train(""), "--profile");
  expect_usage_error(tiny_train(path("notes.txt")), path("notes.txt"));
  expect_usage_error(tiny_train(path("notes.txt") + "/below"), path("notes.txt") + "/below");
  expect_usage_error(tiny_train(path("x"), {"--profile-stacks", "maybe"}), "maybe");
  std::vector<std::string> stacks_alone = tiny_train("x");
  stacks_alone.resize(stacks_alone.size() - 2);  // without --profile x
  stacks_alone.insert(stacks_alone.end(), {"--profile-stacks", "off"});
  expect_usage_error(stacks_alone, "--profile DIR");
}

TEST(ProfileCliHelp, BothCommandsDocumentTheirFlags) {
  const Result profile = vramlab({"profile", "--help"});
  ASSERT_EQ(profile.exit_code, 0) << profile.out;
  for (const char* flag : {"--compare", "--top", "--json", "--device-index"})
    EXPECT_NE(profile.out.find(flag), std::string::npos) << flag << "\n" << profile.out;
  const Result train = vramlab({"train", "--help"});
  ASSERT_EQ(train.exit_code, 0) << train.out;
  for (const char* flag : {"--profile ", "--profile-stacks"})
    EXPECT_NE(train.out.find(flag), std::string::npos) << flag << "\n" << train.out;
}

}  // namespace
