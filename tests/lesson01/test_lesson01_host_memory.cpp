// The lesson 01 binary on a sim device bigger than the host's RAM budget: the lesson's own example
// (gpt2-124m, B=16, T=1024 on sim:rtx4090-24g) stops before computing anything, with exit 2 and one
// line saying host RAM; a budget just below the step's reserved peak stops it part-way (the
// allocator's check), exactly the peak lets it through; --device meta runs the same step.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/workbook/process.h"

namespace {

struct Result {
  int exit_code = -1;
  double seconds = 0.0;
  std::string out;  // stdout and stderr
};

// Runs the lesson with \p args under a 60 s limit, with VRAMLAB_HOST_MEMORY_LIMIT=\p limit.
Result lesson(const std::string& args, const std::string& limit) {
  const std::filesystem::path dir = std::filesystem::path(LESSON01_TEST_DIR) / "host_memory";
  std::filesystem::create_directories(dir);
  std::vector<std::string> argv = {LESSON01_BINARY, "--out-dir", (dir / "figures").string()};
  std::istringstream words(args);
  for (std::string word; words >> word;) argv.push_back(word);
  const std::filesystem::path output = dir / ("out_" + std::to_string(getpid()) + ".txt");
  setenv("VRAMLAB_HOST_MEMORY_LIMIT", limit.c_str(), 1);  // the child inherits it
  const vramlab::workbook::ProcessResult run = vramlab::workbook::run_process(argv, output, 60.0);
  unsetenv("VRAMLAB_HOST_MEMORY_LIMIT");
  std::ostringstream text;
  text << std::ifstream(output).rdbuf();
  return {run.started && !run.timed_out && run.signal == 0 ? run.exit_code : -1, run.seconds,
          text.str()};
}

// The error line, or "" when there is none.
std::string host_ram_error(const std::string& out) {
  const std::size_t at =
      out.find("lesson01_memory_breakdown: error: out of host RAM, not out of device memory: ");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

const char* const kLessonExample = "--model gpt2-124m --batch 16 --seq 1024 --device ";

TEST(Lesson01HostMemory, TheLessonsBigExampleStopsBeforeComputingWithExit2) {
  // 4 GiB: were the check before the step missing, the allocator's would stop it there, not after
  // filling 16 GiB of a test machine. The check wants the parameters and saved activations, live
  // together at the end of forward: 4Ψ = 474.70 MiB, and B·T = 16384 tokens of the runtime layout,
  // 12 layers of (16C·BT + 4BT + H·B·T²)·4 B = 1.50 GiB and (2C·BT + 3BT + V·BT)·4 B = 3.16 GiB
  // outside them: 21.63 GiB, less than the card's 24 GiB, so it is the step's own need.
  const Result r = lesson(std::string(kLessonExample) + "sim:rtx4090-24g", "4GiB");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_LT(r.seconds, 10.0) << "the forward pass ran: " << r.out;
  const std::string error = host_ram_error(r.out);
  ASSERT_FALSE(error.empty()) << r.out;
  for (const char* part : {"sim:rtx4090-24g keeps its memory in this machine's RAM",
                           "wanted 21.63 GiB of it (the step's parameters and saved activations, "
                           "live together at the end of the forward pass)",
                           "only 4.00 GiB is available (VRAMLAB_HOST_MEMORY_LIMIT=4GiB)",
                           "--device meta sizes a model this big without touching memory"}) {
    EXPECT_NE(error.find(part), std::string::npos) << "no '" << part << "' in " << error;
  }
  EXPECT_EQ(r.out.find("Tried to allocate"), std::string::npos) << r.out;
}

TEST(Lesson01HostMemory, TheSameStepOnMetaExits0) {
  const Result r = lesson(std::string(kLessonExample) + "meta --json", "4GiB");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("reserved_peak_bytes").get<int64_t>(), int64_t{24} << 30);
}

TEST(Lesson01HostMemory, ABudgetBelowTheReservedPeakStopsTheStepAndThePeakItselfFits) {
  // The same step on meta reserves exactly what it will reserve on sim: same allocator, same calls.
  const Result meta = lesson("--model gpt2-mini --device meta --json", "1MiB");
  ASSERT_EQ(meta.exit_code, 0) << meta.out;
  const nlohmann::json j = nlohmann::json::parse(meta.out);
  const auto peak = j.at("reserved_peak_bytes").get<int64_t>();
  const int64_t before_backward = j.at("measured_bytes").at("parameters").get<int64_t>() +
                                  j.at("measured_bytes").at("activations").get<int64_t>();
  const int64_t below = peak - (int64_t{1} << 19);  // segments come in 2 MiB steps
  // Above what the lesson checks before the step: the allocator's own check has to stop it.
  ASSERT_GT(below, before_backward);

  const Result refused =
      lesson("--model gpt2-mini --device sim:t4-16g", std::to_string(below) + "B");
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  const std::string error = host_ram_error(refused.out);
  ASSERT_FALSE(error.empty()) << refused.out;
  EXPECT_NE(error.find(" held + "), std::string::npos) << error;
  EXPECT_NE(error.find("(VRAMLAB_HOST_MEMORY_LIMIT=" + std::to_string(below) + "B)"),
            std::string::npos)
      << error;

  // The batch is staged in pinned host memory, from the same budget: inputs and targets, each
  // B·T int32 tokens in a power-of-two block.
  const int64_t tokens_bytes = j.at("batch").get<int64_t>() * j.at("seq").get<int64_t>() * 4;
  int64_t staging_block = 1;
  while (staging_block < tokens_bytes) staging_block *= 2;
  const Result fits = lesson("--model gpt2-mini --device sim:t4-16g",
                             std::to_string(peak + 2 * staging_block) + "B");
  EXPECT_EQ(fits.exit_code, 0) << fits.out;
  EXPECT_TRUE(host_ram_error(fits.out).empty()) << fits.out;
}

}  // namespace
