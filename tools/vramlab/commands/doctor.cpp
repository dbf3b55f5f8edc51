// `vramlab doctor`: what this machine can run. Toolchain, CUDA compiler, GPU (three distinct
// answers: no driver, no device, a working device), MPI, OpenMP, the BLAS core and its measured
// SGEMM rate, Doxygen, and which lessons and exercises can run here. `--json` for scripts.
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "common/platform/blas.h"
#include "common/platform/build_info.h"
#include "common/platform/cpu_features.h"
#include "common/platform/gpu_probe.h"
#include "common/report/terminal.h"
#include "kernels/cpu/kernel_set.h"
#include "tools/vramlab/commands.h"

namespace vramlab::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool is_executable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

// Starts `ranks` processes of /bin/true through the MPI launcher; returns the seconds it took, or
// a negative value when the launch failed.
double try_mpi_launch(const std::string& mpiexec, bool as_root, int64_t ranks) {
  std::string cmd = "timeout 30 '" + mpiexec + "' ";
  if (as_root) cmd += "--allow-run-as-root ";
  cmd += "--oversubscribe -np " + std::to_string(ranks) + " true >/dev/null 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) ? seconds : -1.0;
}

json mpi_report() {
  json mpi;
  const std::string launcher = build_info::kMpiexec;
  const bool as_root = geteuid() == 0;
  mpi["built_with_mpi"] = build_info::kHaveMpi;
  mpi["launcher"] = launcher;
  mpi["launcher_present"] = is_executable(launcher);
  mpi["running_as_root"] = as_root;
  mpi["launch_flags"] = as_root ? "--allow-run-as-root --oversubscribe" : "--oversubscribe";
  if (is_executable(launcher)) {
    const double seconds = try_mpi_launch(launcher, as_root, 2);
    mpi["two_rank_launch_ok"] = seconds >= 0;
    if (seconds >= 0) mpi["two_rank_launch_seconds"] = seconds;
  } else {
    mpi["two_rank_launch_ok"] = false;
  }
  return mpi;
}

// Lessons and exercises are described by lessons/NN-name/manifest.json; each names what it needs
// ("cpu", "cuda" or "mpi").
json lessons_report(bool have_gpu, bool have_mpi) {
  json lessons = json::array();
  const fs::path root = fs::path(build_info::kSourceDir) / "lessons";
  if (!fs::is_directory(root)) return lessons;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory() && fs::exists(entry.path() / "manifest.json"))
      dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  auto can_run = [&](const json& requires_list) {
    for (const auto& r : requires_list) {
      if (r == "cuda" && !have_gpu) return false;
      if (r == "mpi" && !have_mpi) return false;
    }
    return true;
  };
  for (const auto& dir : dirs) {
    std::ifstream in(dir / "manifest.json");
    json manifest = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (manifest.is_discarded()) continue;
    json lesson;
    lesson["id"] = manifest.value("id", dir.filename().string());
    lesson["title"] = manifest.value("title", "");
    lesson["runs_here"] = can_run(manifest.value("requires", json::array()));
    json exercises = json::array();
    for (const auto& ex : manifest.value("exercises", json::array())) {
      exercises.push_back({{"id", ex.value("id", "")},
                           {"runs_here", can_run(ex.value("requires", json::array()))}});
    }
    lesson["exercises"] = exercises;
    lessons.push_back(lesson);
  }
  return lessons;
}

json collect(bool measure_gemm) {
  json r;
  r["vramlab_version"] = build_info::kVersion;
  r["build_type"] = build_info::kBuildType;
  r["compiler"] = build_info::kCxxCompiler;
  r["cmake"] = build_info::kCMakeVersion;
  r["cuda_compiler"] = std::string(build_info::kCudaCompilerVersion);
  r["cuda_compiled"] = build_info::kHaveCuda;
  r["cuda_architectures"] = std::string(build_info::kCudaArchitectures);
  r["nccl"] = build_info::kHaveNccl;

  const platform::GpuProbe gpu = platform::probe_gpus();
  json g;
  g["status"] = platform::gpu_status_name(gpu.status);
  g["detail"] = gpu.detail;
  g["driver_version"] = gpu.driver_version;
  g["devices"] = json::array();
  for (const auto& d : gpu.devices)
    g["devices"].push_back({{"name", d.name},
                            {"total_bytes", d.total_bytes},
                            {"compute_capability", std::to_string(d.compute_major) + "." +
                                                       std::to_string(d.compute_minor)}});
  r["gpu"] = g;

  const platform::CpuFeatures cpu = platform::detect_cpu_features();
  r["cpu"] = {{"model", cpu.model_name},
              {"logical_cores", cpu.logical_cores},
              {"simd", platform::simd_level(cpu)},
              {"avx512_bf16", cpu.avx512_bf16},
              {"f16c", cpu.f16c}};
  r["openmp_threads"] = omp_get_max_threads();

  const platform::BlasInfo blas = platform::blas_info();
  json b = {{"config", blas.config},
            {"core", blas.core},
            {"core_source", blas.core_source},
            {"recommended_core", platform::recommended_openblas_core(cpu)},
            {"parallel", blas.parallel},
            {"threads", blas.threads}};
  if (!blas.detected_core.empty()) b["detected_core"] = blas.detected_core;
  r["cpu_kernels"] = {
      {"simd", kernels::cpu::compiled_simd_level()},
      {"target", kernels::cpu::compiled_target()},
      {"optimizer_path", kernels::cpu::vector_path_name(kernels::cpu::optimizer_vector_path())}};
  if (measure_gemm) b["sgemm_gflops"] = platform::measure_sgemm_gflops(1024, 0.3);
  r["blas"] = b;

  r["mpi"] = mpi_report();
  r["doxygen"] = {{"path", build_info::kDoxygen},
                  {"version", build_info::kDoxygenVersion},
                  {"present", is_executable(build_info::kDoxygen)}};
  const bool have_gpu = gpu.status == platform::GpuStatus::available;
  r["lessons"] = lessons_report(have_gpu, r["mpi"]["two_rank_launch_ok"].get<bool>());
  return r;
}

