// An RAII cuBLAS handle and the process's default one (compiled only with VRAMLAB_HAVE_CUDA).
#include "common/cuda/cublas_handle.h"

#include <string>

#include "common/cuda/cuda_check.h"

namespace vramlab::cuda_runtime {

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw CudaError(std::string(what) + " failed: cuBLAS status " +
                    std::to_string(static_cast<int>(status)) + " (" +
                    cublasGetStatusString(status) + ")");
  }
}

CublasHandle::CublasHandle() {
  check_cublas(cublasCreate(&handle_), "cublasCreate");
}

CublasHandle::~CublasHandle() {
  cublasDestroy(handle_);
}

cublasHandle_t default_cublas_handle() {
  static CublasHandle handle;
  return handle.get();
}

}  // namespace vramlab::cuda_runtime
