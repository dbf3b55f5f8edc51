// The lesson 02 binary on the command line: --json has the keys the lesson's page names, with the
// measured activation peak equal to the planner's for every schedule, and the figures are written
// where --out-dir says. (Bad input exiting 2 is checked by plain ctest cases, see CMakeLists.txt.)
#include <gtest/gtest.h>
#include <sys/wait.h>

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

LessonRun run_lesson(const std::string& args, const fs::path& dir) {
  fs::create_directories(dir);
  const std::string cmd = std::string(LESSON02_BINARY) + " " + args + " --out-dir " +
                          (dir / "figures").string() + " >" + (dir / "out.txt").string() + " 2>" +
                          (dir / "err.txt").string();
  const int status = std::system(cmd.c_str());
  LessonRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out.txt");
  r.err = slurp(dir / "err.txt");
  return r;
}

TEST(Lesson02Cli, JsonHasEveryPolicyWithItsMeasurementsAndTheLargestBatches) {
  const fs::path dir = fs::path(LESSON02_TEST_DIR) / "json";
  fs::remove_all(dir);
  const LessonRun r = run_lesson(
      "--model gpt2-mini --layers 5 --seq 24 --batch 3 --steps 2 --max-batch-device sim:12MiB "
      "--meta-model gpt2-124m --meta-seq 512 --json",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.at("policies").is_array());
  ASSERT_EQ(j["policies"].size(), 7u);
  for (const auto& p : j["policies"]) {
    for (const char* key : {"name", "activation_peak_bytes", "peak_bytes", "step_seconds",
                            "recomputed_forward_fraction", "grads_bitwise_equal"})
      EXPECT_TRUE(p.contains(key)) << key;
    EXPECT_EQ(p["activation_peak_bytes"], p["predicted_activation_peak_bytes"]) << p["name"];
    EXPECT_EQ(p["grads_bitwise_equal"], true) << p["name"];
    EXPECT_GT(p["peak_bytes"].get<int64_t>(), p["activation_peak_bytes"].get<int64_t>());
    EXPECT_GT(p["step_seconds"].get<double>(), 0.0);
    const double f = p["recomputed_forward_fraction"];
    EXPECT_TRUE(f >= 0.0 && f < 1.0) << f;
    EXPECT_TRUE(j.at("max_batch").contains(p["name"].get<std::string>())) << p["name"];
  }
  EXPECT_EQ(j["policies"][0]["name"], "none");
  EXPECT_EQ(j["policies"][0]["recomputed_forward_fraction"], 0.0);
  EXPECT_GE(j["max_batch"]["full"].get<int64_t>(), j["max_batch"]["none"].get<int64_t>());
  ASSERT_EQ(j.at("meta").at("rows").size(), 7u);
  for (const auto& row : j["meta"]["rows"])
    EXPECT_EQ(row["activation_peak_bytes"], row["predicted_activation_peak_bytes"]) << row["name"];
  ASSERT_EQ(j["compression"].size(), 4u);
  for (const auto& row : j["compression"]) {
    EXPECT_EQ(row["bytes_after_forward"], row["predicted_bytes_after_forward"]) << row["name"];
    EXPECT_LT(row["activation_peak_bytes"].get<int64_t>(),
              row["fp32_activation_peak_bytes"].get<int64_t>())
        << row["name"];
  }
  // The binary links the exercises' references: they agree with the runtime.
  ASSERT_EQ(j.at("exercises").size(), 2u);
  for (const auto& e : j["exercises"]) {
    EXPECT_EQ(e["ran"], true) << e["id"] << ": " << e["text"];
    EXPECT_EQ(e["agrees"], true) << e["id"] << ": " << e["text"];
  }
  for (const char* figure : {"memory_over_step_svg", "tradeoff_svg"}) {
    const fs::path path = j.at("figures").at(figure).get<std::string>();
    EXPECT_EQ(path.parent_path(), fs::absolute(dir / "figures")) << figure;
    EXPECT_NE(slurp(path).find("</svg>"), std::string::npos) << path;
  }
}

TEST(Lesson02Cli, TheTextReportShowsEveryTableAndTheHelpExitsZero) {
  const fs::path dir = fs::path(LESSON02_TEST_DIR) / "text";
  const LessonRun r = run_lesson(
      "--model gpt2-mini --seq 16 --batch 2 --steps 1 --max-batch-device none --no-compression "
      "--meta-model gpt2-124m --meta-seq 256",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text :
       {"schedule", "budget:", "At scale on meta: gpt2-124m", "bitwise", "memory_over_step.svg"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  EXPECT_EQ(r.out.find("The largest batch"), std::string::npos);
  const LessonRun help = run_lesson("--help", fs::path(LESSON02_TEST_DIR) / "help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--max-batch-device"), std::string::npos);
}

}  // namespace
