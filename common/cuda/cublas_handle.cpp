// An RAII cuBLAS handle and the process's default one (compiled only with VRAMLAB_HAVE_CUDA).
#include "common/cuda/cublas_handle.h"

#include <string>

#include "common/cuda/cublas_library.h"
#include "common/cuda/cuda_check.h"

namespace vramlab::cuda_runtime {

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw CudaError(std::string(what) + " failed: cuBLAS status " +
                    std::to_string(static_cast<int>(status)) + " (" +
                    cublas().status_string(status) + ")");
  }
}

CublasHandle::CublasHandle() {
  check_cublas(cublas().create(&handle_), "cublasCreate");
}

CublasHandle::~CublasHandle() {
  cublas().destroy(handle_);
}

cublasHandle_t default_cublas_handle() {
  static CublasHandle handle;
  return handle.get();
}

}  // namespace vramlab::cuda_runtime
