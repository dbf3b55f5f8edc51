// The GPU probe must give one of its four answers without crashing, whatever the machine has, and
// its answer must agree with what the machine actually has.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "common/platform/gpu_probe.h"

namespace vramlab::platform {
namespace {

TEST(GpuProbe, AnswerAgreesWithWhetherTheDriverLibraryLoads) {
  const GpuProbe probe = probe_gpus();
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    EXPECT_EQ(probe.status, GpuStatus::no_driver) << probe.detail;
  } else {
    EXPECT_NE(probe.status, GpuStatus::no_driver) << probe.detail;
  }
  EXPECT_FALSE(probe.detail.empty());
}

TEST(GpuProbe, DevicesAreListedOnlyWhenAvailable) {
  const GpuProbe probe = probe_gpus();
  if (probe.status == GpuStatus::available) {
    ASSERT_FALSE(probe.devices.empty());
    for (const auto& d : probe.devices) {
      EXPECT_FALSE(d.name.empty());
      EXPECT_GT(d.total_bytes, 0u);
    }
  } else {
    EXPECT_TRUE(probe.devices.empty());
    EXPECT_NE(probe.detail.find("no GPU"), std::string::npos) << probe.detail;
  }
}

TEST(GpuProbe, StatusNamesAreDistinct) {
  EXPECT_STREQ(gpu_status_name(GpuStatus::no_driver), "no driver");
  EXPECT_STREQ(gpu_status_name(GpuStatus::driver_error), "driver error");
  EXPECT_STREQ(gpu_status_name(GpuStatus::no_device), "no device");
  EXPECT_STREQ(gpu_status_name(GpuStatus::available), "available");
}

}  // namespace
}  // namespace vramlab::platform
