// `vramlab train` as a process: --device cuda on a machine without a usable GPU (or a build without
// CUDA) exits 2 with one line saying why; --kernels cuda-emulated trains on a sim device and the
// JSON summary names the kernels; bad device/kernels combinations exit 2 naming the value; --help
// documents --kernels.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/platform/gpu_probe.h"
#include "tests/cli/cli_run.h"
#include "tests/temp_dir.h"

namespace {

using Result = vramlab::cli_test::CliResult;
using vramlab::cli_test::count_lines;

// Runs vramlab with \p args (plain words separated by spaces) under a 60 s limit.
Result vramlab(const std::string& args) {
  return vramlab::cli_test::run_vramlab(vramlab::cli_test::split_words(args));
}

const char* const kTiny =
    "train --layers 1 --hidden 24 --heads 2 --vocab 29 --seq 7 --batch 2 --steps 2";

using vramlab::cli_test::json_lines;
using vramlab::cli_test::last_json_line;

// `vramlab train --optimizer X` keeps exactly the optimizer-state bytes `vramlab estimate
// --optimizer X` predicts for the same model and precision (lesson 09's promise, end to end).
TEST(TrainCli, EveryOptimizerKeepsTheStateBytesEstimateNames) {
  const std::string shape = " --layers 1 --hidden 64 --heads 2 --vocab 4099 --max-seq 16";
  for (const char* optimizer :
       {"sgd", "sgd-momentum", "adamw", "adamw-8bit", "lion", "adam-mini", "adafactor"}) {
    for (const char* precision : {"fp32", "mixed-bf16"}) {
      const std::string common =
          shape + " --optimizer " + optimizer + " --precision " + precision + " --json";
      const Result trained = vramlab("train --seq 8 --batch 2 --steps 1" + common);
      ASSERT_EQ(trained.exit_code, 0) << optimizer << ": " << trained.out;
      const Result estimated = vramlab("estimate" + common);
      ASSERT_EQ(estimated.exit_code, 0) << optimizer << ": " << estimated.out;
      EXPECT_EQ(last_json_line(trained.out).at("optimizer_state_bytes").get<int64_t>(),
                nlohmann::json::parse(estimated.out)
                    .at("per_device_bytes")
                    .at("optimizer_states")
                    .get<int64_t>())
          << optimizer << " " << precision;
    }
  }
}

// The batch is staged in pinned host memory, as a DataLoader with pin_memory=True stages it:
// each of inputs and targets takes a power-of-two block of PyTorch's host allocator, and the
// summary reports them under torch.cuda.host_memory_stats()'s keys.
TEST(TrainCli, TheBatchIsStagedInPinnedHostMemoryAndTheSummaryCountsItByCategory) {
  // 4-byte tokens: 2 x 7 -> 56 B (block 64); 5 x 13 -> 260 B (block 512); 3 x 2 ranks x 9
  // -> 216 B (block 256: every data-parallel rank draws the global batch).
  const std::string shape = "train --layers 1 --hidden 24 --heads 2 --vocab 29 --steps 2";
  for (const auto& [args, requested, block] :
       {std::tuple{shape + " --seq 7 --batch 2", 56, 64},
        std::tuple{shape + " --seq 13 --batch 5", 260, 512},
        std::tuple{shape + " --seq 9 --batch 3 --simulate-ranks 2", 216, 256}}) {
    const Result r = vramlab(args + " --json");
    ASSERT_EQ(r.exit_code, 0) << args << ": " << r.out;
    const nlohmann::json host = last_json_line(r.out).at("host_memory");
    const nlohmann::json& pinned = host.at("pinned");
    EXPECT_EQ(pinned.at("allocations").at("current"), 2) << args;
    EXPECT_EQ(pinned.at("num_host_alloc"), 2) << args;
    EXPECT_EQ(pinned.at("active_bytes").at("current"), 2 * block) << args;
    EXPECT_EQ(host.at("peak_bytes_by_category").at("input"), 2 * block) << args;
    EXPECT_EQ(host.at("peak_requested_bytes_by_category").at("input"), 2 * requested) << args;
    EXPECT_EQ(host.at("peak_bytes_by_category").at("optimizer_state"), 0) << args;
  }
}

// The summary's clock: the batch copies take their bytes over the preset's link (PCIe 4.0 x16 on
// an A100 40GB), or over --link-gbps; they are synchronous, so they sit on the compute stream
// and nothing waits on another stream.
TEST(TrainCli, TheHostLinkSetsTheCopiesTimeOnTheClockAndLinkGbpsOverridesIt) {
  const std::string run =
      "train --layers 1 --hidden 24 --heads 2 --vocab 29 --steps 3 --seq 11 "
      "--batch 3 --device sim:a100-40g --json";
  const double pcie4 = 16e9 * 16 * 128 / 130 / 8;  // bytes/s per direction
  for (const auto& [flag, bandwidth] :
       {std::pair{std::string(), pcie4}, {std::string(" --link-gbps 0.0007"), 0.0007e9}}) {
    const Result r = vramlab(run + flag);
    ASSERT_EQ(r.exit_code, 0) << flag << ": " << r.out;
    const nlohmann::json clock = last_json_line(r.out).at("clock");
    // 3 steps x (inputs + targets) x 3 x 11 int32 tokens.
    EXPECT_EQ(clock.at("host_to_device_bytes"), 3 * 2 * 3 * 11 * 4) << flag;
    EXPECT_NEAR(clock.at("host_to_device_s").get<double>(), 3 * 2 * 3 * 11 * 4 / bandwidth,
                1e-12 * (3 * 2 * 3 * 11 * 4 / bandwidth))
        << flag;
    EXPECT_NEAR(clock.at("link_gbps").at("host_to_device").get<double>(), bandwidth / 1e9, 1e-9)
        << flag;
    EXPECT_GE(clock.at("compute_stream_busy_s").get<double>(),
              clock.at("host_to_device_s").get<double>())
        << flag;
    EXPECT_EQ(clock.at("exposed_copy_s"), 0.0) << flag;
    EXPECT_GE(clock.at("seconds").get<double>(),
              clock.at("compute_stream_busy_s").get<double>() * (1 - 1e-12))
        << flag;
    // Each step's line has its own stretch of the clock: its two copies and its kernels, and
    // the steps' stretches add up to at most the run's.
    double steps_clock = 0.0;
    int steps = 0;
    for (const nlohmann::json& line : json_lines(r.out)) {
      if (!line.contains("step")) continue;
      ++steps;
      const double step_clock = line.at("clock_s").get<double>();
      EXPECT_GT(step_clock, 2 * 3 * 11 * 4 / bandwidth * (1 - 1e-12)) << flag;
      EXPECT_EQ(line.at("exposed_copy_s"), 0.0) << flag;
      steps_clock += step_clock;
    }
    EXPECT_EQ(steps, 3) << flag;
    EXPECT_LE(steps_clock, clock.at("seconds").get<double>() * (1 + 1e-12)) << flag;
  }
  for (const char* bad : {"0", "-2", "nan", "inf", "2e6"}) {
    const Result r = vramlab(run + " --link-gbps " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << r.out;
    EXPECT_NE(r.out.find(std::string("got ") + (std::string(bad) == "2e6" ? "2e+06" : bad)),
              std::string::npos)
        << r.out;
  }
}

TEST(TrainCli, OnAMetaPresetKernelsTakeTheirRooflineAndBf16MatmulsRunOnTheTensorCores) {
  // gpt2-1.5b's shape at B·T = 8192 on an A100: its GEMMs are compute-bound, so fp32 (CUDA cores,
  // 19.5 TFLOP/s) takes several times mixed bf16's step (tensor cores, 312); its elementwise and
  // optimizer kernels are memory-bound in both, which keeps the ratio under 312 / 19.5 = 16.
  const std::string run =
      "train --model gpt2-1.5b --layers 2 --batch 8 --seq 1024 --steps 1 "
      "--device meta:a100-40g --json";
  double busy[2] = {0.0, 0.0};
  for (const int bf16 : {0, 1}) {
    const Result r = vramlab(run + (bf16 ? " --precision mixed-bf16" : ""));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const nlohmann::json clock = last_json_line(r.out).at("clock");
    EXPECT_EQ(clock.at("kernel_time"), "roofline");
    busy[bf16] = clock.at("compute_stream_busy_s").get<double>();
  }
  EXPECT_GT(busy[0], 5.0 * busy[1]);
  EXPECT_LT(busy[0], 16.0 * busy[1]);
  // Without a preset there are no peaks: the kernels keep the time spent on them.
  const Result plain = vramlab("train --model gpt2-tiny --steps 1 --device meta --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(last_json_line(plain.out).at("clock").at("kernel_time"), "measured");
}

TEST(TrainCli, MemoryGbpsAndPeakTflopsTurnTheRooflineOfAMetaDevice) {
  // Every roof twice as high: each kernel's max(FLOPs / peak, bytes / bandwidth) halves exactly.
  // The step's copies (its tokens, over the unchanged link) are on the compute stream too.
  const std::string run =
      "train --model gpt2-124m --batch 4 --seq 256 --steps 1 --json "
      "--precision mixed-bf16 --device ";
  const auto kernel_seconds = [&](const std::string& flags) {
    const Result r = vramlab(run + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.out;
    const nlohmann::json clock = last_json_line(r.out).at("clock");
    EXPECT_EQ(clock.at("kernel_time"), "roofline") << flags;
    return clock.at("compute_stream_busy_s").get<double>() -
           clock.at("host_to_device_s").get<double>();
  };
  const double a100 = kernel_seconds("meta:a100-40g");
  const double doubled =
      kernel_seconds("meta:a100-40g --memory-gbps 3110 --peak-tflops fp32=39,bf16=624,fp16=624");
  EXPECT_NEAR(doubled, a100 / 2, 1e-9 * a100);
  // Plain meta has no preset: with every rate given it has the A100's roofline.
  EXPECT_NEAR(kernel_seconds("meta --memory-gbps 1555 --peak-tflops fp32=19.5,bf16=312,fp16=312"),
              a100, 1e-9 * a100);
  // Only the bandwidth higher: the memory-bound kernels get faster, the GEMMs do not.
  const double faster_memory = kernel_seconds("meta:a100-40g --memory-gbps 3110");
  EXPECT_LT(faster_memory, a100);
  EXPECT_GT(faster_memory, a100 / 2);
}

TEST(TrainCli, BadRooflineFlagsExit2NamingTheValue) {
  const std::string run = "train --model gpt2-tiny --steps 1 --device ";
  for (const auto& [flags, named] : std::vector<std::pair<std::string, std::string>>{
           {"meta:a100-40g --memory-gbps 0", "got 0"},
           {"meta:a100-40g --memory-gbps nan", "got nan"},
           {"meta:a100-40g --memory-gbps 2e6", "got 2e+06"},
           {"meta:a100-40g --peak-tflops fp32", "'fp32' has no '='"},
           {"meta:a100-40g --peak-tflops int8=3", "'int8=3' names no dtype"},
           {"meta:a100-40g --peak-tflops fp32=abc", "'fp32=abc' needs a rate"},
           {"meta:a100-40g --peak-tflops fp32=-1", "'fp32=-1' needs a rate"},
           {"meta:a100-40g --peak-tflops fp32=1,", "an empty item has no '='"},
           {"meta:a100-40g --peak-tflops fp32=1,fp32=2", "repeats fp32"},
           {"meta:a100-40g --peak-tflops tf32=156", "'tf32=156' sets a peak nothing uses"},
           {"sim:a100-40g --memory-gbps 100", "on 'sim:a100-40g' a kernel takes its measured"},
           {"meta --memory-gbps 100", "'meta' has no preset"},
       }) {
    const Result r = vramlab(run + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << flags << ": " << r.out;
    EXPECT_NE(r.out.find(named), std::string::npos) << flags << ": " << r.out;
  }
  // An empty list, as a shell passes --peak-tflops ''.
  std::vector<std::string> args = vramlab::cli_test::split_words(run + "meta:a100-40g");
  args.insert(args.end(), {"--peak-tflops", ""});
  const Result empty = vramlab::cli_test::run_vramlab(args);
  EXPECT_EQ(empty.exit_code, 2) << empty.out;
  EXPECT_NE(empty.out.find("an empty item has no '='"), std::string::npos) << empty.out;
}

TEST(TrainCli, CudaDeviceWithoutAGpuExits2WithTheReason) {
  const vramlab::platform::GpuProbe probe = vramlab::platform::probe_gpus();
  if (VRAMLAB_HAVE_CUDA && probe.status == vramlab::platform::GpuStatus::available)
    GTEST_SKIP() << "a GPU is usable here";
  const Result r = vramlab(std::string(kTiny) + " --device cuda");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("device 'cuda:0' is not available: "), std::string::npos) << r.out;
  // The reason as `vramlab doctor` reports it, or the build's lack of CUDA.
  const std::string reason =
      VRAMLAB_HAVE_CUDA ? vramlab::platform::gpu_status_name(probe.status) : "has no CUDA";
  EXPECT_NE(r.out.find(reason), std::string::npos) << "missing '" << reason << "' in " << r.out;
  const Result indexed = vramlab(std::string(kTiny) + " --device cuda:1 --kernels cuda");
  EXPECT_EQ(indexed.exit_code, 2) << indexed.out;
  EXPECT_NE(indexed.out.find("'cuda:1'"), std::string::npos) << indexed.out;
}

TEST(TrainCli, CudaEmulatedKernelsTrainOnASimDeviceAndTheSummarySaysSo) {
  const Result r =
      vramlab(std::string(kTiny) + " --device sim:t4-16g --kernels cuda-emulated --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(r.out);
  std::string line, last;
  int steps = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line.front() != '{') continue;
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

  const Result cpu = vramlab(std::string(kTiny) + " --json");
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
    const Result r = vramlab(std::string(kTiny) + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.named), std::string::npos) << c.args << ": " << r.out;
  }
}

TEST(TrainCli, HelpDocumentsKernels) {
  const Result r = vramlab("train --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cuda-emulated"), std::string::npos) << r.out;
}

TEST(TrainCli, OptimizerFlagTakesTheEstimatorsNames) {
  // The states' peak tells the optimizers apart: AdamW two fp32 blocks, SGD with momentum one,
  // plain SGD none.
  int64_t state_peak[3] = {-1, -1, -1};
  const char* const names[3] = {"adamw", "sgd-momentum", "sgd"};
  for (int i = 0; i < 3; ++i) {
    const Result r = vramlab(std::string(kTiny) + " --json --optimizer " + names[i]);
    ASSERT_EQ(r.exit_code, 0) << names[i] << ": " << r.out;
    const nlohmann::json summary = last_json_line(r.out);
    ASSERT_TRUE(summary.contains("summary")) << r.out;
    EXPECT_EQ(summary.at("optimizer"), names[i]) << r.out;
    state_peak[i] = summary.at("peak_bytes").at("by_category").at("optimizer_state").get<int64_t>();
  }
  EXPECT_GT(state_peak[0], state_peak[1]);
  EXPECT_GT(state_peak[1], 0);
  EXPECT_EQ(state_peak[2], 0);
  for (const char* bad : {"rmsprop", "adam"}) {
    const Result r = vramlab(std::string(kTiny) + " --optimizer " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << bad << ": " << r.out;
    std::string quoted = "'";  // built by appends: g++ 12 warns (-Wrestrict) on "'" + string
    quoted += bad;
    quoted += "'";
    EXPECT_NE(r.out.find(quoted), std::string::npos) << r.out;
  }
}

}  // namespace

namespace {

int64_t activation_peak(const std::string& out) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    const auto j = nlohmann::json::parse(line);
    if (j.contains("summary"))
      return j.at("peak_bytes").at("by_category").at("activation").get<int64_t>();
  }
  return -1;
}

