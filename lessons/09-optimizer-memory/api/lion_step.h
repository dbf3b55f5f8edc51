/// \file
/// \brief Exercise 09.2: one Lion step (Chen et al. 2023, "Symbolic Discovery of Optimization
/// Algorithms", arXiv 2302.06675, Algorithm 2): an optimizer whose only state is the momentum, so
/// it keeps half of AdamW's moments.
///
/// The one API shared by the stub (exercises/09-optimizer-memory/lion_step.cpp) and the reference
/// (solutions/09-optimizer-memory/lion_step.cpp). The runtime's kernel is lion_update in
/// kernels/cpu/optimizer.h; the tests compare with it.
///
/// Per element, with the learning rate lr, β1, β2 and the weight decay λ of
/// kernels::cpu::LionHyperparameters:
///
///     update = sign(β1·m + (1 − β1)·g)
///     param  = param·(1 − lr·λ) − lr·update      (decoupled weight decay, as AdamW's)
///     m      = β2·m + (1 − β2)·g
///
/// sign(0) = 0, and sign(NaN) = NaN, so a NaN gradient reaches the parameter instead of being
/// hidden. All arithmetic in f32.
#pragma once

#include <span>

#include "kernels/cpu/optimizer.h"

namespace vramlab::lesson09 {

/// Exercise 09.2: one Lion step over every element (see the file comment).
/// \param param (n) f32, updated in place. \param grad (n) f32.
/// \param momentum (n) f32, m, updated in place (zero before the first step).
/// \param hp the learning rate, β1, β2 and the weight decay.
/// \throws vramlab::UsageError naming the sizes when grad or momentum is not as long as param.
void lion_step(std::span<float> param, std::span<const float> grad, std::span<float> momentum,
               const kernels::cpu::LionHyperparameters& hp);

}  // namespace vramlab::lesson09
