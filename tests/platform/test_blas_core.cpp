// OpenBLAS core selection: the decision rule, and end to end through a child process that the
// tests start with and without OPENBLAS_CORETYPE, checking the core chosen and that SGEMM results
// on that core stay within the f32 error bound of a double-precision reference.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "common/platform/blas.h"

namespace vramlab::platform {
namespace {

CpuFeatures avx512_cpu() {
  CpuFeatures f;
  f.avx = f.avx2 = f.fma = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
  return f;
}

CpuFeatures avx2_cpu() {
  CpuFeatures f;
  f.avx = f.avx2 = f.fma = true;
  return f;
}

TEST(BlasCoreSelection, GenericFallbackOnAvx512CpuSelectsSkylakeX) {
  EXPECT_EQ(blas_core_to_select("Prescott", avx512_cpu()), "SkylakeX");
  EXPECT_EQ(blas_core_to_select("Nehalem", avx512_cpu()), "SkylakeX");
  EXPECT_EQ(blas_core_to_select("", avx512_cpu()), "SkylakeX");
}

TEST(BlasCoreSelection, GenericFallbackOnAvx2CpuSelectsHaswell) {
  EXPECT_EQ(blas_core_to_select("Prescott", avx2_cpu()), "Haswell");
}

TEST(BlasCoreSelection, KeepsACoreThatAlreadyUsesTheCpusWidestSimd) {
  EXPECT_EQ(blas_core_to_select("SkylakeX", avx512_cpu()), "");
  EXPECT_EQ(blas_core_to_select("Cooperlake", avx512_cpu()), "");
  EXPECT_EQ(blas_core_to_select("Haswell", avx2_cpu()), "");
  EXPECT_EQ(blas_core_to_select("Zen", avx2_cpu()), "");
}

TEST(BlasCoreSelection, NeverSelectsACoreTheCpuCannotRun) {
  CpuFeatures sse_only;
  EXPECT_EQ(blas_core_to_select("Prescott", sse_only), "");
  EXPECT_EQ(blas_core_to_select("Prescott", avx2_cpu()), "Haswell");  // not SkylakeX
}

nlohmann::json run_probe(const std::string& env_prefix) {
  const std::string cmd = env_prefix + " '" + VRAMLAB_BLAS_CORE_PROBE + "'";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return nlohmann::json();
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << cmd << " printed: " << out;
  return nlohmann::json::parse(out, nullptr, false);
}

void expect_gemm_within_bound(const nlohmann::json& r) {
  ASSERT_FALSE(r.is_discarded());
  EXPECT_LE(r["max_error_over_bound"].get<double>(), 1.0)
      << "core " << r["core"] << ": max |diff| " << r["max_abs_err"] << " at index "
      << r["worst_index"] << " is " << 100.0 * r["max_error_over_bound"].get<double>()
      << "% of the f32 error bound k*eps*sum|a*b|";
}

TEST(BlasCoreSelection, WithoutUserChoiceTheRunningCoreUsesTheCpusWidestSimd) {
  const nlohmann::json r = run_probe(
      "env -u OPENBLAS_CORETYPE -u VRAMLAB_BLAS_CORE_SELECTED -u VRAMLAB_NO_BLAS_CORE_SELECTION");
  ASSERT_FALSE(r.is_discarded());
  const std::string recommended = recommended_openblas_core(detect_cpu_features());
  EXPECT_GE(openblas_core_simd_rank(r["core"]), openblas_core_simd_rank(recommended))
      << "running core " << r["core"] << " (" << r["core_source"] << "), recommended "
      << recommended;
  expect_gemm_within_bound(r);
}

TEST(BlasCoreSelection, AUsersOpenblasCoretypeIsRespected) {
  const nlohmann::json r =
      run_probe("env -u VRAMLAB_BLAS_CORE_SELECTED OPENBLAS_CORETYPE=Prescott");
  ASSERT_FALSE(r.is_discarded());
  EXPECT_EQ(r["core"], "Prescott");
  EXPECT_NE(r["core_source"].get<std::string>().find("OPENBLAS_CORETYPE=Prescott"),
            std::string::npos);
  expect_gemm_within_bound(r);
}

TEST(BlasCoreSelection, SelectedCoreComputesCorrectResults) {
  // The core vramlab would select on this CPU, forced, must give correct SGEMM results.
  const std::string recommended = recommended_openblas_core(detect_cpu_features());
  if (recommended.empty()) GTEST_SKIP() << "this CPU has no AVX: vramlab never selects a core here";
  expect_gemm_within_bound(run_probe("env OPENBLAS_CORETYPE=" + recommended));
}

TEST(BlasGemmRate, MeasuresAPositiveRateAndRejectsBadSizes) {
  EXPECT_GT(measure_sgemm_gflops(64, 0.01), 0.0);
  EXPECT_THROW(measure_sgemm_gflops(0, 0.01), std::invalid_argument);
  EXPECT_THROW(measure_sgemm_gflops(64, 0.0), std::invalid_argument);
}

}  // namespace
}  // namespace vramlab::platform
