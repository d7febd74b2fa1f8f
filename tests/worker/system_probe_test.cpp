// The BLAS named in a run's environment header: a loaded shared library first, else what
// libtorch's build configuration says (the PyPI wheels link MKL into libtorch_cpu).

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "worker/system_probe.hpp"
#include "worker/topology_probe.hpp"

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

// The host's NUMA nodes from a sysfs tree: nodeN directories by id (a memory-only node has no
// CPU), their MemTotal; other entries, and a node whose cpulist does not parse, are left out; no
// tree, no nodes.
TEST(TopologyProbe, NumaNodesFromSysfs) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("topology-probe-" + std::to_string(::getpid()));
  const auto node = [&](const std::string& name, const std::string& cpulist, const std::string& meminfo) {
    fs::create_directories(root / name);
    std::ofstream(root / name / "cpulist") << cpulist;
    if (!meminfo.empty()) std::ofstream(root / name / "meminfo") << meminfo;
  };
  node("node1", "4-7\n", "Node 1 MemTotal:       1024 kB\nNode 1 MemFree: 5 kB\n");
  node("node0", "0-3\n", "Node 0 MemTotal:       2048 kB\n");
  node("node2", "\n", "");
  node("node3", "oops\n", "");
  node("possible", "0-7\n", "");
  const trainbench::HostTopology h = trainbench::worker::read_host_topology("box", root.string());
  EXPECT_EQ(h.host, "box");
  ASSERT_EQ(h.numa_nodes.size(), 3U);
  EXPECT_EQ(h.numa_nodes[0].id, 0);
  EXPECT_EQ(h.numa_nodes[0].cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(h.numa_nodes[0].memory_bytes, 2048 * 1024);
  EXPECT_EQ(h.numa_nodes[1].id, 1);
  EXPECT_EQ(h.numa_nodes[1].memory_bytes, 1024 * 1024);
  EXPECT_EQ(h.numa_nodes[2].id, 2);
  EXPECT_TRUE(h.numa_nodes[2].cpus.empty());
  EXPECT_EQ(h.numa_nodes[2].memory_bytes, 0);
  fs::remove_all(root);
  EXPECT_TRUE(trainbench::worker::read_host_topology("box", root.string()).numa_nodes.empty());
}

// Rank 0's merge of the readings: a malformed one is refused naming it.
TEST(TopologyProbe, ReadingsMergeAndAMalformedOneIsNamed) {
  const std::string r0 = trainbench::worker::local_topology(0, -1).dump();
  nlohmann::json other = nlohmann::json::parse(r0);
  other["rank"]["rank"] = 1;
  const trainbench::Topology t = trainbench::worker::topology_of_readings({other.dump(), r0});
  ASSERT_EQ(t.ranks.size(), 2U);
  EXPECT_EQ(t.ranks[0].rank, 0);
  EXPECT_EQ(t.hosts.size(), 1U);
  try {
    trainbench::worker::topology_of_readings({r0, "{\"rank\": 3}"});
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("topology reading 1"), std::string::npos) << e.what();
  }
}
