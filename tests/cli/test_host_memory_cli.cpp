// `vramlab train` on a sim device whose memory outgrows the host's RAM budget: exit 2 within
// seconds with one line that says it is host RAM (not the simulated device) and gives the numbers,
// never the simulated device's out-of-memory message; the same run on --device meta exits 0; a bad
// VRAMLAB_HOST_MEMORY_LIMIT exits 2 naming it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_run.h"

namespace {

using Result = vramlab::cli_test::CliResult;
using vramlab::cli_test::count_lines;

// Runs vramlab with \p args under a 60 s limit, with VRAMLAB_HOST_MEMORY_LIMIT=\p limit.
Result vramlab(const std::string& args, const std::string& limit) {
  setenv("VRAMLAB_HOST_MEMORY_LIMIT", limit.c_str(), 1);  // the child inherits it
  Result r = vramlab::cli_test::run_vramlab(vramlab::cli_test::split_words(args));
  unsetenv("VRAMLAB_HOST_MEMORY_LIMIT");
  return r;
}

// gpt2-tiny (B=8, T=128, AdamW) holds 106.25 MiB of parameters and saved activations at the end
// of its forward pass and reserves 138 MiB in one step.
const char* const kStep = "train --model gpt2-tiny --steps 1 --device ";

// Below what the step certainly needs, the trainer stops before allocating anything.
TEST(HostMemoryCli, ASimDeviceBeyondTheHostBudgetExits2BeforeTheStepWithOneLineSayingHostRam) {
  const Result r = vramlab(std::string(kStep) + "sim:t4-16g", "100MiB");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_LT(r.seconds, 20.0) << r.out;
  const std::size_t error = r.out.find("vramlab: error: out of host RAM, not out of device memory");
  ASSERT_NE(error, std::string::npos) << r.out;
  // stderr is unbuffered and stdout goes out at exit, so the error line may come first.
  const std::string message = r.out.substr(error, r.out.find('\n', error) - error);
  EXPECT_EQ(r.out.find("host RAM", error + message.size()), std::string::npos) << r.out;
  EXPECT_EQ(r.out.rfind("host RAM", error), std::string::npos) << r.out;
  for (const char* part :
       {"sim:t4-16g keeps its memory in this machine's RAM",
        "wanted 106.25 MiB of it (the step's "
        "parameters and saved activations, live together at the end of the forward pass)",
        "only 100.00 MiB is available (VRAMLAB_HOST_MEMORY_LIMIT=100MiB)", "--device meta"}) {
    EXPECT_NE(message.find(part), std::string::npos) << "no '" << part << "' in " << message;
  }
  EXPECT_EQ(r.out.find("Tried to allocate"), std::string::npos) << r.out;
}

// Between that lower bound and the step's real peak, the allocator stops it part-way, at the
// allocation that crosses the budget, with the same one line and the bytes held at that moment.
TEST(HostMemoryCli, TheAllocatorStopsAStepThatOutgrowsTheBudgetPartWay) {
  const Result r = vramlab(std::string(kStep) + "sim:t4-16g", "120MiB");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(" MiB held + "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("but only 120.00 MiB is available (VRAMLAB_HOST_MEMORY_LIMIT=120MiB)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("Tried to allocate"), std::string::npos) << r.out;
}

TEST(HostMemoryCli, TheCpuDeviceHasTheSameBudget) {
  const Result r = vramlab(std::string(kStep) + "cpu", "100MiB");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("out of host RAM"), std::string::npos) << r.out;
}

TEST(HostMemoryCli, TheSameRunOnMetaExits0) {
  const Result r = vramlab(std::string(kStep) + "meta", "8MiB");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("step    1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("host RAM"), std::string::npos) << r.out;
}

TEST(HostMemoryCli, ABadLimitExits2NamingTheVariableAndTheValue) {
  const Result r = vramlab(std::string(kStep) + "sim:t4-16g", "lots");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("VRAMLAB_HOST_MEMORY_LIMIT: invalid size 'lots'"), std::string::npos)
      << r.out;
}

}  // namespace
