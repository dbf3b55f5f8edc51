/// \file
/// \brief The linear layer's GEMMs on bf16 and f16 storage (lesson 03), what CpuKernelBackend runs
/// when the activations are 16-bit: out = round_A(inp · Wᵀ + b), dinp = round_A(dinp + dout · W),
/// dweight = round_G(dweight + doutᵀ · inp), dbias = round_G(dbias + Σ_rows dout), every product
/// and sum in f32 and each output rounded once (nearest-even).
///
/// Two paths give those semantics:
/// - onednn: oneDNN's matmul on the 16-bit operands themselves with f32 accumulation, on CPUs
///   with native bf16 arithmetic (AVX512-BF16 or AMX), bf16 only;
/// - widen: the operands widened to f32 scratch (exact), the f32 GEMMs of parallel_linear.h, the
///   results rounded; every other case (f16, a CPU without bf16 instructions, VRAMLAB_CPU_BF16=0).
///   oneDNN 2.6 (Debian 12) has no f16 matmul for CPUs without AVX512-FP16: asked for one on an
///   AMX-BF16 Xeon it finds no implementation, so f16 always widens.
/// The two differ only in the order of the f32 sums (so by at most the f32 accumulation error
/// before the final rounding).
#pragma once

#include <cstdint>
#include <string_view>

namespace vramlab::nn {

/// Which implementation a 16-bit GEMM uses.
enum class LowPrecisionGemm {
  automatic,  ///< onednn for bf16 where available (see bf16_onednn_available()), else widen
  onednn,     ///< oneDNN matmul on bf16 operands (bf16 only; InternalError where unavailable)
  widen,      ///< widen to f32 and run parallel_linear.h's OpenBLAS GEMMs
};

/// \return true when bf16 GEMMs run in oneDNN by default: this CPU has native bf16 instructions
/// (oneDNN's effective ISA is avx512_core_bf16 or avx512_core_amx) and the environment variable
/// VRAMLAB_CPU_BF16 is not "0" (set it to 0 to force the widening path, e.g. to compare the two).
/// Decided once per process.
bool bf16_onednn_available();

/// \return "onednn" or "widen": the path a GEMM on \p a_type ("bf16" or "f16") takes under
/// LowPrecisionGemm::automatic.
std::string_view low_precision_gemm_name(std::string_view a_type);

/// out = round_A(inp · weightᵀ + bias). Shapes: out (N, OC), inp (N, C), weight (OC, C), bias (OC)
/// or nullptr; `path` chooses the implementation (tests force one). \tparam A bf16_t or f16_t.
/// \throws vramlab::UsageError on a size the GEMM library cannot index.
template <typename A>
void low_precision_linear_forward(A* out, const A* inp, const A* weight, const A* bias, int64_t N,
                                  int64_t C, int64_t OC,
                                  LowPrecisionGemm path = LowPrecisionGemm::automatic);

/// dinp = round_A(dinp + dout · weight), dweight = round_G(dweight + doutᵀ · inp), dbias =
/// round_G(dbias + Σ_rows dout) (rows summed in order). Shapes as the forward with dout (N, OC);
/// dinp and dbias may be nullptr; `path` as the forward's. \tparam A bf16_t or f16_t.
/// \tparam G float or A. \throws as low_precision_linear_forward.
template <typename A, typename G>
void low_precision_linear_backward(A* dinp, G* dweight, G* dbias, const A* dout, const A* inp,
                                   const A* weight, int64_t N, int64_t C, int64_t OC,
                                   LowPrecisionGemm path = LowPrecisionGemm::automatic);

}  // namespace vramlab::nn
