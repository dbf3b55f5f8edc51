/// \file
/// \brief VRAMLAB_HOST_DEVICE: marks a function callable from both host code and CUDA device code.
///
/// Under nvcc (`__CUDACC__` defined) it expands to `__host__ __device__`; under a plain C++
/// compiler it expands to nothing, so the same header serves the CPU kernels and the CUDA kernels.
#pragma once

#if defined(__CUDACC__)
/// Host and device qualifiers under nvcc; nothing under a plain C++ compiler.
#define VRAMLAB_HOST_DEVICE __host__ __device__
#else
/// Host and device qualifiers under nvcc; nothing under a plain C++ compiler.
#define VRAMLAB_HOST_DEVICE
#endif
