// Tests of the elementwise optimizers' run-time vector paths (kernel_set.h, Note [Vector paths at
// run time] in kernels/cpu/optimizer_detail.h): every path updates to the bits of the plain loop,
// for each optimizer, storage type, gradient multiplier, rounding and size, and the CPU's choice.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/dtype/convert.h"
#include "common/platform/errors.h"
#include "kernels/cpu/kernel_set.h"
#include "kernels/cpu/optimizer.h"

namespace vramlab::kernels::cpu {
namespace {

// Restores the CPU's choice of path when a test ends, failed or not.
struct ForcedPath {
  explicit ForcedPath(VectorPath path) { force_optimizer_vector_path(path); }
  ~ForcedPath() { force_optimizer_vector_path(std::nullopt); }
  ForcedPath(const ForcedPath&) = delete;
  ForcedPath& operator=(const ForcedPath&) = delete;
};

// n values of T, uniform in [-scale, scale), with the edge values a loop gets wrong first at
// fixed places: zeros of both signs, the smallest subnormal, a huge value, and (in gradients)
// an infinity and a NaN.
template <typename T>
std::vector<T> values_with_edges(int64_t n, uint64_t seed, double scale, bool non_finite) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> distribution(-scale, scale);
  std::vector<T> values(static_cast<size_t>(n));
  for (T& value : values) value = narrow<T>(static_cast<float>(distribution(generator)));
  const float edges[] = {0.0f, -0.0f, 1.4e-45f, -3.0e4f, 1.0e-30f};
  for (size_t k = 0; k < std::size(edges) && k * 7 < values.size(); ++k)
    values[k * 7] = narrow<T>(edges[k]);
  if (non_finite && values.size() > 40) {
    values[37] = narrow<T>(INFINITY);
    values[40] = narrow<T>(NAN);
  }
  return values;
}

// Same bits, or both NaN (a NaN's payload follows operand order, which the compiler may commute).
template <typename T>
::testing::AssertionResult same_bits(const std::string& what, const std::vector<T>& a,
                                     const std::vector<T>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) == 0) continue;
    if (std::isnan(widen(a[i])) && std::isnan(widen(b[i]))) continue;
    return ::testing::AssertionFailure() << what << ": element " << i << " of " << a.size()
                                         << " is " << widen(a[i]) << " against " << widen(b[i]);
  }
  return ::testing::AssertionSuccess();
}

enum class Kind { adamw, sgd, sgd_nesterov, lion };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::adamw:
      return "adamw";
    case Kind::sgd:
      return "sgd";
    case Kind::sgd_nesterov:
      return "sgd-nesterov";
    case Kind::lion:
      return "lion";
  }
  return "?";
}

// The state after three steps of `kind` on `path`: param, the two states, the working copy.
template <typename P, typename Gr, typename S>
struct Run {
  std::vector<P> param;
  std::vector<S> m, v;
  std::vector<bf16_t> working;
};

template <typename P, typename Gr, typename S>
Run<P, Gr, S> three_steps(VectorPath path, Kind kind, int64_t n, float multiplier, bool working,
                          const ParameterRounding& rounding) {
  const ForcedPath forced(path);
  Run<P, Gr, S> run{values_with_edges<P>(n, 1, 1.0, false),
                    std::vector<S>(static_cast<size_t>(n), narrow<S>(0.0f)),
                    std::vector<S>(static_cast<size_t>(n), narrow<S>(0.0f)),
                    std::vector<bf16_t>(working ? static_cast<size_t>(n) : 0)};
  bf16_t* const copy = working ? run.working.data() : nullptr;
  for (int64_t step = 1; step <= 3; ++step) {
    const std::vector<Gr> grad =
        values_with_edges<Gr>(n, 100 + static_cast<uint64_t>(step), 2.0, step == 2);
    const UpdateStep at{step, multiplier, rounding};
    switch (kind) {
      case Kind::adamw:
        adamw_update<P, Gr, S, bf16_t>(run.param.data(), grad.data(), run.m.data(), run.v.data(),
                                       copy, n, {.learning_rate = 1e-2f, .weight_decay = 0.1f}, at);
        break;
      case Kind::sgd:
      case Kind::sgd_nesterov:
        sgd_update<P, Gr, S, bf16_t>(run.param.data(), grad.data(), run.m.data(), copy, n,
                                     {.learning_rate = 0.05f,
                                      .momentum = 0.9f,
                                      .weight_decay = 0.01f,
                                      .nesterov = kind == Kind::sgd_nesterov},
                                     at);
        break;
      case Kind::lion:
        lion_update<P, Gr, S, bf16_t>(run.param.data(), grad.data(), run.m.data(), copy, n,
                                      {.learning_rate = 3e-3f, .weight_decay = 0.3f}, at);
        break;
    }
  }
  return run;
}