void print_human(const json& r) {
  const bool c = report::use_colour(stdout);
  using namespace report::style;
  auto row = [](const std::string& key, const std::string& value) {
    std::printf("  %-22s %s\n", key.c_str(), value.c_str());
  };
  auto ok = [c](bool good, const std::string& text) {
    return good ? green(text, c) : yellow(text, c);
  };
  std::printf("%s\n", bold("vramlab doctor", c).c_str());
  std::printf("%s\n", bold("Toolchain", c).c_str());
  row("vramlab",
      r["vramlab_version"].get<std::string>() + " (" + r["build_type"].get<std::string>() + ")");
  row("C++ compiler", r["compiler"]);
  row("CMake", r["cmake"]);
  const std::string cuda = r["cuda_compiler"];
  row("CUDA compiler", cuda.empty() ? ok(false, "not used (CUDA sources not compiled)")
                                    : ok(true, "nvcc " + cuda + ", architectures " +
                                                   r["cuda_architectures"].get<std::string>()));
  row("NCCL", r["nccl"].get<bool>() ? ok(true, "found") : ok(false, "not found"));
  std::printf("%s\n", bold("GPU", c).c_str());
  const auto& g = r["gpu"];
  row("status", ok(g["status"] == "available", g["status"].get<std::string>()));
  row("", g["detail"]);
  for (const auto& d : g["devices"])
    row("device", d["name"].get<std::string>() + ", " +
                      report::format_bytes(d["total_bytes"].get<uint64_t>()) + ", sm_" +
                      d["compute_capability"].get<std::string>());
  if (g["status"] != "available")
    row("", "lessons run on the simulated GPU (--device sim:<preset>) and the meta device");
  std::printf("%s\n", bold("CPU", c).c_str());
  row("model", r["cpu"]["model"]);
  row("logical cores", std::to_string(r["cpu"]["logical_cores"].get<int64_t>()));
  row("SIMD", r["cpu"]["simd"]);
  row("OpenMP threads", std::to_string(r["openmp_threads"].get<int64_t>()));
  const auto& b = r["blas"];
  row("BLAS", b["config"]);
  std::string core = b["core"].get<std::string>() + " (" + b["core_source"].get<std::string>();
  if (b.contains("detected_core"))
    core += "; OpenBLAS detected " + b["detected_core"].get<std::string>();
  core += ")";
  row("BLAS core", core);
  row("recommended core", b["recommended_core"]);
  row("vramlab CPU kernels", r["cpu_kernels"]["simd"].get<std::string>() + " (compiled for " +
                                 r["cpu_kernels"]["target"].get<std::string>() + "; optimizers: " +
                                 r["cpu_kernels"]["optimizer_path"].get<std::string>() + ")");
  row("BLAS threading", b["parallel"].get<std::string>() + ", " +
                            std::to_string(b["threads"].get<int64_t>()) + " threads");
  if (b.contains("sgemm_gflops")) {
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.1f GFLOP/s (1024^3, best of ~0.3 s)",
                  b["sgemm_gflops"].get<double>());
    row("SGEMM rate", rate);
  }
  std::printf("%s\n", bold("MPI", c).c_str());
  const auto& m = r["mpi"];
  row("launcher", m["launcher_present"].get<bool>() ? ok(true, m["launcher"].get<std::string>())
                                                    : ok(false, "not found"));
  row("launch flags", m["launch_flags"]);
  row("2-rank launch", m["two_rank_launch_ok"].get<bool>() ? ok(true, "ok") : ok(false, "failed"));
  std::printf("%s\n", bold("Docs", c).c_str());
  row("Doxygen", r["doxygen"]["present"].get<bool>()
                     ? ok(true, r["doxygen"]["version"].get<std::string>())
                     : ok(false, "not found (no docs target)"));
  std::printf("%s\n", bold("Lessons", c).c_str());
  if (r["lessons"].empty()) row("", "no lessons yet");
  for (const auto& l : r["lessons"]) {
    std::string ex;
    for (const auto& e : l["exercises"])
      ex += " " + e["id"].get<std::string>() + (e["runs_here"].get<bool>() ? "" : "(needs GPU)");
    row(l["id"].get<std::string>() + " " + l["title"].get<std::string>(),
        ok(l["runs_here"].get<bool>(), l["runs_here"].get<bool>() ? "runs here" : "needs a GPU") +
            (ex.empty() ? "" : "; exercises:" + ex));
  }
}

}  // namespace

void add_doctor_command(CLI::App& app, int& exit_code) {
  auto* cmd =
      app.add_subcommand("doctor", "What this machine can run: toolchain, GPU, MPI, BLAS, lessons");
  // CLI11 2.1 with C++20: bind flags to variables (the description-only overload is ambiguous).
  auto options = std::make_shared<std::pair<bool, bool>>(false, false);  // {json, no_gemm}
  cmd->add_flag("--json", options->first, "Print one JSON object instead of the report");
  cmd->add_flag("--no-gemm", options->second, "Skip the SGEMM rate measurement (about 0.5 s)");
  cmd->callback([options, &exit_code] {
    const json r = collect(!options->second);
    if (options->first)
      std::printf("%s\n", r.dump(2).c_str());
    else
      print_human(r);
    exit_code = 0;
  });
}

}  // namespace vramlab::cli
