// RoPE. The fast path computes each position's cos/sin once and applies them to every (b, h).
#include "kernels/cpu/rope.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {
namespace {

void check_arguments(const char* op, int64_t B, int64_t T, int64_t H, int64_t D, double theta) {
  require_non_negative(op, "B", B);
  require_non_negative(op, "T", T);
  require_non_negative(op, "H", H);
  require_non_negative(op, "D", D);
  require(D % 2 == 0, op, "head dimension D = " + std::to_string(D) + " must be even");
  require(theta > 0.0, op, "theta = " + std::to_string(theta) + " must be > 0");
}

double rope_angle(int64_t position, int64_t pair, int64_t D, double theta) {
  return static_cast<double>(position) *
         std::pow(theta, -2.0 * static_cast<double>(pair) / static_cast<double>(D));
}

// direction = +1 rotates (forward), -1 rotates back (backward); accumulate selects += over =.
template <typename A>
void rope_apply(A* out, const A* inp, int64_t B, int64_t T, int64_t H, int64_t D, double theta,
                int64_t position_offset, float direction, bool accumulate) {
  const int64_t pairs = D / 2;
#pragma omp parallel
  {
    std::vector<float> cosines(static_cast<size_t>(pairs)), sines(static_cast<size_t>(pairs));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < T; t++) {
      for (int64_t i = 0; i < pairs; i++) {
        const double angle = rope_angle(position_offset + t, i, D, theta);
        cosines[static_cast<size_t>(i)] = static_cast<float>(std::cos(angle));
        sines[static_cast<size_t>(i)] = direction * static_cast<float>(std::sin(angle));
      }
      for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < H; h++) {
          const int64_t offset = ((b * T + t) * H + h) * D;
          const A* x = inp + offset;  // (D)
          A* y = out + offset;        // (D)
          const float* cs = cosines.data();
          const float* sn = sines.data();
#pragma omp simd
          for (int64_t i = 0; i < pairs; i++) {
            const float x0 = widen(x[2 * i]), x1 = widen(x[2 * i + 1]);
            const float y0 = x0 * cs[i] - x1 * sn[i];
            const float y1 = x0 * sn[i] + x1 * cs[i];
            y[2 * i] = narrow<A>(accumulate ? widen(y[2 * i]) + y0 : y0);
            y[2 * i + 1] = narrow<A>(accumulate ? widen(y[2 * i + 1]) + y1 : y1);
          }
        }
      }
    }
  }
}

}  // namespace

template <typename A>
void rope_forward(A* out, const A* inp, int64_t B, int64_t T, int64_t H, int64_t D, double theta,
                  int64_t position_offset) {
  check_arguments("rope_forward", B, T, H, D, theta);
  rope_apply(out, inp, B, T, H, D, theta, position_offset, 1.0f, false);
}

template <typename A>
void rope_backward(A* dinp, const A* dout, int64_t B, int64_t T, int64_t H, int64_t D, double theta,
                   int64_t position_offset) {
  check_arguments("rope_backward", B, T, H, D, theta);
  rope_apply(dinp, dout, B, T, H, D, theta, position_offset, -1.0f, true);
}

void rope_forward(float* out, const float* inp, int64_t B, int64_t T, int64_t H, int64_t D,
                  double theta, int64_t position_offset) {
  rope_forward<float>(out, inp, B, T, H, D, theta, position_offset);
}

void rope_backward(float* dinp, const float* dout, int64_t B, int64_t T, int64_t H, int64_t D,
                   double theta, int64_t position_offset) {
  rope_backward<float>(dinp, dout, B, T, H, D, theta, position_offset);
}

#define VRAMLAB_INSTANTIATE_STORAGE(A)                                                    \
  template void rope_forward<A>(A*, const A*, int64_t, int64_t, int64_t, int64_t, double, \
                                int64_t);                                                 \
  template void rope_backward<A>(A*, const A*, int64_t, int64_t, int64_t, int64_t, double, int64_t);
VRAMLAB_INSTANTIATE_STORAGE(float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t)
#undef VRAMLAB_INSTANTIATE_STORAGE

template <typename Real>
void rope_forward_reference(Real* out, const Real* inp, int64_t B, int64_t T, int64_t H, int64_t D,
                            double theta, int64_t position_offset) {
  check_arguments("rope_forward_reference", B, T, H, D, theta);
  for (int64_t b = 0; b < B; b++) {
    for (int64_t t = 0; t < T; t++) {
      for (int64_t h = 0; h < H; h++) {
        for (int64_t i = 0; i < D / 2; i++) {
          const double angle = rope_angle(position_offset + t, i, D, theta);
          const Real cosine = static_cast<Real>(std::cos(angle));
          const Real sine = static_cast<Real>(std::sin(angle));
          const int64_t at = ((b * T + t) * H + h) * D + 2 * i;
          const Real x0 = inp[at], x1 = inp[at + 1];
          out[at] = x0 * cosine - x1 * sine;
          out[at + 1] = x0 * sine + x1 * cosine;
        }
      }
    }
  }
}

template <typename Real>
void rope_backward_reference(Real* dinp, const Real* dout, int64_t B, int64_t T, int64_t H,
                             int64_t D, double theta, int64_t position_offset) {
  check_arguments("rope_backward_reference", B, T, H, D, theta);
  for (int64_t b = 0; b < B; b++) {
    for (int64_t t = 0; t < T; t++) {
      for (int64_t h = 0; h < H; h++) {
        for (int64_t i = 0; i < D / 2; i++) {
          const double angle = rope_angle(position_offset + t, i, D, theta);
          const Real cosine = static_cast<Real>(std::cos(angle));
          const Real sine = static_cast<Real>(std::sin(angle));
          const int64_t at = ((b * T + t) * H + h) * D + 2 * i;
          const Real g0 = dout[at], g1 = dout[at + 1];
          dinp[at] += g0 * cosine + g1 * sine;
          dinp[at + 1] += -g0 * sine + g1 * cosine;
        }
      }
    }
  }
}

template void rope_forward_reference<float>(float*, const float*, int64_t, int64_t, int64_t,
                                            int64_t, double, int64_t);
template void rope_forward_reference<double>(double*, const double*, int64_t, int64_t, int64_t,
                                             int64_t, double, int64_t);
template void rope_backward_reference<float>(float*, const float*, int64_t, int64_t, int64_t,
                                             int64_t, double, int64_t);
template void rope_backward_reference<double>(double*, const double*, int64_t, int64_t, int64_t,
                                              int64_t, double, int64_t);

}  // namespace vramlab::kernels::cpu