// Sizes around the vector widths (8, 16), the scaled gradient's block (256) and a thread's chunk
// (16384), and one of many chunks.
constexpr int64_t kSizes[] = {1, 15, 17, 255, 257, 16384 + 19, 2 * 16384 + 300, 100003};

template <typename P, typename Gr, typename S>
void expect_path_matches_plain(VectorPath path, const char* types, bool working,
                               const ParameterRounding& rounding) {
  for (const Kind kind : {Kind::adamw, Kind::sgd, Kind::sgd_nesterov, Kind::lion}) {
    for (const float multiplier : {1.0f, 0.37f}) {
      for (const int64_t n : kSizes) {
        const auto plain =
            three_steps<P, Gr, S>(VectorPath::plain, kind, n, multiplier, working, rounding);
        const auto other = three_steps<P, Gr, S>(path, kind, n, multiplier, working, rounding);
        const std::string what = std::string(vector_path_name(path)) + " " + kind_name(kind) + " " +
                                 types + " x" + std::to_string(multiplier) +
                                 " n=" + std::to_string(n);
        EXPECT_TRUE(same_bits(what + " param", other.param, plain.param));
        EXPECT_TRUE(same_bits(what + " first state", other.m, plain.m));
        EXPECT_TRUE(same_bits(what + " second state", other.v, plain.v));
        EXPECT_TRUE(same_bits(what + " working copy", other.working, plain.working));
      }
    }
  }
}

void expect_every_storage_matches_plain(VectorPath path) {
  // fp32 training; the offloaded mixed-precision step (fp32 master and states, 16-bit gradients
  // and working copy); bf16 parameters and states with stochastic and with nearest rounding.
  expect_path_matches_plain<float, float, float>(path, "f32", false, {});
  expect_path_matches_plain<float, bf16_t, float>(path, "f32<-bf16 +working", true, {});
  expect_path_matches_plain<float, f16_t, float>(path, "f32<-f16 +working", true, {});
  expect_path_matches_plain<bf16_t, bf16_t, bf16_t>(path, "bf16 stochastic", false, {true, 77});
  expect_path_matches_plain<bf16_t, float, bf16_t>(path, "bf16 nearest", false, {});
}

TEST(OptimizerVectorPaths, TheCompiledPathUpdatesToThePlainLoopsBits) {
  expect_every_storage_matches_plain(VectorPath::compiled);
}

TEST(OptimizerVectorPaths, TheAvx512PathUpdatesToThePlainLoopsBits) {
  if (!vector_path_available(VectorPath::avx512))
    GTEST_SKIP() << "this CPU or build has no AVX-512 path (kernels compiled for "
                 << compiled_target() << ")";
  expect_every_storage_matches_plain(VectorPath::avx512);
}

TEST(OptimizerVectorPaths, TheCpuPicksAvx512WhereItHasItAndAForcedPathHolds) {
  const bool avx512 = vector_path_available(VectorPath::avx512);
  EXPECT_EQ(optimizer_vector_path(), avx512 ? VectorPath::avx512 : VectorPath::compiled);
  {
    const ForcedPath forced(VectorPath::plain);
    EXPECT_EQ(optimizer_vector_path(), VectorPath::plain);
  }
  EXPECT_EQ(optimizer_vector_path(), avx512 ? VectorPath::avx512 : VectorPath::compiled);
  EXPECT_STREQ(vector_path_name(VectorPath::compiled), compiled_simd_level());
  if (!avx512) {
    try {
      force_optimizer_vector_path(VectorPath::avx512);
      ADD_FAILURE() << "forcing an absent AVX-512 path did not throw";
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find("avx512"), std::string::npos) << error.what();
    }
    EXPECT_EQ(optimizer_vector_path(), VectorPath::compiled);
  }
}

}  // namespace
}  // namespace vramlab::kernels::cpu
