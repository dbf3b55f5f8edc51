/// \file
/// \brief cuBLAS, loaded on first use rather than at process start (only with VRAMLAB_HAVE_CUDA).
///
/// Note [Loading cuBLAS on first use]
/// libcublasLt's initialisers cost every process that links cuBLAS about 70 ms of system time and
/// 26,000 page faults before main() (measured: an empty main() linked with -lcublas takes 0.07 s,
/// with -lcudart alone 0.00 s), whether or not it ever multiplies on a GPU. A CI build compiles
/// the CUDA sources, so every test process and every run of the bad-input walk (thousands of
/// processes, none with a GPU) paid it. The runtime therefore does not link cuBLAS: the few entry
/// points the GEMM launchers use are resolved with dlopen/dlsym when the first cuBLAS handle is
/// created, as PyTorch loads NVRTC (at::cuda::detail::LazyNVRTC). The types and signatures still
/// come from <cublas_v2.h>, so a changed signature fails to compile.
#pragma once

#include <cublas_v2.h>

namespace vramlab::cuda_runtime {

/// cublasGemmEx with a cublasComputeType_t (the header also has a C++ inline overload taking
/// cudaDataType, so the type is spelled out; cublas_library.cpp checks that it names the
/// library's own function).
using CublasGemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                          int m, int n, int k, const void* alpha, const void* a,
                                          cudaDataType a_type, int lda, const void* b,
                                          cudaDataType b_type, int ldb, const void* beta, void* c,
                                          cudaDataType c_type, int ldc,
                                          cublasComputeType_t compute_type, cublasGemmAlgo_t algo);

/// The cuBLAS functions the runtime calls, with cuBLAS's own signatures (the _v2 entry points
/// that <cublas_v2.h> maps cublasCreate, cublasSgemm, ... to).
struct CublasLibrary {
  decltype(&cublasCreate_v2) create = nullptr;               ///< cublasCreate
  decltype(&cublasDestroy_v2) destroy = nullptr;             ///< cublasDestroy
  decltype(&cublasSgemm_v2) sgemm = nullptr;                 ///< cublasSgemm
  CublasGemmExFn gemm_ex = nullptr;                          ///< cublasGemmEx
  decltype(&cublasGetStatusString) status_string = nullptr;  ///< cublasGetStatusString
};

/// cuBLAS, loaded on the first call (thread-safe) from the toolkit this build linked against,
/// or else by its soname through the loader's search path.
/// \throws CudaError naming the library and dlerror() when it cannot be loaded or lacks a symbol.
const CublasLibrary& cublas();

/// True when this process has cuBLAS loaded (for tests of the lazy loading).
bool cublas_is_loaded();

}  // namespace vramlab::cuda_runtime
