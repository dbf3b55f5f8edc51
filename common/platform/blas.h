/// \file
/// \brief Which OpenBLAS kernel set runs, choosing a better one when OpenBLAS falls back to a
/// generic core, and the machine's measured single-precision GEMM rate.
///
/// OpenBLAS 0.3.21 (Debian 12) does not know some newer CPUs and falls back to a generic core
/// ("Prescott"), which runs SGEMM 5-6x slower than the AVX-512 or AVX2 kernels the CPU supports.
/// OpenBLAS reads OPENBLAS_CORETYPE once, when the library loads, before main() runs; so when the
/// user has not chosen a core and the detected one is weaker than the CPU's features allow, a
/// vramlab binary re-executes itself once with OPENBLAS_CORETYPE set.
#pragma once

#include <cstdint>
#include <string>

#include "common/platform/cpu_features.h"

namespace vramlab::platform {

/// What OpenBLAS reports about itself, and why that core is in use.
struct BlasInfo {
  std::string config;    ///< openblas_get_config(), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ... Haswell"
  std::string core;      ///< openblas_get_corename(), the kernel set in use, e.g. "Haswell"
  std::string parallel;  ///< "sequential", "pthreads" or "openmp"
  int64_t threads = 0;   ///< openblas_get_num_threads()
  std::string core_source;  ///< "OPENBLAS_CORETYPE set by the user", "selected by vramlab", or
                            ///< "detected by OpenBLAS"
  std::string
      detected_core;  ///< when vramlab selected the core: what OpenBLAS had detected on its own
};

/// The OpenBLAS core (OPENBLAS_CORETYPE value) that matches the CPU's features: "SkylakeX" with
/// AVX-512 (F, BW, VL, DQ), "Haswell" with AVX2 and FMA, "Sandybridge" with AVX, "" otherwise.
std::string recommended_openblas_core(const CpuFeatures& features);

/// The SIMD level an OpenBLAS core name implies: 3 AVX-512, 2 AVX2, 1 AVX, 0 older or unknown.
int openblas_core_simd_rank(const std::string& core_name);

/// The core select_blas_core_or_reexec() switches to, given what OpenBLAS detected: the
/// recommended core when the detected one implies a lower SIMD level, "" when no change is needed.
/// \param detected_core what openblas_get_corename() reports, e.g. "Prescott"
/// \param features the host CPU's features
std::string blas_core_to_select(const std::string& detected_core, const CpuFeatures& features);

/// Call first thing in main(). If OPENBLAS_CORETYPE is unset and the core OpenBLAS detected is
/// weaker than recommended_openblas_core(), sets OPENBLAS_CORETYPE and re-executes the binary
/// (once: VRAMLAB_BLAS_CORE_SELECTED guards against loops). Otherwise returns at once.
/// Setting VRAMLAB_NO_BLAS_CORE_SELECTION=1 turns the behaviour off.
/// \param argc,argv main()'s arguments, passed on unchanged to the re-executed binary.
void select_blas_core_or_reexec(int argc, char** argv);

/// Reads OpenBLAS's configuration and the reason for its core (see select_blas_core_or_reexec()).
BlasInfo blas_info();

/// Measures single-precision GEMM (C = A*B, square n x n, row-major) through OpenBLAS and returns
/// the best rate seen, in GFLOP/s (2 n^3 flops per call), running for about `min_seconds`.
/// \throws vramlab::UsageError if n is not positive or min_seconds is not positive.
double measure_sgemm_gflops(int64_t n = 1024, double min_seconds = 0.3);

}  // namespace vramlab::platform
