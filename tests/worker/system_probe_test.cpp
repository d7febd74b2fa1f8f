// The BLAS named in a run's environment header: a loaded shared library first, else what
// libtorch's build configuration says (the PyPI wheels link MKL into libtorch_cpu).

#include <gtest/gtest.h>

#include <string>

#include "worker/system_probe.hpp"

namespace tw = trainbench::worker;

namespace {
// The lines of at::show_config() from torch 2.15.0's PyPI wheel that matter here (abridged).
const std::string kWheelConfig =
    "PyTorch built with:\n"
    "  - GCC 13.3\n"
    "  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) 64 architecture "
    "applications\n"
    "  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, LAPACK_INFO=mkl, TORCH_VERSION=2.15.0, \n";
}  // namespace

TEST(SystemProbe, ALoadedBlasLibraryIsNamed) {
  EXPECT_EQ(tw::blas_description("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3", kWheelConfig),
            "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3");
}

TEST(SystemProbe, MklLinkedIntoLibtorchIsNamedWithItsVersion) {
  EXPECT_EQ(tw::blas_description("unknown", kWheelConfig),
            "MKL in libtorch_cpu: Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for "
            "Intel(R) 64 architecture applications");
}

TEST(SystemProbe, OtherwiseTheBuildsBlasInfo) {
  EXPECT_EQ(tw::blas_description("unknown", "PyTorch built with:\n  - Build settings: BLAS_INFO=open, X=1\n"),
            "open in libtorch");
  EXPECT_EQ(tw::blas_description("unknown", "PyTorch built with:\n  - GCC 13.3\n"), "unknown");
  EXPECT_EQ(tw::blas_description("", ""), "unknown");
}
