// OpenBLAS introspection, kernel-set selection, and the SGEMM rate `vramlab doctor` reports.
#include "common/platform/blas.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <random>
#include <vector>

#include "common/platform/errors.h"

extern "C" {
// Declared in OpenBLAS's cblas.h too, but not in every packaging; these are stable OpenBLAS
// symbols.
char* openblas_get_config(void);
char* openblas_get_corename(void);
int openblas_get_parallel(void);
int openblas_get_num_threads(void);
}

namespace vramlab::platform {

namespace {

constexpr const char* kSelectedEnv = "VRAMLAB_BLAS_CORE_SELECTED";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0';
}

}  // namespace

std::string recommended_openblas_core(const CpuFeatures& features) {
  const std::string level = simd_level(features);
  if (level == "avx512") return "SkylakeX";
  if (level == "avx2") return "Haswell";
  if (level == "avx") return "Sandybridge";
  return "";
}

int openblas_core_simd_rank(const std::string& core_name) {
  const std::string c = lower(core_name);
  for (const char* name : {"skylakex", "cooperlake", "sapphirerapids"})
    if (c == name) return 3;
  for (const char* name : {"haswell", "zen", "skylake", "excavator"})
    if (c == name) return 2;
  for (const char* name : {"sandybridge", "bulldozer", "piledriver", "steamroller"})
    if (c == name) return 1;
  return 0;
}

std::string blas_core_to_select(const std::string& detected_core, const CpuFeatures& features) {
  const std::string recommended = recommended_openblas_core(features);
  if (recommended.empty() ||
      openblas_core_simd_rank(detected_core) >= openblas_core_simd_rank(recommended))
    return "";
  return recommended;
}

void select_blas_core_or_reexec(int argc, char** argv) {
  (void)argc;
  if (env_set("OPENBLAS_CORETYPE") || env_set(kSelectedEnv) ||
      env_set("VRAMLAB_NO_BLAS_CORE_SELECTION"))
    return;
  const char* detected = openblas_get_corename();
  const std::string detected_core = detected != nullptr ? detected : "";
  const std::string selected = blas_core_to_select(detected_core, detect_cpu_features());
  if (selected.empty()) return;
  setenv("OPENBLAS_CORETYPE", selected.c_str(), 1);
  setenv(kSelectedEnv, detected_core.empty() ? "unknown" : detected_core.c_str(), 1);
  execv("/proc/self/exe", argv);
  // execv only returns on failure: carry on with the detected core rather than fail.
  unsetenv("OPENBLAS_CORETYPE");
}

BlasInfo blas_info() {
  BlasInfo info;
  const char* config = openblas_get_config();
  const char* core = openblas_get_corename();
  info.config = config != nullptr ? config : "";
  info.core = core != nullptr ? core : "";
  switch (openblas_get_parallel()) {
    case 0:
      info.parallel = "sequential";
      break;
    case 1:
      info.parallel = "pthreads";
      break;
    case 2:
      info.parallel = "openmp";
      break;
    default:
      info.parallel = "unknown";
      break;
  }
  info.threads = openblas_get_num_threads();
  if (env_set(kSelectedEnv)) {
    info.core_source = "selected by vramlab from the CPU's features";
    info.detected_core = std::getenv(kSelectedEnv);
  } else if (env_set("OPENBLAS_CORETYPE")) {
    info.core_source = std::string("OPENBLAS_CORETYPE=") + std::getenv("OPENBLAS_CORETYPE") +
                       " set in the environment";
  } else {
    info.core_source = "detected by OpenBLAS";
  }
  return info;
}

double measure_sgemm_gflops(int64_t n, double min_seconds) {
  if (n <= 0) throw UsageError("GEMM size must be positive, got " + std::to_string(n));
  if (!(min_seconds > 0)) throw UsageError("GEMM timing budget must be positive");
  const size_t elems = static_cast<size_t>(n) * static_cast<size_t>(n);
  std::vector<float> a(elems), b(elems), c(elems);  // each (n, n), row-major
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < elems; ++i) {
    a[i] = dist(rng);
    b[i] = dist(rng);
  }
  const auto ni = static_cast<blasint>(n);
  auto gemm = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, a.data(), ni, b.data(),
                ni, 0.0f, c.data(), ni);
  };
  gemm();  // warm-up: thread pool start, page faults
  using clock = std::chrono::steady_clock;
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  double best_seconds = 1e30;
  const auto start = clock::now();
  int64_t calls = 0;
  while (calls < 3 || std::chrono::duration<double>(clock::now() - start).count() < min_seconds) {
    const auto t0 = clock::now();
    gemm();
    best_seconds = std::min(best_seconds, std::chrono::duration<double>(clock::now() - t0).count());
    ++calls;
  }
  return flops / best_seconds / 1e9;
}

}  // namespace vramlab::platform
