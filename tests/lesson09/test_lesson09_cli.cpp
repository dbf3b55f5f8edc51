// The lesson 09 binary on the command line, on a short run: --json has the keys
// (optimizers [{name, state_bytes, bytes_per_param, final_loss}]) with every optimizer's measured
// bytes equal to the estimator's, the mixed-bf16 bytes, the 8-bit quantisation points, the
// at-scale rows and the claims; the figures are written where --out-dir says; the text output
// names every table. (Bad input exiting 2 is checked by plain ctest cases, see CMakeLists.txt.)
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
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
  const std::string cmd = std::string(LESSON09_BINARY) + " " + args + " --out-dir " +
                          (dir / "figures").string() + " >" + (dir / "out.txt").string() + " 2>" +
                          (dir / "err.txt").string();
  const int status = std::system(cmd.c_str());
  LessonRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out.txt");
  r.err = slurp(dir / "err.txt");
  return r;
}

const std::string kShortRun =
    "--steps 7 --batch 3 --seq 19 --quantization-every 3 --block-size 100 --min-8bit-size 1000 "
    "--scale-models gpt2-124m";

TEST(Lesson09Cli, JsonHasEveryOptimizerWithTheEstimatorsBytesAndTheClaims) {
  const fs::path dir = fs::path(LESSON09_TEST_DIR) / "json";
  fs::remove_all(dir);
  const LessonRun r = run_lesson(kShortRun + " --json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const auto& optimizers = j.at("optimizers");
  ASSERT_EQ(optimizers.size(), 7u);
  std::set<std::string> names;
  const int64_t psi = j.at("model").at("parameter_count");
  for (const auto& o : optimizers) {
    for (const char* key :
         {"name", "state_bytes", "bytes_per_param", "final_loss", "learning_rate", "losses",
          "estimator_bytes", "allocator_requested_bytes", "allocator_allocated_bytes"})
      ASSERT_TRUE(o.contains(key)) << key;
    names.insert(o["name"].get<std::string>());
    EXPECT_EQ(o["state_bytes"], o["estimator_bytes"]) << o["name"];
    EXPECT_EQ(o["state_bytes"], o["allocator_requested_bytes"]) << o["name"];
    EXPECT_TRUE(o["equals_estimator"].get<bool>()) << o["name"];
    EXPECT_DOUBLE_EQ(o["bytes_per_param"].get<double>(),
                     o["state_bytes"].get<double>() / static_cast<double>(psi));
    EXPECT_EQ(o["losses"].size(), 7u);
    // Plain SGD barely moves in 7 steps (see the page); the others must learn already.
    if (o["name"].get<std::string>().rfind("sgd", 0) != 0) {
      EXPECT_LT(o["final_loss"].get<double>(), o["losses"][0].get<double>()) << o["name"];
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"sgd", "sgd-momentum", "adamw", "adamw-8bit", "lion",
                                          "adam-mini", "adafactor"}));
  EXPECT_EQ(optimizers[2]["name"], "adamw");
  EXPECT_EQ(optimizers[2]["state_bytes"], 8 * psi);
  EXPECT_EQ(optimizers[0]["state_bytes"], 0);

  ASSERT_EQ(j["compared_precision"].size(), 7u);
  for (const auto& o : j["compared_precision"]) {
    EXPECT_EQ(o["precision"], "mixed-bf16");
    EXPECT_EQ(o["master_bytes"], 4 * psi) << "the fp32 master of mixed precision";
    EXPECT_TRUE(o["equals_estimator"].get<bool>()) << o["name"];
  }
  // Steps 1, 3, 6 and the last, 7.
  ASSERT_EQ(j["quantization"].size(), 4u);
  EXPECT_EQ(j["quantization"][3]["step"], 7);
  EXPECT_EQ(j["eight_bit"]["block_size"], 100);

  // gpt2-124m × fp32, bf16, mixed-bf16 × 7 optimizers, each equal to the estimator.
  ASSERT_EQ(j["scale"].size(), 21u);
  for (const auto& s : j["scale"]) EXPECT_TRUE(s["equals_estimator"].get<bool>()) << s;
  ASSERT_EQ(j["claims"].size(), 12u);
  for (const char* f : {"bytes_per_param_svg", "loss_curves_svg"})
    EXPECT_TRUE(fs::exists(j["figures"][f].get<std::string>())) << f;
}

TEST(Lesson09Cli, TextNamesEveryTableAndTheNextCommands) {
  const fs::path dir = fs::path(LESSON09_TEST_DIR) / "text";
  fs::remove_all(dir);
  const LessonRun r = run_lesson(kShortRun + " --optimizers adamw,adamw-8bit,lion", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text :
       {"Training custom", "What each optimizer keeps", "8-bit AdamW (block 100)",
        "At scale on meta: gpt2-124m", "The seeds' claims",
        "Next:", "optimizer_bytes_per_param.svg", "optimizer_loss_curves.svg"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  EXPECT_EQ(r.out.find("sgd-momentum"), std::string::npos) << "only the optimizers asked for";
  EXPECT_NE(r.err.find("training 7 steps, --optimizer lion --lr 0.001"), std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(dir / "figures" / "optimizer_loss_curves.svg"));
}

}  // namespace