// Lesson 01 and `vramlab train --steps 1` measure the same first step: the saved activations are
// the runtime layout of `vramlab estimate` (every gpt2-tiny tensor is a multiple of 512 B), plus
// the remainders of large blocks the allocator did not split because 1 MiB or less would be left
// (PyTorch's should_split): whole 512-B multiples, at most 1 MiB each, one per saved tensor above
// 1 MiB at most (4 per block: qkv, att, fch, fch_gelu; and probs). Which blocks keep one depends
// on the sequence of sizes (gpt2-tiny's hits it in the first step already), so the text output
// explains it for one step as for two. With expandable segments every block is split, and the
// peak is the layout exactly.
TEST(TrainCli, TheActivationPeakIsTheRuntimeLayoutPlusUnsplitRemaindersAndExactWhenExpandable) {
  const std::string model = "train --model gpt2-tiny --batch 8 --seq 128 --device meta ";
  const Result estimate =
      vramlab("estimate --model gpt2-tiny --batch 8 --seq 128 --precision fp32 --json");
  ASSERT_EQ(estimate.exit_code, 0) << estimate.out;
  const int64_t layout =
      nlohmann::json::parse(estimate.out).at("activations_runtime_layout_bytes").get<int64_t>();
  const int64_t mib = int64_t{1} << 20, large_tensors = 4 * 4 + 1;
  for (const char* steps : {"1", "2"}) {
    const Result run = vramlab(model + "--steps " + steps + " --json");
    ASSERT_EQ(run.exit_code, 0) << run.out;
    const int64_t peak = activation_peak(run.out);
    EXPECT_GE(peak, layout) << steps << " step(s): " << run.out;
    EXPECT_LE(peak, layout + large_tensors * mib) << steps << " step(s): " << run.out;
    EXPECT_EQ((peak - layout) % 512, 0) << steps << " step(s): " << run.out;
    setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
    const Result expandable = vramlab(model + "--steps " + steps + " --json");
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    ASSERT_EQ(expandable.exit_code, 0) << expandable.out;
    EXPECT_EQ(activation_peak(expandable.out), layout) << steps << " step(s): " << expandable.out;

    const Result text = vramlab(model + "--steps " + steps);
    ASSERT_EQ(text.exit_code, 0) << text.out;
    const size_t table = text.out.find("reserved (segments)");
    const size_t note = text.out.find("should_split");
    ASSERT_NE(note, std::string::npos) << text.out;
    EXPECT_GT(note, table) << text.out;
    EXPECT_NE(text.out.find("in the first step", note), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("expandable_segments:True", note), std::string::npos) << text.out;
  }
}

}  // namespace

