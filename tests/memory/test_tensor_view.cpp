// TensorView: slices stay inside their tensor, dtype accessors refuse the wrong dtype, and both
// failures are InternalErrors that name the shapes and the caller's file.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/memory/tensor_view.h"
#include "common/platform/errors.h"

namespace vramlab::memory {
namespace {

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

TEST(TensorView, SliceAddressesTheRightElementsForEachDtype) {
  std::vector<float> f(24);
  const TensorView whole(f.data(), DType::f32, {2, 3, 4});
  EXPECT_EQ(whole.numel(), 24);
  EXPECT_EQ(whole.bytes(), 96);
  const TensorView middle = whole.slice(5, {3, 2});
  EXPECT_EQ(middle.f32(), f.data() + 5);
  EXPECT_EQ(middle.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(middle.slice(5, {}).f32(), f.data() + 10);  // a rank-0 view is one element
  std::vector<int32_t> i(7);
  EXPECT_EQ(TensorView(i.data(), DType::i32, {7}).slice(3, {4}).i32(), i.data() + 3);
}

TEST(TensorView, SlicesOutsideTheTensorAreInternalErrors) {
  std::vector<float> f(10);
  const TensorView v(f.data(), DType::f32, {10});
  EXPECT_NO_THROW((void)v.slice(10, {0}));
  EXPECT_NO_THROW((void)v.slice(0, {10}));
  for (const auto& [offset, count] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 11}, {1, 10}, {10, 1}, {-1, 1}, {11, 0}, {INT64_MAX, 1}}) {
    try {
      (void)v.slice(offset, {count});
      ADD_FAILURE() << "slice(" << offset << ", {" << count << "}) was accepted";
    } catch (const InternalError& e) {
      EXPECT_TRUE(contains(e.what(), "outside a tensor (10)"));
    }
  }
  EXPECT_THROW((void)v.slice(0, {-1}), InternalError);
}

TEST(TensorView, TheWrongDtypeIsAnInternalErrorAtTheCallersLine) {
  std::vector<int32_t> i(6);
  const TensorView tokens(i.data(), DType::i32, {2, 3});
  try {
    (void)tokens.f32();
    FAIL() << "an i32 view was read as f32";
  } catch (const InternalError& e) {
    EXPECT_TRUE(contains(e.what(), "a i32 tensor (2, 3) used as f32"));
    EXPECT_TRUE(contains(e.what(), "test_tensor_view.cpp:"));
  }
  EXPECT_THROW((void)TensorView(i.data(), DType::bf16, {3}).i32(), InternalError);
}

TEST(TensorView, ReshapeKeepsTheElementCount) {
  std::vector<float> f(12);
  const TensorView v(f.data(), DType::f32, {12});
  EXPECT_EQ(v.reshape({3, 4}).shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_THROW((void)v.reshape({5, 2}), InternalError);
}

TEST(TensorView, TheDefaultViewIsNoneAndAZeroSizedViewIsNot) {
  EXPECT_TRUE(TensorView().none());
  float x = 0;
  EXPECT_FALSE(TensorView(&x, DType::f32, {0}).none());
  EXPECT_FALSE(TensorView(&x, DType::f32, {1}).none());
}

TEST(InternalError, IsNotAUsageErrorSoBinariesDoNotBlameTheUser) {
  try {
    throw InternalError("broken contract");
  } catch (const UsageError&) {
    FAIL() << "an InternalError was caught as a UsageError (exit 2, 'bad input')";
  } catch (const std::logic_error& e) {
    EXPECT_TRUE(contains(e.what(), "internal error at "));
    EXPECT_TRUE(contains(e.what(), "test_tensor_view.cpp:"));
    EXPECT_TRUE(contains(e.what(), ": broken contract"));
  }
}

}  // namespace
}  // namespace vramlab::memory
