#pragma once

// What this rank reads of where it runs (core/results/topology.hpp): its host's NUMA nodes from
// sysfs, the CPUs it may run on (its affinity mask), and its GPU. Rank 0 gathers every rank's
// reading into the result's "topology" (worker/train_loop.cpp). No libtorch here.
//
// Not read yet: the GPU matrix of `nvidia-smi topo -m` (NVML's common ancestors and NVLinks):
// GPU runs record each rank's GPU index, and the hosts' "gpus" and "paths" stay empty.

#include <string>

#include <nlohmann/json.hpp>

#include "core/results/topology.hpp"

namespace trainbench::worker {

/// The host's NUMA nodes under `node_root` (/sys/devices/system/node: nodeN/cpulist, nodeN/meminfo),
/// by id; none when the directory is missing or unreadable (a container without that sysfs).
/// A node whose cpulist cannot be read or parsed is left out.
HostTopology read_host_topology(const std::string& host, const std::string& node_root = "/sys/devices/system/node");

/// The CPUs this process may run on (sched_getaffinity), in increasing order.
std::vector<int> affinity_cpus();

/// The host a rank reports: the Kubernetes node (NODE_NAME, which the operator sets from
/// spec.nodeName) or else the host name.
std::string topology_host_name();

/// This rank's reading, {"rank": RankLocation, "host": HostTopology} (core's JSON): what it sends
/// rank 0. `gpu`: its GPU's index, -1 on CPU.
nlohmann::json local_topology(int rank, int gpu);

/// Rank 0's Topology from every rank's local_topology() JSON text, in any order. Throws
/// std::runtime_error naming the rank whose reading is malformed.
Topology topology_of_readings(const std::vector<std::string>& readings);

}  // namespace trainbench::worker
