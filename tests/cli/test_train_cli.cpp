// `vramlab train` as a process: --device cuda on a machine without a usable GPU (or a build without
// CUDA) exits 2 with one line saying why; --kernels cuda-emulated trains on a sim device and the
// JSON summary names the kernels; bad device/kernels combinations exit 2 naming the value; --help
// documents --kernels.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/platform/gpu_probe.h"

namespace {

struct Result {
  int exit_code = -1;
  std::string out;  // stdout, or stderr when asked for
};

// Runs vramlab with \p args (plain words, no quoting needed) and captures stdout or stderr.
Result vramlab(const std::string& args, bool capture_stderr) {
  const std::string command = std::string("'") + VRAMLAB_CLI_PATH + "' " + args +
                              (capture_stderr ? " 2>&1 >/dev/null" : " 2>/dev/null");
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

int count_lines(const std::string& text) {
  int lines = 0;
  for (const char c : text) lines += c == '\n' ? 1 : 0;
  return lines;
}

const char* const kTiny =
    "train --layers 1 --hidden 24 --heads 2 --vocab 29 --seq 7 --batch 2 --steps 2";

TEST(TrainCli, CudaDeviceWithoutAGpuExits2WithTheReason) {
  const vramlab::platform::GpuProbe probe = vramlab::platform::probe_gpus();
  if (VRAMLAB_HAVE_CUDA && probe.status == vramlab::platform::GpuStatus::available)
    GTEST_SKIP() << "a GPU is usable here";
  const Result r = vramlab(std::string(kTiny) + " --device cuda", true);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("device 'cuda:0' is not available: "), std::string::npos) << r.out;
  // The reason as `vramlab doctor` reports it, or the build's lack of CUDA.
  const std::string reason =
      VRAMLAB_HAVE_CUDA ? vramlab::platform::gpu_status_name(probe.status) : "has no CUDA";
  EXPECT_NE(r.out.find(reason), std::string::npos) << "missing '" << reason << "' in " << r.out;
  const Result indexed = vramlab(std::string(kTiny) + " --device cuda:1 --kernels cuda", true);
  EXPECT_EQ(indexed.exit_code, 2) << indexed.out;
  EXPECT_NE(indexed.out.find("'cuda:1'"), std::string::npos) << indexed.out;
}

TEST(TrainCli, CudaEmulatedKernelsTrainOnASimDeviceAndTheSummarySaysSo) {
  const Result r =
      vramlab(std::string(kTiny) + " --device sim:t4-16g --kernels cuda-emulated --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(r.out);
  std::string line, last;
  int steps = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) {
      ++steps;
      EXPECT_GT(j.at("loss").get<double>(), 0.0) << line;
    }
    last = line;
  }
  EXPECT_EQ(steps, 2);
  const auto summary = nlohmann::json::parse(last);
  EXPECT_EQ(summary.at("kernels"), "cuda-emulated") << last;
  EXPECT_EQ(summary.at("device"), "sim:t4-16g") << last;
  EXPECT_GT(summary.at("peak_bytes").at("by_category").at("activation").get<int64_t>(), 0) << last;

  const Result cpu = vramlab(std::string(kTiny) + " --json", false);
  ASSERT_EQ(cpu.exit_code, 0) << cpu.out;
  EXPECT_NE(cpu.out.find("\"kernels\":\"cpu\""), std::string::npos) << cpu.out;
}

TEST(TrainCli, BadKernelsAndCombinationsExit2NamingTheValue) {
  const struct {
    const char* args;
    const char* named;
  } cases[] = {
      {" --device meta --kernels cuda-emulated", "kernels 'cuda-emulated'"},
      {" --device cuda --kernels cpu", "kernels 'cpu'"},
      {" --device cuda:0 --kernels cuda-emulated", "kernels 'cuda-emulated'"},
      {" --device sim:t4-16g --kernels cuda", "kernels 'cuda'"},
      {" --kernels tpu", "'tpu'"},
  };
  for (const auto& c : cases) {
    const Result r = vramlab(std::string(kTiny) + c.args, true);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.named), std::string::npos) << c.args << ": " << r.out;
  }
}

TEST(TrainCli, HelpDocumentsKernels) {
  const Result r = vramlab("train --help", false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cuda-emulated"), std::string::npos) << r.out;
}

}  // namespace