namespace {

// `--recompute`, `--dropout` and `--compress-activations`: bad values exit 2 in one line naming
// the value; good ones train and report the schedule, and the JSON's activation peak is the one
// `vramlab estimate --recompute` predicts for the same run.
TEST(TrainCli, RecomputeDropoutAndCompressionFlagsRefuseBadValuesByName) {
  const struct {
    const char* args;
    const char* named;
  } cases[] = {
      {" --recompute half", "'half'"},
      {" --recompute every:0", "'every:0'"},
      {" --recompute budget:lots", "'budget:lots'"},
      {" --recompute budget:1KiB", "1KiB"},  // below the least feasible peak: names both
      {" --dropout 1", "--dropout"},
      {" --dropout -0.1", "--dropout"},
      {" --compress-activations int4", "'int4'"},
  };
  for (const auto& c : cases) {
    const Result r = vramlab(std::string(kTiny) + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.named), std::string::npos) << c.args << ": " << r.out;
  }
}

int64_t summary_value(const std::string& out, const char* key) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    const auto j = nlohmann::json::parse(line);
    if (j.contains("summary")) return j.at(key).get<int64_t>();
  }
  return -1;
}

TEST(TrainCli, EveryRecomputeScheduleMeasuresThePeakTheEstimatorPredicts) {
  const std::string shape = " --model gpt2-tiny --batch 4 --seq 64";
  for (const char* schedule : {"none", "full", "every:3", "sqrt", "selective", "budget:12MiB"}) {
    const Result trained =
        vramlab("train" + shape + " --device meta --steps 1 --json --recompute " + schedule);
    ASSERT_EQ(trained.exit_code, 0) << schedule << ": " << trained.out;
    const Result estimated =
        vramlab("estimate" + shape + " --precision fp32 --json --recompute " + schedule);
    ASSERT_EQ(estimated.exit_code, 0) << schedule << ": " << estimated.out;
    const auto e = nlohmann::json::parse(estimated.out).at("runtime_recompute");
    EXPECT_EQ(summary_value(trained.out, "activation_peak_bytes"),
              e.at("activation_peak_bytes").get<int64_t>())
        << schedule;
    for (const char* compression : {"none", "int8", "int8-block"}) {
      const std::string flags =
          std::string(" --recompute ") + schedule + " --compress-activations " + compression;
      const Result compressed =
          vramlab("train" + shape + " --device meta --steps 1 --json" + flags);
      ASSERT_EQ(compressed.exit_code, 0) << flags << ": " << compressed.out;
      const Result predicted = vramlab("estimate" + shape + " --precision fp32 --json" + flags);
      ASSERT_EQ(predicted.exit_code, 0) << flags << ": " << predicted.out;
      EXPECT_EQ(summary_value(compressed.out, "activation_bytes_after_forward"),
                nlohmann::json::parse(predicted.out)
                    .at("runtime_recompute")
                    .at("bytes_after_forward")
                    .get<int64_t>())
          << flags;
    }
  }
  const Result text = vramlab(std::string(kTiny) +
                              " --recompute sqrt --dropout 0.1 --compress-activations int8-block");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("recompute sqrt"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("int8-block"), std::string::npos) << text.out;
}

