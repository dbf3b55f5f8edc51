// The lesson 06 binary on the command line, on a short run: --json has the issue's rows (naive
// computed up to --naive-max-seq, measured on meta above it), the README ratios, the training
// comparison with equal losses and the estimator's bytes, the at-scale table and the tiling
// counts, and the figures are written where --out-dir says; the text output names every table.
// (Bad input exiting 2 is checked by plain ctest cases, see CMakeLists.txt.)
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
  const std::string cmd = std::string(LESSON06_BINARY) + " " + args + " --out-dir " +
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
    "--seqs 2048,96,40 --naive-max-seq 96 --heads 4 --kv-heads 2 --head-dim 16 --train-seq 24 "
    "--steps 3 --scale-model gpt2-124m --scale-seqs 256 --tiling-seq 100";

TEST(Lesson06Cli, JsonHasTheIssuesRowsRatiosTrainingScaleAndTiling) {
  const fs::path dir = fs::path(LESSON06_TEST_DIR) / "json";
  fs::remove_all(dir);
  const LessonRun r = run_lesson(kShortRun + " --json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const auto& rows = j.at("rows");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["seq"], 40) << "the sweep is sorted";
  EXPECT_EQ(rows[2]["seq"], 2048);
  for (const auto& row : rows) {
    for (const char* key : {"seq", "naive_peak_bytes", "flash_peak_bytes", "naive_seconds",
                            "flash_seconds", "max_abs_diff_out", "max_abs_diff_grads"})
      ASSERT_TRUE(row.contains(key)) << key;
    EXPECT_GT(row["naive_peak_bytes"].get<int64_t>(), row["flash_peak_bytes"].get<int64_t>());
    const int64_t t = row["seq"];
    EXPECT_EQ(row["naive_saved_bytes"], 1 * 4 * t * t * 4);
    EXPECT_EQ(row["flash_saved_bytes"], 1 * 4 * t * 4);
    EXPECT_DOUBLE_EQ(row["extra_ratio"].get<double>(), static_cast<double>(t));
  }
  for (int i : {0, 1}) {
    EXPECT_TRUE(rows[i]["max_abs_diff_out"].is_number());
    EXPECT_LE(
        rows[i]["max_abs_diff_out"].get<double>(),
        j["tolerance"]["out"].get<double>() * std::max(1.0, rows[i]["max_abs_out"].get<double>()));
    EXPECT_LE(rows[i]["max_abs_diff_grads"].get<double>(),
              j["tolerance"]["grads"].get<double>() *
                  std::max(1.0, rows[i]["max_abs_grads"].get<double>()));
  }
  EXPECT_TRUE(rows[2]["naive_seconds"].is_null());
  EXPECT_EQ(rows[2]["naive_device"], "meta");
  ASSERT_EQ(j["readme_ratios"].size(), 1u) << "only T = 2048 of 2048 and 4096 was swept";
  EXPECT_EQ(j["readme_ratios"][0]["readme"], 10.0);

  ASSERT_EQ(j["training"].size(), 2u);
  EXPECT_LE(j["training_max_abs_diff_loss"].get<double>(), 1e-4);
  for (const auto& t : j["training"]) {
    EXPECT_EQ(t["losses"].size(), 3u);
    EXPECT_EQ(t["layer_saved_bytes"], t["layer_saved_estimate"]) << t["attention"];
  }
  ASSERT_EQ(j["scale"]["rows"].size(), 1u);
  const auto& s = j["scale"]["rows"][0];
  EXPECT_EQ(s["naive_att_bytes"], 12 * 256 * 256 * 4);  // GPT-2 124M: 12 heads
  EXPECT_EQ(s["flash_lse_bytes"], 12 * 256 * 4);
  EXPECT_EQ(s["flash_layer_bytes"], s["flash_layer_estimate"]);
  EXPECT_EQ(j["tiling"]["total"], 4);  // ⌈100/64⌉²
  EXPECT_EQ(j["tiling"]["skipped"], 1);
  for (const char* f : {"attention_memory_svg", "flash_tiling_svg"})
    EXPECT_TRUE(fs::exists(j["figures"][f].get<std::string>())) << f;
}

TEST(Lesson06Cli, TextNamesEveryTableAndTheNextCommands) {
  const fs::path dir = fs::path(LESSON06_TEST_DIR) / "text";
  fs::remove_all(dir);
  const LessonRun r = run_lesson(kShortRun, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text :
       {"The attention core", "Against the FlashAttention README", "Training custom",
        "At scale on meta: gpt2-124m", "Tiling of one (batch, head) at T=100", "The seeds' claims",
        "Next:", "attention_memory.svg", "flash_tiling.svg"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  EXPECT_NE(r.out.find("2048"), std::string::npos);
  EXPECT_NE(r.err.find("attention core T=2048: naive (memory only, on meta)"), std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(dir / "figures" / "attention_memory.svg"));
}

}  // namespace
