/// \file
/// \brief Casts between the storage types f32, bf16 and f16 (lesson 03: the master copy's working
/// copy, a checkpoint in another precision, an f32 view of a 16-bit tensor for a report).
///
/// Every element is widened exactly and rounded once to nearest-even into the output's type
/// (common/dtype/convert.h): overflow becomes ±inf (f16 above 65504), NaN stays NaN. A cast to the
/// same type copies the bits.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// out[i] = round_To(widen(inp[i])), in parallel over fixed chunks. out, inp (n), must not overlap
/// unless they are the same array of the same type.
/// \tparam To float, bf16_t or f16_t. \tparam From float, bf16_t or f16_t.
/// \throws vramlab::InternalError when n < 0.
template <typename To, typename From>
void cast(To* out, const From* inp, int64_t n);

}  // namespace vramlab::kernels::cpu
