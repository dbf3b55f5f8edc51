/// \file
/// \brief Which vector instructions the CPU kernels were compiled for.
///
/// The kernels are compiled for the building machine's vector units (-march=native, CMake option
/// VRAMLAB_KERNELS_NATIVE), so a learner's own build uses AVX-512 or AVX2 where the CPU has them.
/// `vramlab doctor` reports this beside the OpenBLAS core.
#pragma once

namespace vramlab::kernels::cpu {

/// The widest vector extension the kernels' translation units were compiled with: "avx512",
/// "avx2", "avx" or "sse2", read from the compiler's predefined macros in the kernels' own build.
const char* compiled_simd_level();

/// Whether the kernels were compiled with -march=native.
bool compiled_for_native_cpu();

}  // namespace vramlab::kernels::cpu
