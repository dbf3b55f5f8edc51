/// \file
/// \brief All CPU kernels of the training runtime, and the conventions they share.
///
/// Namespace vramlab::kernels::cpu. Each op family has its own header (matmul.h, activation.h,
/// normalization.h, softmax.h, cross_entropy.h, embedding.h, rope.h, attention.h,
/// flash_attention.h, elementwise.h,
/// dropout.h, quantize.h, reduction.h, optimizer.h, matmul_low_precision.h, cast.h,
/// gradient_check.h, storage.h); this header includes
/// them all.
///
/// Conventions, as in llm.c:
/// - Raw pointers with explicit sizes (int64_t); every pointer's shape is in its comment,
///   e.g. `(B, T, C)`; tensors are contiguous and row-major.
/// - Each op has a fast path (`op_forward`, OpenMP-parallel, vectorized, f32) and a readable
///   reference (`op_forward_reference<Real>`, plain loops) instantiated for float and double;
///   the double one is what the finite-difference gradient checks differentiate.
/// - Forward kernels write their outputs. Backward kernels ACCUMULATE (+=) into every gradient
///   they produce (inputs and parameters alike), so a tensor used twice (tied embeddings, a
///   residual stream) sums its gradients for free; zero gradient buffers once per step. The
///   exceptions are scratch outputs named as such (attention's dpreatt, which is written).
/// - Storage types (lesson 03): the kernels the training runtime calls are also templates on their
///   storage, `op<A>` or `op<A, G>` (activations A ∈ {float, bf16_t, f16_t}, parameter gradients
///   G ∈ {float, A}), explicitly instantiated: load widened to f32, compute as the f32 kernel,
///   store rounded once (storage.h). The float instantiation is the f32 kernel itself; the
///   non-template f32 functions call it.
/// - Determinism: no atomics, no thread-count-dependent partitioning in float reductions. Every
///   fast kernel in this folder gives the same bits for any number of OpenMP threads;
///   the OpenBLAS products give the same bits run to run at a fixed thread count.
/// - Bad sizes or indices throw vramlab::UsageError before any work starts.
/// - The fast paths run their own OpenMP parallel regions: call them from one thread, not from
///   inside a parallel region.
#pragma once

#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/flash_attention.h"
#include "kernels/cpu/gradient_check.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_low_precision.h"
#include "kernels/cpu/normalization.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/reduction.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/softmax.h"
