// The emulator's own dim3/uint3 (what learners without the CUDA toolkit get) behave like CUDA's.
#define VRAMLAB_SIMT_OWN_VECTOR_TYPES 1
#include <gtest/gtest.h>

#include <vector>

#include "kernels/simt/simt.h"

namespace {

__global__ void coordinates_kernel(unsigned* out) {
  const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
  out[y * gridDim.x * blockDim.x + x] = y * 100u + x;
}

TEST(SimtOwnVectorTypes, Dim3DefaultsMissingExtentsToOne) {
  constexpr dim3 d(5);
  static_assert(d.x == 5 && d.y == 1 && d.z == 1);
  const uint3 u = dim3(2, 3);
  EXPECT_EQ(u.x, 2u);
  EXPECT_EQ(u.y, 3u);
  EXPECT_EQ(u.z, 1u);
}

TEST(SimtOwnVectorTypes, VectorTypesHaveCudasSizeAndAlignment) {
  static_assert(sizeof(float4) == 16 && alignof(float4) == 16);
  static_assert(sizeof(float2) == 8 && alignof(float2) == 8);
  static_assert(sizeof(int4) == 16 && alignof(int4) == 16);
  static_assert(sizeof(uint2) == 8 && alignof(uint2) == 8);
  static_assert(sizeof(double2) == 16 && alignof(double2) == 16);
  const float4 v = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
  EXPECT_EQ(v.x + v.y + v.z + v.w, 10.0f);
  EXPECT_EQ(make_int2(3, -4).y, -4);
  EXPECT_EQ(make_uint4(1, 2, 3, 4).w, 4u);
  EXPECT_EQ(make_double2(0.5, 1.5).x, 0.5);
}

TEST(SimtOwnVectorTypes, TwoDimensionalLaunchCoversEveryThread) {
  std::vector<unsigned> out(12 * 6, 0);
  VRAMLAB_LAUNCH(coordinates_kernel, dim3(3, 2), dim3(4, 3), 0, 0)(out.data());
  for (unsigned y = 0; y < 6; ++y) {
    for (unsigned x = 0; x < 12; ++x) EXPECT_EQ(out[y * 12 + x], y * 100u + x) << x << "," << y;
  }
}

}  // namespace
