// The workbook commands of the `vramlab` binary, run as a learner would (output to a file, no
// terminal): bad input exits 2 naming the value, list shows lesson 01 pending, hints advance and
// are remembered, the solution waits for a pass, reset refuses without a terminal or --yes.
// The state goes to a temporary file (VRAMLAB_STATE_FILE) so the checkout's is untouched.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/platform/build_info.h"
#include "common/workbook/manifest.h"
#include "common/workbook/process.h"
#include "common/workbook/state.h"

namespace vramlab::workbook {
namespace {

namespace fs = std::filesystem;

class WorkbookCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vramlab-test-cli-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    state_ = dir_ / "state.json";
    setenv("VRAMLAB_STATE_FILE", state_.c_str(), 1);
    setenv("NO_COLOR", "1", 1);
  }
  void TearDown() override {
    unsetenv("VRAMLAB_STATE_FILE");
    fs::remove_all(dir_);
  }
  // Runs vramlab with \p args; returns its exit code and fills output_.
  int vramlab(const std::vector<std::string>& args, double seconds = 120.0) {
    std::vector<std::string> argv;
    argv.reserve(args.size() + 1);
    argv.push_back(cli_path_);
    for (const auto& arg : args) argv.push_back(arg);
    const ProcessResult r = run_process(argv, dir_ / "out.txt", seconds);
    std::ifstream in(dir_ / "out.txt");
    std::stringstream text;
    text << in.rdbuf();
    output_ = text.str();
    return r.exit_code;
  }
  fs::path dir_, state_;
  std::string output_;
  const std::string cli_path_ = VRAMLAB_CLI_PATH;
};

TEST_F(WorkbookCli, UnknownExerciseOrLessonIsExit2NamingIt) {
  EXPECT_EQ(vramlab({"hint", "01.9"}), 2) << output_;
  EXPECT_NE(output_.find("'01.9'"), std::string::npos) << output_;
  EXPECT_EQ(vramlab({"check", "01.9"}), 2) << output_;
  EXPECT_NE(output_.find("'01.9'"), std::string::npos) << output_;
  EXPECT_EQ(vramlab({"solution", "42.1"}), 2) << output_;
  EXPECT_EQ(vramlab({"run", "77"}), 2) << output_;
  EXPECT_NE(output_.find("'77'"), std::string::npos) << output_;
}

TEST_F(WorkbookCli, HintLevelOutOfRangeIsExit2NamingIt) {
  EXPECT_EQ(vramlab({"hint", "01.1", "--level", "4"}), 2) << output_;
  EXPECT_NE(output_.find("level 4"), std::string::npos) << output_;
  for (const char* level : {"0", "-1", "17"}) {
    EXPECT_EQ(vramlab({"hint", "01.1", "--level", level}), 2) << output_;
    EXPECT_NE(output_.find("--level " + std::string(level) + " "), std::string::npos) << output_;
    EXPECT_NE(output_.find("1 to 3"), std::string::npos) << output_;
    EXPECT_EQ(std::count(output_.begin(), output_.end(), '\n'), 1) << output_;
  }
  EXPECT_FALSE(fs::exists(state_)) << "a refused hint counts as seen";
}

TEST_F(WorkbookCli, UnknownCommandIsExit2NamingItWithTheCommands) {
  EXPECT_EQ(vramlab({"frobnicate"}), 2) << output_;
  EXPECT_NE(output_.find("unknown command 'frobnicate'"), std::string::npos) << output_;
  for (const char* command : {"list", "check", "run", "alloc", "estimate", "train"})
    EXPECT_NE(output_.find(command), std::string::npos) << command << ": " << output_;
  EXPECT_EQ(std::count(output_.begin(), output_.end(), '\n'), 1) << output_;
  // What the user typed is shown, never played: an escape sequence arrives escaped.
  EXPECT_EQ(vramlab({"frob\x1b[2Jnicate"}), 2) << output_;
  EXPECT_NE(output_.find("'frob\\x1b[2Jnicate'"), std::string::npos) << output_;
  EXPECT_EQ(output_.find('\x1b'), std::string::npos) << output_;
  // A known command still parses.
  EXPECT_EQ(vramlab({"list", "--json"}), 0) << output_;
}

