// The lesson 01 binary on the command line: --json parses and has the keys the lesson's README
// names, the figures are written (by default into the build directory, never the current one), a
// too-small simulated GPU exits 1 with PyTorch's out-of-memory message and advice, and every
// command the lesson suggests runs as printed. (Bad input exiting 2 is checked by plain ctest
// cases, see CMakeLists.txt.)
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/workbook/manifest.h"
#include "common/workbook/process.h"
#include "common/workbook/state.h"

namespace {

namespace fs = std::filesystem;

struct LessonRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

LessonRun run_lesson(const std::string& args, const std::string& tag) {
  const fs::path dir = fs::path(LESSON01_TEST_DIR) / tag;
  fs::create_directories(dir);
  const std::string cmd = std::string(LESSON01_BINARY) + " " + args + " --out-dir " +
                          (dir / "figures").string() + " >" + (dir / "out.txt").string() + " 2>" +
                          (dir / "err.txt").string();
  const int status = std::system(cmd.c_str());
  LessonRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out.txt");
  r.err = slurp(dir / "err.txt");
  return r;
}

TEST(Lesson01Cli, JsonHasMeasuredAndEstimatedBytesPerCategoryAndThePeak) {
  const LessonRun r =
      run_lesson("--model gpt2-mini --batch 4 --seq 32 --device meta --json", "json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* category :
       {"parameters", "gradients", "optimizer_states", "activations", "temporaries", "inputs"}) {
    ASSERT_TRUE(j.at("measured_bytes").contains(category)) << category;
    ASSERT_TRUE(j.at("estimated_bytes").contains(category)) << category;
  }
  const int64_t psi = j.at("parameter_count").get<int64_t>();
  EXPECT_EQ(j.at("requested_bytes").at("parameters").get<int64_t>(), 4 * psi);
  EXPECT_EQ(j.at("estimated_bytes").at("optimizer_states").get<int64_t>(), 8 * psi);
  EXPECT_TRUE(j.at("estimated_bytes").at("temporaries").is_null());
  const int64_t peak = j.at("peak_bytes").get<int64_t>();
  EXPECT_GT(peak, j.at("measured_bytes").at("parameters").get<int64_t>());
  EXPECT_EQ(j.at("peak").at("exercise_01_3_peak_bytes").get<int64_t>(), peak);
  EXPECT_FALSE(j.at("peak").at("live").empty());
  EXPECT_EQ(j.at("activations_per_layer").size(), 3u);  // outside + 2 blocks
  for (const char* f : {"breakdown_svg", "measured_vs_estimated_svg", "timeline_html"}) {
    const fs::path path = j.at("figures").at(f).get<std::string>();
    EXPECT_TRUE(fs::exists(path)) << path;
    EXPECT_GT(fs::file_size(path), 500u) << path;
  }
}

TEST(Lesson01Cli, DefaultRunPrintsTheTablesOnASimulatedGpu) {
  const LessonRun r = run_lesson("--model gpt2-mini", "text");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text : {"Memory per category", "optimizer states", "Saved activations per layer",
                           "Bytes per parameter", "The peak", "sim:t4-16g"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
}

TEST(Lesson01Cli, TooSmallSimulatedGpuExits1WithPyTorchsMessageAndAdvice) {
  const LessonRun r = run_lesson("--model gpt2-tiny --device sim:64MiB", "oom");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("out of memory. Tried to allocate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Try:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" --device meta "), std::string::npos) << r.err;
}

}  // namespace

namespace {

// Every lesson command runs on a real GPU with --device cuda; without one it is refused with the
// GPU probe's reason (what `vramlab doctor` prints) and exit 2, before anything runs.
TEST(Lesson01Cli, CudaDeviceRunsOnAGpuOrIsRefusedWithTheDoctorsReason) {
  const LessonRun r = run_lesson("--model gpt2-mini --batch 2 --seq 16 --device cuda", "cuda");
  if (r.exit_code == 0) {
    EXPECT_NE(r.out.find("cuda:0"), std::string::npos) << r.out;
    return;
  }
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("device 'cuda:0' is not available: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--device sim:t4-16g"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

}  // namespace

namespace {

// The commands a lesson output suggests: the lines after \p heading that start with two spaces and
// the vramlab beside the lesson binary (as printed: a path relative to the current directory or
// absolute), without their `# why` comment, split into words.
std::vector<std::vector<std::string>> suggested_commands(const std::string& text,
                                                         const std::string& heading) {
  std::vector<std::vector<std::string>> commands;
  const size_t start = text.find("\n" + heading + "\n");
  if (start == std::string::npos) return commands;
  std::istringstream lines(text.substr(start + heading.size() + 2));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  ", 0) != 0) break;
    if (line.rfind("  (", 0) == 0) continue;  // a remark, not a command
    const std::string command = line.substr(2, line.find("   # ") - 2);
    std::istringstream words(command);
    std::vector<std::string> argv;
    for (std::string word; words >> word;) argv.push_back(word);
    commands.push_back(argv);
  }
  return commands;
}

struct Ran {
  vramlab::workbook::ProcessResult result;
  std::string out;
};

Ran run_words(const std::vector<std::string>& argv, const fs::path& output, double seconds) {
  Ran ran{vramlab::workbook::run_process(argv, output, seconds), ""};
  ran.out = slurp(output);
  return ran;
}

// The learner's state for the lesson binary, in a file of the test's own.
class LessonWithState : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(LESSON01_TEST_DIR) / ("state-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    setenv("VRAMLAB_STATE_FILE", (dir_ / "state.json").c_str(), 1);
    setenv("NO_COLOR", "1", 1);
  }
  void TearDown() override {
    unsetenv("VRAMLAB_STATE_FILE");
    fs::remove_all(dir_);
  }
  void set_done(const std::set<std::string>& done) {
    vramlab::workbook::State state;
    state.done = done;
    vramlab::workbook::save_state(dir_ / "state.json", state);
  }
  fs::path dir_;
};

const std::string kVramlab = VRAMLAB_CLI_PATH;

// The vramlab a suggestion names is the one beside the lesson binary, as this test's current
// directory sees it.
bool names_our_vramlab(const std::string& word) {
  return fs::exists(word) && fs::equivalent(word, kVramlab);
}

TEST_F(LessonWithState, EverySuggestedCommandRunsAsPrinted) {
  const LessonRun r = run_lesson("--model gpt2-mini --batch 2 --seq 16 --device meta", "next");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto commands = suggested_commands(r.out, "Next:");
  ASSERT_GE(commands.size(), 3u) << r.out;
  int runs = 0;
  for (const auto& argv : commands) {
    std::string shown;
    for (const auto& w : argv) shown += w + " ";
    ASSERT_GE(argv.size(), 2u) << shown;
    EXPECT_TRUE(names_our_vramlab(argv[0])) << shown;
    if (argv[1] == "run") {
      // A lesson run with the lesson's own flags, through vramlab: on meta it finishes in seconds;
      // the small simulated GPU is the suggested out-of-memory error.
      ++runs;
      const Ran ran = run_words(argv, dir_ / "suggested.txt", 120.0);
      const bool oom = shown.find("sim:64MiB") != std::string::npos;
      EXPECT_EQ(ran.result.exit_code, oom ? 1 : 0) << shown << "\n" << ran.out;
      EXPECT_NE(ran.out.find(oom ? "out of memory" : "Memory per category"), std::string::npos)
          << shown << "\n"
          << ran.out;
    } else {
      // An exercise command: that it parses and names an exercise of lesson 01.
      ASSERT_EQ(argv.size(), 3u) << shown;
      EXPECT_EQ(argv[1], "check") << shown;
      EXPECT_EQ(argv[2].rfind("01.", 0), 0u) << shown;
      const Ran help = run_words({argv[0], argv[1], "--help"}, dir_ / "help.txt", 60.0);
      EXPECT_EQ(help.result.exit_code, 0) << shown << help.out;
    }
  }
  EXPECT_GE(runs, 2) << r.out;
}

TEST_F(LessonWithState, NextNamesTheFirstExerciseNotDoneOrSaysAllAreDone) {
  const auto exercise_line = [&](const std::string& tag) {
    const LessonRun r = run_lesson("--model gpt2-mini --batch 2 --seq 16 --device meta", tag);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto commands = suggested_commands(r.out, "Next:");
    return commands.empty() ? std::vector<std::string>{} : commands.back();
  };
  set_done({});
  auto last = exercise_line("none-done");
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last[2], "01.1");
  set_done({"01.1", "01.3"});
  last = exercise_line("some-done");
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last[1], "check");
  EXPECT_EQ(last[2], "01.2");
  // Every exercise the manifest lists, so the test follows the lesson when it gains one.
  std::set<std::string> every_exercise;
  const vramlab::workbook::Workbook workbook = vramlab::workbook::load_workbook(VRAMLAB_SOURCE_DIR);
  for (const auto& exercise : workbook.lesson("01").exercises) every_exercise.insert(exercise.id);
  ASSERT_GE(every_exercise.size(), 3u);
  set_done(every_exercise);
  const LessonRun all =
      run_lesson("--model gpt2-mini --batch 2 --seq 16 --device meta", "all-done");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out.find(" check 01."), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("every exercise of lesson 01 is done"), std::string::npos) << all.out;
}