// Issue #33: the offload techniques run from `vramlab train` together and with the others (the
// optimizer offloaded or not, its update delayed or not, its parameters copied back whole or
// tiled, the activations offloaded or not, recompute, flash attention, accumulation, ZeRO-2 on
// two simulated ranks, ZeRO-3 with the parameters offloaded too and prefetched, the optimizer's
// states on NVMe), and each run's
// saved activations after the forward and at their peak, and its pinned activation blocks, are what
// `vramlab estimate` predicts for the same flags; the activations' offload changes no loss.
TEST(TrainCli, EveryOffloadCombinationTrainsAndMeasuresWhatTheEstimatorPredicts) {
  const std::string shape = " --model gpt2-tiny --batch 2 --seq 32";
  const vramlab::test_build::TempDir nvme;
  const std::string on_nvme = " --simulate-ranks 2 --nvme-path " + nvme.path;
  const struct {
    std::string train;  // flags only train takes
    const char* both;   // flags both take
  } cases[] = {
      {"", " --precision mixed-bf16"},
      {" --offload-dpu 2", " --precision mixed-bf16 --offload optimizer"},
      {" --offload-copy-back tiled", " --precision mixed-bf16 --offload optimizer"},
      {" --offload-overlap off", " --precision fp32 --offload optimizer --recompute every:2"},
      {"", " --precision mixed-fp16 --attention flash --recompute selective --grad-accum 2"},
      {" --offload-dpu 1",
       " --precision mixed-bf16 --offload optimizer --attention flash "
       "--recompute full"},
      {" --simulate-ranks 2", " --precision mixed-bf16 --zero 2 --offload optimizer"},
      {" --simulate-ranks 2 --prefetch",
       " --precision mixed-bf16 --zero 3 --offload both --recompute every:2"},
      {on_nvme + " --offload-dpu 2",
       " --precision mixed-bf16 --zero 3 --offload optimizer --offload-optimizer-device nvme"},
      {on_nvme + " --prefetch",
       " --precision fp32 --zero 3 --offload both --offload-optimizer-device nvme "
       "--attention flash"},
      {on_nvme + " --prefetch",
       " --precision mixed-bf16 --zero 3 --offload both --offload-optimizer-device nvme "
       "--offload-param-device nvme --recompute every:2 --grad-accum 2"},
  };
  for (const auto& c : cases) {
    std::vector<double> losses[2];
    for (const bool offloaded : {false, true}) {
      const std::string flags =
          std::string(c.both) + " --offload-activations " + (offloaded ? "on" : "off");
      const Result trained =
          vramlab("train" + shape + " --device sim:a100-40g --steps 3 --json" + flags + c.train);
      ASSERT_EQ(trained.exit_code, 0) << flags << c.train << ": " << trained.out;
      const std::string data_parallel =
          c.train.find("--simulate-ranks 2") != std::string::npos ? " --dp 2" : "";
      const Result estimated = vramlab("estimate" + shape + " --json" + flags + data_parallel);
      ASSERT_EQ(estimated.exit_code, 0) << flags << ": " << estimated.out;
      const auto e = nlohmann::json::parse(estimated.out).at("runtime_recompute");
      EXPECT_EQ(summary_value(trained.out, "activation_bytes_after_forward"),
                e.at("bytes_after_forward").get<int64_t>())
          << flags << c.train;
      EXPECT_EQ(summary_value(trained.out, "activation_peak_bytes"),
                e.at("activation_peak_bytes").get<int64_t>())
          << flags << c.train;
      const nlohmann::json summary = last_json_line(trained.out);
      EXPECT_EQ(summary.at("host_memory").at("peak_bytes_by_category").at("activation"),
                e.at("host_pinned_bytes"))
          << flags << c.train;
      if (c.train.find("--nvme-path") != std::string::npos) {  // the states' files, estimated
        const nlohmann::json all = nlohmann::json::parse(estimated.out);
        EXPECT_EQ(summary.at("nvme").at("file_bytes"), all.at("nvme_bytes").at("optimizer_states"))
            << flags << c.train;
        EXPECT_EQ(summary.at("nvme").at("host_staging_bytes"),
                  all.at("host_bytes").at("optimizer_states"))
            << flags << c.train;
        const nlohmann::json& parameters = summary.at("nvme").at("parameters");
        if (std::string(c.both).find("--offload-param-device nvme") != std::string::npos)
          EXPECT_EQ(parameters.at("file_bytes"), all.at("nvme_bytes").at("parameters"))
              << flags << c.train;
        else
          EXPECT_TRUE(parameters.is_null()) << flags << c.train;
        EXPECT_EQ(nvme.files(), 0) << "files left in " << nvme.path;
      }
      for (const nlohmann::json& step : json_lines(trained.out))
        if (step.contains("step")) losses[offloaded ? 1 : 0].push_back(step.at("loss"));
    }
    EXPECT_EQ(losses[1], losses[0]) << c.both << c.train;
    EXPECT_EQ(losses[0].size(), 3u) << c.both << c.train;
  }
}

