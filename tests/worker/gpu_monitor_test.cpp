// GpuMonitor: which NVML device a CUDA index is, and a clear "no NVML" without a driver.
#include "worker/gpu_monitor.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace {

using trainbench::worker::GpuMonitor;
using trainbench::worker::nvml_device_for;

TEST(GpuMonitor, MapsCudaIndexThroughCudaVisibleDevices) {
  EXPECT_EQ(nvml_device_for(0, ""), "index:0");
  EXPECT_EQ(nvml_device_for(1, ""), "index:1");
  EXPECT_EQ(nvml_device_for(0, "3,1"), "index:3");
  EXPECT_EQ(nvml_device_for(1, "3,1"), "index:1");
  EXPECT_EQ(nvml_device_for(0, "GPU-8f2c1a2b-0000-1111-2222-333344445555"),
            "uuid:GPU-8f2c1a2b-0000-1111-2222-333344445555");
  EXPECT_EQ(nvml_device_for(2, "3,1"), "") << "out of range";
  EXPECT_EQ(nvml_device_for(-1, ""), "");
  EXPECT_EQ(nvml_device_for(0, "bogus"), "");
}

TEST(GpuMonitor, WithoutNvmlOpenSaysWhy) {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml != nullptr) {
    dlclose(nvml);
    GTEST_SKIP() << "this machine has NVML; the GPU path is checked on a GPU machine (docs/performance.md)";
  }
  std::string why;
  EXPECT_EQ(GpuMonitor::open(0, &why), nullptr);
  EXPECT_NE(why.find("libnvidia-ml.so.1"), std::string::npos) << why;
}

}  // namespace
