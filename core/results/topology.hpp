#pragma once

// Where a run's ranks ran: each host's NUMA nodes (their CPUs and memory) and, with GPUs, the
// matrix `nvidia-smi topo -m` prints (the path between each pair of GPUs, each GPU's CPU and NUMA
// affinity); each rank's host, the CPUs it may run on and their NUMA nodes, and its GPU. The
// workers read it (worker/topology_probe.hpp), rank 0 gathers it into the result ("topology"),
// the report prints it in its header (docs/report.md, "Topology"). Pure data and text, no
// system calls: the sysfs formats are parsed here so that they can be tested.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench {

/// How two GPUs of a host reach each other, as `nvidia-smi topo -m` names it: the same GPU (X), a
/// number of NVLinks (NV#), one PCIe switch (PIX), several (PXB), one PCIe host bridge (PHB), the
/// host bridges of one NUMA node (NODE), or across NUMA nodes (SYS).
enum class GpuPath { kSelf, kNvLink, kPix, kPxb, kPhb, kNode, kSys };

const char* to_string(GpuPath p);
std::optional<GpuPath> parse_gpu_path(std::string_view text);

/// NVML's nvmlGpuTopologyLevel_t (0 internal, 10 single switch, 20 multiple, 30 host bridge, 40
/// node, 50 system) as the path it names; nullopt for a value NVML does not define.
std::optional<GpuPath> gpu_path_of_nvml_level(int level);

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;
  std::int64_t memory_bytes = 0;  ///< MemTotal of the node (0: unknown)
};

struct GpuInfo {
  int index = 0;        ///< NVML's (and CUDA's, with CUDA_DEVICE_ORDER=PCI_BUS_ID) device index
  std::string bus_id;   ///< PCI bus id, "00000000:18:00.0"
  std::vector<int> cpus;  ///< CPU affinity: the CPUs nearest the GPU
  int numa_node = -1;   ///< -1: unknown
};

struct HostTopology {
  std::string host;  ///< the Kubernetes node (NODE_NAME) or the host name
  std::vector<NumaNode> numa_nodes;
  std::vector<GpuInfo> gpus;
  /// paths[i][j]: GPU i to GPU j (gpus.size() square, kSelf on the diagonal); nvlinks[i][j]: the
  /// NVLinks between them where the path is kNvLink.
  std::vector<std::vector<GpuPath>> paths;
  std::vector<std::vector<int>> nvlinks;
};

struct RankLocation {
  int rank = 0;       ///< c10d rank (hybrid-ps: its parameter servers too)
  std::string host;
  std::vector<int> cpus;        ///< its CPU affinity
  std::vector<int> numa_nodes;  ///< the NUMA nodes those CPUs belong to
  int gpu = -1;                 ///< its GPU's index on the host, -1 on CPU
};

struct Topology {
  std::vector<HostTopology> hosts;  ///< in the order ranks first named them
  std::vector<RankLocation> ranks;  ///< by rank
};

/// A sysfs CPU list, "0-3,8,10-11" ("" is no CPU): the CPUs in increasing order; nullopt when
/// malformed (a range backwards, a number over 65535, anything but digits, '-' and ',').
std::optional<std::vector<int>> parse_cpu_list(std::string_view text);
/// The shortest such list of `cpus` (sorted, duplicates dropped): {0,1,2,3,8} -> "0-3,8".
std::string format_cpu_list(std::vector<int> cpus);
/// MemTotal of a /sys/devices/system/node/nodeN/meminfo ("Node 0 MemTotal: 24683772 kB") in
/// bytes; nullopt when it has no such line.
std::optional<std::int64_t> node_meminfo_total_bytes(std::string_view meminfo);
/// The NUMA nodes whose CPUs include one of `cpus`, by id.
std::vector<int> numa_nodes_of(const std::vector<int>& cpus, const std::vector<NumaNode>& nodes);

/// Rank 0's topology from every rank's report (a RankLocation and its host's HostTopology, as
/// each rank read them): the ranks by rank, each host once (the first report of it).
Topology merge_topology(const std::vector<std::pair<RankLocation, HostTopology>>& reports);

nlohmann::json to_json(const HostTopology& h);
nlohmann::json to_json(const RankLocation& r);
nlohmann::json to_json(const Topology& t);
/// Throws std::runtime_error naming the bad field under `path` ("topology.hosts[0].paths").
HostTopology host_topology_from_json(const nlohmann::json& j, const std::string& path);
RankLocation rank_location_from_json(const nlohmann::json& j, const std::string& path);
Topology topology_from_json(const nlohmann::json& j, const std::string& path);

/// The report's text: per host, its NUMA nodes and, with GPUs, the `nvidia-smi topo -m` matrix;
/// then where each rank ran ("rank 3 on node-a: CPUs 8-11 (NUMA node 0), GPU 3").
std::string format_topology(const Topology& t);

}  // namespace trainbench