// `vramlab run 01` passes the lesson's flags on, with or without `--`, says whose code runs, and
// leaves a flag neither knows to the lesson binary's exit 2.
TEST_F(WorkbookCli, RunPassesTheLessonsFlagsAndSaysWhoseCodeRuns) {
  const std::vector<std::string> flags = {
      "--model", "gpt2-mini", "--batch", "2",         "--seq",
      "16",      "--device",  "meta",    "--out-dir", (dir_ / "figures").string()};
  for (const bool separator : {false, true}) {
    std::vector<std::string> args = {"run", "01"};
    if (separator) args.push_back("--");
    args.insert(args.end(), flags.begin(), flags.end());
    ASSERT_EQ(vramlab(args), 0) << output_;
    EXPECT_NE(output_.find("gpt2-mini (gpt2)"), std::string::npos) << output_;
    EXPECT_NE(output_.find("B=2 T=16"), std::string::npos) << output_;
    EXPECT_NE(output_.find("REFERENCE: lesson 01 runs with the reference solutions"),
              std::string::npos)
        << output_;
  }
  std::vector<std::string> json = {"run", "01", "--json"};
  json.insert(json.end(), flags.begin(), flags.end());
  ASSERT_EQ(vramlab(json), 0) << output_;
  EXPECT_NE(output_.find("\"parameter_count\""), std::string::npos) << output_;
  EXPECT_EQ(vramlab({"run", "01", "--device", "meta", "--bogus"}), 2) << output_;
  EXPECT_NE(output_.find("--bogus"), std::string::npos) << output_;
}

// --mine builds the learner's binary (their stubs compile as shipped) and says which files run.
TEST_F(WorkbookCli, RunMineSaysItRunsYourFiles) {
  std::vector<std::string> args = {"run",
                                   "01",
                                   "--mine",
                                   "--model",
                                   "gpt2-mini",
                                   "--batch",
                                   "2",
                                   "--seq",
                                   "16",
                                   "--device",
                                   "meta",
                                   "--out-dir",
                                   (dir_ / "figures").string()};
  ASSERT_EQ(vramlab(args, 500.0), 0) << output_;
  const Workbook book = load_workbook(build_info::kSourceDir);
  const size_t header = output_.find("YOUR CODE: lesson 01 runs with your exercise files");
  ASSERT_NE(header, std::string::npos) << output_;
  EXPECT_LT(header, output_.find("Lesson 01:")) << "the header comes first: " << output_;
  for (const auto& ex : book.lesson("01").exercises)
    EXPECT_NE(output_.find(ex.stub, header), std::string::npos) << ex.stub << "\n" << output_;
}

TEST_F(WorkbookCli, HintsAdvanceAndAreRemembered) {
  const Workbook book = load_workbook(build_info::kSourceDir);
  const Exercise& ex = book.exercise("01.2");
  ASSERT_EQ(vramlab({"hint", "01.2"}), 0) << output_;
  EXPECT_NE(output_.find("Hint 1/3"), std::string::npos) << output_;
  EXPECT_NE(output_.find(ex.hints[0]), std::string::npos) << output_;
  ASSERT_EQ(vramlab({"hint", "01.2"}), 0) << output_;
  EXPECT_NE(output_.find(ex.hints[1]), std::string::npos) << output_;
  EXPECT_EQ(load_state(state_).hints_seen.at("01.2"), 2);
  ASSERT_EQ(vramlab({"hint", "01.2", "--level", "3", "--json"}), 0) << output_;
  const auto j = nlohmann::json::parse(output_);
  EXPECT_EQ(j.at("level"), 3);
  EXPECT_EQ(j.at("hint"), ex.hints[2]);
}

TEST_F(WorkbookCli, ListShowsLesson01PendingWithFiles) {
  ASSERT_EQ(vramlab({"list"}), 0) << output_;
  EXPECT_NE(output_.find("01.1"), std::string::npos) << output_;
  EXPECT_NE(output_.find("PENDING"), std::string::npos) << output_;
  EXPECT_NE(output_.find("exercises/01-memory-breakdown/bytes_per_param.cpp"), std::string::npos)
      << output_;
  EXPECT_EQ(output_.find('\x1b'), std::string::npos) << "colour without a terminal";
  ASSERT_EQ(vramlab({"list", "--json"}), 0) << output_;
  const auto j = nlohmann::json::parse(output_);
  const auto& lesson = j.at("lessons").at(0);
  EXPECT_EQ(lesson.at("id"), "01");
  EXPECT_EQ(lesson.at("done"), 0);
  for (const auto& ex : lesson.at("exercises")) EXPECT_EQ(ex.at("status"), "PENDING") << ex.dump();
  EXPECT_EQ(j.at("current"), "01.1");
}

TEST_F(WorkbookCli, DoneExercisesShowAsDoneAndUnlockTheSolution) {
  EXPECT_EQ(vramlab({"solution", "01.1"}), 1) << output_;
  EXPECT_NE(output_.find("--reveal"), std::string::npos) << output_;
  State s;
  s.done = {"01.1"};
  save_state(state_, s);
  ASSERT_EQ(vramlab({"solution", "01.1"}), 0) << output_;
  EXPECT_NE(output_.find("model_state_breakdown"), std::string::npos) << output_;
  ASSERT_EQ(vramlab({"list", "--json"}), 0) << output_;
  const auto j = nlohmann::json::parse(output_);
  EXPECT_EQ(j.at("lessons").at(0).at("exercises").at(0).at("status"), "DONE");
  EXPECT_EQ(j.at("current"), "01.2");
  ASSERT_EQ(vramlab({"solution", "01.2", "--reveal", "--json"}), 0) << output_;
  EXPECT_NE(
      nlohmann::json::parse(output_).at("text").get<std::string>().find("layer_activation_bytes"),
      std::string::npos);
}

