// The lesson 03 binary on the command line, on a short run: --json has every mode with its loss,
// loss scale and inf flags per step, its bytes per category equal to the estimator's, the mixed
// modes' loss within 2% of fp32's, the accumulation rows, the at-scale bytes per parameter, and
// the figures are written where --out-dir says. (Bad input exiting 2 is checked by plain ctest
// cases, see CMakeLists.txt.)
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
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
  const std::string cmd = std::string(LESSON03_BINARY) + " " + args + " --out-dir " +
                          (dir / "figures").string() + " >" + (dir / "out.txt").string() + " 2>" +
                          (dir / "err.txt").string();
  const int status = std::system(cmd.c_str());
  LessonRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out.txt");
  r.err = slurp(dir / "err.txt");
  return r;
}

double final_loss(const nlohmann::json& run) {
  return run.at("final_loss").get<double>();
}

TEST(Lesson03Cli, JsonHasEveryModeItsBytesTheAccumulationAndTheScaleTable) {
  const fs::path dir = fs::path(LESSON03_TEST_DIR) / "json";
  fs::remove_all(dir);
  constexpr int kSteps = 30;
  const LessonRun r = run_lesson(
      "--layers 1 --hidden 32 --heads 2 --vocab 61 --batch 4 --seq 16 --overflow-scale "
      "static:1073741824 --steps " +
          std::to_string(kSteps) + " --meta-model gpt2-124m --meta-seq 128 --json",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const std::vector<std::string> labels = {"fp32",
                                           "bf16",
                                           "bf16, stochastic rounding",
                                           "mixed-bf16",
                                           "mixed-fp16",
                                           "mixed-fp16, no scaler",
                                           "mixed-fp16, static:2^30",
                                           "mixed-fp16, static:2^-12"};
  ASSERT_EQ(j.at("runs").size(), labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    const nlohmann::json& run = j["runs"][i];
    EXPECT_EQ(run.at("label"), labels[i]);
    for (const char* key : {"precision", "final_loss", "skipped_steps", "loss_scale", "found_inf",
                            "median_step_seconds"})
      EXPECT_TRUE(run.contains(key)) << labels[i] << " " << key;
    ASSERT_EQ(run.at("loss_scale").size(), static_cast<size_t>(kSteps)) << labels[i];
    ASSERT_EQ(run.at("found_inf").size(), static_cast<size_t>(kSteps)) << labels[i];
    EXPECT_TRUE(std::isfinite(final_loss(run))) << labels[i];
    const nlohmann::json& bytes = run.at("peak_bytes");
    EXPECT_GT(bytes.at("total").get<int64_t>(), 0);
    const bool never_stepped = run["skipped_steps"].get<int>() == kSteps;
    for (const auto& [category, estimated] : bytes.at("estimated").items()) {
      // Optimizer states exist after the first step that is taken.
      if (never_stepped && category == "optimizer_state") continue;
      EXPECT_EQ(bytes.at("by_category").at(category), estimated) << labels[i] << " " << category;
    }
  }
  const double fp32 = final_loss(j["runs"][0]);
  // Indices as `labels`: 2 bf16 stochastic, 3 mixed-bf16, 4 mixed-fp16, 5 no scaler, 6 2^30.
  EXPECT_NEAR(final_loss(j["runs"][3]), fp32, 0.02 * fp32) << "mixed-bf16";
  EXPECT_NEAR(final_loss(j["runs"][4]), fp32, 0.02 * fp32) << "mixed-fp16 with the scaler";
  EXPECT_EQ(j["runs"][2]["stochastic_rounding"], true);
  EXPECT_EQ(j["runs"][4]["loss_scaling"], "dynamic");
  EXPECT_EQ(j["runs"][4]["loss_scale"][0], 65536.0);
  EXPECT_EQ(j["runs"][6]["skipped_steps"], kSteps) << "2^30 overflows fp16 at every step";
  EXPECT_EQ(j["runs"][5]["skipped_steps"], 0) << "no scaler, no check";

  ASSERT_EQ(j.at("accumulation").size(), 4u);  // K = 1, 2, 4 and 2+1+1
  for (const auto& row : j["accumulation"]) {
    EXPECT_LT(row.at("max_rel_diff_grads").get<double>(), 1e-5);
    EXPECT_GT(row.at("activation_peak_bytes").get<int64_t>(), 0);
  }
  EXPECT_EQ(j["accumulation"][2]["micro_batches"], 4);
  EXPECT_EQ(j["accumulation"][0]["activation_peak_bytes"].get<int64_t>(),
            4 * j["accumulation"][2]["activation_peak_bytes"].get<int64_t>());

  const double params = j.at("meta").at("parameters").get<double>();
  ASSERT_EQ(j["meta"]["runs"].size(), 4u);
  for (const auto& run : j["meta"]["runs"]) {
    const double per_param = run["peak_bytes"]["model_states"].get<double>() / params;
    const double expected = run["precision"] == "bf16" ? 8.0 : 16.0;
    EXPECT_NEAR(per_param, expected, 0.01) << run["precision"];
  }
  for (const char* key : {"loss_curves_svg", "loss_scale_svg", "gradient_exponents_svg"}) {
    const fs::path path = j.at("figures").at(key).get<std::string>();
    EXPECT_EQ(path.parent_path(), fs::absolute(dir / "figures")) << key;
    EXPECT_TRUE(fs::exists(path)) << key;
  }
  for (const char* key : {"underflow", "formats", "round_trip", "op_table", "entropy_rate_nats"})
    EXPECT_TRUE(j.contains(key)) << key;
}

TEST(Lesson03Cli, TheTextRunNamesEveryTableAndTheNextCommands) {
  const fs::path dir = fs::path(LESSON03_TEST_DIR) / "text";
  fs::remove_all(dir);
  const LessonRun r = run_lesson(
      "--layers 1 --hidden 32 --heads 2 --vocab 61 --batch 2 --seq 8 --steps 2 --no-scale "
      "--overflow-scale none --underflow-scale none",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text : {"mixed-fp16, no scaler", "Bytes per category", "Underflow",
                           "Gradient accumulation", "Formats", "op table", "vramlab run 03"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text;
  EXPECT_EQ(r.out.find("static:"), std::string::npos)
      << "--overflow-scale none --underflow-scale none: no such rows";
  EXPECT_EQ(r.out.find("At scale"), std::string::npos) << "--no-scale";
}

}  // namespace