// vramlab maxbatch: the search's trials and answer as one JSON object (each trial that fitted
// below the capacity, the largest fitting and its successor failing), the text form's last lines,
// and bad input in one line with exit 2.
TEST(MaxBatchCli, FindsTheLargestBatchAndRefusesBadInput) {
  const std::string args = "maxbatch --model gpt2-124m --device meta:t4-16g --seq 1024";
  const Result found = vramlab(args + " --json");
  ASSERT_EQ(found.exit_code, 0) << found.out;
  const nlohmann::json j = nlohmann::json::parse(found.out);
  const int64_t largest = j.at("largest_batch");
  EXPECT_GT(largest, 0);
  EXPECT_GE(j.at("predicted_largest_batch").get<int64_t>(), largest);
  bool next_failed = false;
  for (const nlohmann::json& t : j.at("trials")) {
    if (t.at("fits")) {
      EXPECT_LE(t.at("peak_bytes").get<int64_t>(), j.at("capacity_bytes").get<int64_t>());
      EXPECT_LE(t.at("batch").get<int64_t>(), largest);
    }
    if (t.at("batch") == largest + 1) next_failed = !t.at("fits");
  }
  EXPECT_TRUE(next_failed) << found.out;
  const Result text = vramlab(args);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("largest micro-batch that fits: B=" + std::to_string(largest)),
            std::string::npos)
      << text.out;
  for (const auto& [bad, named] : {std::pair<std::string, std::string>{" --mode halve", "halve"},
                                   {" --steps-per-trial 1", "--steps-per-trial 1"},
                                   {" --init 0", "--init"}}) {
    const Result refused = vramlab(args + bad);
    EXPECT_EQ(refused.exit_code, 2) << bad << ": " << refused.out;
    EXPECT_EQ(count_lines(refused.out), 1) << bad << ": " << refused.out;
    EXPECT_NE(refused.out.find(named), std::string::npos) << refused.out;
  }
  const Result cpu = vramlab("maxbatch --model gpt2-tiny --device cpu");
  EXPECT_EQ(cpu.exit_code, 2) << cpu.out;
  EXPECT_NE(cpu.out.find("--device cpu"), std::string::npos) << cpu.out;
}