// --diff compares the bodies of the functions the learner edits, not the two files: the header
// comment and the includes differ everywhere and would hide the code.
TEST_F(WorkbookCli, SolutionDiffComparesTheFunctionBodies) {
  ASSERT_EQ(vramlab({"solution", "01.2", "--reveal", "--diff"}), 0) << output_;
  EXPECT_NE(output_.find("--- yours: exercises/01-memory-breakdown/layer_activations.cpp: "
                         "layer_activation_bytes() body"),
            std::string::npos)
      << output_;
  EXPECT_NE(output_.find("-  VRAMLAB_NOT_IMPLEMENTED(\"01.2\");"), std::string::npos) << output_;
  EXPECT_NE(output_.find("+  require_positive(shape.batch"), std::string::npos) << output_;
  EXPECT_EQ(output_.find("#include"), std::string::npos) << output_;
  EXPECT_EQ(output_.find("YOUR CODE"), std::string::npos) << output_;
  EXPECT_NE(output_.find("The reference also defines checked_multiply(), checked_sum(), "
                         "require_positive()"),
            std::string::npos)
      << output_;
  ASSERT_EQ(vramlab({"solution", "01.1", "--reveal", "--diff", "--json"}), 0) << output_;
  const std::string diff = nlohmann::json::parse(output_).at("diff");
  EXPECT_NE(diff.find("model_state_breakdown() body"), std::string::npos) << diff;
  EXPECT_EQ(diff.find("#include"), std::string::npos) << diff;
}

// Once an exercise passes, each of its known mistakes can be shown: what it is, the test that
// catches it, and its code against the reference. Before that, nothing of them is shown.
TEST_F(WorkbookCli, SolutionShowsTheKnownMistakesOnceTheExercisePasses) {
  const Workbook book = load_workbook(build_info::kSourceDir);
  const Exercise& ex = book.exercise("01.1");
  ASSERT_FALSE(ex.wrong.empty());
  EXPECT_EQ(vramlab({"solution", "01.1", "--mistake", "list"}), 1) << output_;
  EXPECT_EQ(output_.find(ex.wrong.front().mistake), std::string::npos) << output_;
  State s;
  s.done = {"01.1"};
  save_state(state_, s);
  ASSERT_EQ(vramlab({"solution", "01.1", "--mistake", "list", "--json"}), 0) << output_;
  const auto listed = nlohmann::json::parse(output_).at("mistakes");
  ASSERT_EQ(listed.size(), ex.wrong.size());
  for (size_t i = 0; i < ex.wrong.size(); ++i) {
    EXPECT_EQ(listed.at(i).at("name"), ex.wrong[i].name);
    EXPECT_EQ(listed.at(i).at("mistake"), ex.wrong[i].mistake);
    EXPECT_EQ(listed.at(i).at("caught_by"), ex.wrong[i].caught_by);
  }
  for (const WrongVariant& w : ex.wrong) {
    ASSERT_EQ(vramlab({"solution", "01.1", "--mistake", w.name, "--json"}), 0) << output_;
    const auto shown = nlohmann::json::parse(output_);
    EXPECT_EQ(shown.at("what"), w.mistake);
    const std::string diff = shown.at("diff");
    // A unified diff from the reference to the mistake: its own header first, then at least one
    // line the mistake removes or adds.
    EXPECT_EQ(diff.rfind("--- ", 0), 0u) << w.name << ":\n" << diff;
    EXPECT_NE(diff.find("\n@@ "), std::string::npos) << w.name << ":\n" << diff;
    EXPECT_EQ(diff.find("Mistake:"), std::string::npos) << w.name << ":\n" << diff;
  }
  EXPECT_EQ(vramlab({"solution", "01.1", "--mistake", "no_such_mistake"}), 2) << output_;
  EXPECT_NE(output_.find("'no_such_mistake'"), std::string::npos) << output_;
}

TEST_F(WorkbookCli, ResetRefusesWithoutATerminalOrYes) {
  EXPECT_EQ(vramlab({"reset", "01.1"}), 2) << output_;
  EXPECT_NE(output_.find("--yes"), std::string::npos) << output_;
  EXPECT_EQ(vramlab({"reset"}), 2) << output_;
}

}  // namespace
}  // namespace vramlab::workbook
