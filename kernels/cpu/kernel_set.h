/// \file
/// \brief Which vector instructions the CPU kernels were compiled for, and which path the
/// elementwise optimizers take at run time.
///
/// The kernels are compiled for one fixed instruction set, x86-64-v3 (AVX2 and FMA), so that
/// every such machine computes the same numbers (Note [The same numbers on every machine] in
/// kernels/cpu/CMakeLists.txt; CMake option VRAMLAB_KERNELS_TARGET). `vramlab doctor` reports
/// this beside the OpenBLAS core. The elementwise optimizer loops (AdamW, SGD, Lion) also have an
/// AVX-512 path the CPU picks at run time, bit for bit the compiled one's (Note [Vector paths at
/// run time] in kernels/cpu/optimizer_detail.h).
#pragma once

#include <optional>

namespace vramlab::kernels::cpu {

/// The widest vector extension the kernels' translation units were compiled with: "avx512",
/// "avx2", "avx" or "sse2", read from the compiler's predefined macros in the kernels' own build.
const char* compiled_simd_level();

/// What the kernels were compiled for: "x86-64-v3", "native" (this machine's widest vectors) or
/// "generic" (the compiler's default target).
const char* compiled_target();

/// A way through the elementwise optimizers' loops.
enum class VectorPath {
  plain,     ///< one element at a time, no vectors (the loops' own reference)
  compiled,  ///< vectorised for the kernels' compiled target (compiled_simd_level())
  avx512,    ///< 512-bit vectors, where the CPU has AVX-512 (F, BW, VL, DQ)
};

/// \return "plain", the compiled level ("avx2" on an x86-64-v3 build) or "avx512".
const char* vector_path_name(VectorPath path);
/// \return whether \p path runs here: plain and compiled always; avx512 when this build has it
/// (an x86-64-v3 or native build on x86-64, whose compiled path fuses the same multiply-adds) and
/// the CPU and the operating system support AVX-512.
bool vector_path_available(VectorPath path);
/// \return the path the elementwise optimizers take now: the forced one, else avx512 where
/// available, else compiled.
VectorPath optimizer_vector_path();
/// Forces the elementwise optimizers onto \p path (tests and benchmarks compare the paths);
/// nullopt goes back to the CPU's choice. Not to be called while an update runs.
/// \throws vramlab::UsageError when \p path is not available here.
void force_optimizer_vector_path(std::optional<VectorPath> path);

}  // namespace vramlab::kernels::cpu