// --snapshot-on-oom FILE (PyTorch's out-of-memory observer recipe): a run that runs out of memory
// in its forward still exits 1 with PyTorch's message, which now names the file; the file holds the
// allocator's state at the failure (the forward's activations live, read back by vramlab
// profile); with ranks each writes its own; a run that fits writes nothing; a path that cannot be
// written is refused before training (exit 2, one line naming it).
TEST(TrainCli, SnapshotOnOomWritesTheAllocatorsStateAtTheFailure) {
  const vramlab::test_build::TempDir dir;
  const std::string failing =
      " --model gpt2-tiny --device sim:64MiB --batch 64 --seq 128 --steps 2";
  const std::string file = dir.path + "/oom.pickle";
  const Result oom = vramlab("train" + failing + " --snapshot-on-oom " + file);
  EXPECT_EQ(oom.exit_code, 1) << oom.out;
  EXPECT_NE(oom.out.find("out of memory. Tried to allocate"), std::string::npos) << oom.out;
  EXPECT_NE(oom.out.find("failure is in " + file), std::string::npos) << oom.out;
  const Result read = vramlab("profile " + file + " --json");
  ASSERT_EQ(read.exit_code, 0) << read.out;
  const nlohmann::json profile = nlohmann::json::parse(read.out);
  EXPECT_GT(profile.at("peak_bytes").get<int64_t>(), 0);
  EXPECT_EQ(profile.at("peak_owner").at("phase"), "forward") << read.out;

  const Result ranks =
      vramlab("train" + failing + " --zero 3 --simulate-ranks 2 --snapshot-on-oom " + dir.path +
              "/ranks.pickle");
  EXPECT_EQ(ranks.exit_code, 1) << ranks.out;
  EXPECT_TRUE(std::filesystem::exists(dir.path + "/ranks.rank0.pickle")) << ranks.out;
  EXPECT_TRUE(std::filesystem::exists(dir.path + "/ranks.rank1.pickle")) << ranks.out;

  const Result fits = vramlab(
      "train --model gpt2-tiny --device sim --batch 2 --seq 16 --steps 1 "
      "--snapshot-on-oom " +
      dir.path + "/none.pickle");
  EXPECT_EQ(fits.exit_code, 0) << fits.out;
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/none.pickle"));

  for (const std::string& bad : {dir.path + "/missing/oom.pickle", dir.path, std::string()}) {
    std::vector<std::string> args = vramlab::cli_test::split_words("train" + failing);
    args.insert(args.end(), {"--snapshot-on-oom", bad});  // an empty word too
    const Result refused = vramlab::cli_test::run_vramlab(args);
    EXPECT_EQ(refused.exit_code, 2) << bad << ": " << refused.out;
    EXPECT_EQ(count_lines(refused.out), 1) << bad << ": " << refused.out;
    EXPECT_NE(refused.out.find("--snapshot-on-oom"), std::string::npos) << refused.out;
  }
}

