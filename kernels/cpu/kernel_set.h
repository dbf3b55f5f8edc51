/// \file
/// \brief Which vector instructions the CPU kernels were compiled for.
///
/// The kernels are compiled for one fixed instruction set, x86-64-v3 (AVX2 and FMA), so that
/// every such machine computes the same numbers (Note [The same numbers on every machine] in
/// kernels/cpu/CMakeLists.txt; CMake option VRAMLAB_KERNELS_TARGET). `vramlab doctor` reports
/// this beside the OpenBLAS core.
#pragma once

namespace vramlab::kernels::cpu {

/// The widest vector extension the kernels' translation units were compiled with: "avx512",
/// "avx2", "avx" or "sse2", read from the compiler's predefined macros in the kernels' own build.
const char* compiled_simd_level();

/// What the kernels were compiled for: "x86-64-v3", "native" (this machine's widest vectors) or
/// "generic" (the compiler's default target).
const char* compiled_target();

}  // namespace vramlab::kernels::cpu
