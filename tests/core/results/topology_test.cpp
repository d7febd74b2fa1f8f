// core/results/topology: sysfs CPU lists and meminfo, the GPU paths' names, the merge of the
// ranks' readings, the JSON round trip with its refusals, and the report's text.
#include "core/results/topology.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainbench {
namespace {

using Cpus = std::vector<int>;

TEST(Topology, CpuListsParseAsSysfsWritesThem) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (Cpus{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5"), (Cpus{5}));
  EXPECT_EQ(parse_cpu_list(""), Cpus{}) << "a memory-only NUMA node has no CPU";
  EXPECT_EQ(parse_cpu_list("3,1-2,2"), (Cpus{1, 2, 3})) << "sorted, once each";
  for (const char* bad : {"3-1", "1-", "-1", "a", "1,,2", "1,", "1 2", "70000", "0-70000"}) {
    EXPECT_FALSE(parse_cpu_list(bad)) << bad;
  }
}

TEST(Topology, CpuListsFormatAsRanges) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({9, 7, 8, 8}), "7-9");
  EXPECT_EQ(format_cpu_list({}), "");
  for (const char* text : {"0-63", "0,2,4", "1-2,5-6,9"}) EXPECT_EQ(format_cpu_list(*parse_cpu_list(text)), text);
}

TEST(Topology, NodeMeminfoTotal) {
  EXPECT_EQ(node_meminfo_total_bytes("Node 0 MemTotal:       24683772 kB\nNode 0 MemFree:  1 kB\n"),
            24683772LL * 1024);
  EXPECT_EQ(node_meminfo_total_bytes("Node 1 MemFree: 5 kB\nNode 1 MemTotal: 7 kB\n"), 7 * 1024);
  EXPECT_FALSE(node_meminfo_total_bytes("MemTotal: 5 kB\n")) << "/proc/meminfo's form is not a node's";
  EXPECT_FALSE(node_meminfo_total_bytes(""));
}

TEST(Topology, NumaNodesOfARanksCpus) {
  const std::vector<NumaNode> nodes{{0, {0, 1, 2, 3}, 0}, {1, {4, 5, 6, 7}, 0}, {2, {}, 0}};
  EXPECT_EQ(numa_nodes_of({1, 2}, nodes), (Cpus{0}));
  EXPECT_EQ(numa_nodes_of({3, 4}, nodes), (Cpus{0, 1}));
  EXPECT_EQ(numa_nodes_of({9}, nodes), Cpus{});
}

TEST(Topology, NvmlLevelsAreNvidiaSmisPaths) {
  EXPECT_EQ(gpu_path_of_nvml_level(0), GpuPath::kSelf);
  EXPECT_EQ(gpu_path_of_nvml_level(10), GpuPath::kPix);
  EXPECT_EQ(gpu_path_of_nvml_level(20), GpuPath::kPxb);
  EXPECT_EQ(gpu_path_of_nvml_level(30), GpuPath::kPhb);
  EXPECT_EQ(gpu_path_of_nvml_level(40), GpuPath::kNode);
  EXPECT_EQ(gpu_path_of_nvml_level(50), GpuPath::kSys);
  EXPECT_FALSE(gpu_path_of_nvml_level(15));
  EXPECT_EQ(parse_gpu_path("SYS"), GpuPath::kSys);
  EXPECT_FALSE(parse_gpu_path("NV")) << "NVLinks are named with their count";
}

HostTopology two_gpu_host() {
  HostTopology h;
  h.host = "node-a";
  h.numa_nodes = {{0, {0, 1, 2, 3}, 64LL << 30}, {1, {4, 5, 6, 7}, 64LL << 30}};
  h.gpus = {{0, "00000000:18:00.0", {0, 1, 2, 3}, 0}, {1, "00000000:86:00.0", {4, 5, 6, 7}, 1}};
  h.paths = {{GpuPath::kSelf, GpuPath::kNvLink}, {GpuPath::kNvLink, GpuPath::kSelf}};
  h.nvlinks = {{0, 12}, {12, 0}};
  return h;
}

