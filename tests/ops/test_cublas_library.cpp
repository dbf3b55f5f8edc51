// cuBLAS loaded on first use (Note [Loading cuBLAS on first use], common/cuda/cublas_library.h):
// a process that never multiplies on a GPU never maps libcublas, and the first use resolves
// every entry point the GEMM launchers call. Built only with VRAMLAB_HAVE_CUDA (CI compiles the
// CUDA sources); the handle test takes the branch this machine's GPU probe says.
#include <gtest/gtest.h>

#include <string>

#include "common/cuda/cublas_handle.h"
#include "common/cuda/cublas_library.h"
#include "common/cuda/cuda_check.h"
#include "common/platform/gpu_probe.h"

namespace vramlab::cuda_runtime {
namespace {

// Read before main(), so the answer does not depend on which test of this binary ran first.
const bool kLoadedAtStart = cublas_is_loaded();

TEST(CublasLibrary, IsNotMappedUntilFirstUse) {
  EXPECT_FALSE(kLoadedAtStart) << "libcublas was mapped at process start: is CUDA::cublas linked?";
  const CublasLibrary& library = cublas();
  EXPECT_TRUE(cublas_is_loaded());
  EXPECT_NE(library.create, nullptr);
  EXPECT_NE(library.destroy, nullptr);
  EXPECT_NE(library.sgemm, nullptr);
  EXPECT_NE(library.gemm_ex, nullptr);
  EXPECT_NE(library.status_string, nullptr);
  EXPECT_EQ(&cublas(), &library) << "loaded once per process";
}

TEST(CublasLibrary, ResolvedEntryPointsAreCublasOwn) {
  // cublasGetStatusString needs no GPU: a resolved pointer that were wrong would not answer
  // with cuBLAS's texts, different for different statuses.
  const CublasLibrary& library = cublas();
  const std::string success = library.status_string(CUBLAS_STATUS_SUCCESS);
  const std::string not_initialized = library.status_string(CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_FALSE(success.empty());
  EXPECT_FALSE(not_initialized.empty());
  EXPECT_NE(success, not_initialized);
}

TEST(CublasLibrary, AHandleNeedsAGpuAndSaysSoWithout) {
  const platform::GpuProbe probe = platform::probe_gpus();
  if (probe.status == platform::GpuStatus::available) {
    CublasHandle handle;
    EXPECT_NE(handle.get(), nullptr);
    return;
  }
  try {
    CublasHandle handle;
    FAIL() << "cublasCreate succeeded although the GPU probe found no GPU";
  } catch (const CudaError& error) {
    EXPECT_NE(std::string(error.what()).find("cublasCreate failed: cuBLAS status"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace vramlab::cuda_runtime
