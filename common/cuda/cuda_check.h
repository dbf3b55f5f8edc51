/// \file
/// \brief Turning CUDA runtime and cuBLAS status codes into exceptions (only with
/// VRAMLAB_HAVE_CUDA: this header includes the CUDA runtime).
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace vramlab::cuda_runtime {

/// A CUDA runtime or cuBLAS call that failed; the message names the call and the error.
struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws CudaError unless \p status is cudaSuccess; \p what names the call.
/// \throws CudaError naming what and cudaGetErrorString(status).
inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw CudaError(std::string(what) + " failed: " + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")");
  }
}

}  // namespace vramlab::cuda_runtime
