/// \file
/// \brief The CUDA kernel backends: the KernelBackend over kernels/cuda/ops.h. One source file,
/// cuda_kernel_backend.cpp, is compiled twice by g++: against the emulated launchers (library
/// vramlab::nn_cuda_emulated: the SIMT emulator runs every kernel on host memory, GEMMs through
/// OpenBLAS) and, with VRAMLAB_HAVE_CUDA, against the nvcc-built launchers (library
/// vramlab::nn_cuda_gpu: device memory, cuBLAS GEMMs, cudaMemcpy for memory movement).
///
/// Kernel versions: the optimized (v2) kernel of every op that has one, as a GPU would run.
///
/// Storage types: every OpTypes pair of kernel_backend.h (A f32, bf16 or f16; G f32 or A), every
/// cast between f32, bf16 and f16, and every OptimizerTypes (param f32/bf16, grad f32/bf16/f16,
/// state f32/bf16, working none/bf16/f16) run the kernels' instantiations for those types. On a
/// GPU, bf16 GEMMs (cublasGemmEx with CUDA_R_16BF) need compute capability 8.0 or newer; cuBLAS
/// reports anything older as an error, which the GEMM launcher throws.
#pragma once

#include <memory>

#include "common/nn/kernel_backend.h"

namespace vramlab::nn {

/// \return the emulated CUDA kernels (KernelKind::cuda_emulated); pointers must be host memory.
std::unique_ptr<KernelBackend> make_emulated_cuda_kernel_backend();

/// \return the GPU CUDA kernels (KernelKind::cuda); pointers must be memory of the current CUDA
/// device. Defined only in builds with VRAMLAB_HAVE_CUDA.
/// \throws std::runtime_error when the device scratch cannot be allocated.
std::unique_ptr<KernelBackend> make_gpu_cuda_kernel_backend();

}  // namespace vramlab::nn