// vramlab diagnose on a real failure: the log of a run that ran out of memory in its forward and
// the snapshot it wrote give the phase, the category and the tensor (the attention's
// probabilities, so flash attention is the first fix); PyTorch's own text with --message; bad input
// in one line with exit 2.
TEST(DiagnoseCli, ExplainsARealFailureAndPyTorchsText) {
  const vramlab::test_build::TempDir dir;
  const std::string file = dir.path + "/oom.pickle";
  const Result oom = vramlab(
      "train --model gpt2-tiny --device sim:64MiB --batch 64 --seq 128 "
      "--steps 2 --snapshot-on-oom " +
      file);
  ASSERT_EQ(oom.exit_code, 1) << oom.out;
  const std::string log = dir.path + "/train.log";
  std::ofstream(log) << oom.out;
  const Result d = vramlab("diagnose " + log + " --snapshot " + file + " --json");
  ASSERT_EQ(d.exit_code, 0) << d.out;
  const nlohmann::json j = nlohmann::json::parse(d.out);
  EXPECT_EQ(j.at("device"), "sim:64MiB");
  EXPECT_EQ(j.at("capacity_bytes"), 64 << 20);
  EXPECT_EQ(j.at("phase"), "forward");
  EXPECT_EQ(j.at("category"), "activation");
  EXPECT_EQ(j.at("fixes").at(0).at("change"), "--attention flash") << d.out;
  EXPECT_GT(j.at("live_by_category").at("activation").get<int64_t>(), 0);
  const Result text = vramlab("diagnose " + log);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("--snapshot FILE"), std::string::npos) << text.out;

  // Forward and backward fit, AdamW's states made at the first step() do not: whether the first
  // moment or the second is the one that fails, it is the first optimizer step.
  for (const char* capacity : {"48MiB", "64MiB"}) {
    const Result step =
        vramlab(std::string("train --model gpt2-tiny --batch 2 --seq 16 --steps 1 ") +
                "--device sim:" + capacity + " --snapshot-on-oom " + file);
    ASSERT_EQ(step.exit_code, 1) << step.out;
    std::ofstream(log) << step.out;
    const Result first = vramlab("diagnose " + log + " --snapshot " + file + " --json");
    ASSERT_EQ(first.exit_code, 0) << first.out;
    const nlohmann::json f = nlohmann::json::parse(first.out);
    EXPECT_EQ(f.at("phase"), "first optimizer step") << capacity << ": " << first.out;
    EXPECT_EQ(f.at("category"), "optimizer_state") << capacity;
    EXPECT_EQ(f.at("fixes").at(0).at("change"), "--optimizer adamw-8bit") << capacity;
  }

  const std::vector<std::string> pytorch = {
      "diagnose", "--json", "--message",
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
      "capacity of 79.15 GiB of which 2.81 MiB is free. Of the allocated memory 78.51 GiB is "
      "allocated by PyTorch, and 137.06 MiB is reserved by PyTorch but unallocated."};
  const Result p = vramlab::cli_test::run_vramlab(pytorch);
  ASSERT_EQ(p.exit_code, 0) << p.out;
  EXPECT_EQ(nlohmann::json::parse(p.out).at("fragmentation"), true) << p.out;

  for (const std::string& bad :
       {"diagnose " + dir.path + "/missing.log", "diagnose " + file, std::string("diagnose"),
        "diagnose " + log + " --snapshot " + log}) {
    const Result refused = vramlab(bad);
    EXPECT_EQ(refused.exit_code, 2) << bad << ": " << refused.out;
    EXPECT_EQ(count_lines(refused.out), 1) << bad << ": " << refused.out;
  }
}

// --offload-pin-memory on|off from the command line: the offloaded optimizer's pinned blocks are
// what `vramlab estimate` gives for the same flag (none when off), and a bad value exits 2 naming
// it.
TEST(TrainCli, OffloadPinMemoryChoosesPinnedOrPageableHostBuffers) {
  const std::string flags =
      " --model gpt2-tiny --batch 2 --seq 32 --precision mixed-bf16 --offload optimizer";
  for (const char* pin : {"on", "off"}) {
    const std::string both = flags + " --offload-pin-memory " + pin;
    const Result trained = vramlab("train" + both + " --device sim --steps 2 --json");
    ASSERT_EQ(trained.exit_code, 0) << both << ": " << trained.out;
    const Result estimated = vramlab("estimate" + both + " --json");
    ASSERT_EQ(estimated.exit_code, 0) << both << ": " << estimated.out;
    const int64_t blocks =
        nlohmann::json::parse(estimated.out).at("host_bytes").at("pinned_blocks").get<int64_t>();
    EXPECT_EQ(blocks > 0, std::string(pin) == "on") << both;
    EXPECT_EQ(summary_value(trained.out, "host_pinned_model_state_bytes"), blocks) << both;
  }
  const Result bad = vramlab("train" + flags + " --offload-pin-memory maybe");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("maybe"), std::string::npos) << bad.out;
}

// --offload-optimizer-device nvme and the --nvme-* flags: each bad value or combination exits 2 in
// one line naming it, before anything is trained.
TEST(TrainCli, NvmeFlagsRefuseBadValuesByName) {
  const vramlab::test_build::TempDir dir;
  const std::string nvme =
      " --simulate-ranks 1 --zero 3 --offload optimizer --offload-optimizer-device nvme";
  const std::string path = " --nvme-path " + dir.path;
  const struct {
    std::string args;
    std::string named;
  } cases[] = {
      {nvme, "--nvme-path"},
      {nvme + " --nvme-path " + dir.path + "/missing", dir.path + "/missing"},
      {" --nvme-path " + dir.path, "--offload-optimizer-device nvme"},
      {nvme + path + " --nvme-block-size 5000B", "--nvme-block-size 5000"},
      {nvme + path + " --nvme-block-size lots", "--nvme-block-size"},
      {nvme + path + " --nvme-block-size 2GiB", "--nvme-block-size 2GiB"},
      {nvme + path + " --nvme-queue-depth 0", "--nvme-queue-depth 0"},
      {nvme + path + " --nvme-engine turbo", "'turbo'"},
      {nvme + path + " --nvme-read-gbps 0", "--nvme-read-gbps"},
      {nvme + path + " --nvme-write-gbps -3", "--nvme-write-gbps"},
      {" --simulate-ranks 2 --zero 2 --offload optimizer --offload-optimizer-device nvme" + path,
       "--zero 3"},
      {" --simulate-ranks 1 --zero 3 --offload-optimizer-device nvme" + path,
       "--offload optimizer"},
      {nvme + path + " --optimizer adafactor", "adafactor"},
      {" --offload-optimizer-device ssd", "'ssd'"},
      {nvme + path + " --offload-param-device nvme", "--offload both"},
      {" --simulate-ranks 1 --zero 3 --offload both --offload-param-device nvme" + path,
       "--offload-optimizer-device nvme"},
      {nvme + path + " --offload-param-device disk", "'disk'"},
      {nvme + path + " --device meta", "meta"},
  };
  for (const auto& c : cases) {
    const Result r = vramlab(std::string(kTiny) + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.named), std::string::npos) << c.args << ": " << r.out;
  }
  EXPECT_EQ(dir.files(), 0);
}

}  // namespace

