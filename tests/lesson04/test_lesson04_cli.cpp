// The lesson 04 binary on the command line: --json (rank 0's one object) has the issue's keys
// (runs of {strategy, world_size, per_rank: [{rank, model_state_bytes: {parameters, gradients,
// optimizer_states}, peak_bytes, bytes_sent}], losses}), every rank's bytes equal to the
// estimator's, ZeRO-3's bytes sent 1.5x DDP's within the padding and every strategy's losses
// equal to DDP's: with simulated ranks, and under mpirun (which the binary starts itself) with 4
// ranks (equal within rounding: OpenMPI picks the order of the sums) and 2 (bitwise: a sum of two
// is commutative). The exercises' references, called beside the run, agree with it. The text
// output names every table. (Bad input exiting 2 is checked by plain ctest cases, see
// CMakeLists.txt.)
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/dist/shard_layout.h"
#include "common/model/model_flags.h"

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

// \p mpi: the binary starts mpirun ranks. Under the sanitizers (the asan preset) LeakSanitizer
// reports what OpenMPI 4.1 never frees at MPI_Finalize, from components it has already
// dlclose'd, which no suppression can name: those ranks run with leak detection off and every
// other check on (as tests/dist's mpirun tests do). Ignored without sanitizers.
LessonRun run_lesson(const std::string& args, const fs::path& dir, bool mpi = false) {
  fs::create_directories(dir);
  const std::string env =
      mpi ? "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1 " : "";
  const std::string cmd = env + std::string(LESSON04_BINARY) + " " + args + " --out-dir " +
                          (dir / "figures").string() + " >" + (dir / "out.txt").string() + " 2>" +
                          (dir / "err.txt").string();
  const int status = std::system(cmd.c_str());
  LessonRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out.txt");
  r.err = slurp(dir / "err.txt");
  return r;
}

// The lesson's default model (main.cpp), for Ψ' independently of the binary.
vramlab::ModelConfig lesson_model() {
  vramlab::ModelFlags flags;
  flags.family = "gpt2";
  flags.layers = 4;
  flags.hidden = 64;
  flags.heads = 4;
  flags.vocab = 128;
  flags.max_seq = 64;
  return flags.build(64);
}

const char* kStrategies[] = {"ddp", "zero1", "zero2", "zero3"};

// Checks one --json object of 4 strategies over `ranks` ranks and `steps` steps; `bitwise`: the
// losses must be DDP's bit for bit, else within `tolerance` relative.
void check_runs(const nlohmann::json& j, int64_t ranks, size_t steps, bool bitwise,
                double tolerance) {
  const auto& runs = j.at("runs");
  ASSERT_EQ(runs.size(), 4u);
  const vramlab::ModelConfig model = lesson_model();
  const int64_t psi = model.parameter_count();
  ASSERT_EQ(j.at("model").at("parameter_count").get<int64_t>(), psi);
  const int64_t padded = vramlab::dist::ShardLayout(model.parameters(), ranks).padded_numel();
  const auto model_sent = [](const nlohmann::json& rank) {
    return rank.at("bytes_sent_by_traffic").at("gradients").get<int64_t>() +
           rank.at("bytes_sent_by_traffic").at("parameters").get<int64_t>();
  };
  const nlohmann::json& ddp = runs[0];
  for (size_t k = 0; k < 4; ++k) {
    const auto& run = runs[k];
    for (const char* key : {"strategy", "world_size", "per_rank", "losses"})
      ASSERT_TRUE(run.contains(key)) << key;
    EXPECT_EQ(run["strategy"], kStrategies[k]);
    EXPECT_EQ(run["world_size"], ranks);
    ASSERT_EQ(run["per_rank"].size(), static_cast<size_t>(ranks));
    ASSERT_EQ(run["losses"].size(), steps);
    for (int64_t r = 0; r < ranks; ++r) {
      const auto& rank = run["per_rank"][static_cast<size_t>(r)];
      for (const char* key : {"rank", "model_state_bytes", "peak_bytes", "bytes_sent"})
        ASSERT_TRUE(rank.contains(key)) << key;
      EXPECT_EQ(rank["rank"], r);
      for (const char* part : {"parameters", "gradients", "optimizer_states"})
        EXPECT_EQ(rank["model_state_bytes"][part], rank["estimator_bytes"][part])
            << kStrategies[k] << " rank " << r << " " << part;
      const int64_t states = rank["model_state_bytes"]["parameters"].get<int64_t>() +
                             rank["model_state_bytes"]["gradients"].get<int64_t>() +
                             rank["model_state_bytes"]["optimizer_states"].get<int64_t>();
      EXPECT_GT(rank["peak_bytes"].get<int64_t>(), states) << "activations come on top";
      EXPECT_GE(rank["bytes_sent"].get<int64_t>(), model_sent(rank)) << "metrics come on top";
    }
    // Rank 0's bytes against DDP's: 1x for ZeRO-1/2, 1.5x for ZeRO-3, within the padding.
    const double ratio = static_cast<double>(model_sent(run["per_rank"][0])) /
                         static_cast<double>(model_sent(ddp["per_rank"][0]));
    const double want = k == 3 ? 1.5 : 1.0;
    const double slack = static_cast<double>(padded - psi + ranks) / static_cast<double>(psi);
    EXPECT_LE(std::abs(ratio - want), want * slack + 1e-12)
        << kStrategies[k] << ": " << ratio << " against " << want;
    for (size_t i = 0; i < steps; ++i) {
      const double a = run["losses"][i].get<double>(), b = ddp["losses"][i].get<double>();
      if (bitwise) {
        EXPECT_EQ(a, b) << kStrategies[k] << " step " << i + 1;
      } else {
        EXPECT_LE(std::abs(a - b), tolerance * std::abs(b))
            << kStrategies[k] << " step " << i + 1 << ": |diff| " << std::abs(a - b) << " is "
            << 100.0 * std::abs(a - b) / (tolerance * std::abs(b)) << "% of the tolerance";
      }
    }
    EXPECT_LT(run["losses"][steps - 1].get<double>(), run["losses"][0].get<double>());
  }
}

