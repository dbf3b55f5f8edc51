/// \file
/// \brief An RAII cuBLAS handle and the process's default one (only with VRAMLAB_HAVE_CUDA).
#pragma once

#include <cublas_v2.h>

namespace vramlab::cuda_runtime {

/// Throws CudaError unless \p status is CUBLAS_STATUS_SUCCESS; \p what names the call.
/// \throws CudaError naming what and the status.
void check_cublas(cublasStatus_t status, const char* what);

/// An owned cublasHandle_t.
class CublasHandle {
 public:
  /// Creates the handle. \throws CudaError when cublasCreate fails (e.g. no GPU).
  CublasHandle();
  /// cublasDestroy; errors are ignored (a destructor must not throw).
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  /// Valid while this object lives; do not destroy it yourself.
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

/// The handle the GEMM launchers use, created on first use (one per process, thread-safe
/// initialization), destroyed at exit. \throws CudaError when it cannot be created.
cublasHandle_t default_cublas_handle();

}  // namespace vramlab::cuda_runtime