TEST(Topology, MergeKeepsEachHostOnceAndTheRanksInOrder) {
  HostTopology a = two_gpu_host();
  HostTopology b;
  b.host = "node-b";
  const Topology t = merge_topology({{{1, "node-a", {4, 5}, {1}, 1}, a},
                                     {{2, "node-b", {0}, {}, 0}, b},
                                     {{0, "node-a", {0, 1}, {0}, 0}, a}});
  ASSERT_EQ(t.hosts.size(), 2U);
  EXPECT_EQ(t.hosts[0].host, "node-a");
  EXPECT_EQ(t.hosts[1].host, "node-b");
  ASSERT_EQ(t.ranks.size(), 3U);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(t.ranks[static_cast<std::size_t>(r)].rank, r);
}

TEST(Topology, JsonRoundTripWithTheGpuMatrix) {
  const Topology t = merge_topology({{{0, "node-a", {0, 1}, {0}, 0}, two_gpu_host()}});
  const nlohmann::json j = to_json(t);
  EXPECT_EQ(j["hosts"][0]["paths"], nlohmann::json::parse(R"([["X","NV12"],["NV12","X"]])"));
  EXPECT_EQ(j["hosts"][0]["numaNodes"][1]["cpus"], "4-7");
  EXPECT_EQ(j["ranks"][0]["gpu"], 0);
  const Topology back = topology_from_json(j, "topology");
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.hosts[0].nvlinks[0][1], 12);
  EXPECT_EQ(back.hosts[0].paths[1][0], GpuPath::kNvLink);
}

/// topology_from_json's message for `j` with `edit` applied.
std::string refusal(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = to_json(merge_topology({{{0, "node-a", {0, 1}, {0}, 0}, two_gpu_host()}}));
  edit(j);
  try {
    topology_from_json(j, "topology");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Topology, MalformedJsonNamesTheField) {
  EXPECT_NE(refusal([](nlohmann::json& j) { j["ranks"][0]["cpus"] = "1-0"; }).find("topology.ranks[0].cpus"),
            std::string::npos);
  EXPECT_NE(refusal([](nlohmann::json& j) { j["hosts"][0]["paths"][0][1] = "NVX"; }).find("topology.hosts[0].paths[0]"),
            std::string::npos);
  EXPECT_NE(refusal([](nlohmann::json& j) { j["hosts"][0]["paths"].erase(1); }).find("one row per GPU"),
            std::string::npos);
  EXPECT_NE(refusal([](nlohmann::json& j) { j["hosts"][0]["paths"][1].erase(0); }).find("topology.hosts[0].paths[1]"),
            std::string::npos);
  EXPECT_NE(refusal([](nlohmann::json& j) { j["hosts"][0].erase("host"); }).find("topology.hosts[0]"),
            std::string::npos);
  EXPECT_NE(refusal([](nlohmann::json& j) { j.erase("ranks"); }).find("ranks"), std::string::npos);
}

TEST(Topology, TextHasTheNumaNodesTheGpuMatrixAndEachRank) {
  const Topology t = merge_topology({{{0, "node-a", {0, 1}, {0}, 0}, two_gpu_host()},
                                     {{1, "node-a", {3, 4}, {0, 1}, 1}, two_gpu_host()}});
  const std::string text = format_topology(t);
  EXPECT_NE(text.find("  host node-a:\n    NUMA node 0: CPUs 0-3, 64.0 GiB\n    NUMA node 1: CPUs 4-7, 64.0 GiB\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("GPU0   GPU1   CPU Affinity    NUMA Affinity\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    GPU0   X      NV12   0-3             0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    GPU1   NV12   X      4-7             1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  rank 0 on node-a: CPUs 0-1 (NUMA node 0), GPU 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  rank 1 on node-a: CPUs 3-4 (NUMA nodes 0,1), GPU 1\n"), std::string::npos) << text;
  HostTopology bare;
  bare.host = "box";
  EXPECT_NE(format_topology(merge_topology({{{0, "box", {0}, {}, -1}, bare}})).find("NUMA nodes unknown"),
            std::string::npos);
}

}  // namespace
}  // namespace trainbench
