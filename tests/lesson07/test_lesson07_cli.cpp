// The lesson 07 binary on the command line, on a short run: --json has the issue's keys
// (peak_bytes equal to the allocator's, peak_owner {module, phase}, top_at_peak [{name, bytes,
// module, phase, frames}], per_module_bytes), the comparison, the leak found, the at-scale run and
// the claims; the figures and profiles are written where --out-dir says; the text output names
// every section. (Bad input exiting 2 is checked by plain ctest cases, see CMakeLists.txt.)
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
  const std::string cmd = std::string(LESSON07_BINARY) + " " + args + " --out-dir " +
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
    "--model gpt2-mini --batch 3 --seq 17 --steps 2 --leak-after 1 --leak-steps 2 --top 5 "
    "--scale-model gpt2-124m --scale-seq 128";

TEST(Lesson07Cli, JsonHasTheIssuesKeysAndTheLeakIsFound) {
  const fs::path dir = fs::path(LESSON07_TEST_DIR) / "json";
  fs::remove_all(dir);
  const LessonRun r = run_lesson(kShortRun + " --json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key : {"peak_bytes", "allocator_peak_bytes", "peak_owner", "top_at_peak",
                          "per_module_bytes", "comparison", "leak", "scale", "claims", "figures"})
    ASSERT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["peak_bytes"], j["allocator_peak_bytes"]);
  EXPECT_TRUE(j["peak_owner"].contains("module") && j["peak_owner"].contains("phase"));
  ASSERT_EQ(j["top_at_peak"].size(), 5u);
  for (const auto& a : j["top_at_peak"])
    for (const char* key : {"name", "bytes", "module", "phase", "frames"})
      EXPECT_TRUE(a.contains(key)) << key;
  int64_t per_module = 0;
  for (const auto& [module, bytes] : j["per_module_bytes"].items())
    per_module += bytes.get<int64_t>();
  EXPECT_EQ(per_module, j["peak_bytes"].get<int64_t>());
  EXPECT_TRUE(j["leak"]["found"].get<bool>()) << j["leak"].dump(2);
  EXPECT_EQ(j["leak"]["bytes_per_step"].get<int64_t>(), 3 * 17 * 4);
  EXPECT_GT(j["comparison"]["allocated_growth_bytes"].get<int64_t>(), 0);
  EXPECT_GT(j["comparison"]["peak_drop_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(j["scale"]["peak_bytes"], j["scale"]["allocator_peak_bytes"]);
  for (const char* key :
       {"per_module_svg", "timeline_html", "baseline_profile", "recompute_profile"})
    EXPECT_TRUE(fs::exists(j["figures"][key].get<std::string>())) << key;
  for (const char* file : {"snapshot.pickle", "snapshot.json", "trace.json", "ops.txt"})
    EXPECT_TRUE(fs::exists(fs::path(j["figures"]["baseline_profile"].get<std::string>()) / file))
        << file;
}

TEST(Lesson07Cli, TextNamesEverySection) {
  const fs::path dir = fs::path(LESSON07_TEST_DIR) / "text";
  fs::remove_all(dir);
  const LessonRun r = run_lesson(kShortRun + " --no-overhead", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* section :
       {"The peak and what owns it", "Memory per module at the peak",
        "The largest allocations live at the peak", "Per-op table", "With checkpointing",
        "The planted leak", "At scale on meta", "The seeds' claims", "found: kept_loss"})
    EXPECT_NE(r.out.find(section), std::string::npos) << section << "\n" << r.out;
}

}  // namespace