// Without --out-dir the figures go beside the build's binaries (build/lesson-output/01), not into
// the current directory, and the output says where.
TEST_F(LessonWithState, FiguresDefaultToTheBuildDirectoryAndTheOutputSaysWhere) {
  const fs::path cwd = dir_ / "cwd";
  fs::create_directories(cwd);
  const std::string cmd = "cd " + cwd.string() + " && " + std::string(LESSON01_BINARY) +
                          " --model gpt2-mini --batch 2 --seq 16 --device meta >" +
                          (dir_ / "out.txt").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string out = slurp(dir_ / "out.txt");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_TRUE(fs::is_empty(cwd)) << "wrote into the current directory: " << out;
  const fs::path expected = fs::weakly_canonical(
      fs::path(LESSON01_BINARY).parent_path().parent_path() / "lesson-output" / "01");
  EXPECT_NE(out.find("Figures in " + expected.string() + ":"), std::string::npos)
      << expected << "\n"
      << out;
  for (const char* f : {"breakdown.svg", "measured_vs_estimated.svg", "timeline.html"})
    EXPECT_TRUE(fs::exists(expected / f)) << expected / f;
}

// Out of memory on a small simulated GPU: each suggestion is a command that runs, and a larger
// simulated GPU is suggested only when this machine's RAM (the budget VRAMLAB_HOST_MEMORY_LIMIT
// sets) can hold the step; otherwise the advice is meta.
TEST_F(LessonWithState, OutOfMemoryAdviceSuggestsALargerSimOnlyWhenHostRamHoldsIt) {
  const auto advice = [&](const std::string& limit, const std::string& tag) {
    if (limit.empty())
      unsetenv("VRAMLAB_HOST_MEMORY_LIMIT");
    else
      setenv("VRAMLAB_HOST_MEMORY_LIMIT", limit.c_str(), 1);
    const LessonRun r = run_lesson("--model gpt2-tiny --device sim:64MiB", tag);
    unsetenv("VRAMLAB_HOST_MEMORY_LIMIT");
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    return std::make_pair(r.err, suggested_commands(r.err, "Try:"));
  };
  // 1 GiB holds gpt2-tiny's step (under 200 MiB) with room: the smallest preset is suggested.
  const auto [roomy_text, roomy] = advice("1GiB", "oom-roomy");
  ASSERT_FALSE(roomy.empty()) << roomy_text;
  bool larger = false;
  for (const auto& argv : roomy) {
    EXPECT_TRUE(names_our_vramlab(argv[0])) << roomy_text;
    for (size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == "--device" && argv[i + 1] == "sim:t4-16g") larger = true;
  }
  EXPECT_TRUE(larger) << roomy_text;
  // 100 MiB lets the 64 MiB device fill, but not the step: no larger sim, meta instead.
  const auto [tight_text, tight] = advice("100MiB", "oom-tight");
  ASSERT_FALSE(tight.empty()) << tight_text;
  for (const auto& argv : tight)
    for (size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == "--device") {
        EXPECT_TRUE(argv[i + 1] == "meta" || argv[i + 1] == "sim:64MiB") << tight_text;
      }
  EXPECT_NE(tight_text.find("meta measures it instead"), std::string::npos) << tight_text;
  // The meta suggestion runs as printed.
  for (const auto& argv : tight)
    if (std::find(argv.begin(), argv.end(), "meta") != argv.end()) {
      const Ran ran = run_words(argv, dir_ / "try.txt", 120.0);
      EXPECT_EQ(ran.result.exit_code, 0) << ran.out;
    }
}

}  // namespace

namespace {

// Bad input is one line naming the value, with what the user typed shown and not played.
TEST_F(LessonWithState, ControlCharactersInBadInputAreShownEscaped) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--model", "gp\x1b[2Jt"}, {"--bogus\x07"}}) {
    std::vector<std::string> argv = {LESSON01_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    const Ran ran = run_words(argv, dir_ / "bad.txt", 60.0);
    EXPECT_EQ(ran.result.exit_code, 2) << ran.out;
    EXPECT_EQ(ran.out.find('\n'), ran.out.size() - 1) << "one line: " << ran.out;
    EXPECT_EQ(ran.out.find_first_of("\x1b\x07"), std::string::npos) << ran.out;
    EXPECT_TRUE(ran.out.find("gp\\x1b[2Jt") != std::string::npos ||
                ran.out.find("--bogus\\x07") != std::string::npos)
        << ran.out;
  }
}

}  // namespace