TEST(Lesson04Cli, SimulatedRanksJsonHasTheIssuesKeysAndDdpsLossesBitForBit) {
  const fs::path dir = fs::path(LESSON04_TEST_DIR) / "simulated";
  fs::remove_all(dir);
  const LessonRun r = run_lesson("--simulated --no-scale --steps 3 --json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["backend"], "simulated");
  EXPECT_TRUE(j["reduction_order_fixed"].get<bool>());
  check_runs(j, 4, 3, true, 0.0);
  // The binary links the exercises' references: each agrees with this run's runtime.
  ASSERT_EQ(j["exercises"].size(), 4u);
  for (const auto& e : j["exercises"]) {
    EXPECT_TRUE(e["ran"].get<bool>()) << e;
    EXPECT_TRUE(e["agrees"].get<bool>()) << e;
  }
  for (const char* f : {"memory_svg", "communication_svg", "timeline_svg"})
    EXPECT_TRUE(fs::exists(j["figures"][f].get<std::string>())) << f;
}

// Without --simulated the binary re-runs itself under mpirun (or says why it cannot).
TEST(Lesson04Cli, UnderMpirunRankZeroPrintsOneObjectOfFourRanks) {
  const fs::path dir = fs::path(LESSON04_TEST_DIR) / "mpi4";
  fs::remove_all(dir);
  const LessonRun r = run_lesson("--no-scale --steps 3 --json", dir, true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);  // one object: only rank 0 printed
  if (j["backend"] == "simulated") {
    EXPECT_NE(j["launch"].get<std::string>().find("MPI"), std::string::npos) << j["launch"];
    GTEST_SKIP() << "no MPI in this build: " << j["launch"];
  }
  EXPECT_EQ(j["backend"], "mpi");
  check_runs(j, 4, 3, false, 1e-3);
}

TEST(Lesson04Cli, TwoMpiRanksSumCommutativelySoTheLossesAreBitwise) {
  const fs::path dir = fs::path(LESSON04_TEST_DIR) / "mpi2";
  fs::remove_all(dir);
  const LessonRun r = run_lesson("--ranks 2 --no-scale --steps 3 --json", dir, true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  if (j["backend"] == "simulated") GTEST_SKIP() << "no MPI in this build: " << j["launch"];
  EXPECT_TRUE(j["reduction_order_fixed"].get<bool>());
  check_runs(j, 2, 3, true, 0.0);
}

TEST(Lesson04Cli, TextNamesEveryTableAndTheNextCommands) {
  const fs::path dir = fs::path(LESSON04_TEST_DIR) / "text";
  fs::remove_all(dir);
  const LessonRun r = run_lesson("--simulated --steps 2 --scale-ranks 16", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text :
       {"Per rank after the last step", "Bytes sent per rank in one step",
        "Losses:", "ZeRO-3 on rank 0, block 1", "the ZeRO paper's Figure 1",
        "The seeds' 7B on 8 GPUs", "Llama 2 70B on 8 x 80.00 GB", "The seeds' claims",
        "Next:", "zero_memory_per_rank.svg", "zero_communication.svg", "zero3_timeline.svg"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  EXPECT_NE(r.err.find("training 2 steps on 4 simulated ranks: zero3"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(dir / "figures" / "zero3_timeline.svg"));
}

}  // namespace