namespace {

// `--precision`, `--fp32-grads`, `--grad-accum`, `--loss-scale`, `--clip-grad-norm`: bad values
// exit 2 in one line naming the value; on meta every precision's summary reports the activation
// peak `vramlab estimate --precision` predicts, with and without accumulation.
TEST(TrainCli, PrecisionAndAccumulationFlagsRefuseBadValuesByName) {
  const struct {
    const char* args;
    const char* named;
  } cases[] = {
      {" --precision fp16", "'fp16'"},      {" --precision fp32 --fp32-grads", "'fp32'"},
      {" --grad-accum 0", "--grad-accum"},  {" --loss-scale static:0", "'static:0'"},
      {" --loss-scale always", "'always'"}, {" --clip-grad-norm -1", "--clip-grad-norm"},
  };
  for (const auto& c : cases) {
    const Result r = vramlab(std::string(kTiny) + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.named), std::string::npos) << c.args << ": " << r.out;
  }
}

TEST(TrainCli, EveryPrecisionMeasuresTheActivationPeakTheEstimatorPredicts) {
  const std::string shape = " --model gpt2-tiny --batch 4 --seq 64";
  for (const char* precision : {"fp32", "bf16", "mixed-bf16", "mixed-fp16"}) {
    for (const char* accumulation : {"1", "3"}) {
      const std::string flags =
          std::string(" --precision ") + precision + " --grad-accum " + accumulation;
      const Result trained = vramlab("train" + shape + " --device meta --steps 1 --json" + flags);
      ASSERT_EQ(trained.exit_code, 0) << flags << ": " << trained.out;
      const Result estimated = vramlab("estimate" + shape + " --json" + flags);
      ASSERT_EQ(estimated.exit_code, 0) << flags << ": " << estimated.out;
      EXPECT_EQ(summary_value(trained.out, "activation_peak_bytes"),
                nlohmann::json::parse(estimated.out)
                    .at("runtime_recompute")
                    .at("activation_peak_bytes")
                    .get<int64_t>())
          << flags;
    }
  }
}

}  // namespace

namespace {

// `--attention flash` on both commands: the measured activation peak of a meta step (expandable
// segments: no unsplit remainders) is the estimator's flash layout exactly, and smaller than the
// naive one by the (B, H, T, T) probabilities less the (B, H, T) log-sum-exp; a bad value exits 2
// in one line naming it.
TEST(TrainCli, FlashAttentionPeakIsTheEstimatorsFlashLayout) {
  const std::string shape = "--model gpt2-tiny --batch 2 --seq 128 ";
  int64_t layout[2] = {0, 0}, measured[2] = {0, 0};
  const char* const kinds[2] = {"naive", "flash"};
  for (int i = 0; i < 2; ++i) {
    const Result estimate = vramlab("estimate " + shape + "--precision fp32 --json --attention " +
                                    std::string(kinds[i]));
    ASSERT_EQ(estimate.exit_code, 0) << estimate.out;
    const auto e = nlohmann::json::parse(estimate.out);
    EXPECT_EQ(e.at("inputs").at("attention"), kinds[i]);
    layout[i] = e.at("activations_runtime_layout_bytes").get<int64_t>();
    setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
    const Result run = vramlab("train " + shape + "--device meta --steps 1 --json --attention " +
                               std::string(kinds[i]));
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    ASSERT_EQ(run.exit_code, 0) << run.out;
    measured[i] = activation_peak(run.out);
    EXPECT_EQ(measured[i], layout[i]) << kinds[i] << ": " << run.out;
    EXPECT_NE(run.out.find(std::string("\"attention\":\"") + kinds[i] + "\""), std::string::npos)
        << run.out;
  }
  const int64_t L = 4, B = 2, H = 4, T = 128;  // gpt2-tiny: 4 layers, 4 heads
  EXPECT_EQ(layout[0] - layout[1], L * (B * H * T * T * 4 - B * H * T * 4));
  for (const char* command :
       {"train --model gpt2-tiny --device meta --steps 1", "estimate --model gpt2-tiny"}) {
    const Result r = vramlab(std::string(command) + " --attention flashy");
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << command << ": " << r.out;
    EXPECT_NE(r.out.find("'flashy'"), std::string::npos) << r.out;
  }
  // The CUDA kernels hold a row's accumulators in registers: head dimension 300 is refused.
  const Result wide = vramlab(
      "train --layers 1 --hidden 600 --heads 2 --vocab 29 --seq 4 --batch 1 --steps 1 "
      "--device sim:1GiB --kernels cuda-emulated --attention flash");
  EXPECT_EQ(wide.exit_code, 2) << wide.out;
  EXPECT_EQ(count_lines(wide.out), 1) << wide.out;
  EXPECT_NE(wide.out.find("got 300"), std::string::npos) << wide.out;
}

}  // namespace
