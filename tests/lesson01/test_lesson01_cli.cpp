// The lesson 01 binary on the command line: --json parses and has the keys the lesson's README
// names, the figures are written, a too-small simulated GPU exits 1 with PyTorch's out-of-memory
// message and advice. (Bad input exiting 2 is checked by plain ctest cases, see CMakeLists.txt.)
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

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
  EXPECT_NE(r.err.find("Try: --device meta"), std::string::npos) << r.err;
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
